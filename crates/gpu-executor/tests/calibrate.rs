//! Calibration of an executor against the capacity model.

use gpu_executor::{
    calibrate, select_executor_with, CpuExecutor, ExecError, ExecutorChoice, PageExecutor,
    SchedulerConfig, SchedulingPolicy,
};
use std::time::Duration;

fn cfg(lanes: u32, page_time: Duration) -> SchedulerConfig {
    SchedulerConfig {
        lanes,
        page_time,
        page_queue: 10,
        policy: SchedulingPolicy::Shared,
    }
}

#[test]
fn paced_throughput_is_capped_by_page_time() {
    let exec = CpuExecutor::new();
    // Tiny pages: real compute is far below a 1 s page_time, so the model rules.
    let c = calibrate(&exec, &cfg(4, Duration::from_secs(1)), 16, 1).expect("calibration");
    assert_eq!(c.modeled_batch_secs, 1.0);
    assert!((c.pages_per_sec - 4.0).abs() < 1e-9, "{c:?}");
    assert!(c.real_pages_per_sec > c.pages_per_sec, "{c:?}");
    assert!(c.real_batch_secs > 0.0);
}

#[test]
fn slow_executor_lowers_throughput_below_the_model() {
    let exec = CpuExecutor::new();
    // page_time zero: throughput is the executor's own.
    let c = calibrate(&exec, &cfg(2, Duration::ZERO), 2048, 8).expect("calibration");
    assert!(
        (c.pages_per_sec - c.real_pages_per_sec).abs() < 1e-6,
        "{c:?}"
    );
}

#[test]
fn invalid_config_is_rejected() {
    let err = calibrate(&CpuExecutor::new(), &cfg(0, Duration::ZERO), 1, 1).expect_err("lanes 0");
    assert!(
        matches!(err, ExecError::InvalidInput(ref m) if m.contains("lanes")),
        "{err}"
    );
}

/// Prints real throughput of the CPU and (if present) GPU executors.
/// `cargo test -p gpu-executor --release --test calibrate -- --ignored --nocapture`
#[test]
#[ignore = "measurement, not a check"]
fn measure_throughput() {
    let mut execs: Vec<std::sync::Arc<dyn PageExecutor>> =
        vec![std::sync::Arc::new(CpuExecutor::new())];
    match select_executor_with(ExecutorChoice::Wgpu, false, false) {
        Ok(gpu) => execs.push(gpu),
        Err(e) => println!("no GPU executor: {e}"),
    }
    for exec in &execs {
        for (lanes, words, rounds) in [
            (1, 4096, 64),
            (4, 4096, 64),
            (16, 4096, 64),
            (4, 65_536, 256),
        ] {
            let c = calibrate(exec.as_ref(), &cfg(lanes, Duration::ZERO), words, rounds)
                .expect("calibration");
            println!(
                "{:<45} lanes={lanes:<3} words={words:<6} rounds={rounds:<4} batch={:>9.3} ms  real pages/s={:>10.1}",
                exec.info().adapter,
                c.real_batch_secs * 1e3,
                c.real_pages_per_sec
            );
        }
    }
}
