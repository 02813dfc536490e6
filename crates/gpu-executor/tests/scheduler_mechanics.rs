//! Queue bound, orphans, recomputes, speed factor, lanes, failures, shutdown.
//!
//! All under paused tokio time: batch ends are exact multiples of page_time.

mod common;

use common::{batches, cfg, pages, Log, PAGE_TIME};
use gpu_executor::{
    CpuExecutor, DocumentWork, ExecError, ExecutorInfo, ExecutorKind, GpuScheduler, PageExecutor,
    PageSpec, QueueFullAfter, SchedulingPolicy,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep, Instant};

fn cpu() -> Arc<CpuExecutor> {
    Arc::new(CpuExecutor::new())
}

#[tokio::test(start_paused = true)]
async fn enqueue_beyond_page_queue_is_refused() {
    let sched = GpuScheduler::start(cfg(1, 5, SchedulingPolicy::Fifo), cpu());
    let (job, _rx) = sched.open_job("t", 1);
    assert_eq!(
        job.enqueue_all(&pages(1, 7)),
        Err(QueueFullAfter { enqueued: 5 })
    );
    assert!(job.enqueue(pages(1, 1)[0]).is_err());
    assert_eq!(sched.stats().queued_pages, 5);
    // Once a page moves into a batch there is room for one more.
    sleep(PAGE_TIME / 2).await;
    assert_eq!(sched.stats().queued_pages, 4);
    assert!(sched.stats().busy);
    assert!(job.enqueue(pages(1, 1)[0]).is_ok());
    assert!(job.enqueue(pages(1, 1)[0]).is_err());
}

#[tokio::test(start_paused = true)]
async fn dropped_jobs_pages_are_still_computed_as_orphans() {
    let sched = GpuScheduler::start(cfg(2, 100, SchedulingPolicy::Fifo), cpu());
    let (job, rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 5)).expect("room");
    drop((job, rx));
    // Half a batch past the third batch's end, to avoid a tie with it.
    sleep(batches(3) + PAGE_TIME / 2).await;
    let s = sched.stats();
    assert_eq!(s.pages_computed, 5);
    assert_eq!(s.orphan_pages, 5);
    assert_eq!(s.queued_pages, 0);
    assert!(!s.busy);
}

#[tokio::test(start_paused = true)]
async fn work_for_counts_a_documents_jobs_and_its_first_computation() {
    let sched = GpuScheduler::start(cfg(2, 100, SchedulingPolicy::Fifo), cpu());
    let watched = [(1, 4)];
    let (job, rx) = sched.open_job("t", 1);
    let (other, _other_rx) = sched.open_job("t", 2);
    other.enqueue_all(&pages(2, 3)).expect("room");
    // An open job with nothing queued yet (a worker still splitting) holds
    // the whole document's first computation.
    let w = |jobs, pages, first_time_pages| DocumentWork {
        jobs,
        pages,
        first_time_pages,
    };
    assert_eq!(sched.work_for(&watched), w(1, 0, 4));
    job.enqueue_all(&pages(1, 4)).expect("room");
    assert_eq!(sched.work_for(&watched), w(1, 4, 4));
    // The client gave up: the handle is dropped, its pages are still computed (orphans).
    drop((job, rx));
    assert_eq!(sched.work_for(&watched).pages, 4);
    // 7 pages on 2 lanes, FIFO: document 1's pages are in batches 2-4.
    sleep(batches(3) + PAGE_TIME / 2).await;
    assert_eq!(sched.work_for(&watched), w(1, 1, 1));
    sleep(batches(1)).await;
    assert_eq!(sched.work_for(&watched), DocumentWork::default());
    // A recomputation of the same document is work, but not a first computation.
    let (again, _again_rx) = sched.open_job("t", 1);
    again.enqueue_all(&pages(1, 4)).expect("room");
    assert_eq!(sched.work_for(&watched), w(1, 4, 0));
}

#[tokio::test(start_paused = true)]
async fn receiver_closes_after_the_dropped_handles_last_page() {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let (job, mut rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 2)).expect("room");
    drop(job);
    let mut got = Vec::new();
    while let Some(r) = rx.recv().await {
        got.push(r.page);
    }
    assert_eq!(got, vec![0, 1]);
    assert_eq!(sched.stats().orphan_pages, 0);
}

