//! `Pool`: the model-serving worker pool of one zone, as a stack of layers.
//!
//! A request goes through, in order:
//! 1. the zone fault switches (an injected zone failure, seed 003's trigger,
//!    or an outage: the zone stops answering, as a paused host would);
//! 2. `FailureCache` (seed 002 fix: recently failed documents rejected early);
//! 3. `ResultCache` (a hit answers without any work);
//! 4. de-duplication before admission (`InflightRegistry`; the fixes reject or
//!    attach duplicates here, without a slot);
//! 5. `AdmissionGate` (a slot, or a bounded queue, or 503), then, with a
//!    `heap`, the request's memory (or 503: out of memory, or over the
//!    memory-bounded admission's share);
//! 6. with the seed-000 defect, a worker that finds the original still running
//!    waits for its result *through the cache* while holding the slot;
//! 7. the compute task: split the document into pages, queue them on the
//!    shared GPU (`GpuScheduler`), collect, write the cache, hand the result
//!    to waiters. It is detached: when the request's deadline passes the
//!    caller gets 504 and the slot is freed, but the page work continues, as
//!    in the incident (or, with `deadline_answer: retry_after_remaining`,
//!    a 503 whose Retry-After is when the document's result is due).
//!    With a `heap`, the document's memory is held until this task ends, and
//!    each page's CPU work (`split_time`) is slowed by the collector's share.

use crate::admission::{AdmissionError, AdmissionGate};
use crate::api::{RejectReason, Reply, ResultSource};
use crate::cache::ResultCache;
use crate::config::{DeadlineAnswer, DedupMode, PageConfig, PoolConfig};
use crate::entropy::Entropy;
use crate::failure_cache::FailureCache;
use crate::heap::{Allocation, Heap};
use crate::inflight::{InflightEntry, InflightRegistry, Registration, WorkOutcome};
use crate::metrics::{Counter, Gauge, GaugeGuard, ReasonCounters};
use crate::retry_after::{self, DrainState};
use gpu_executor::{document_digest, GpuScheduler, PageSpec};
use rand::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Documents in flight per pool at most (bounds the registry).
const MAX_INFLIGHT_DOCUMENTS: usize = 100_000;
/// A document whose pages have not all come back after this has lost pages.
const COMPUTE_GIVE_UP: Duration = Duration::from_secs(120);

/// Counters of one pool.
#[derive(Default)]
pub struct PoolMetrics {
    pub requests: Counter,
    pub ok_computed: Counter,
    pub ok_cache: Counter,
    pub ok_duplicate: Counter,
    pub rejected: ReasonCounters,
    pub admitted: Counter,
    /// Requests waiting for a duplicate's result while holding a slot (seed 000 defect).
    pub waiters_holding_slot: Gauge,
    /// Duplicates waiting without a slot (fix, or the defect's live-entry path).
    pub waiters_without_slot: Gauge,
    /// Documents whose computation finished after their request had been answered 504.
    pub zombie_work: Counter,
    /// The pages of those documents: GPU work done for callers that had gone.
    pub zombie_pages: Counter,
    pub documents_computed: Counter,
    /// Compute tasks that failed (page queue overflow, lost pages, cancelled).
    pub compute_failures: Counter,
    /// Queued pages dropped because their caller had given up (zombie-work fix).
    pub pages_cancelled: Counter,
    /// Requests that got no answer because the zone was out (`zone_outage`).
    pub unanswered: Counter,
}

/// One zone's pool.
pub struct Pool {
    pub zone: String,
    cfg: PoolConfig,
    page: PageConfig,
    gate: AdmissionGate,
    inflight: InflightRegistry,
    cache: Arc<dyn ResultCache>,
    failures: FailureCache,
    gpu: GpuScheduler,
    /// Memory held by requests in flight and its collector (`pool.heap`).
    heap: Option<Heap>,
    pub metrics: PoolMetrics,
    /// Injected zone failure: share of requests failed at once (0 = healthy).
    fail_ratio: Mutex<f64>,
    /// Injected outage: the zone answers nothing until restored.
    outage: std::sync::atomic::AtomicBool,
    /// EWMA of compute time per page (µs), for a duplicate's remaining time.
    page_time_ewma_us: AtomicU64,
    /// The zone-failure and Retry-After draws.
    entropy: Entropy,
}

