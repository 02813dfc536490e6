//! The variant's harness cost: CPU of the load path, of the rest of the
//! harness and of the system under test, late arrivals and the arrival
//! schedule's lag, measured around the load and put in the report
//! (`run_report::HarnessCost`), with its warnings printed loudly here too.
//!
//! How the system under test's CPU is read depends on where it runs:
//! embedded, its runtime's and GPU device's threads in this process (cpu.rs);
//! containers, each container's cgroup; external, not at all (said so).

use crate::base::cpu::{self, Snapshot};
use crate::env::Target;
use crate::observe::recorder::Recorder;
use run_report::{AgentRecord, CostRole, CpuUse, HarnessCost};
use tokio::time::Instant;

/// Readings taken when the load starts.
pub struct CostMeter {
    at: Instant,
    threads: std::io::Result<Snapshot>,
    in_process: bool,
    /// `(label, id, CPU seconds so far or why not)`.
    containers: Vec<(String, String, Result<f64, cpu::NoCpuAccount>)>,
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
            threads: Snapshot::now(),
            in_process: target.on_own_threads(),
            external: !target.on_own_threads() && containers.is_empty(),
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
            (Err(e), _) | (_, Err(e)) => not_measured.push(format!(
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
            cpus: crate::base::cpu::cores(),
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

/// Adds what the load agents' processes reported of their own CPU: the
/// load path of a run with `--agents`, which this process cannot read.
/// Agents on another machine (`--agent-listen`) did not take this
/// machine's capacity, so their CPU is said, not counted in its share.
pub fn add_agents(cost: &mut HarnessCost, agents: &[AgentRecord], on_this_machine: bool) {
    let reported: Vec<f64> = agents.iter().filter_map(|a| a.cpu_s).collect();
    let sum: f64 = reported.iter().sum();
    if !reported.is_empty() {
        if on_this_machine {
            cost.cpu.push(CpuUse {
                name: format!(
                    "load agents' processes ({} of {})",
                    reported.len(),
                    agents.len()
                ),
                role: CostRole::LoadPath,
                cpu_s: sum,
            });
        } else {
            cost.not_measured.push(format!(
                "the load path ran in {} agent(s) on other machines: they reported {sum:.1} CPU-s, \
                 not part of this machine's share",
                reported.len()
            ));
        }
    }
    let silent: Vec<&str> = agents
        .iter()
        .filter(|a| a.cpu_s.is_none())
        .map(|a| a.name.as_str())
        .collect();
    if !silent.is_empty() {
        cost.not_measured.push(format!(
            "the load path's CPU in {}: not reported (the agent was lost or could not read /proc)",
            silent.join(", ")
        ));
    }
}

/// Prints the cost's warnings, always (also with `--quiet`): a run the
/// harness distorted must not pass unnoticed.
pub fn warn(variant: &str, cost: &HarnessCost) {
    for w in cost.warnings() {
        eprintln!("!!! HARNESS COST ({variant}): {w}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, cpu_s: Option<f64>) -> AgentRecord {
        AgentRecord {
            name: name.into(),
            cpu_s,
            ..AgentRecord::default()
        }
    }

    fn coordinator_only() -> HarnessCost {
        HarnessCost {
            wall_s: 10.0,
            cpus: 2,
            cpu: vec![CpuUse {
                name: "other harness threads".into(),
                role: CostRole::Harness,
                cpu_s: 1.0,
            }],
            ..HarnessCost::default()
        }
    }

    #[test]
    fn local_agents_cpu_is_the_load_paths_share_of_the_machine() {
        let mut cost = coordinator_only();
        assert_eq!(cost.machine_share(), None, "no load path measured yet");
        add_agents(
            &mut cost,
            &[agent("agent-0", Some(2.5)), agent("agent-1", Some(3.5))],
            true,
        );
        assert_eq!(cost.cpu_of(CostRole::LoadPath), 6.0);
        // (6 + 1) CPU-s over 2 CPUs x 10 s: above the limit, so it warns.
        assert!((cost.machine_share().unwrap() - 0.35).abs() < 1e-9);
        assert!(cost.warnings()[0].contains("35%"), "{:?}", cost.warnings());
        assert!(cost.not_measured.is_empty(), "{:?}", cost.not_measured);
    }

    #[test]
    fn remote_agents_are_said_not_counted_and_a_silent_one_is_named() {
        let mut cost = coordinator_only();
        add_agents(
            &mut cost,
            &[
                agent("agent-0 (pod a)", Some(4.0)),
                agent("agent-1 (pod b)", None),
            ],
            false,
        );
        assert!(!cost.measured(CostRole::LoadPath));
        assert_eq!(cost.machine_share(), None);
        assert!(
            cost.not_measured[0].contains("4.0 CPU-s"),
            "{:?}",
            cost.not_measured
        );
        assert!(
            cost.not_measured[1].contains("agent-1 (pod b)"),
            "{:?}",
            cost.not_measured
        );
    }
}
