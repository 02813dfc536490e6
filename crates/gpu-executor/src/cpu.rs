//! The CPU executor: the reference page function, run on host threads.
//!
//! It exists so the harness runs (and its results stay verifiable) on machines
//! without any GPU adapter. Pages of a batch are spread over the host's cores,
//! like lanes of a GPU, but only when the batch is big enough to repay the
//! thread start-up.
//!
//! A page already computed is answered from memory. What the system under
//! test wastes is counted by the scheduler, page by page, and its time is
//! the GPU's modeled time (paced on the real clock, modeled on the virtual
//! one), never this function's CPU time: recomputing a retried document's
//! pages here only cost the host CPU (a third of a virtual retry storm's).
//! The harness's integrity check computes its reference apart from this
//! memory, so a wrong answer from it would still be caught.

use crate::error::ExecError;
use crate::executor::{ExecutorInfo, ExecutorKind, PageExecutor};
use crate::page::{reference_page, PageSpec};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Below this much work (sum of words * rounds) a batch runs on the calling thread.
const PARALLEL_MIN_WORK: u64 = 1 << 20;

/// Pages remembered at most; the memory starts over past it (about 40 MB).
const REMEMBERED_PAGES: usize = 1 << 20;

/// The host's threads, read once: `available_parallelism` reads the
/// cgroup's files on every call (a few system calls per batch otherwise).
fn host_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs pages with [`reference_page`].
pub struct CpuExecutor {
    info: ExecutorInfo,
    computed: Mutex<HashMap<PageSpec, u32>>,
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
            computed: Mutex::default(),
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
            computed: Mutex::default(),
        }
    }
}

impl PageExecutor for CpuExecutor {
    fn info(&self) -> &ExecutorInfo {
        &self.info
    }

    fn compute(&self, pages: &[PageSpec]) -> Result<Vec<u32>, ExecError> {
        let known: Vec<Option<u32>> = {
            let memory = self.computed.lock().unwrap_or_else(|p| p.into_inner());
            pages.iter().map(|p| memory.get(p).copied()).collect()
        };
        let missing: Vec<PageSpec> = pages
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_none())
            .map(|(p, _)| *p)
            .collect();
        let fresh = compute_all(&missing);
        let mut memory = self.computed.lock().unwrap_or_else(|p| p.into_inner());
        if memory.len() + fresh.len() > REMEMBERED_PAGES {
            memory.clear();
        }
        memory.extend(missing.iter().copied().zip(fresh.iter().copied()));
        let mut fresh = fresh.into_iter();
        Ok(known
            .into_iter()
            .map(|k| k.or_else(|| fresh.next()).unwrap_or_default())
            .collect())
    }
}

/// [`reference_page`] of every page, on the host's threads when the batch
/// repays their start-up.
fn compute_all(pages: &[PageSpec]) -> Vec<u32> {
    let work: u64 = pages
        .iter()
        .map(|p| u64::from(p.words) * u64::from(p.rounds.max(1)))
        .sum();
    let threads = host_threads();
    if pages.len() < 2 || threads < 2 || work < PARALLEL_MIN_WORK {
        return pages.iter().map(reference_page).collect();
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages answered from memory are the pages computed: a batch mixing
    /// new and known pages, in any order, gives the reference's results.
    #[test]
    fn known_pages_are_answered_as_computed() {
        let spec = |doc_seed, page| PageSpec {
            doc_seed,
            page,
            words: 64,
            rounds: 2,
        };
        let cpu = CpuExecutor::new();
        let first: Vec<PageSpec> = (0..5).map(|p| spec(7, p)).collect();
        cpu.compute(&first).unwrap();
        let mixed = vec![spec(9, 0), spec(7, 3), spec(9, 1), spec(7, 0), spec(7, 3)];
        let want: Vec<u32> = mixed.iter().map(reference_page).collect();
        assert_eq!(cpu.compute(&mixed).unwrap(), want);
        assert_eq!(cpu.computed.lock().unwrap().len(), 7);
    }
}
