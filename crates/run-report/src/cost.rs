//! The harness's own cost over a variant, and the rule that says when it was
//! too high to trust the run.
//!
//! In the embedded environment the harness shares the machine's cores with
//! the system under test: every CPU second its load path spends is capacity
//! the system under test did not have, and an arrival sent late is load that
//! was not offered as planned. A report that hides either could show an
//! overload the harness caused, or miss one it failed to deliver. So every
//! variant records the CPU seconds of each thread group (or container), the
//! arrivals that waited and how late the arrivals were sent, and
//! [`HarnessCost::warnings`] says loudly when the harness took more than
//! [`MACHINE_SHARE_LIMIT`] of the machine or its arrival-schedule lag passed
//! [`LAG_P99_LIMIT_MS`] at the 99th percentile.

use serde::{Deserialize, Serialize};

/// Above this share of the machine (CPU seconds over wall time x CPUs) the
/// harness is said to have taken capacity from what it tests.
pub const MACHINE_SHARE_LIMIT: f64 = 0.25;
/// Above this p99 of (actual - planned) first-send time the load was not
/// delivered as planned.
pub const LAG_P99_LIMIT_MS: f64 = 5.0;

/// What a CPU figure belongs to.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CostRole {
    /// The load path: goose, the arrival scheduler, journeys, the HTTP
    /// client, the recorder and the result check.
    LoadPath,
    /// The rest of the harness: sampler, scrapes, timeline, Prometheus client.
    Harness,
    /// The system under test (its runtime, its GPU's threads, its containers).
    SystemUnderTest,
    /// CPU of threads that ended during the variant: the process total says
    /// it was spent, but not by whom.
    Unattributed,
}

impl CostRole {
    pub fn label(self) -> &'static str {
        match self {
            CostRole::LoadPath => "harness load path",
            CostRole::Harness => "harness, other",
            CostRole::SystemUnderTest => "system under test",
            CostRole::Unattributed => "unattributed (threads that ended)",
        }
    }
}

/// CPU seconds of one thread group, process or container over the variant.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuUse {
    /// e.g. `harness-load threads`, `container pool-z1`.
    pub name: String,
    pub role: CostRole,
    pub cpu_s: f64,
}

/// The harness's cost over one variant (from the load's start to its end).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct HarnessCost {
    /// Wall time the CPU figures cover.
    pub wall_s: f64,
    /// CPUs of the machine (the 100% of the machine share).
    pub cpus: usize,
    /// How the CPU was measured, e.g. "per thread from /proc/self/task".
    pub method: String,
    pub cpu: Vec<CpuUse>,
    /// What could not be measured, and why (e.g. an external target's CPU).
    #[serde(default)]
    pub not_measured: Vec<String>,
    /// Arrivals whose first attempt was sent.
    pub arrivals_sent: u64,
    /// Arrivals that waited for the in-flight cap (also `VariantRun::late_arrivals`).
    pub late_arrivals: u64,
    /// Arrivals sent more than [`LAG_P99_LIMIT_MS`] after their planned time.
    pub behind_schedule: u64,
    /// Arrival-schedule lag, actual minus planned first send (ms); `None`
    /// when nothing was sent.
    pub lag_p50_ms: Option<f64>,
    pub lag_p99_ms: Option<f64>,
    pub lag_max_ms: Option<f64>,
}

impl HarnessCost {
    /// CPU seconds of one role (0 when it has no entry).
    pub fn cpu_of(&self, role: CostRole) -> f64 {
        self.cpu
            .iter()
            .filter(|c| c.role == role)
            .map(|c| c.cpu_s)
            .sum()
    }

    /// Whether any entry of `role` was measured.
    pub fn measured(&self, role: CostRole) -> bool {
        self.cpu.iter().any(|c| c.role == role)
    }

    /// The harness's CPU seconds: its load path and the rest of it.
    pub fn harness_cpu_s(&self) -> f64 {
        self.cpu_of(CostRole::LoadPath) + self.cpu_of(CostRole::Harness)
    }

    /// The harness's share of the machine over the variant, `None` when the
    /// wall time or CPU count is unknown.
    pub fn machine_share(&self) -> Option<f64> {
        let capacity = self.wall_s * self.cpus as f64;
        (capacity > 0.0 && self.measured(CostRole::LoadPath))
            .then(|| self.harness_cpu_s() / capacity)
    }