impl Pool {
    pub fn new(
        zone: String,
        cfg: PoolConfig,
        page: PageConfig,
        cache: Arc<dyn ResultCache>,
        failures: FailureCache,
        gpu: GpuScheduler,
        entropy: Entropy,
    ) -> Arc<Self> {
        Arc::new(Pool {
            zone,
            gate: AdmissionGate::new(cfg.slots, cfg.queue),
            inflight: InflightRegistry::new(MAX_INFLIGHT_DOCUMENTS),
            heap: cfg.heap.clone().map(Heap::new),
            cfg,
            page,
            cache,
            failures,
            gpu,
            metrics: PoolMetrics::default(),
            fail_ratio: Mutex::new(0.0),
            outage: std::sync::atomic::AtomicBool::new(false),
            page_time_ewma_us: AtomicU64::new(0),
            entropy,
        })
    }

    pub fn gate(&self) -> &AdmissionGate {
        &self.gate
    }

    pub fn gpu(&self) -> &GpuScheduler {
        &self.gpu
    }

    /// The pool's heap, when it has one.
    pub fn heap(&self) -> Option<&Heap> {
        self.heap.as_ref()
    }

    pub fn inflight_documents(&self) -> usize {
        self.inflight.len()
    }

    /// Fault: fail this share of requests at once (a failing zone).
    pub fn set_fail_ratio(&self, ratio: f64) {
        *self.fail_ratio.lock().expect("fail ratio lock") = ratio.clamp(0.0, 1.0);
    }

    pub fn fail_ratio(&self) -> f64 {
        *self.fail_ratio.lock().expect("fail ratio lock")
    }

    /// Fault: the zone stops answering (true) or answers again (false).
    pub fn set_outage(&self, out: bool) {
        self.outage.store(out, Ordering::Relaxed);
    }

    pub fn in_outage(&self) -> bool {
        self.outage.load(Ordering::Relaxed)
    }

    fn reject(&self, reason: RejectReason, retry_after: Duration) -> Reply {
        self.metrics.rejected.inc(reason);
        Reply::Overloaded {
            retry_after,
            reason,
        }
    }

    fn overloaded_advice(&self) -> Duration {
        let state = DrainState {
            queued: self.gate.queued(),
            slots: self.gate.slots(),
            mean_hold: self.gate.mean_hold(),
        };
        self.entropy
            .with(|mut r| retry_after::advise(&self.cfg.retry_after, state, &mut r))
    }

    /// The pool's recent time per page of a document (moving average).
    fn page_time(&self) -> Duration {
        Duration::from_micros(self.page_time_ewma_us.load(Ordering::Relaxed))
    }

    /// Expected remaining time of in-flight work, for a rejected duplicate.
    fn duplicate_advice(&self, entry: &InflightEntry) -> Duration {
        let expected = self.page_time() * entry.pages;
        retry_after::remaining(expected, entry.elapsed(), Duration::from_millis(1))
    }