#[tokio::test(start_paused = true)]
async fn results_are_the_reference_values() {
    let sched = GpuScheduler::start(cfg(3, 100, SchedulingPolicy::Shared), cpu());
    let (job, mut rx) = sched.open_job("t", 9);
    let specs = pages(9, 4);
    job.enqueue_all(&specs).expect("room");
    drop(job);
    while let Some(r) = rx.recv().await {
        assert_eq!(
            r.value,
            gpu_executor::reference_page(&specs[r.page as usize])
        );
    }
    assert_eq!(sched.executor_info().kind, ExecutorKind::Cpu);
}

#[tokio::test(start_paused = true)]
async fn recomputed_pages_are_counted() {
    let sched = GpuScheduler::start(cfg(4, 100, SchedulingPolicy::Fifo), cpu());
    for attempt in 0..2 {
        let (job, mut rx) = sched.open_job("t", attempt);
        job.enqueue_all(&pages(7, 3)).expect("room");
        drop(job);
        while rx.recv().await.is_some() {}
    }
    let s = sched.stats();
    assert_eq!((s.pages_computed, s.pages_recomputed), (6, 3));
}

#[tokio::test(start_paused = true)]
async fn half_speed_doubles_the_modeled_batch_time() {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let (job, mut rx) = sched.open_job("t", 1);
    let t0 = Instant::now();
    job.enqueue(pages(1, 1)[0]).expect("room");
    rx.recv().await.expect("page");
    assert_eq!(t0.elapsed(), PAGE_TIME);
    sched.set_speed_factor(0.5);
    sched.set_speed_factor(f64::NAN); // ignored
    sched.set_speed_factor(-1.0); // ignored
    job.enqueue(pages(1, 2)[1]).expect("room");
    rx.recv().await.expect("page");
    assert_eq!(t0.elapsed(), PAGE_TIME * 3);
}

#[tokio::test(start_paused = true)]
async fn zero_lanes_pause_the_gpu_until_restored() {
    let sched = GpuScheduler::start(cfg(2, 100, SchedulingPolicy::Fifo), cpu());
    sched.set_lanes(0);
    let log = Log::new();
    let (job, rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 4)).expect("room");
    drop(job);
    let done = log.collect("t", rx);
    sleep(Duration::from_secs(1)).await;
    assert_eq!(sched.stats().pages_computed, 0);
    assert_eq!(sched.stats().lanes, 0);
    sched.set_lanes(4);
    done.await.expect("collector");
    let t = Duration::from_secs(1) + PAGE_TIME;
    assert_eq!(log.times("t"), vec![t; 4]);
}

#[tokio::test(start_paused = true)]
async fn cancel_queued_drops_only_this_jobs_waiting_pages() {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let (a, mut rx_a) = sched.open_job("t", 1);
    let (b, mut rx_b) = sched.open_job("t", 2);
    a.enqueue_all(&pages(1, 3)).expect("room");
    b.enqueue_all(&pages(2, 1)).expect("room");
    sleep(PAGE_TIME / 2).await; // a's page 0 is computing now
    assert_eq!(a.cancel_queued(), 2);
    drop((a, b));
    assert_eq!(rx_a.recv().await.map(|r| r.page), Some(0));
    assert_eq!(rx_a.recv().await, None);
    assert_eq!(rx_b.recv().await.map(|r| r.page), Some(0));
    assert_eq!(sched.stats().pages_computed, 2);
}

struct Failing(ExecutorInfo);

impl PageExecutor for Failing {
    fn info(&self) -> &ExecutorInfo {
        &self.0
    }
    fn compute(&self, _pages: &[PageSpec]) -> Result<Vec<u32>, ExecError> {
        Err(ExecError::Device("simulated device loss".into()))
    }
}

