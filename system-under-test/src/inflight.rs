//! `InflightRegistry`: the de-duplication layer's memory of work in progress.
//!
//! One entry per document being computed. Its watch channel carries the result
//! to duplicates that attach to it. The seed-000 defect lives here as the
//! `abandoned` flag: when the original request's deadline expires the entry is
//! marked abandoned although the page work goes on, and the pool's defective
//! mode then stops treating it as "in progress" at admission.
//!
//! Bound: at most `capacity` entries; registering beyond it fails (the pool
//! answers 503), so a flood of distinct documents cannot grow memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How the work of one document ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkOutcome {
    /// Computed; the document digest.
    Done(u64),
    /// Failed (queue overflow, executor error): no result.
    Failed,
}

/// Work in progress for one document.
#[derive(Debug)]
pub struct InflightEntry {
    pub started: Instant,
    /// Pages of the document, to estimate its remaining time.
    pub pages: u32,
    /// Pages computed so far: the document's own progress, for a remaining
    /// time that reflects the share of the GPU it actually gets.
    pages_done: AtomicU32,
    abandoned: AtomicBool,
    done: watch::Sender<Option<WorkOutcome>>,
    /// Set when the work should stop (the caller gave up and the pool drops zombie work).
    cancel: watch::Sender<bool>,
}

