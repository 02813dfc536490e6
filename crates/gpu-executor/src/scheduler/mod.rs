//! The shared GPU every worker of a pool submits pages to.
//!
//! Workers open a job per document, enqueue its pages, and receive results on a
//! channel as batches complete. The scheduler reproduces the incident's
//! mechanics: a bounded page queue, a policy deciding whose pages run next,
//! and orphans: dropping a JobHandle does NOT remove its queued pages; they are
//! still computed and their results, sent to a dropped receiver, are discarded
//! and counted as `orphan_pages`.
//!
//! Failed batches (executor errors) deliver nothing for their pages: the job's
//! owner times out, as with a real GPU fault. They are counted in
//! `compute_errors` (batches) and `pages_failed` (pages) and logged.

mod config;
mod job;
mod queue;
mod run_loop;
mod seen;
mod state;
mod window;

pub use config::{SchedulerConfig, SchedulerConfigError, SchedulingPolicy};
pub use job::JobHandle;

use crate::executor::{ExecutorInfo, PageExecutor};
use serde::Serialize;
use state::{JobEntry, State};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};

/// Speed factors are clamped to this range (a factor of 0 would mean "never").
const SPEED_RANGE: (f64, f64) = (1e-6, 1e6);

/// The result of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageResult {
    pub page: u32,
    pub value: u32,
}

/// The page queue is full (`page_queue` pages already queued), or the scheduler shut down.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("GPU page queue full")]
pub struct QueueFull;

/// `enqueue_all` stopped at a full queue after enqueueing `enqueued` pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("GPU page queue full after {enqueued} pages")]
pub struct QueueFullAfter {
    pub enqueued: usize,
}

/// Counters and gauges of the shared GPU.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SchedulerStats {
    pub pages_computed: u64,
    /// Pages whose (doc_seed, page) had been computed before (bounded two-generation memory).
    pub pages_recomputed: u64,
    /// Pages computed for a receiver that was gone.
    pub orphan_pages: u64,
    /// Batches run, failed ones included.
    pub batches: u64,
    /// Gauge: pages queued, not yet computing.
    pub queued_pages: u64,
    /// Gauge: a batch is computing (or held for its modeled time) now.
    pub busy: bool,
    pub lanes: u32,
    /// Time spent inside `executor.compute`.
    pub real_compute_secs: f64,
    /// Pages computed per tenant.
    pub per_tenant_pages: BTreeMap<String, u64>,
    /// Batches whose compute failed (their pages are not delivered).
    pub compute_errors: u64,
    /// Pages of failed batches.
    pub pages_failed: u64,
    /// Back-to-back batches (queued when the one before ended): seconds from
    /// one's start to the next's on the schedule the loop kept, and as the
    /// model gives them (`page_time / speed`). A batch is held past its
    /// modeled end while its real compute runs, and starts late when the loop
    /// woke more than a batch after the previous end; both count here. Their
    /// ratio is how much slower than its model the emulated GPU ran.
    pub paced_secs: f64,
    pub paced_target_secs: f64,
}

/// Work the GPU still holds for some documents: the jobs open for them (a
/// worker may still be splitting, or enqueued pages not yet computed), their
/// pages queued or computing, and of their pages those never computed yet
/// while a job is open (the document's first computation, as opposed to
/// recomputation). A trigger's injected work has left the GPU when
/// `first_time_pages` is zero for its documents: what runs after that is
/// amplification (duplicates, recomputes), not the trigger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DocumentWork {
    pub jobs: u64,
    pub pages: u64,
    pub first_time_pages: u64,
}

/// Where a batch's pages are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compute {
    /// On tokio's blocking pool, so the GPU's wait never holds up the
    /// runtime's other tasks (real time).
    #[default]
    Blocking,
    /// On the loop's own task, in line: a run on a paused (virtual) clock
    /// must never wait on another thread while the clock advances, and the
    /// CPU reference takes no modeled time there anyway.
    Inline,
}

/// State shared by the scheduler handle, job handles and the loop.
pub(crate) struct Shared {
    state: Mutex<State>,
    notify: Notify,
    executor: Arc<dyn PageExecutor>,
    compute: Compute,
    page_time: Duration,
    page_queue: usize,
}

impl Shared {
    /// The lock is only held for bookkeeping that cannot leave the state
    /// half-updated in a way that matters, so a poisoned lock is recovered.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        // Dropping the senders closes every receiver.
        st.jobs.clear();
        st.queue = queue::PageQueue::new(SchedulingPolicy::Fifo);
        drop(st);
        self.notify.notify_one();
    }
}

