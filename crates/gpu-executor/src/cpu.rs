//! The CPU executor: the reference page function, run on host threads.
//!
//! It exists so the harness runs (and its results stay verifiable) on machines
//! without any GPU adapter. Pages of a batch are spread over the host's cores,
//! like lanes of a GPU, but only when the batch is big enough to repay the
//! thread start-up.

use crate::error::ExecError;
use crate::executor::{ExecutorInfo, ExecutorKind, PageExecutor};
use crate::page::{reference_page, PageSpec};

/// Below this much work (sum of words * rounds) a batch runs on the calling thread.
const PARALLEL_MIN_WORK: u64 = 1 << 20;

/// Runs pages with [`reference_page`].
pub struct CpuExecutor {
    info: ExecutorInfo,
}

impl Default for CpuExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuExecutor {
    /// A deliberately chosen CPU executor (`fallback = false`).
    pub fn new() -> Self {
        CpuExecutor {
            info: ExecutorInfo {
                kind: ExecutorKind::Cpu,
                adapter: "CPU reference".to_string(),
                fallback: false,
                fallback_reason: None,
            },
        }
    }

    /// The CPU executor `Auto` falls back to when no GPU adapter exists.
    pub fn new_fallback(reason: String) -> Self {
        CpuExecutor {
            info: ExecutorInfo {
                kind: ExecutorKind::Cpu,
                adapter: "CPU reference (no GPU adapter)".to_string(),
                fallback: true,
                fallback_reason: Some(reason),
            },
        }
    }
}

impl PageExecutor for CpuExecutor {
    fn info(&self) -> &ExecutorInfo {
        &self.info
    }

    fn compute(&self, pages: &[PageSpec]) -> Result<Vec<u32>, ExecError> {
        let work: u64 = pages
            .iter()
            .map(|p| u64::from(p.words) * u64::from(p.rounds.max(1)))
            .sum();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if pages.len() < 2 || threads < 2 || work < PARALLEL_MIN_WORK {
            return Ok(pages.iter().map(reference_page).collect());
        }
        let mut out = vec![0u32; pages.len()];
        let chunk = pages.len().div_ceil(threads);
        std::thread::scope(|s| {
            for (specs, results) in pages.chunks(chunk).zip(out.chunks_mut(chunk)) {
                s.spawn(move || {
                    for (spec, r) in specs.iter().zip(results.iter_mut()) {
                        *r = reference_page(spec);
                    }
                });
            }
        });
        Ok(out)
    }
}
