//! Error scopes that turn wgpu validation and out-of-memory errors into `ExecError`s.
//!
//! wgpu reports most failures asynchronously to the innermost error scope (or,
//! without one, to a handler that panics by default). Wrapping every batch in
//! scopes keeps a bad batch from taking the process down.

use crate::error::ExecError;

/// A validation scope inside an out-of-memory scope, popped together.
///
/// Scopes are thread-local in wgpu, so push and pop must happen on the same
/// thread; `ErrorScopeGuard` is `!Send`, which enforces that.
pub(crate) struct ScopeGuards {
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
}

impl ScopeGuards {
    pub fn push(device: &wgpu::Device) -> Self {
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        ScopeGuards { oom, validation }
    }

    /// Pops both scopes (inner first) and returns the first error they caught.
    pub fn pop(self) -> Result<(), ExecError> {
        let validation = pollster::block_on(self.validation.pop());
        let oom = pollster::block_on(self.oom.pop());
        match validation.or(oom) {
            None => Ok(()),
            Some(e) => Err(to_exec_error(e)),
        }
    }
}

fn to_exec_error(e: wgpu::Error) -> ExecError {
    match e {
        wgpu::Error::OutOfMemory { .. } => ExecError::OutOfMemory(e.to_string()),
        wgpu::Error::Validation { .. } => ExecError::Validation(e.to_string()),
        wgpu::Error::Internal { .. } => ExecError::Device(e.to_string()),
    }
}
