//! The wgpu executor: pages computed by a compute shader on a real (or software) GPU.
//!
//! One executor owns one device and queue behind a mutex, so concurrent callers
//! serialize exactly like jobs sharing one physical GPU. A batch is one
//! submission: upload the page table, clear the per-page sums, one dispatch,
//! copy the sums to a mappable buffer, read back one `u32` per page.

mod buffers;
mod init;
mod layout;
mod scope;

use crate::error::ExecError;
use crate::executor::{ExecutorInfo, ExecutorKind, PageExecutor};
use crate::page::PageSpec;
use buffers::BatchBuffers;
use init::{create_context, GpuContext};
use layout::{layout_batch, BatchLayout, BatchLimits};
use scope::ScopeGuards;
use std::sync::Mutex;
use std::time::Duration;

/// Longest wait for one batch; a GPU that takes longer is treated as hung.
const POLL_TIMEOUT: Duration = Duration::from_secs(300);

/// Computes pages with the `page.wgsl` compute shader.
pub struct WgpuExecutor {
    info: ExecutorInfo,
    limits: BatchLimits,
    gpu: Mutex<GpuState>,
}

struct GpuState {
    ctx: GpuContext,
    /// None until the first batch, and after a failed one (its buffers may be left mapped).
    buffers: Option<BatchBuffers>,
}

impl WgpuExecutor {
    /// Opens the best available adapter; `ExecError::NoAdapter` when there is none.
    pub fn new() -> Result<Self, ExecError> {
        let ctx = create_context()?;
        let l = ctx.device.limits();
        let limits = BatchLimits {
            max_workgroups_per_dim: l.max_compute_workgroups_per_dimension,
            max_storage_binding: l.max_storage_buffer_binding_size,
            max_buffer_size: l.max_buffer_size,
        };
        tracing::info!(adapter = %ctx.adapter_desc, ?limits, "wgpu page executor ready");
        Ok(WgpuExecutor {
            info: ExecutorInfo {
                kind: ExecutorKind::Wgpu,
                adapter: ctx.adapter_desc.clone(),
                fallback: false,
                fallback_reason: None,
            },
            limits,
            gpu: Mutex::new(GpuState { ctx, buffers: None }),
        })
    }
}

impl PageExecutor for WgpuExecutor {
    fn info(&self) -> &ExecutorInfo {
        &self.info
    }

    fn compute(&self, pages: &[PageSpec]) -> Result<Vec<u32>, ExecError> {
        if pages.is_empty() {
            return Ok(Vec::new());
        }
        let layout = layout_batch(pages, &self.limits)?;
        if layout.params.total_wg == 0 {
            // Only empty pages: their sums are 0 and there is nothing to dispatch.
            return Ok(vec![0; pages.len()]);
        }
        // A panic while holding the lock cannot leave the device itself
        // inconsistent, but it may leave the buffers mapped: drop them.
        let mut state = self.gpu.lock().unwrap_or_else(|poisoned| {
            let mut s = poisoned.into_inner();
            s.buffers = None;
            s
        });
        let max_binding = self
            .limits
            .max_storage_binding
            .min(self.limits.max_buffer_size);
        let result = state.run(&layout, max_binding);
        if result.is_err() {
            state.buffers = None;
        }
        self.gpu.clear_poison();
        result
    }
}

impl GpuState {
    fn run(&mut self, layout: &BatchLayout, max_binding: u64) -> Result<Vec<u32>, ExecError> {
        let n = layout.meta.len();
        let bytes = (n * 4) as u64;
        let GpuState { ctx, buffers } = self;
        let scope = ScopeGuards::push(&ctx.device);
        if buffers.as_ref().is_none_or(|b| b.capacity < n) {
            *buffers = Some(BatchBuffers::new(
                &ctx.device,
                &ctx.bind_group_layout,
                n,
                max_binding,
            ));
        }
        let Some(bufs) = buffers.as_ref() else {
            return Err(ExecError::Device("batch buffers missing".into()));
        };
        ctx.queue
            .write_buffer(&bufs.params, 0, bytemuck::bytes_of(&layout.params));
        ctx.queue
            .write_buffer(&bufs.meta, 0, bytemuck::cast_slice(&layout.meta));
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        enc.clear_buffer(&bufs.sums, 0, Some(bytes));
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&ctx.pipeline);
            pass.set_bind_group(0, &bufs.bind_group, &[]);
            pass.dispatch_workgroups(layout.grid.0, layout.grid.1, 1);
        }
        enc.copy_buffer_to_buffer(&bufs.sums, 0, &bufs.readback, 0, bytes);
        let index = ctx.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        bufs.readback
            .map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
                // The receiver only goes away if we already returned an error.
                let _ = tx.send(r);
            });
        scope.pop()?;
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: Some(POLL_TIMEOUT),
            })
            .map_err(|e| ExecError::Device(format!("waiting for the batch: {e}")))?;
        rx.try_recv()
            .map_err(|_| ExecError::Readback("map callback did not run".into()))?
            .map_err(|e| ExecError::Readback(e.to_string()))?;
        let out = {
            let view = bufs
                .readback
                .get_mapped_range(0..bytes)
                .map_err(|e| ExecError::Readback(e.to_string()))?;
            view.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        bufs.readback.unmap();
        Ok(out)
    }
}
