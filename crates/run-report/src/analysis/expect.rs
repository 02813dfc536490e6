//! Expectations: `variant: metric op value` checks from the experiment file,
//! evaluated against the measured metrics. A metric that cannot be measured
//! (unknown variant or zone, empty window, not recovered...) fails the
//! expectation with a message saying why, never silently passes. The one
//! exception is by design, not by accident: a virtual-clock run has no
//! alert rules (no real Prometheus runs on that clock), so an expectation
//! on an alert metric is *not evaluated* — neither passed nor failed, and
//! said so wherever the result is shown.

use super::measure::metric_value_explained;
use crate::analysis::VariantAnalysis;
use crate::format::num;
use crate::metrics::{Metric, MetricRef, Undefined};
use crate::model::{CompareOp, ExpectationSpec, RunData};
use serde::Serialize;

/// One expectation, judged.
#[derive(Debug, Clone, Serialize)]
pub struct ExpectationResult {
    pub spec: ExpectationSpec,
    pub measured: Option<f64>,
    pub passed: bool,
    /// e.g. "measured 0.12, expected >= 0.5".
    pub message: String,
    /// Why it was not evaluated (then `passed` is false, and it does not
    /// count against the run): an alert metric on the virtual clock.
    pub not_evaluated: Option<String>,
}

impl ExpectationResult {
    /// It failed: evaluated, and did not hold.
    pub fn failed(&self) -> bool {
        !self.passed && self.not_evaluated.is_none()
    }

    /// "PASS", "FAIL" or "NOT EVALUATED", as every list of results writes it.
    pub fn outcome(&self) -> &'static str {
        match (self.passed, &self.not_evaluated) {
            (true, _) => "PASS",
            (false, None) => "FAIL",
            (false, Some(_)) => "NOT EVALUATED",
        }
    }
}

/// The operator as written: `<`, `<=`, `==`, `>=`, `>`.
pub fn op_symbol(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Lt => "<",
        CompareOp::Le => "<=",
        CompareOp::Eq => "==",
        CompareOp::Ge => ">=",
        CompareOp::Gt => ">",
    }
}

/// `measured op expected`. `==` tolerates a relative error of 1e-9 (counts are
/// exact; ratios go through floating point). NaN never passes.
pub fn compare(op: CompareOp, measured: f64, expected: f64) -> bool {
    if measured.is_nan() || expected.is_nan() {
        return false;
    }
    match op {
        CompareOp::Lt => measured < expected,
        CompareOp::Le => measured <= expected,
        CompareOp::Eq => (measured - expected).abs() <= 1e-9 * expected.abs().max(1.0),
        CompareOp::Ge => measured >= expected,
        CompareOp::Gt => measured > expected,
    }
}

/// Judge one expectation against the run and its analysed variants.
pub fn evaluate_expectation(
    run: &RunData,
    variants: &[VariantAnalysis],
    spec: &ExpectationSpec,
) -> ExpectationResult {
    let run_v = run.variants.iter().find(|v| v.name == spec.variant);
    let ana_v = variants.iter().find(|v| v.name == spec.variant);
    if spec.metric == Metric::Verdict {
        return evaluate_verdict(ana_v, spec);
    }
    if spec.metric.needs_alerts() && !run.clock.is_real() {
        let why = run_v
            .and_then(|v| v.unmeasured.get(&spec.metric).cloned())
            .unwrap_or_else(|| "a virtual-clock run evaluates no alert rules".to_string());
        return ExpectationResult {
            spec: spec.clone(),
            measured: None,
            passed: false,
            message: "not evaluated: the virtual clock runs no alert rules".to_string(),
            not_evaluated: Some(why),
        };
    }
    let measured = match (run_v, ana_v) {
        (Some(v), Some(a)) => metric_value_explained(v, a, &MetricRef::of(spec), &run.analysis),
        _ => Err(Undefined(format!(
            "variant `{}` is not in this run",
            spec.variant
        ))),
    };
    let expected = format!("{} {}", op_symbol(spec.op), num(spec.value));
    match measured {
        Ok(m) => {
            let passed = compare(spec.op, m, spec.value);
            let message = if passed {
                format!("measured {}, expected {expected}", num(m))
            } else {
                format!("measured {}, expected {expected}: FAILED", num(m))
            };
            ExpectationResult {
                spec: spec.clone(),
                measured: Some(m),
                passed,
                message,
                not_evaluated: None,
            }
        }
        Err(why) => ExpectationResult {
            spec: spec.clone(),
            measured: None,
            passed: false,
            message: format!("not measured ({why}), expected {expected}: FAILED"),
            not_evaluated: None,
        },
    }
}

