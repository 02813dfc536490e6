//! The scheduler against the real clock: its pace over many batches.
//!
//! Bounds are generous (the host may be busy); what they tell apart is a
//! schedule that keeps the model from one that loses time on every batch.

mod common;

use common::pages;
use gpu_executor::{
    CpuExecutor, ExecError, ExecutorInfo, GpuScheduler, PageExecutor, PageSpec, SchedulerConfig,
    SchedulingPolicy,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn one_lane(page_time: Duration) -> SchedulerConfig {
    SchedulerConfig {
        lanes: 1,
        page_time,
        page_queue: 10_000,
        policy: SchedulingPolicy::Fifo,
    }
}

/// Computes every batch for real, then sleeps: an executor slower than its model.
struct Slow(CpuExecutor, Duration);

impl PageExecutor for Slow {
    fn info(&self) -> &ExecutorInfo {
        self.0.info()
    }
    fn compute(&self, pages: &[PageSpec]) -> Result<Vec<u32>, ExecError> {
        std::thread::sleep(self.1);
        self.0.compute(pages)
    }
}

/// Enqueues `n` one-page batches at once; returns the seconds from the first
/// result to the last, and the scheduler's own (paced, model) seconds.
async fn run_back_to_back(sched: &GpuScheduler, n: u32) -> (f64, f64, f64) {
    let (job, mut rx) = sched.open_job("t", 1);
    job.enqueue_all(&pages(1, n)).expect("room");
    drop(job);
    rx.recv().await.expect("first page");
    let first = Instant::now();
    let mut got = 1;
    while rx.recv().await.is_some() {
        got += 1;
    }
    assert_eq!(got, n);
    let s = sched.stats();
    (
        first.elapsed().as_secs_f64(),
        s.paced_secs,
        s.paced_target_secs,
    )
}

#[tokio::test]
async fn a_saturated_gpu_delivers_its_modeled_rate_on_a_real_clock() {
    // 4-ms batches: when each batch started at the loop's wake-up, tokio's
    // 1-ms tick made them last about 5 ms (some 80 % of the model's rate);
    // on the absolute schedule 299 intervals take 1.196 s.
    let page_time = Duration::from_millis(4);
    let sched = GpuScheduler::start(one_lane(page_time), Arc::new(CpuExecutor::new()));
    let n = 300;
    let (secs, run, model) = run_back_to_back(&sched, n).await;
    let modeled = page_time.as_secs_f64() * f64::from(n - 1);
    assert!(
        secs < modeled * 1.1,
        "{n} batches of {page_time:?} took {secs:.3} s for {modeled:.3} s modeled"
    );
    assert!(
        run < model * 1.1,
        "paced {run:.3} s for {model:.3} s modeled"
    );
}

#[tokio::test]
async fn an_executor_slower_than_the_model_shows_as_a_slow_gpu() {
    let page_time = Duration::from_millis(5);
    let slow = Slow(CpuExecutor::new(), Duration::from_millis(20));
    let sched = GpuScheduler::start(one_lane(page_time), Arc::new(slow));
    let (secs, run, model) = run_back_to_back(&sched, 12).await;
    // Each batch lasts as long as its compute (>= 20 ms), so 11 intervals
    // take >= 220 ms ...
    assert!(secs >= 0.22, "{secs}");
    // ... and the pace is measured against the 5 ms of the model, not the
    // compute: four times slower (at least twice, to leave room).
    assert!((model - 0.055).abs() < 1e-9, "{model}");
    assert!(
        run >= 2.0 * model,
        "paced {run:.3} s for {model:.3} s modeled"
    );
}
