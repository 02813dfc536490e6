//! Expectations over runs: the share of runs with a verdict or a condition,
//! and a median, minimum or maximum. What must hold in every run stays a
//! per-run expectation; what depends on chaos (how many waves, an edge
//! verdict) is stated here, over the campaign's runs.

use super::aggregate::value_of;
use super::model::{counted_runs, CampaignExpectation, CampaignRun, JudgedRun, OverRuns};
use crate::analysis::expect::compare;
use crate::format::num;
use crate::model::CompareOp;
use crate::stats::Spread;
use serde::Serialize;

/// An expectation over runs, judged.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignExpectationResult {
    pub spec: CampaignExpectation,
    /// The share (0–1) or the statistic (absent when no run defines it).
    pub measured: Option<f64>,
    pub passed: bool,
    /// For shares: the counted runs that went against the expectation (where
    /// the condition did not hold, or, for an upper bound such as `0%`,
    /// where it did).
    pub against: Vec<String>,
    pub message: String,
}

/// Judges `spec` on the counted runs of its variant.
pub fn evaluate(spec: &CampaignExpectation, runs: &[CampaignRun]) -> CampaignExpectationResult {
    let counted = counted_runs(runs, &spec.variant);
    let (measured, not_in, held_in) = measure(&spec.statistic, &counted);
    // An upper bound (`<= 10%`, `0%`) is gone against by the runs that held.
    let upper = matches!(spec.op, CompareOp::Lt | CompareOp::Le)
        || (spec.op == CompareOp::Eq && spec.value < 1.0);
    let against = if upper { held_in } else { not_in };
    let passed = measured.is_some_and(|m| compare(spec.op, m, spec.value));
    let shown = |x: f64| match spec.statistic {
        OverRuns::VerdictShare { .. } | OverRuns::ConditionShare { .. } => {
            format!("{} % of {} runs", num(x * 100.0), counted.len())
        }
        _ => num(x),
    };
    let message = match measured {
        None if counted.is_empty() => "no counted run of this variant".to_string(),
        None => "undefined in every counted run".to_string(),
        Some(m) => format!(
            "measured {}{}",
            shown(m),
            if passed { "" } else { ": FAILED" }
        ),
    };
    CampaignExpectationResult {
        spec: spec.clone(),
        measured,
        passed,
        against,
        message,
    }
}

/// The statistic, and for shares the runs where the condition did not
/// hold and those where it did.
fn measure(
    statistic: &OverRuns,
    counted: &[(String, &JudgedRun)],
) -> (Option<f64>, Vec<String>, Vec<String>) {
    let share = |holds: &dyn Fn(&JudgedRun) -> bool| {
        let (yes, no): (Vec<_>, Vec<_>) = counted.iter().partition(|(_, j)| holds(j));
        let names = |v: Vec<&(String, &JudgedRun)>| v.into_iter().map(|(l, _)| l.clone()).collect();
        let n = counted.len();
        let share = (n > 0).then(|| yes.len() as f64 / n as f64);
        (share, names(no), names(yes))
    };
    let spread = |m| {
        let xs: Vec<f64> = counted.iter().filter_map(|(_, j)| value_of(j, m)).collect();
        Spread::of(&xs)
    };
    let stat = |x: Option<f64>| (x, Vec::new(), Vec::new());
    match statistic {
        OverRuns::VerdictShare { classes } => share(&|j| classes.contains(&j.verdict)),
        OverRuns::ConditionShare { metric, op, value } => {
            share(&|j| value_of(j, metric).is_some_and(|x| compare(*op, x, *value)))
        }
        OverRuns::Median { metric } => stat(spread(metric).map(|s| s.median)),
        OverRuns::Min { metric } => stat(spread(metric).map(|s| s.min)),
        OverRuns::Max { metric } => stat(spread(metric).map(|s| s.max)),
    }
}