/// `verdict: CLASS[|CLASS...]`: passes when the variant's class is one of them.
fn evaluate_verdict(a: Option<&VariantAnalysis>, spec: &ExpectationSpec) -> ExpectationResult {
    let expected = spec.classes.join(" or ");
    let (passed, message) = match a {
        Some(a) => {
            let passed = spec.classes.iter().any(|c| c == a.verdict.class());
            (
                passed,
                format!(
                    "{}, expected {expected}{}",
                    a.verdict.explanation(),
                    if passed { "" } else { ": FAILED" }
                ),
            )
        }
        None => (
            false,
            format!(
                "variant `{}` is not in this run, expected {expected}: FAILED",
                spec.variant
            ),
        ),
    };
    ExpectationResult {
        spec: spec.clone(),
        measured: None,
        passed,
        message,
        not_evaluated: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyse_variant;
    use crate::model::{Second, VariantRun};

    fn run() -> RunData {
        let seconds = (0..10)
            .map(|t| Second {
                t,
                attempts: 20,
                distinct_documents: 10,
                arrivals: 10,
                ok: 15,
                rejected: 5,
                ..Second::default()
            })
            .collect();
        RunData {
            variants: vec![VariantRun {
                name: "v".into(),
                seconds,
                ..VariantRun::default()
            }],
            ..RunData::default()
        }
    }

    fn spec(
        variant: &str,
        metric: Metric,
        window: Option<(f64, f64)>,
        op: CompareOp,
        value: f64,
    ) -> ExpectationSpec {
        ExpectationSpec {
            variant: variant.into(),
            metric,
            zone: None,
            window,
            op,
            value,
            source: format!("{} {value}", op_symbol(op)),
            classes: Vec::new(),
        }
    }

    fn judge(s: ExpectationSpec) -> ExpectationResult {
        let r = run();
        let vs: Vec<VariantAnalysis> = r
            .variants
            .iter()
            .map(|v| analyse_variant(v, &r.analysis))
            .collect();
        evaluate_expectation(&r, &vs, &s)
    }

    #[test]
    fn passing_and_failing_expectations() {
        let ok = judge(spec(
            "v",
            Metric::FailureRatioMean,
            Some((0.0, 5.0)),
            CompareOp::Le,
            0.25,
        ));
        assert!(ok.passed, "{}", ok.message);
        assert_eq!(ok.measured, Some(0.25));
        let bad = judge(spec(
            "v",
            Metric::AttemptsPerDocument,
            None,
            CompareOp::Lt,
            1.5,
        ));
        assert!(!bad.passed);
        assert_eq!(bad.measured, Some(2.0));
        assert!(
            bad.message.contains("measured 2, expected < 1.5"),
            "{}",
            bad.message
        );
        let eq = judge(spec("v", Metric::Waves, None, CompareOp::Eq, 0.0));
        assert!(eq.passed);
    }

    #[test]
    fn unmeasurable_expectations_fail_with_a_reason() {
        let missing = judge(spec("w", Metric::Waves, None, CompareOp::Ge, 0.0));
        assert!(!missing.passed && missing.measured.is_none());
        assert!(missing.message.contains("variant `w` is not in this run"));
        let window = judge(spec(
            "v",
            Metric::FailureRatioMean,
            Some((50.0, 60.0)),
            CompareOp::Ge,
            0.0,
        ));
        assert!(
            !window.passed && window.message.contains("no second"),
            "{}",
            window.message
        );
        let ttr = judge(spec("v", Metric::TimeToRecoverS, None, CompareOp::Ge, 0.0));
        assert!(
            !ttr.passed && ttr.message.contains("no trigger"),
            "{}",
            ttr.message
        );
    }

    #[test]
    fn operators() {
        assert!(compare(CompareOp::Lt, 1.0, 2.0));
        assert!(!compare(CompareOp::Lt, 2.0, 2.0));
        assert!(compare(CompareOp::Le, 2.0, 2.0));
        assert!(compare(CompareOp::Eq, 0.1 + 0.2, 0.3));
        assert!(!compare(CompareOp::Eq, 1.0, 1.001));
        assert!(compare(CompareOp::Ge, 3.0, 3.0));
        assert!(!compare(CompareOp::Gt, 3.0, 3.0));
        assert!(!compare(CompareOp::Ge, f64::NAN, 0.0));
        assert!(!compare(CompareOp::Lt, 0.0, f64::NAN));
    }
}