#[tokio::test(start_paused = true)]
async fn failed_batches_deliver_nothing_and_are_counted() {
    let info = CpuExecutor::new().info().clone();
    let sched = GpuScheduler::start(cfg(2, 100, SchedulingPolicy::Fifo), Arc::new(Failing(info)));
    let (job, mut rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 3)).expect("room");
    drop(job);
    assert_eq!(rx.recv().await, None);
    let s = sched.stats();
    assert_eq!(
        (s.compute_errors, s.pages_failed, s.pages_computed),
        (2, 3, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_closes_receivers_and_refuses_work() {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let (job, mut rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 10)).expect("room");
    sleep(PAGE_TIME * 2 + PAGE_TIME / 2).await;
    sched.shutdown();
    let mut got = 0;
    while rx.recv().await.is_some() {
        got += 1;
    }
    assert_eq!(got, 2);
    assert!(job.enqueue(pages(1, 1)[0]).is_err());
    let (_late, mut late_rx) = sched.open_job("t", 2);
    assert_eq!(late_rx.recv().await, None);
    assert_eq!(sched.stats().queued_pages, 0);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_last_scheduler_clone_stops_the_loop() {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let (job, mut rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 10)).expect("room");
    let clone = sched.clone();
    drop(sched);
    assert!(rx.recv().await.is_some(), "a clone keeps it running");
    drop(clone);
    assert_eq!(rx.recv().await, None);
}

#[tokio::test(start_paused = true)]
async fn pacing_counts_back_to_back_batches_only_and_matches_the_model_on_a_paused_clock() {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let (job, _rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 5)).expect("room");
    sleep(batches(5) + PAGE_TIME / 2).await;
    // Batches 2-5 followed one another; the first started on an idle GPU.
    let s = sched.stats();
    let expected = (PAGE_TIME * 4).as_secs_f64();
    assert!((s.paced_target_secs - expected).abs() < 1e-9, "{s:?}");
    // A paused clock wakes exactly on time: no pacing error to report.
    assert!((s.paced_secs - expected).abs() < 1e-9, "{s:?}");
    // A batch that arrives at an idle GPU is not an interval of the GPU's pace.
    sleep(PAGE_TIME * 3).await;
    job.enqueue(pages(1, 1)[0]).expect("room");
    sleep(PAGE_TIME * 2).await;
    let s = sched.stats();
    assert_eq!(s.pages_computed, 6);
    assert!((s.paced_secs - expected).abs() < 1e-9, "{s:?}");
}

/// Batch 1 runs 0-10 ms; the test then jumps the clock to `woke_at`, as a
/// late timer would wake the loop, and returns when each page was delivered.
async fn delivered_after_a_late_wake_up(woke_at: Duration) -> (Vec<Duration>, (f64, f64)) {
    let sched = GpuScheduler::start(cfg(1, 100, SchedulingPolicy::Fifo), cpu());
    let log = Log::new();
    let (job, rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, 4)).expect("room");
    drop(job);
    let done = log.collect("t", rx);
    sleep(PAGE_TIME / 2).await;
    tokio::time::advance(woke_at - PAGE_TIME / 2).await;
    done.await.expect("collector");
    let s = sched.stats();
    (log.times("t"), (s.paced_secs, s.paced_target_secs))
}

#[tokio::test(start_paused = true)]
async fn a_late_wake_up_delays_a_batchs_results_but_not_the_next_batch() {
    let ms = Duration::from_millis;
    let (times, (run, model)) = delivered_after_a_late_wake_up(ms(13)).await;
    // The loop woke 3 ms after batch 1's end; batch 2 was queued then, so it
    // started at 10 ms, not 13 (which would have made it 13, 23, 33, 43).
    assert_eq!(times, vec![ms(13), ms(20), ms(30), ms(40)]);
    // Batches 2-4 followed one another on the model's schedule.
    let expected = (PAGE_TIME * 3).as_secs_f64();
    assert!((model - expected).abs() < 1e-9 && (run - expected).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_wake_up_more_than_a_batch_late_restarts_the_schedule_and_shows_as_slow() {
    let ms = Duration::from_millis;
    let (times, (run, model)) = delivered_after_a_late_wake_up(ms(25)).await;
    // 15 ms late, more than a 10-ms batch: batch 2 starts at 25 ms rather
    // than end at once (and batch 3 with it) to catch up.
    assert_eq!(times, vec![ms(25), ms(35), ms(45), ms(55)]);
    // The 15 ms are lost, and the pace says so: 45 ms for 30 of model.
    assert!((model - 0.030).abs() < 1e-9, "{model}");
    assert!((run - 0.045).abs() < 1e-9, "{run}");
}