    /// Handles one request end to end.
    pub async fn handle(self: &Arc<Self>, tenant: &str, doc: u64, pages: u32) -> Reply {
        let m = &self.metrics;
        m.requests.inc();
        let deadline = Instant::now() + self.cfg.deadline;

        if self.in_outage() {
            // Nobody answers: the caller hears nothing until it gives up, as
            // from a paused host (a gateway's remote-pool timeout is the same
            // deadline plus margin).
            m.unanswered.inc();
            tokio::time::sleep(self.cfg.deadline + crate::remote_pool::SILENCE_MARGIN).await;
            return Reply::Deadline;
        }
        let fail = self.fail_ratio();
        if fail > 0.0 && self.entropy.with(|r| r.random_bool(fail)) {
            return self.reject(RejectReason::ZoneFailure, self.overloaded_advice());
        }
        if let Some(remaining) = self.failures.check(doc) {
            return self.reject(RejectReason::RecentlyFailed, remaining);
        }
        if let Some(digest) = self.cache.get(doc).await {
            m.ok_cache.inc();
            return Reply::Ok {
                digest,
                source: ResultSource::Cache,
            };
        }

        // De-duplication before admission.
        let dedup = self.cfg.dedup;
        if dedup != DedupMode::Disabled {
            if let Some(entry) = self.inflight.lookup(doc) {
                match dedup {
                    DedupMode::RejectBeforeAdmission => {
                        let ra = self.duplicate_advice(&entry);
                        return self.reject(RejectReason::DuplicateInProgress, ra);
                    }
                    DedupMode::WaitWithoutSlot => {
                        return self.wait_without_slot(&entry, deadline).await
                    }
                    // The defect's working half: a live (not abandoned) entry is coalesced.
                    DedupMode::AbandonedDeadlineHoldsSlot if !entry.is_abandoned() => {
                        return self.wait_without_slot(&entry, deadline).await
                    }
                    // The defect: an abandoned entry is not seen as "in progress".
                    _ => {}
                }
            }
        }

        let _permit = match self.gate.acquire(deadline).await {
            Ok(p) => p,
            Err(AdmissionError::Overloaded) => {
                return self.reject(RejectReason::QueueFull, self.overloaded_advice())
            }
            Err(AdmissionError::DeadlineInQueue) => return self.deadline(),
        };
        m.admitted.inc();

        if dedup == DedupMode::AbandonedDeadlineHoldsSlot {
            if let Some(entry) = self.inflight.lookup(doc) {
                return self.wait_holding_slot(doc, &entry, deadline).await;
            }
        }

        let memory = match self.heap.as_ref().map(|h| h.allocate(pages)) {
            Some(Err(_)) => return self.reject(RejectReason::Memory, self.overloaded_advice()),
            Some(Ok(a)) => Some(a),
            None => None,
        };
        let entry = if dedup == DedupMode::Disabled {
            InflightRegistry::standalone(pages)
        } else {
            match self.inflight.register(doc, pages) {
                Registration::New(e) => e,
                // Raced with another request that registered first.
                Registration::AlreadyInFlight(existing) => {
                    return self.wait_without_slot(&existing, deadline).await
                }
                Registration::Full => {
                    return self.reject(RejectReason::RegistryFull, self.overloaded_advice())
                }
            }
        };
        self.spawn_compute(tenant.to_string(), doc, pages, entry.clone(), memory);
        match entry.wait(deadline).await {
            Some(WorkOutcome::Done(digest)) => {
                m.ok_computed.inc();
                Reply::Ok {
                    digest,
                    source: ResultSource::Computed,
                }
            }
            Some(WorkOutcome::Failed) => {
                self.reject(RejectReason::PageQueueFull, self.overloaded_advice())
            }
            None => {
                // The caller is answered; the slot is freed when `_permit` drops;
                // the page work goes on.
                self.inflight.mark_abandoned(&entry);
                if self.cfg.cancel_queued_on_deadline {
                    entry.cancel();
                    return self.deadline();
                }
                self.deadline_while_computing(&entry)
            }
        }
    }

    fn deadline(&self) -> Reply {
        self.metrics.rejected.inc(RejectReason::Deadline);
        Reply::Deadline
    }

    /// The deadline passed while `entry`'s work goes on: a 504 (the
    /// incident), or a 503 saying when the result is due (the fix).
    fn deadline_while_computing(&self, entry: &InflightEntry) -> Reply {
        match self.cfg.deadline_answer {
            DeadlineAnswer::Timeout => self.deadline(),
            DeadlineAnswer::RetryAfterRemaining => {
                let remaining = entry.remaining(self.page_time());
                let advice = retry_after::bounded(&self.cfg.retry_after, remaining);
                self.reject(RejectReason::Deadline, advice)
            }
        }
    }

    async fn wait_without_slot(&self, entry: &InflightEntry, deadline: Instant) -> Reply {
        let _g = GaugeGuard::new(&self.metrics.waiters_without_slot);
        match entry.wait(deadline).await {
            Some(WorkOutcome::Done(digest)) => {
                self.metrics.ok_duplicate.inc();
                Reply::Ok {
                    digest,
                    source: ResultSource::Duplicate,
                }
            }
            Some(WorkOutcome::Failed) => {
                self.reject(RejectReason::PageQueueFull, self.overloaded_advice())
            }
            None => self.deadline_while_computing(entry),
        }
    }

