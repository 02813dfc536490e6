//! An external target's own series: what its PromQL expressions said.
//!
//! The harness measures the sustaining effects of its own system itself
//! (`analysis/sustaining.rs`: retries, duplicate and orphaned pages, ...).
//! A service someone else started exports other series, so an experiment
//! on an external target names them as PromQL expressions
//! (`target_series: [{ name, expr }]`); the run's Prometheus evaluates each
//! over the variant at one-second resolution and the series is recorded
//! ([`TargetSeries`], `VariantRun::target_series`), with why it could not
//! be measured when it could not. This module reads the recorded series:
//! figures, `summary.json`'s `target_series`, the CSV's columns. Figures
//! are a pure function of the series and the variant's triggers, so a
//! re-judged run reads the same numbers.

use crate::model::{RunData, TargetSeries, VariantRun};
use serde::Serialize;
use serde_json::{json, Value};

/// What a series says over the variant (`None`: no sample in that window).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TargetFigures {
    /// Seconds with a sample.
    pub samples: usize,
    /// Mean over every sample.
    pub mean: Option<f64>,
    /// The highest sample.
    pub max: Option<f64>,
    /// Mean before the first trigger started (the healthy level).
    pub before_trigger: Option<f64>,
    /// Mean from the last trigger's residue end to the load's end: the
    /// effect still there once the trigger had gone.
    pub after_residue: Option<f64>,
    /// Where that window starts (seconds), when there is one.
    pub after_residue_from_s: Option<f64>,
}

/// The mean of the samples at seconds `t` with `keep(t)`.
fn mean_where(values: &[Option<f64>], keep: impl Fn(f64) -> bool) -> Option<f64> {
    let picked: Vec<f64> = values
        .iter()
        .enumerate()
        .filter(|(t, _)| keep(*t as f64))
        .filter_map(|(_, v)| *v)
        .collect();
    (!picked.is_empty()).then(|| picked.iter().sum::<f64>() / picked.len() as f64)
}

/// The figures of `s` on the variant `v` it was recorded on.
pub fn figures(s: &TargetSeries, v: &VariantRun) -> TargetFigures {
    let first_start = v.triggers.iter().map(|t| t.start_s).reduce(f64::min);
    let last_residue = v
        .triggers
        .iter()
        .map(|t| t.residue_end_s.or(t.end_s))
        .collect::<Option<Vec<f64>>>()
        .and_then(|ends| ends.into_iter().reduce(f64::max));
    let load_end = v.load_end_s.unwrap_or(f64::INFINITY);
    TargetFigures {
        samples: s.values.iter().flatten().count(),
        mean: mean_where(&s.values, |_| true),
        max: s.values.iter().flatten().copied().reduce(f64::max),
        before_trigger: first_start.and_then(|f| mean_where(&s.values, |t| t < f)),
        after_residue: last_residue.and_then(|r| mean_where(&s.values, |t| t >= r && t < load_end)),
        after_residue_from_s: last_residue,
    }
}

/// `summary.json`'s `target_series` of a variant: each series' name,
/// expression, figures and why it was not measured.
pub(crate) fn summary(v: &VariantRun) -> Value {
    Value::Array(
        v.target_series
            .iter()
            .map(|s| {
                let mut o = json!(figures(s, v));
                o["name"] = json!(s.name);
                o["expr"] = json!(s.expr);
                o["unmeasured"] = json!(s.unmeasured);
                o
            })
            .collect(),
    )
}

/// Every series name of the run's variants, in first-seen order (the
/// `target_<name>` columns of `timeseries.csv`).
pub(crate) fn names(run: &RunData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in run.variants.iter().flat_map(|v| &v.target_series) {
        if !out.contains(&s.name) {
            out.push(s.name.clone());
        }
    }
    out
}

/// The value of series `name` at second `t` of `v` (`None`: no such
/// series, or no sample).
pub(crate) fn value_at(v: &VariantRun, name: &str, t: usize) -> Option<f64> {
    v.target_series
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.values.get(t).copied().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TriggerSpan;

    fn run(values: Vec<Option<f64>>) -> (TargetSeries, VariantRun) {
        let s = TargetSeries {
            name: "dup".into(),
            expr: "x".into(),
            values,
            unmeasured: None,
        };
        let mut t = TriggerSpan::undone_at("pause", 2.0, Some(4.0));
        t.residue_end_s = Some(5.0);
        let v = VariantRun {
            triggers: vec![t],
            load_end_s: Some(8.0),
            target_series: vec![s.clone()],
            ..VariantRun::default()
        };
        (s, v)
    }

    #[test]
    fn figures_split_the_run_at_the_trigger_and_its_residue() {
        let values = [1.0, 1.0, 9.0, 9.0, 9.0, 4.0, 6.0, f64::NAN, 100.0]
            .iter()
            .map(|v| v.is_finite().then_some(*v))
            .collect();
        let (s, v) = run(values);
        let f = figures(&s, &v);
        assert_eq!(f.samples, 8);
        assert_eq!(f.before_trigger, Some(1.0));
        assert_eq!(
            f.after_residue,
            Some(5.0),
            "seconds 5 and 6; 7 has no sample, 8 is the drain"
        );
        assert_eq!(f.after_residue_from_s, Some(5.0));
        assert_eq!(f.max, Some(100.0));
        assert_eq!(value_at(&v, "dup", 2), Some(9.0));
        assert_eq!(value_at(&v, "dup", 7), None);
        assert_eq!(value_at(&v, "other", 2), None);
    }

    #[test]
    fn an_empty_series_has_no_figures() {
        let (s, v) = run(vec![None, None]);
        let f = figures(&s, &v);
        assert_eq!(
            (f.samples, f.mean, f.max, f.after_residue),
            (0, None, None, None)
        );
        let j = summary(&v);
        assert_eq!(j[0]["name"], "dup");
        assert!(j[0]["mean"].is_null());
    }
}
