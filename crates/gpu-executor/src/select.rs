//! Choosing the executor at startup, and making a CPU fallback impossible to miss.
//!
//! A run whose pages silently ran on the CPU would report capacity numbers that
//! mean something else, so the fallback prints a banner on stderr as well as a
//! tracing warning, and `HARNESS_REQUIRE_GPU=1` turns it into an error (for
//! CI jobs that must exercise the GPU path).

use crate::cpu::CpuExecutor;
use crate::error::ExecError;
use crate::executor::{ExecutorChoice, PageExecutor};
use crate::wgpu_exec::WgpuExecutor;
use std::sync::Arc;

/// Env var: when `1`, behave as if no GPU adapter existed (tests of the fallback path).
pub const ENV_FORCE_NO_ADAPTER: &str = "HARNESS_FORCE_NO_ADAPTER";
/// Env var: when `1`, a CPU fallback is an error instead.
pub const ENV_REQUIRE_GPU: &str = "HARNESS_REQUIRE_GPU";

/// True when the env var is set to `1` (or `true`).
pub fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Auto: WgpuExecutor if an adapter exists, else CpuExecutor with fallback = true and a loud warning.
/// Env `HARNESS_FORCE_NO_ADAPTER=1` forces the no-adapter path; env `HARNESS_REQUIRE_GPU=1`
/// turns a fallback into an Err. Wgpu: Err if no adapter. Cpu: CpuExecutor, fallback = false.
pub fn select_executor(choice: ExecutorChoice) -> Result<Arc<dyn PageExecutor>, ExecError> {
    select_executor_with(
        choice,
        env_flag(ENV_FORCE_NO_ADAPTER),
        env_flag(ENV_REQUIRE_GPU),
    )
}

/// [`select_executor`] with the two environment switches passed explicitly
/// (tests use this so they need not mutate the process environment).
pub fn select_executor_with(
    choice: ExecutorChoice,
    force_no_adapter: bool,
    require_gpu: bool,
) -> Result<Arc<dyn PageExecutor>, ExecError> {
    let gpu = || -> Result<WgpuExecutor, ExecError> {
        if force_no_adapter {
            return Err(ExecError::NoAdapter(format!(
                "{ENV_FORCE_NO_ADAPTER}=1 forces the no-adapter path"
            )));
        }
        WgpuExecutor::new()
    };
    match choice {
        ExecutorChoice::Cpu => Ok(Arc::new(CpuExecutor::new())),
        ExecutorChoice::Wgpu => Ok(Arc::new(gpu()?)),
        ExecutorChoice::Auto => match gpu() {
            Ok(exec) => Ok(Arc::new(exec)),
            Err(err) if require_gpu => Err(ExecError::NoAdapter(format!(
                "{ENV_REQUIRE_GPU}=1 forbids the CPU fallback: {err}"
            ))),
            Err(err) => {
                let reason = match err {
                    ExecError::NoAdapter(reason) => reason,
                    other => other.to_string(),
                };
                tracing::warn!(%reason, "no GPU adapter: pages run on the CPU reference implementation");
                eprintln!(
                    "!!! NO GPU ADAPTER: pages run on the CPU reference implementation ({reason}) !!!"
                );
                Ok(Arc::new(CpuExecutor::new_fallback(reason)))
            }
        },
    }
}
