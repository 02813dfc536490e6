//! The heap through a pool, in virtual time: memory held by a document's
//! work (past its caller's deadline too) makes the collector slow every
//! other document, and a full heap refuses new ones; memory-bounded
//! admission refuses the document that would fill it instead.

use super::tests::build_pool;
use crate::api::{RejectReason, Reply};
use crate::cache::MemoryCache;
use crate::config::{CacheConfig, DedupMode, PoolConfig};
use crate::heap::HeapConfig;
use crate::pool::Pool;
use gpu_executor::SchedulingPolicy;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// 10 ms of CPU per page, 1-s deadline, a 100-MB heap of 1 MB per page.
fn gc_pool(admit_below: Option<f64>) -> Arc<Pool> {
    let cfg = PoolConfig {
        slots: 100,
        deadline: Duration::from_secs(1),
        dedup: DedupMode::Disabled,
        split_time: Duration::from_millis(10),
        heap: Some(HeapConfig {
            capacity_mb: 100.0,
            request_mb: 0.0,
            page_mb: 1.0,
            collector_cost: 0.1,
            admit_below,
        }),
        ..PoolConfig::default()
    };
    let cache = Arc::new(MemoryCache::new(&CacheConfig::default()));
    build_pool(SchedulingPolicy::Fifo, cfg, cache)
}

fn memory_refusal(r: &Reply) -> bool {
    matches!(
        r,
        Reply::Overloaded {
            reason: RejectReason::Memory,
            ..
        }
    )
}

#[tokio::test(start_paused = true)]
async fn memory_in_flight_slows_everyone_and_a_full_heap_refuses() {
    let p = gc_pool(None);
    let heap = p.heap().expect("configured").clone();
    let t0 = Instant::now();
    assert!(matches!(p.handle("t", 1, 5).await, Reply::Ok { .. }));
    let healthy = t0.elapsed();
    assert_eq!(heap.live_mb(), 0.0, "memory is freed when the work ends");

    // A 90-page document holds 90 MB: the collector takes 90 % of the CPU.
    let big = tokio::spawn({
        let p = p.clone();
        async move { p.handle("t", 2, 90).await }
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(heap.live_mb(), 90.0);
    let t1 = Instant::now();
    let slowed = p.handle("t", 3, 5).await;
    assert_eq!(slowed, Reply::Deadline, "{slowed:?} (healthy: {healthy:?})");
    assert!(t1.elapsed() > healthy * 5);
    // 90 + 5 held, and 6 more MB do not fit: out of memory at once.
    assert!(memory_refusal(&p.handle("t", 4, 6).await));
    // The big document's caller has gone, its work still holds its memory.
    assert_eq!(big.await.unwrap(), Reply::Deadline);
    assert!(heap.live_mb() >= 90.0);
    assert!(heap.collector_share() >= 0.9);
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(heap.live_mb(), 0.0);
    assert!(p.metrics.zombie_work.get() >= 1);
}

#[tokio::test(start_paused = true)]
async fn memory_bounded_admission_refuses_what_would_fill_the_heap() {
    let p = gc_pool(Some(0.5));
    assert!(memory_refusal(&p.handle("t", 2, 90).await));
    let heap = p.heap().expect("configured");
    assert_eq!(heap.live_mb(), 0.0);
    assert!(matches!(p.handle("t", 3, 40).await, Reply::Ok { .. }));
    assert_eq!(p.metrics.rejected.get(RejectReason::Memory), 1);
}

#[tokio::test(start_paused = true)]
async fn without_a_heap_nothing_is_slowed_or_refused() {
    let cfg = PoolConfig {
        slots: 100,
        deadline: Duration::from_secs(1),
        dedup: DedupMode::Disabled,
        split_time: Duration::from_millis(10),
        ..PoolConfig::default()
    };
    let p = build_pool(
        SchedulingPolicy::Fifo,
        cfg,
        Arc::new(MemoryCache::new(&CacheConfig::default())),
    );
    assert!(p.heap().is_none());
    // 50 pages: 0.5 s of CPU, undisturbed.
    assert!(matches!(p.handle("t", 2, 50).await, Reply::Ok { .. }));
}
