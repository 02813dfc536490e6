//! The seed-000 mechanisms end to end through a pool, in virtual time: the
//! dedup defect makes retries of one slow document hold slots until unrelated
//! requests are rejected; the fixes do not. A lossy cache turns a finished
//! document into a recomputation.

use crate::api::{RejectReason, Reply};
use crate::cache::{MemoryCache, ResultCache};
use crate::config::{
    CacheConfig, DeadlineAnswer, DedupMode, OnFull, PageConfig, PoolConfig, RetryAfterMode,
};
use crate::failure_cache::FailureCache;
use crate::pool::Pool;
use gpu_executor::{CpuExecutor, GpuScheduler, SchedulerConfig, SchedulingPolicy};
use std::sync::Arc;
use std::time::Duration;

const SLOW_DOC: u64 = 1000;
const SLOW_PAGES: u32 = 100; // 100 pages x 10 ms = 1 s of GPU, deadline 100 ms

/// A pool on one GPU lane of 10 ms per page (1 s for the slow document).
pub(super) fn build_pool(
    policy: SchedulingPolicy,
    cfg: PoolConfig,
    cache: Arc<dyn ResultCache>,
) -> Arc<Pool> {
    let gpu = GpuScheduler::start(
        SchedulerConfig {
            lanes: 1,
            page_time: Duration::from_millis(10),
            page_queue: 10_000,
            policy,
        },
        Arc::new(CpuExecutor::new()),
    );
    let page = PageConfig {
        words: 16,
        rounds: 1,
    };
    Pool::new(
        "z1".into(),
        cfg,
        page,
        cache,
        FailureCache::new(Duration::ZERO, 10),
        gpu,
        Default::default(),
    )
}

fn pool(dedup: DedupMode, cache: Arc<dyn ResultCache>) -> Arc<Pool> {
    let cfg = PoolConfig {
        slots: 4,
        queue: 0,
        deadline: Duration::from_millis(100),
        retry_after: RetryAfterMode::Fixed {
            after: Duration::from_secs(5),
        },
        dedup,
        ..PoolConfig::default()
    };
    build_pool(SchedulingPolicy::Shared, cfg, cache)
}

fn lossy_full_cache() -> Arc<MemoryCache> {
    Arc::new(MemoryCache::new(&CacheConfig {
        capacity: 1,
        on_full: OnFull::AckAndDrop,
        drop_ratio: 1.0,
        ..CacheConfig::default()
    }))
}

