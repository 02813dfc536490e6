//! Whether two sets of runs of one experiment (sequential against parallel,
//! one load agent against several, virtual against real time) come from the
//! same distribution, as far as the runs can tell: per variant, Fisher's
//! exact test on each verdict class's share and on the share of runs with a
//! wave, and the Mann–Whitney U test on each figure. With that many tests a
//! few small p-values come by chance, so they are judged together with
//! Holm's step-down correction at 5 %: the sets *disagree* when any test
//! stays significant after it.

use super::aggregate::{value_of, FIGURES};
use super::model::{counted_runs, CampaignRun, JudgedRun};
use crate::format::num;
use crate::metrics::{Metric, MetricRef};
use crate::stats::{fisher_exact, format_p, mann_whitney_u, Share, Spread};
use serde::Serialize;

/// The family-wise error rate of the whole comparison.
pub const ALPHA: f64 = 0.05;

/// One test of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub variant: String,
    /// e.g. `verdict metastable`, `runs with a wave`, `peak_failure_ratio`.
    pub what: String,
    /// Each side in words: `3/10 [7–65 %]` or `median 0.84 [0.80–0.88]`.
    pub a: String,
    pub b: String,
    pub test: &'static str,
    pub p_value: f64,
    /// Still significant after Holm's correction.
    pub differs: bool,
}

/// Every check; the sets agree when none differs.
pub fn compare_sets(variants: &[String], a: &[CampaignRun], b: &[CampaignRun]) -> Vec<Check> {
    let mut checks = Vec::new();
    for v in variants {
        let judged = |runs| -> Vec<&JudgedRun> {
            counted_runs(runs, v).into_iter().map(|(_, j)| j).collect()
        };
        let (ra, rb) = (judged(a), judged(b));
        if ra.is_empty() || rb.is_empty() {
            continue;
        }
        let mut classes: Vec<&str> = ra.iter().chain(&rb).map(|j| j.verdict.as_str()).collect();
        classes.sort_unstable();
        classes.dedup();
        for class in classes {
            let count = |rs: &[&JudgedRun]| {
                Share::new(
                    rs.iter().filter(|j| j.verdict == class).count() as u64,
                    rs.len() as u64,
                )
            };
            checks.push(share_check(
                v,
                &format!("verdict {class}"),
                count(&ra),
                count(&rb),
            ));
        }
        let waves = |rs: &[&JudgedRun]| {
            let k = rs
                .iter()
                .filter(|j| j.metrics.get(Metric::Waves).unwrap_or(0.0) >= 1.0);
            Share::new(k.count() as u64, rs.len() as u64)
        };
        checks.push(share_check(v, "runs with a wave", waves(&ra), waves(&rb)));
        for m in FIGURES {
            let key = MetricRef::whole(*m);
            let xs = |rs: &[&JudgedRun]| -> Vec<f64> {
                rs.iter().filter_map(|j| value_of(j, &key)).collect()
            };
            if let Some(c) = figure_check(v, m.name(), &xs(&ra), &xs(&rb)) {
                checks.push(c);
            }
        }
    }
    holm(&mut checks);
    checks
}

pub(super) fn share_check(variant: &str, what: &str, a: Share, b: Share) -> Check {
    Check {
        variant: variant.into(),
        what: what.into(),
        p_value: fisher_exact([[a.k, a.n - a.k], [b.k, b.n - b.k]]),
        a: a.to_string(),
        b: b.to_string(),
        test: "Fisher's exact",
        differs: false,
    }
}

fn figure_check(variant: &str, what: &str, a: &[f64], b: &[f64]) -> Option<Check> {
    let (sa, sb) = (Spread::of(a)?, Spread::of(b)?);
    let words = |s: Spread| format!("median {} [{}–{}]", num(s.median), num(s.q1), num(s.q3));
    Some(Check {
        variant: variant.into(),
        what: what.into(),
        a: words(sa),
        b: words(sb),
        test: "Mann–Whitney U",
        p_value: mann_whitney_u(a, b).p_value,
        differs: false,
    })
}

/// Holm's step-down: the i-th smallest p-value (from 0) is compared with
/// ALPHA / (m - i); the first that passes stops the rejections.
pub(super) fn holm(checks: &mut [Check]) {
    let m = checks.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| checks[x].p_value.total_cmp(&checks[y].p_value));
    for (i, &k) in order.iter().enumerate() {
        if checks[k].p_value > ALPHA / (m - i) as f64 {
            break;
        }
        checks[k].differs = true;
    }
}

/// The checks as a Markdown table, the sets named `a` and `b`.
pub fn markdown(checks: &[Check], a: &str, b: &str) -> String {
    let mut t = format!("| variant | what | {a} | {b} | test | p | differs (Holm, 5 %) |\n|---|---|---|---|---|---|---|\n");
    for c in checks {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c.variant,
            c.what,
            c.a,
            c.b,
            c.test,
            format_p(c.p_value),
            if c.differs { "**yes**" } else { "no" }
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: f64) -> Check {
        Check {
            variant: "v".into(),
            what: "x".into(),
            a: String::new(),
            b: String::new(),
            test: "t",
            p_value: p,
            differs: false,
        }
    }

    #[test]
    fn holm_rejects_step_by_step() {
        // m = 4: 0.01 <= 0.05/4, 0.015 <= 0.05/3, 0.03 > 0.05/2 stops.
        let mut cs: Vec<Check> = [0.03, 0.01, 0.5, 0.015].map(check).into();
        holm(&mut cs);
        let d: Vec<bool> = cs.iter().map(|c| c.differs).collect();
        assert_eq!(d, vec![false, true, false, true]);
        let mut one: Vec<Check> = [0.02].map(check).into();
        holm(&mut one);
        assert!(one[0].differs);
    }
}
