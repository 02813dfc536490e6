//! Errors of page executors.
//!
//! GPU failures (no adapter, lost device, validation, out of memory, readback)
//! are returned as values, never panics: the scheduler counts them and the
//! system under test keeps running, as a real service would with a flaky GPU.

/// Why an executor could not be created or could not compute a batch.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// No usable GPU adapter (no Vulkan driver, or forced by `HARNESS_FORCE_NO_ADAPTER`).
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),
    /// The device could not be created, was lost, or did not finish in time.
    #[error("GPU device error: {0}")]
    Device(String),
    /// wgpu validation rejected a call (caught with an error scope).
    #[error("GPU validation error: {0}")]
    Validation(String),
    /// The device ran out of memory for the batch's buffers.
    #[error("GPU out of memory: {0}")]
    OutOfMemory(String),
    /// Mapping or reading back the result buffer failed.
    #[error("GPU readback failed: {0}")]
    Readback(String),
    /// The batch exceeds a device limit; returned before any GPU call fails validation.
    #[error("batch too large: {what} is {requested}, device limit is {limit}")]
    TooLarge {
        what: &'static str,
        requested: u64,
        limit: u64,
    },
    /// A caller-supplied argument is invalid (e.g. a configuration with `lanes: 0`).
    #[error("invalid input: {0}")]
    InvalidInput(String),
}
