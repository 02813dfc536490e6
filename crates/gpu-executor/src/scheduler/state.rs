//! The scheduler's mutable state: queued pages, open jobs, counters.
//!
//! Everything sits behind one mutex held only for bookkeeping (never across
//! compute or sleeps), so enqueueing stays cheap while a batch runs.

use super::queue::{JobId, PageQueue};
use super::seen::{SeenPages, DEFAULT_GENERATION};
use super::{PageResult, SchedulerConfig, SchedulerStats};
use crate::page::PageSpec;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// One open job (document).
pub(crate) struct JobEntry {
    pub tenant: Arc<str>,
    /// The document the job computes (a residue query asks by document).
    pub doc_key: u64,
    pub tx: UnboundedSender<PageResult>,
    /// The JobHandle is still alive (more pages may come).
    pub handle_alive: bool,
    /// Pages queued or computing.
    pub pending: usize,
}

/// A page taken into a batch.
pub(crate) struct InFlight {
    pub job: JobId,
    pub spec: PageSpec,
}

pub(crate) struct State {
    pub queue: PageQueue,
    pub jobs: HashMap<JobId, JobEntry>,
    pub next_job: JobId,
    pub lanes: u32,
    pub speed_factor: f64,
    pub shutdown: bool,
    pub stats: SchedulerStats,
    pub seen: SeenPages,
    /// When the queue last went from empty to non-empty (tokio's clock). Only
    /// meaningful while pages are queued: every such transition is an enqueue,
    /// which sets it, so it need not be cleared when the queue empties.
    pub queued_since: tokio::time::Instant,
}

impl State {
    pub fn new(cfg: &SchedulerConfig) -> Self {
        State {
            queue: PageQueue::new(cfg.policy.clone()),
            jobs: HashMap::new(),
            next_job: 0,
            lanes: cfg.lanes,
            speed_factor: 1.0,
            shutdown: false,
            stats: SchedulerStats::default(),
            seen: SeenPages::new(DEFAULT_GENERATION),
            queued_since: tokio::time::Instant::now(),
        }
    }

    /// Takes up to `lanes` pages for the next batch (empty when idle or lanes is 0).
    pub fn take_batch(&mut self) -> Vec<InFlight> {
        let mut batch = Vec::new();
        while batch.len() < self.lanes as usize {
            let Some((job, spec)) = self.queue.pop() else {
                break;
            };
            batch.push(InFlight { job, spec });
        }
        batch
    }

    /// A page of `job` is no longer pending; forgets the job once its handle is
    /// gone and nothing is pending (dropping the sender closes the receiver).
    fn settle(&mut self, job: JobId) -> Option<&mut JobEntry> {
        let entry = self.jobs.get_mut(&job)?;
        entry.pending = entry.pending.saturating_sub(1);
        Some(entry)
    }

    fn forget_if_done(&mut self, job: JobId) {
        if self
            .jobs
            .get(&job)
            .is_some_and(|e| !e.handle_alive && e.pending == 0)
        {
            self.jobs.remove(&job);
        }
    }

    /// Delivers a successful batch's results and updates the counters.
    pub fn deliver(&mut self, batch: &[InFlight], values: &[u32]) {
        self.stats.batches += 1;
        for (item, &value) in batch.iter().zip(values) {
            self.stats.pages_computed += 1;
            if self.seen.insert(item.spec.doc_seed, item.spec.page) {
                self.stats.pages_recomputed += 1;
            }
            let result = PageResult {
                page: item.spec.page,
                value,
            };
            let Some(entry) = self.settle(item.job) else {
                self.stats.orphan_pages += 1;
                continue;
            };
            let tenant = entry.tenant.clone();
            // A closed receiver means nobody waits for this page any more: the
            // work was done for nothing, which is what an orphan is.
            let orphan = entry.tx.send(result).is_err();
            if orphan {
                self.stats.orphan_pages += 1;
            }
            *self
                .stats
                .per_tenant_pages
                .entry(tenant.to_string())
                .or_default() += 1;
            self.forget_if_done(item.job);
        }
    }

    /// Accounts for a failed batch: nothing is delivered for its pages.
    pub fn fail(&mut self, batch: &[InFlight], error: &str) {
        self.stats.batches += 1;
        self.stats.compute_errors += 1;
        self.stats.pages_failed += batch.len() as u64;
        tracing::error!(
            pages = batch.len(),
            %error,
            "GPU batch failed: its pages are not delivered (their jobs will time out)"
        );
        for item in batch {
            self.settle(item.job);
            self.forget_if_done(item.job);
        }
    }

    /// Snapshot of the counters plus the gauges.
    pub fn snapshot(&self) -> SchedulerStats {
        let mut s = self.stats.clone();
        s.queued_pages = self.queue.len() as u64;
        s.lanes = self.lanes;
        s
    }
}
