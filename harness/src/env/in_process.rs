//! The variant's system in this process, on the caller's runtime, reached
//! without a socket: how the virtual clock runs it (`base/clock.rs`).

use super::{EnvError, Target};
use crate::experiment::Variant;
use gpu_executor::PageExecutor;
use std::sync::Arc;
use sut::System;

/// The variant's whole system on the caller's runtime (virtual time): its
/// random draws from `seed`, its GPU batches computed in line, reached in
/// process. Validation refused a Redis cache before anything ran.
pub(super) async fn start(
    v: &Variant,
    executor: Arc<dyn PageExecutor>,
    seed: u64,
) -> Result<Target, EnvError> {
    let opts = sut::StartOptions {
        deterministic: Some(seed),
        ..Default::default()
    };
    let system = System::start_with(skewed_for_tests(v.system.clone()), opts, Some(executor))
        .await
        .map_err(|error| EnvError::Sut {
            name: v.name.clone(),
            error,
        })?;
    let router = sut::server::router(system.clone());
    let mut target = Target::elsewhere(
        "http://in-process".into(),
        Some(v.system.admin_token.clone()),
    );
    target.in_process = Some((crate::net::in_process::InProcess::new(router), system));
    Ok(target)
}

/// A virtual clock broken on purpose, for the test that `campaign
/// --check-real` flags a disagreement (`tests/check_real.rs`): in a debug
/// build only, `HARNESS_TEST_SKEW_VIRTUAL_GPU=F` makes the in-process
/// system's GPU F times faster than the file says, which real time does
/// not do. Said loudly; a release build ignores it.
fn skewed_for_tests(mut config: sut::SystemConfig) -> sut::SystemConfig {
    if !cfg!(debug_assertions) {
        return config;
    }
    let Some(f) = std::env::var("HARNESS_TEST_SKEW_VIRTUAL_GPU")
        .ok()
        .and_then(|f| f.parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f > 0.0)
    else {
        return config;
    };
    eprintln!("!!! TEST BUILD: HARNESS_TEST_SKEW_VIRTUAL_GPU={f}: the virtual clock's GPU is {f}x faster than the file says (a broken virtual clock, on purpose)");
    config.gpu.page_time = config.gpu.page_time.div_f64(f);
    config
}
