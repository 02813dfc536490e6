//! Executor selection, the loud CPU fallback, and the CPU executor itself.
//!
//! Uses `select_executor_with` so no test mutates the process environment.

use gpu_executor::{
    reference_page, select_executor_with, CpuExecutor, ExecError, ExecutorChoice, ExecutorKind,
    PageExecutor, PageSpec,
};

#[test]
fn auto_without_adapter_falls_back_to_cpu_with_reason() {
    let exec = select_executor_with(ExecutorChoice::Auto, true, false).expect("fallback");
    let info = exec.info();
    assert_eq!(info.kind, ExecutorKind::Cpu);
    assert!(info.fallback);
    let reason = info.fallback_reason.as_deref().expect("reason");
    assert!(reason.contains("HARNESS_FORCE_NO_ADAPTER"), "{reason}");
    assert_eq!(info.adapter, "CPU reference (no GPU adapter)");
}

#[test]
fn auto_without_adapter_but_gpu_required_is_an_error() {
    let err = select_executor_with(ExecutorChoice::Auto, true, true)
        .err()
        .expect("error");
    assert!(matches!(err, ExecError::NoAdapter(_)), "{err}");
    assert!(err.to_string().contains("HARNESS_REQUIRE_GPU"), "{err}");
}

#[test]
fn explicit_wgpu_without_adapter_is_an_error() {
    let err = select_executor_with(ExecutorChoice::Wgpu, true, false)
        .err()
        .expect("error");
    assert!(matches!(err, ExecError::NoAdapter(_)), "{err}");
}

#[test]
fn explicit_cpu_is_not_a_fallback() {
    let exec = select_executor_with(ExecutorChoice::Cpu, false, true).expect("cpu");
    assert_eq!(exec.info().kind, ExecutorKind::Cpu);
    assert!(!exec.info().fallback);
    assert!(exec.info().fallback_reason.is_none());
}

#[test]
fn executor_choice_serde_is_snake_case() {
    let c: ExecutorChoice = serde_json::from_str("\"wgpu\"").expect("parse");
    assert_eq!(c, ExecutorChoice::Wgpu);
    assert_eq!(ExecutorChoice::default(), ExecutorChoice::Auto);
    let info = CpuExecutor::new_fallback("why".into()).info().clone();
    let json = serde_json::to_value(&info).expect("json");
    assert_eq!(json["kind"], "cpu");
    assert_eq!(json["fallback_reason"], "why");
}

#[test]
fn cpu_executor_matches_reference_in_serial_and_parallel_batches() {
    let exec = CpuExecutor::new();
    let small: Vec<PageSpec> = (0..3)
        .map(|p| PageSpec {
            doc_seed: 5,
            page: p,
            words: 10,
            rounds: 2,
        })
        .collect();
    // Big enough (sum of words * rounds >= 2^20) to take the threaded path.
    let big: Vec<PageSpec> = (0..8)
        .map(|p| PageSpec {
            doc_seed: 6,
            page: p,
            words: 4096,
            rounds: 64,
        })
        .collect();
    for batch in [&small, &big] {
        let expected: Vec<u32> = batch.iter().map(reference_page).collect();
        assert_eq!(exec.compute(batch).expect("cpu"), expected);
    }
    assert!(exec.compute(&[]).expect("empty").is_empty());
}
