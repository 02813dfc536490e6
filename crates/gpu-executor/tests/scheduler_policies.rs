//! Scheduling policies under paused tokio time with the CPU executor.
//!
//! Assertions are on completion order and virtual time (multiples of
//! page_time), never on wall-clock thresholds, so they hold on any machine.

mod common;

use common::{batches, cfg, pages, Log};
use gpu_executor::{CpuExecutor, GpuScheduler, SchedulingPolicy};
use std::sync::Arc;

/// A 500-page document of tenant "big", then 3 pages of tenant "small".
async fn huge_then_small(policy: SchedulingPolicy) -> (Log, GpuScheduler) {
    let sched = GpuScheduler::start(cfg(4, 1000, policy), Arc::new(CpuExecutor::new()));
    let log = Log::new();
    let (big, rx_big) = sched.open_job("big", 1);
    big.enqueue_all(&pages(1, 500)).expect("room");
    let (small, rx_small) = sched.open_job("small", 2);
    small.enqueue_all(&pages(2, 3)).expect("room");
    // Dropping the handles lets each receiver close after its last page.
    drop((big, small));
    let h = [log.collect("big", rx_big), log.collect("small", rx_small)];
    for j in h {
        j.await.expect("collector");
    }
    (log, sched)
}

#[tokio::test(start_paused = true)]
async fn fifo_small_tenant_waits_for_the_whole_huge_document() {
    let (log, sched) = huge_then_small(SchedulingPolicy::Fifo).await;
    let big = log.times("big");
    let small = log.times("small");
    assert_eq!((big.len(), small.len()), (500, 3));
    let big_last = *big.iter().max().expect("big");
    assert!(
        small.iter().all(|t| *t > big_last),
        "small finished before big"
    );
    // 500 pages / 4 lanes = 125 batches, then one more for the small tenant.
    assert_eq!(big_last, batches(125));
    assert_eq!(small, vec![batches(126); 3]);
    let stats = sched.stats();
    assert_eq!(stats.pages_computed, 503);
    assert_eq!(stats.batches, 126);
    assert_eq!(stats.per_tenant_pages.get("big"), Some(&500));
    assert_eq!(stats.per_tenant_pages.get("small"), Some(&3));
}

#[tokio::test(start_paused = true)]
async fn tenant_fair_share_serves_the_small_tenant_within_a_few_batches() {
    let policy = SchedulingPolicy::TenantFairShare { max_share: 0.5 };
    let (log, _sched) = huge_then_small(policy).await;
    let small = log.times("small");
    assert_eq!(small.len(), 3);
    assert!(
        small.iter().all(|t| *t <= batches(2)),
        "small tenant waited too long: {small:?}"
    );
    // Work-conserving: the big document still finishes in the minimum time.
    assert_eq!(log.times("big").iter().max(), Some(&batches(126)));
}

#[tokio::test(start_paused = true)]
async fn shared_round_robins_over_jobs() {
    let sched = GpuScheduler::start(
        cfg(1, 100, SchedulingPolicy::Shared),
        Arc::new(CpuExecutor::new()),
    );
    let log = Log::new();
    let mut collectors = Vec::new();
    for (doc, tag) in [(1, "a"), (2, "b"), (3, "c")] {
        let (job, rx) = sched.open_job("t", doc);
        job.enqueue_all(&pages(doc, 3)).expect("room");
        collectors.push(log.collect(tag, rx));
    }
    for c in collectors {
        c.await.expect("collector");
    }
    let order: Vec<(&str, u32)> = log.entries().iter().map(|d| (d.tag, d.page)).collect();
    assert_eq!(
        order,
        vec![
            ("a", 0),
            ("b", 0),
            ("c", 0),
            ("a", 1),
            ("b", 1),
            ("c", 1),
            ("a", 2),
            ("b", 2),
            ("c", 2),
        ]
    );
    let times: Vec<_> = log.entries().iter().map(|d| d.at).collect();
    assert_eq!(times, (1..=9).map(batches).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn shared_slows_everyone_when_a_huge_document_arrives() {
    // Processor sharing: the small job's 3 pages interleave with the huge one's,
    // so they take 3 batches' worth of turns each, not 1.
    let sched = GpuScheduler::start(
        cfg(1, 1000, SchedulingPolicy::Shared),
        Arc::new(CpuExecutor::new()),
    );
    let log = Log::new();
    let (big, rx_big) = sched.open_job("big", 1);
    big.enqueue_all(&pages(1, 100)).expect("room");
    let (small, rx_small) = sched.open_job("small", 2);
    small.enqueue_all(&pages(2, 3)).expect("room");
    drop((big, small));
    let small_done = log.collect("small", rx_small);
    let _big_done = log.collect("big", rx_big);
    small_done.await.expect("collector");
    assert_eq!(log.times("small"), vec![batches(2), batches(4), batches(6)]);
}
