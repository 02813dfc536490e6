//! A worker's handle on one job (document): enqueue pages, cancel the rest.
//!
//! The handle does not own the pages it enqueued: dropping it leaves them
//! queued, as in the incident, where abandoned requests kept the GPU busy.

use super::queue::JobId;
use super::{QueueFull, QueueFullAfter, Shared};
use crate::page::PageSpec;
use std::sync::Arc;

/// A worker's handle on one job; Send + Sync. Dropping it keeps queued pages (orphans).
pub struct JobHandle {
    shared: Arc<Shared>,
    job: JobId,
}

impl JobHandle {
    pub(super) fn new(shared: Arc<Shared>, job: JobId) -> Self {
        JobHandle { shared, job }
    }

    /// Enqueues one page; Err(QueueFull) when page_queue pages are already queued
    /// (nothing enqueued then) or the scheduler has shut down.
    pub fn enqueue(&self, page: PageSpec) -> Result<(), QueueFull> {
        self.enqueue_all(std::slice::from_ref(&page))
            .map_err(|_| QueueFull)
    }

    /// Enqueues pages in order until the queue is full; Err carries how many were enqueued.
    pub fn enqueue_all(&self, pages: &[PageSpec]) -> Result<(), QueueFullAfter> {
        let mut st = self.shared.lock();
        let st = &mut *st;
        let Some(entry) = st.jobs.get_mut(&self.job).filter(|_| !st.shutdown) else {
            return Err(QueueFullAfter { enqueued: 0 });
        };
        let room = self.shared.page_queue.saturating_sub(st.queue.len());
        let n = room.min(pages.len());
        if n > 0 && st.queue.len() == 0 {
            // The loop starts a batch no earlier than its pages were queued.
            st.queued_since = tokio::time::Instant::now();
        }
        for spec in &pages[..n] {
            st.queue.push(self.job, &entry.tenant, *spec);
        }
        entry.pending += n;
        if n > 0 {
            self.shared.notify.notify_one();
        }
        if n < pages.len() {
            return Err(QueueFullAfter { enqueued: n });
        }
        Ok(())
    }

    /// Removes this job's pages that are still queued (not those computing);
    /// returns how many. The fix for zombie work: a caller that gave up stops
    /// costing GPU time. Their results are never delivered.
    pub fn cancel_queued(&self) -> usize {
        let mut st = self.shared.lock();
        let n = st.queue.cancel(self.job);
        if let Some(e) = st.jobs.get_mut(&self.job) {
            e.pending = e.pending.saturating_sub(n);
        }
        n
    }
}

impl Drop for JobHandle {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if let Some(e) = st.jobs.get_mut(&self.job) {
            e.handle_alive = false;
            if e.pending == 0 {
                st.jobs.remove(&self.job);
            }
        }
    }
}