    /// The load reached the system as planned: no arrival waited for the cap
    /// and the p99 lag is within its limit.
    pub fn delivered_as_planned(&self) -> bool {
        self.late_arrivals == 0 && self.lag_p99_ms.is_none_or(|l| l <= LAG_P99_LIMIT_MS)
    }

    /// The loud warnings this cost deserves (empty: the run can be trusted
    /// on this count).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(share) = self.machine_share().filter(|s| *s > MACHINE_SHARE_LIMIT) {
            w.push(format!(
                "the harness used {:.0}% of the machine ({:.1} CPU-s of {} CPUs x {:.1} s; limit {:.0}%): \
                 capacity it took was not available to the system under test when they share the machine",
                share * 100.0,
                self.harness_cpu_s(),
                self.cpus,
                self.wall_s,
                MACHINE_SHARE_LIMIT * 100.0
            ));
        }
        if let Some(lag) = self.lag_p99_ms.filter(|l| *l > LAG_P99_LIMIT_MS) {
            w.push(format!(
                "arrival-schedule lag p99 {lag:.1} ms (limit {LAG_P99_LIMIT_MS} ms): arrivals were sent later than planned"
            ));
        }
        if self.late_arrivals > 0 {
            w.push(format!(
                "{} arrival(s) waited for the in-flight cap",
                self.late_arrivals
            ));
        }
        if !self.delivered_as_planned() {
            w.push(format!(
                "the load was NOT delivered as planned ({} of {} arrivals sent more than {LAG_P99_LIMIT_MS} ms late); \
                 latencies are still measured from the planned times",
                self.behind_schedule, self.arrivals_sent
            ));
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(load_s: f64, other_s: f64, lag_p99: Option<f64>, late: u64) -> HarnessCost {
        HarnessCost {
            wall_s: 10.0,
            cpus: 2,
            method: "test".into(),
            cpu: vec![
                CpuUse {
                    name: "load".into(),
                    role: CostRole::LoadPath,
                    cpu_s: load_s,
                },
                CpuUse {
                    name: "other".into(),
                    role: CostRole::Harness,
                    cpu_s: other_s,
                },
                CpuUse {
                    name: "sut".into(),
                    role: CostRole::SystemUnderTest,
                    cpu_s: 12.0,
                },
            ],
            arrivals_sent: 1000,
            late_arrivals: late,
            lag_p99_ms: lag_p99,
            ..Default::default()
        }
    }

    #[test]
    fn a_cheap_punctual_harness_is_not_warned_about() {
        let c = cost(3.0, 1.0, Some(1.0), 0);
        assert_eq!(c.machine_share(), Some(0.2));
        assert!(c.delivered_as_planned());
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }

    #[test]
    fn more_than_a_quarter_of_the_machine_is_warned_about() {
        // 4 + 1.2 CPU-s of 20: 26%, the system under test's 12 s do not count.
        let c = cost(4.0, 1.2, Some(1.0), 0);
        let w = c.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("26% of the machine"), "{w:?}");
        // Exactly at the limit is not over it.
        assert!(cost(4.0, 1.0, Some(1.0), 0).warnings().is_empty());
    }

    #[test]
    fn a_late_schedule_says_the_load_was_not_delivered() {
        let c = cost(1.0, 0.0, Some(5.1), 0);
        let w = c.warnings();
        assert!(!c.delivered_as_planned());
        assert!(w.iter().any(|m| m.contains("lag p99 5.1 ms")), "{w:?}");
        assert!(w.iter().any(|m| m.contains("NOT delivered")), "{w:?}");
        assert!(cost(1.0, 0.0, Some(5.0), 0).warnings().is_empty());
        // Arrivals held back by the in-flight cap are late too.
        let capped = cost(1.0, 0.0, Some(0.5), 3);
        assert!(!capped.delivered_as_planned());
        assert!(capped.warnings().iter().any(|m| m.contains("3 arrival(s)")));
    }

    #[test]
    fn without_a_measured_load_path_there_is_no_share() {
        let mut c = cost(0.0, 0.0, None, 0);
        c.cpu.retain(|u| u.role == CostRole::SystemUnderTest);
        assert_eq!(c.machine_share(), None);
        assert!(c.delivered_as_planned());
        assert!(c.warnings().is_empty());
    }
}
