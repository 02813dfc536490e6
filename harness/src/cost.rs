//! The variant's harness cost: CPU of the load path, of the rest of the
//! harness and of the system under test, late arrivals and the arrival
//! schedule's lag, measured around the load and put in the report
//! (`run_report::HarnessCost`), with its warnings printed loudly here too.
//!
//! How the system under test's CPU is read depends on where it runs:
//! embedded, its runtime's and GPU device's threads in this process (cpu.rs);
//! containers, each container's cgroup; external, not at all (said so).

use crate::cpu::{self, Snapshot};
use crate::environment::Target;
use crate::recorder::Recorder;
use run_report::{CostRole, CpuUse, HarnessCost};
use tokio::time::Instant;

/// Readings taken when the load starts.
pub struct CostMeter {
    at: Instant,
    threads: Result<Snapshot, String>,
    in_process: bool,
    /// `(label, id, CPU seconds so far or why not)`.
    containers: Vec<(String, String, Result<f64, String>)>,
    external: bool,
    redis_child: bool,
}

impl CostMeter {
    pub fn start(target: &Target) -> CostMeter {
        let containers = target
            .container_ids()
            .into_iter()
            .map(|(label, id)| {
                let r = cpu::container_cpu_s(&id);
                (label, id, r)
            })
            .collect::<Vec<_>>();
        CostMeter {
            at: Instant::now(),
            threads: Snapshot::now().map_err(|e| format!("/proc/self/task unreadable: {e}")),
            in_process: target.in_process(),
            external: !target.in_process() && containers.is_empty(),
            containers,
            redis_child: target.runs_redis_child(),
        }
    }

    /// The cost from the start to now.
    pub fn finish(self, recorder: &Recorder) -> HarnessCost {
        let wall_s = self.at.elapsed().as_secs_f64();
        let mut cpu = Vec::new();
        let mut not_measured = Vec::new();
        let mut method = Vec::new();
        match (self.threads, Snapshot::now()) {
            (Ok(a), Ok(b)) => {
                let group = if self.in_process {
                    cpu::embedded_group
                } else {
                    cpu::harness_only_group
                };
                cpu.extend(b.since(&a, group));
                method.push(
                    "this process per thread from /proc/self/task/*/stat, grouped by thread name",
                );
            }
            (Err(e), _) => not_measured.push(format!("the harness's CPU: {e}")),
            (_, Err(e)) => not_measured.push(format!(
                "the harness's CPU: /proc/self/task unreadable: {e}"
            )),
        }
        for (label, id, before) in self.containers {
            match (before, cpu::container_cpu_s(&id)) {
                (Ok(a), Ok(b)) => cpu.push(CpuUse {
                    name: label,
                    role: CostRole::SystemUnderTest,
                    cpu_s: (b - a).max(0.0),
                }),
                (Err(e), _) | (_, Err(e)) => not_measured.push(format!("{label}: {e}")),
            }
        }
        if self.external {
            not_measured.push(
                "the system under test's CPU: an external target runs elsewhere (only the harness is measured)"
                    .into(),
            );
        } else if !self.in_process {
            method.push("the containers from their cgroup CPU account (what docker stats reads)");
        }
        if self.redis_child {
            not_measured.push(
                "the system under test's redis-server (a child process) is not counted".into(),
            );
        }
        method.dedup();
        let lag = recorder.schedule_lag();
        HarnessCost {
            wall_s,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            method: method.join("; "),
            cpu,
            not_measured,
            arrivals_sent: lag.sent,
            late_arrivals: recorder.late_arrivals(),
            behind_schedule: lag.behind,
            lag_p50_ms: lag.p50_ms,
            lag_p99_ms: lag.p99_ms,
            lag_max_ms: lag.max_ms,
        }
    }
}

/// Prints the cost's warnings, always (also with `--quiet`): a run the
/// harness distorted must not pass unnoticed.
pub fn warn(variant: &str, cost: &HarnessCost) {
    for w in cost.warnings() {
        eprintln!("!!! HARNESS COST ({variant}): {w}");
    }
}