    /// Seed 000 defect: the worker avoids recomputing but waits for the
    /// original's result while holding its slot, and reads that result through
    /// the shared cache. If the cache dropped the write, nothing will come: the
    /// slot stays held until this request's deadline.
    async fn wait_holding_slot(&self, doc: u64, entry: &InflightEntry, deadline: Instant) -> Reply {
        let _g = GaugeGuard::new(&self.metrics.waiters_holding_slot);
        if entry.wait(deadline).await.is_some() {
            if let Some(digest) = self.cache.get(doc).await {
                self.metrics.ok_duplicate.inc();
                return Reply::Ok {
                    digest,
                    source: ResultSource::Cache,
                };
            }
            tokio::time::sleep_until(deadline).await;
        }
        self.deadline()
    }

    /// The detached compute task of one document.
    fn spawn_compute(
        self: &Arc<Self>,
        tenant: String,
        doc: u64,
        pages: u32,
        entry: Arc<InflightEntry>,
        memory: Option<Allocation>,
    ) {
        let pool = self.clone();
        tokio::spawn(async move {
            let outcome = pool.compute(&tenant, doc, pages, &entry).await;
            // The document's memory is live until its work has ended.
            drop(memory);
            match outcome {
                WorkOutcome::Done(digest) => {
                    pool.metrics.documents_computed.inc();
                    if entry.is_abandoned() {
                        pool.metrics.zombie_work.inc();
                        pool.metrics.zombie_pages.add(u64::from(pages));
                    }
                    // A refused write is counted by the cache itself; the result
                    // still reaches the caller and the slot-less waiters.
                    let _ = pool.cache.put(doc, digest).await;
                    pool.failures.forget(doc);
                    let per_page = entry.elapsed().as_micros() as u64 / u64::from(pages.max(1));
                    let _ = pool.page_time_ewma_us.fetch_update(
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                        |old| {
                            Some(if old == 0 {
                                per_page
                            } else {
                                old - old / 16 + per_page / 16
                            })
                        },
                    );
                }
                WorkOutcome::Failed => {
                    pool.metrics.compute_failures.inc();
                    pool.failures.record(doc);
                }
            }
            pool.inflight.complete(doc, &entry, outcome);
        });
    }

    async fn compute(
        &self,
        tenant: &str,
        doc: u64,
        pages: u32,
        entry: &InflightEntry,
    ) -> WorkOutcome {
        let (job, mut results) = self.gpu.open_job(tenant, doc);
        for page in 0..pages {
            if !self.cfg.split_time.is_zero() {
                let split = match &self.heap {
                    Some(h) => h.dilate(self.cfg.split_time),
                    None => self.cfg.split_time,
                };
                tokio::time::sleep(split + self.entropy.timer_lateness()).await;
            }
            let spec = PageSpec {
                doc_seed: doc,
                page,
                words: self.page.words,
                rounds: self.page.rounds,
            };
            if job.enqueue(spec).is_err() {
                // Seed 002: the submission fails; pages already queued are
                // still computed (orphans) and their results thrown away.
                return WorkOutcome::Failed;
            }
        }
        let mut values = vec![0u32; pages as usize];
        let collect = async {
            let mut got = 0;
            while got < pages {
                match results.recv().await {
                    Some(r) => {
                        if let Some(v) = values.get_mut(r.page as usize) {
                            *v = r.value;
                            got += 1;
                            entry.page_done();
                        }
                    }
                    None => return false,
                }
            }
            true
        };
        // An executor error loses pages; the bound keeps the entry (and its
        // waiters) from living forever. The work first when both are ready;
        // biased: an unbiased select! draws its first branch from the
        // runtime's own random seed, which a virtual run cannot replay.
        tokio::select! {
            biased;
            r = tokio::time::timeout(COMPUTE_GIVE_UP, collect) => match r {
                Ok(true) => WorkOutcome::Done(document_digest(&values)),
                _ => WorkOutcome::Failed,
            },
            _ = entry.cancelled() => {
                let dropped = job.cancel_queued();
                self.metrics.pages_cancelled.add(dropped as u64);
                WorkOutcome::Failed
            }
        }
    }
}

#[cfg(test)]
mod heap_tests;
#[cfg(test)]
mod tests;