impl InflightEntry {
    /// The original request's deadline has expired (the work itself continues).
    pub fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Waits for the outcome until `deadline`; None if the deadline came first.
    pub async fn wait(&self, deadline: Instant) -> Option<WorkOutcome> {
        let mut rx = self.done.subscribe();
        let r = tokio::time::timeout_at(deadline, rx.wait_for(|v| v.is_some())).await;
        match r {
            Ok(Ok(v)) => *v,
            // Sender dropped without an outcome: treat as failed.
            Ok(Err(_)) => Some(WorkOutcome::Failed),
            Err(_) => None,
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// One more of the document's pages is computed.
    pub fn page_done(&self) {
        self.pages_done.fetch_add(1, Ordering::Relaxed);
    }

    /// Estimated time until the document's work is done. From its own
    /// progress once a page is computed (a large document on a shared or
    /// fair-shared GPU runs much slower than the pool's average page time
    /// says); before that from `per_page`, the pool's recent time per page.
    pub fn remaining(&self, per_page: Duration) -> Duration {
        let done = self.pages_done.load(Ordering::Relaxed).min(self.pages);
        let elapsed = self.elapsed();
        if done == 0 {
            // No page yet: the duplicate's estimate, from the pool's average.
            return crate::retry_after::remaining(per_page * self.pages, elapsed, Duration::ZERO);
        }
        elapsed.mul_f64(f64::from(self.pages - done) / f64::from(done))
    }

    /// Asks the compute task to drop its queued work.
    pub fn cancel(&self) {
        self.cancel.send_replace(true);
    }

    /// Resolves when `cancel` was called.
    pub async fn cancelled(&self) {
        let mut rx = self.cancel.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}

/// What [`InflightRegistry::register`] did for a document.
#[derive(Debug)]
pub enum Registration {
    /// New work, registered: the caller computes it and completes the entry.
    New(Arc<InflightEntry>),
    /// The document is already in flight: the caller waits on this entry
    /// instead of computing it again.
    AlreadyInFlight(Arc<InflightEntry>),
    /// Too many documents in flight: nothing registered, the caller refuses.
    Full,
}

/// Documents being computed right now.
pub struct InflightRegistry {
    map: Mutex<HashMap<u64, Arc<InflightEntry>>>,
    capacity: usize,
}

impl InflightRegistry {
    pub fn new(capacity: usize) -> Self {
        InflightRegistry {
            map: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// The entry for a document, if it is being computed.
    pub fn lookup(&self, doc: u64) -> Option<Arc<InflightEntry>> {
        self.map.lock().expect("inflight lock").get(&doc).cloned()
    }

    /// Registers new work for `doc`, or answers the entry already in flight
    /// for it, or that the registry is full.
    pub fn register(&self, doc: u64, pages: u32) -> Registration {
        let mut map = self.map.lock().expect("inflight lock");
        if let Some(e) = map.get(&doc) {
            return Registration::AlreadyInFlight(e.clone());
        }
        if map.len() >= self.capacity {
            return Registration::Full;
        }
        let entry = Self::standalone(pages);
        map.insert(doc, entry.clone());
        Registration::New(entry)
    }

    /// A fresh entry; for work that is not de-duplicated (dedup off) it is
    /// never put in the map.
    pub fn standalone(pages: u32) -> Arc<InflightEntry> {
        let (tx, _rx) = watch::channel(None);
        Arc::new(InflightEntry {
            started: Instant::now(),
            pages,
            pages_done: AtomicU32::new(0),
            abandoned: AtomicBool::new(false),
            done: tx,
            cancel: watch::channel(false).0,
        })
    }

    /// Seed-000 defect hook: the original request gave up at its deadline.
    pub fn mark_abandoned(&self, entry: &InflightEntry) {
        entry.abandoned.store(true, Ordering::Release);
    }

    /// The work ended: remove the entry and hand the outcome to every waiter.
    pub fn complete(&self, doc: u64, entry: &Arc<InflightEntry>, outcome: WorkOutcome) {
        let mut map = self.map.lock().expect("inflight lock");
        if map.get(&doc).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            map.remove(&doc);
        }
        drop(map);
        entry.done.send_replace(Some(outcome));
    }

    pub fn len(&self) -> usize {
        self.map.lock().expect("inflight lock").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(r: Registration) -> Arc<InflightEntry> {
        match r {
            Registration::New(e) => e,
            other => panic!("expected new work, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn waiter_gets_the_outcome() {
        let reg = Arc::new(InflightRegistry::new(10));
        let e = new(reg.register(7, 3));
        let Registration::AlreadyInFlight(dup) = reg.register(7, 3) else {
            panic!("a second registration must find the first");
        };
        assert!(Arc::ptr_eq(&e, &dup));
        let waiter = {
            let dup = dup.clone();
            tokio::spawn(async move { dup.wait(Instant::now() + Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        reg.complete(7, &e, WorkOutcome::Done(42));
        assert_eq!(waiter.await.unwrap(), Some(WorkOutcome::Done(42)));
        assert!(reg.lookup(7).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn waiter_times_out_and_abandon_flag_is_visible() {
        let reg = InflightRegistry::new(10);
        let e = new(reg.register(1, 1));
        assert!(!e.is_abandoned());
        reg.mark_abandoned(&e);
        assert!(reg.lookup(1).unwrap().is_abandoned());
        let r = e.wait(Instant::now() + Duration::from_millis(50)).await;
        assert_eq!(r, None);
    }

    #[test]
    fn bounded() {
        let reg = InflightRegistry::new(2);
        new(reg.register(1, 1));
        new(reg.register(2, 1));
        assert!(matches!(reg.register(3, 1), Registration::Full));
    }

    #[tokio::test(start_paused = true)]
    async fn remaining_follows_the_documents_own_progress() {
        let reg = InflightRegistry::new(10);
        let e = new(reg.register(7, 100));
        // No page yet: the pool's average page time, less what has passed.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            e.remaining(Duration::from_millis(5)),
            Duration::from_millis(300)
        );
        assert_eq!(e.remaining(Duration::from_millis(1)), Duration::ZERO);
        // 10 of 100 pages in 1 s: 9 s to go, whatever the pool's average says.
        tokio::time::sleep(Duration::from_millis(800)).await;
        for _ in 0..10 {
            e.page_done();
        }
        assert_eq!(
            e.remaining(Duration::from_millis(1)),
            Duration::from_secs(9)
        );
        for _ in 0..95 {
            e.page_done();
        }
        assert_eq!(e.remaining(Duration::from_millis(1)), Duration::ZERO);
    }
}
