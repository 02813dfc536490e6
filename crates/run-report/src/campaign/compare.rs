//! The proof of a fix: for a pair (baseline, candidate), whether the
//! candidate's runs differ from the baseline's, stated in one sentence with
//! its numbers and tests that are right for small samples: Fisher's exact
//! test on the share of runs with a wave, and the Mann–Whitney U test on
//! the figures (both two-sided).

use super::aggregate::VariantOverRuns;
use crate::format::num;
use crate::metrics::{Metric, MetricRef};
use crate::stats::{fisher_exact, format_p, mann_whitney_u, Share};
use serde::Serialize;

/// Below this p-value a difference is stated as shown.
pub const SIGNIFICANCE: f64 = 0.05;

/// The figures compared, in the sentence's order.
const COMPARED: &[Metric] = &[
    Metric::DocumentsGivenUp,
    Metric::PeakFailureRatio,
    Metric::DegradedS,
];

/// One figure of a pair.
#[derive(Debug, Clone, Serialize)]
pub struct FigureComparison {
    pub metric: MetricRef,
    pub baseline_median: Option<f64>,
    pub candidate_median: Option<f64>,
    /// Mann–Whitney U, two-sided (absent when a side has no value).
    pub p_value: Option<f64>,
}

/// A pair's difference.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub candidate: String,
    /// Fisher's exact test, two-sided, on runs with a wave.
    pub waves_p_value: Option<f64>,
    pub figures: Vec<FigureComparison>,
    /// The headline: one sentence with its numbers.
    pub sentence: String,
}

/// Compares `candidate` against `baseline`.
pub fn compare(baseline: &VariantOverRuns, candidate: &VariantOverRuns) -> Comparison {
    let (b, c) = (&baseline.with_waves, &candidate.with_waves);
    let waves_p_value =
        (b.n > 0 && c.n > 0).then(|| fisher_exact([[c.k, c.n - c.k], [b.k, b.n - b.k]]));
    let figures: Vec<FigureComparison> = COMPARED
        .iter()
        .map(|m| figure(MetricRef::whole(*m), baseline, candidate))
        .collect();
    let sentence = sentence(baseline, candidate, waves_p_value, &figures);
    Comparison {
        baseline: baseline.variant.clone(),
        candidate: candidate.variant.clone(),
        waves_p_value,
        figures,
        sentence,
    }
}

/// The variant's values of `metric`, as its summary gathered them.
fn values(v: &VariantOverRuns, metric: &MetricRef) -> Vec<f64> {
    v.figure(metric)
        .map(|f| f.values.iter().map(|(_, x)| *x).collect())
        .unwrap_or_default()
}

fn figure(
    metric: MetricRef,
    baseline: &VariantOverRuns,
    candidate: &VariantOverRuns,
) -> FigureComparison {
    let b = values(baseline, &metric);
    let c = values(candidate, &metric);
    let median = |xs: &[f64]| crate::stats::Spread::of(xs).map(|s| s.median);
    FigureComparison {
        p_value: (!b.is_empty() && !c.is_empty()).then(|| mann_whitney_u(&c, &b).p_value),
        baseline_median: median(&b),
        candidate_median: median(&c),
        metric,
    }
}

/// "after-fix removes the waves: 0/10 runs with a wave [0–31 %] against
/// 10/10 [69–100 %] for before-fix, Fisher's exact test p < 0.001; …",
/// led by the runs that did not come back when their shares differ.
fn sentence(
    baseline: &VariantOverRuns,
    candidate: &VariantOverRuns,
    waves_p: Option<f64>,
    figures: &[FigureComparison],
) -> String {
    let (b, c) = (&baseline.with_waves, &candidate.with_waves);
    let Some(p) = waves_p else {
        return format!(
            "{} against {}: not enough runs to compare ({} and {} counted)",
            candidate.variant, baseline.variant, c.n, b.n
        );
    };
    let mut clauses = Vec::new();
    let (bb, cb) = (baseline.did_not_recover(), candidate.did_not_recover());
    if bb.k * cb.n != cb.k * bb.n {
        let p = fisher_exact([[cb.k, cb.n - cb.k], [bb.k, bb.n - bb.k]]);
        let what = "runs that did not come back (metastable, overloaded or never healthy)";
        clauses.push(format!(
            "{} {what}: {cb} against {bb}, Fisher's exact test {}",
            verb(p, &cb, &bb),
            format_p(p)
        ));
    }
    clauses.push(format!(
        "{} waves: {c} runs with a wave against {b}, Fisher's exact test {}",
        verb(p, c, b),
        format_p(p)
    ));
    for f in figures {
        if let (Some(mc), Some(mb), Some(p)) = (f.candidate_median, f.baseline_median, f.p_value) {
            clauses.push(format!(
                "{}: median {} against {}, Mann–Whitney {}",
                f.metric.metric.words(),
                num(mc),
                num(mb),
                format_p(p)
            ));
        }
    }
    format!(
        "{} against {}: {}",
        candidate.variant,
        baseline.variant,
        clauses.join("; ")
    )
}

/// How the candidate's share compares with the baseline's, in words; a
/// difference the test does not show is said as such.
fn verb(p: f64, c: &Share, b: &Share) -> &'static str {
    // c.k / c.n against b.k / b.n, without dividing.
    let fewer = c.k * b.n < b.k * c.n;
    match (p < SIGNIFICANCE, fewer) {
        (true, true) if c.k == 0 => "removes the",
        (true, true) => "reduces the",
        (true, false) => "has more",
        (false, _) => "no shown difference (too few runs, or none) in",
    }
}