/// Shuts the loop down when the last `GpuScheduler` clone goes away.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

/// Handle to the shared GPU; cheap to clone.
#[derive(Clone)]
pub struct GpuScheduler {
    owner: Arc<Owner>,
}

impl GpuScheduler {
    /// Spawns the scheduling loop as a tokio task (must be called inside a runtime).
    ///
    /// `cfg` should have passed [`SchedulerConfig::validate`]; out-of-range values
    /// are clamped (lanes 0 would stall the GPU, page_queue 0 would refuse everything).
    pub fn start(cfg: SchedulerConfig, executor: Arc<dyn PageExecutor>) -> GpuScheduler {
        Self::start_with(cfg, executor, Compute::Blocking)
    }

    /// As [`start`](Self::start), computing batches as `compute` says.
    pub fn start_with(
        cfg: SchedulerConfig,
        executor: Arc<dyn PageExecutor>,
        compute: Compute,
    ) -> GpuScheduler {
        if let Err(e) = cfg.validate() {
            tracing::warn!(error = %e, "invalid GPU scheduler config; clamping");
        }
        let mut cfg = cfg;
        cfg.lanes = cfg.lanes.max(1);
        if let SchedulingPolicy::TenantFairShare { max_share } = &mut cfg.policy {
            if !(*max_share > 0.0 && *max_share <= 1.0) {
                *max_share = 1.0;
            }
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(&cfg)),
            notify: Notify::new(),
            executor,
            compute,
            page_time: cfg.page_time,
            page_queue: cfg.page_queue.max(1) as usize,
        });
        tokio::spawn(run_loop::run(shared.clone()));
        GpuScheduler {
            owner: Arc::new(Owner(shared)),
        }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.owner.0
    }

    /// A job = one document's processing. Results arrive on the receiver as pages
    /// complete, in any order. The receiver closes once the handle is dropped and
    /// every page it enqueued has been computed (or failed), or at shutdown.
    pub fn open_job(
        &self,
        tenant: &str,
        doc_key: u64,
    ) -> (JobHandle, mpsc::UnboundedReceiver<PageResult>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = self.shared().clone();
        let mut st = shared.lock();
        let job = st.next_job;
        st.next_job += 1;
        // After shutdown the sender is dropped at once: the receiver is closed
        // and every enqueue fails.
        if !st.shutdown {
            st.jobs.insert(
                job,
                JobEntry {
                    tenant: tenant.into(),
                    doc_key,
                    tx,
                    handle_alive: true,
                    pending: 0,
                },
            );
        }
        drop(st);
        tracing::trace!(tenant, doc_key, job, "GPU job opened");
        (JobHandle::new(shared, job), rx)
    }

    /// Operator frees/removes GPU capacity. 0 pauses the GPU: pages queue up
    /// (to `page_queue`) until lanes are given back.
    pub fn set_lanes(&self, lanes: u32) {
        self.shared().lock().lanes = lanes;
        self.shared().notify.notify_one();
    }

    /// Fault: GPU capacity degraded (0.5 = half speed); 1.0 normal. Applies from
    /// the next batch. Non-finite or non-positive factors are ignored.
    pub fn set_speed_factor(&self, factor: f64) {
        if !(factor.is_finite() && factor > 0.0) {
            tracing::warn!(factor, "ignoring invalid GPU speed factor");
            return;
        }
        self.shared().lock().speed_factor = factor.clamp(SPEED_RANGE.0, SPEED_RANGE.1);
    }

    /// The work still held for `docs`, each `(document, its page count)` (see [`DocumentWork`]).
    /// O(open jobs + pages of the documents with a job open).
    pub fn work_for(&self, docs: &[(u64, u32)]) -> DocumentWork {
        let st = self.shared().lock();
        let pages: std::collections::HashMap<u64, u32> = docs.iter().copied().collect();
        let mut w = DocumentWork::default();
        let mut open = std::collections::HashSet::new();
        for e in st.jobs.values().filter(|e| pages.contains_key(&e.doc_key)) {
            w.jobs += 1;
            w.pages += e.pending as u64;
            open.insert(e.doc_key);
        }
        for doc in open {
            w.first_time_pages += (0..pages[&doc])
                .filter(|&p| !st.seen.contains(doc, p))
                .count() as u64;
        }
        w
    }

    pub fn stats(&self) -> SchedulerStats {
        self.shared().lock().snapshot()
    }

    pub fn executor_info(&self) -> ExecutorInfo {
        self.shared().executor.info().clone()
    }

    /// The loop exits; queued pages are dropped; receivers see the channel close.
    pub fn shutdown(&self) {
        self.shared().shutdown();
    }
}