/// First request of the slow document times out; then `retries` retries
/// arrive; returns the unrelated request's reply and the slots held by waiters.
async fn storm(p: &Arc<Pool>, retries: usize) -> (Reply, i64, Vec<tokio::task::JoinHandle<Reply>>) {
    let first = p.handle("t1", SLOW_DOC, SLOW_PAGES).await;
    assert_eq!(
        first,
        Reply::Deadline,
        "the slow document must miss its deadline"
    );
    let mut waiting = Vec::new();
    for _ in 0..retries {
        let p = p.clone();
        waiting.push(tokio::spawn(async move {
            p.handle("t1", SLOW_DOC, SLOW_PAGES).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let holding = p.metrics.waiters_holding_slot.get();
    let unrelated = p.handle("t2", 7, 1).await;
    (unrelated, holding, waiting)
}

#[tokio::test(start_paused = true)]
async fn defect_retries_of_one_slow_document_hold_every_slot() {
    let cache = lossy_full_cache();
    cache.fill_to_limit().await.unwrap();
    let p = pool(DedupMode::AbandonedDeadlineHoldsSlot, cache);
    let (unrelated, holding, waiting) = storm(&p, 4).await;
    assert_eq!(holding, 4, "each retry holds a slot while it waits");
    assert_eq!(p.gate().busy(), 4);
    assert!(
        matches!(
            unrelated,
            Reply::Overloaded {
                reason: RejectReason::QueueFull,
                ..
            }
        ),
        "unrelated request must be rejected: {unrelated:?}"
    );
    // The waiters end at their deadline: the original finishes later and its
    // cache write is dropped anyway.
    for w in waiting {
        assert_eq!(w.await.unwrap(), Reply::Deadline);
    }
}

#[tokio::test(start_paused = true)]
async fn fix_reject_before_admission_keeps_slots_free() {
    let cache = lossy_full_cache();
    let p = pool(DedupMode::RejectBeforeAdmission, cache);
    let (unrelated, holding, waiting) = storm(&p, 4).await;
    assert_eq!(holding, 0);
    for w in waiting {
        let r = w.await.unwrap();
        assert!(
            matches!(
                r,
                Reply::Overloaded {
                    reason: RejectReason::DuplicateInProgress,
                    ..
                }
            ),
            "{r:?}"
        );
    }
    assert!(
        !matches!(
            unrelated,
            Reply::Overloaded {
                reason: RejectReason::QueueFull,
                ..
            }
        ),
        "unrelated request must get a slot: {unrelated:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn fix_wait_without_slot_hands_the_result_over() {
    let cache = lossy_full_cache();
    cache.fill_to_limit().await.unwrap();
    let p = pool(DedupMode::WaitWithoutSlot, cache);
    let first = p.handle("t1", SLOW_DOC, SLOW_PAGES).await;
    assert_eq!(first, Reply::Deadline);
    // A retry with a deadline of 100 ms attaches; one arriving near the end gets the result.
    tokio::time::sleep(Duration::from_millis(850)).await;
    let r = p.handle("t1", SLOW_DOC, SLOW_PAGES).await;
    let expected = gpu_executor::reference_document(SLOW_DOC, SLOW_PAGES, 16, 1);
    assert_eq!(
        r,
        Reply::Ok {
            digest: expected,
            source: crate::ResultSource::Duplicate
        }
    );
    assert_eq!(p.metrics.waiters_holding_slot.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn lossy_cache_forces_recomputation() {
    let cache = lossy_full_cache();
    cache.fill_to_limit().await.unwrap();
    let p = pool(DedupMode::RejectBeforeAdmission, cache.clone());
    let r1 = p.handle("t1", 5, 2).await;
    assert!(r1.is_ok());
    let r2 = p.handle("t1", 5, 2).await;
    assert_eq!(r1, r2, "same digest");
    assert_eq!(
        cache.stats().writes_lost,
        2,
        "both writes acknowledged and lost"
    );
    assert_eq!(
        p.gpu().stats().pages_recomputed,
        2,
        "the second request recomputed both pages"
    );
}

#[tokio::test(start_paused = true)]
async fn sized_cache_serves_the_retry() {
    let cache = Arc::new(MemoryCache::new(&CacheConfig {
        capacity: 100,
        on_full: OnFull::Error,
        ..CacheConfig::default()
    }));
    let p = pool(DedupMode::RejectBeforeAdmission, cache.clone());
    assert!(p.handle("t1", 5, 2).await.is_ok());
    let r = p.handle("t1", 5, 2).await;
    assert!(
        matches!(
            r,
            Reply::Ok {
                source: crate::ResultSource::Cache,
                ..
            }
        ),
        "{r:?}"
    );
    assert_eq!(p.gpu().stats().pages_recomputed, 0);
}

/// Seed 003: without the fix a zone keeps computing work whose caller has gone
/// (zombie work); with `cancel_queued_on_deadline` the queued pages are dropped.
async fn zombie_run(cancel: bool) -> Arc<Pool> {
    let cfg = PoolConfig {
        slots: 100,
        deadline: Duration::from_millis(100),
        dedup: DedupMode::Disabled,
        cancel_queued_on_deadline: cancel,
        ..PoolConfig::default()
    };
    let cache = Arc::new(MemoryCache::new(&CacheConfig::default()));
    let p = build_pool(SchedulingPolicy::Fifo, cfg, cache);
    // 20 one-page requests at once: 200 ms of GPU for a 100 ms deadline.
    let mut reqs = Vec::new();
    for d in 0..20u64 {
        let p = p.clone();
        reqs.push(tokio::spawn(async move { p.handle("t", d, 1).await }));
    }
    for r in reqs {
        r.await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    p
}

#[tokio::test(start_paused = true)]
async fn defect_zone_serves_callers_that_have_gone() {
    let p = zombie_run(false).await;
    assert!(
        p.metrics.zombie_work.get() >= 5,
        "zombie work: {}",
        p.metrics.zombie_work.get()
    );
    assert_eq!(
        p.gpu().stats().pages_computed,
        20,
        "every page computed, answered or not"
    );
    assert_eq!(p.metrics.pages_cancelled.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn fix_drops_queued_work_of_callers_that_have_gone() {
    let p = zombie_run(true).await;
    // Only queued pages are dropped: the one page computing (1 lane) when a
    // deadline passes may still finish for nobody.
    assert!(
        p.metrics.zombie_work.get() <= 1,
        "zombie work: {}",
        p.metrics.zombie_work.get()
    );
    assert!(
        p.metrics.pages_cancelled.get() >= 5,
        "cancelled: {}",
        p.metrics.pages_cancelled.get()
    );
    assert!(p.gpu().stats().pages_computed < 20);
}

/// Seed 000 follow-up 4: a request whose deadline passes while its document
/// is computed is told when the result is due, from the document's own
/// progress, and a retry then finds it in the cache; the incident's pool
/// answers 504 and leaves the client to its own backoff.
#[tokio::test(start_paused = true)]
async fn fix_deadline_answer_says_when_the_result_is_due() {
    let cfg = PoolConfig {
        slots: 4,
        deadline: Duration::from_millis(100),
        retry_after: RetryAfterMode::Estimated {
            jitter: 0.5,
            min: Duration::from_millis(20),
            max: Duration::from_secs(2),
        },
        dedup: DedupMode::WaitWithoutSlot,
        deadline_answer: DeadlineAnswer::RetryAfterRemaining,
        ..PoolConfig::default()
    };
    let cache = Arc::new(MemoryCache::new(&CacheConfig::default()));
    let p = build_pool(SchedulingPolicy::Shared, cfg, cache);
    // 100 pages x 10 ms on one lane: about 10 pages done at the 100 ms
    // deadline, so about 900 ms to go.
    let advice = |r: Reply| match r {
        Reply::Overloaded {
            retry_after,
            reason: RejectReason::Deadline,
        } => retry_after,
        other => panic!("expected a 503 with advice, got {other:?}"),
    };
    let first = advice(p.handle("t1", SLOW_DOC, SLOW_PAGES).await);
    assert!(
        (Duration::from_millis(700)..=Duration::from_millis(1100)).contains(&first),
        "{first:?}"
    );
    // A duplicate waits without a slot and is told the rest.
    let dup = advice(p.handle("t1", SLOW_DOC, SLOW_PAGES).await);
    assert!(
        (Duration::from_millis(600)..=Duration::from_millis(1000)).contains(&dup),
        "{dup:?}"
    );
    // Honouring the advice finds the result.
    tokio::time::sleep(dup + Duration::from_millis(50)).await;
    assert!(
        matches!(p.handle("t1", SLOW_DOC, SLOW_PAGES).await, Reply::Ok { .. }),
        "the result is due when the advice said"
    );
    assert_eq!(p.gpu().stats().pages_recomputed, 0);
}
