//! Measuring what the pool's GPU can really do against what the model promises.
//!
//! The scheduler paces each batch to `max(real compute, page_time)`. If the
//! executor is slower than `page_time` (e.g. the CPU fallback with big pages),
//! the pool runs below its configured capacity and experiment results would be
//! misread; calibration measures it up front and warns.

use crate::error::ExecError;
use crate::executor::PageExecutor;
use crate::page::PageSpec;
use crate::scheduler::SchedulerConfig;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Measured batches stop once this much time was spent (the first one always runs).
const BUDGET: Duration = Duration::from_millis(500);
/// At most this many measured batches.
const MAX_BATCHES: u32 = 5;

/// Throughput of one pool's shared GPU.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// Pages per second the pool will sustain: lanes / max(page_time, real batch time).
    pub pages_per_sec: f64,
    /// Pages per second the executor computes when not paced.
    pub real_pages_per_sec: f64,
    /// Mean measured time of one batch of `lanes` pages.
    pub real_batch_secs: f64,
    /// Configured batch time (`page_time`, at speed factor 1).
    pub modeled_batch_secs: f64,
}

/// Runs a few batches of `lanes` pages of the given size on the executor (blocking,
/// typically < 1 s) and returns the pool's page throughput plus the executor's own speed.
pub fn calibrate(
    executor: &dyn PageExecutor,
    cfg: &SchedulerConfig,
    words: u32,
    rounds: u32,
) -> Result<Calibration, ExecError> {
    cfg.validate()
        .map_err(|e| ExecError::InvalidInput(e.to_string()))?;
    let batch = |n: u32| -> Vec<PageSpec> {
        (0..cfg.lanes)
            .map(|i| PageSpec {
                doc_seed: 0xCA11_B8A7_E000_0000 | u64::from(n),
                page: i,
                words,
                rounds,
            })
            .collect()
    };
    // Warm-up: first use allocates buffers (and on some drivers compiles lazily).
    executor.compute(&batch(0))?;
    let started = Instant::now();
    let mut runs = 0u32;
    while runs < MAX_BATCHES && (runs == 0 || started.elapsed() < BUDGET) {
        runs += 1;
        executor.compute(&batch(runs))?;
    }
    let real_batch_secs = started.elapsed().as_secs_f64() / f64::from(runs);
    let modeled_batch_secs = cfg.page_time.as_secs_f64();
    let lanes = f64::from(cfg.lanes);
    let cal = Calibration {
        pages_per_sec: lanes / real_batch_secs.max(modeled_batch_secs),
        real_pages_per_sec: lanes / real_batch_secs,
        real_batch_secs,
        modeled_batch_secs,
    };
    if real_batch_secs > modeled_batch_secs {
        tracing::warn!(
            adapter = %executor.info().adapter,
            real_batch_secs,
            modeled_batch_secs,
            "real page compute is slower than page_time: the GPU runs below its configured capacity"
        );
    }
    Ok(cal)
}
