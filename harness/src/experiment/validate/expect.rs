//! Expectations: `variant: metric op value` (metrics, windows and zones
//! checked against run-report's catalogue) and `verdict: CLASS[|CLASS]`.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use run_report::{CompareOp, ALERT_METRICS, METRICS, WINDOWED_METRICS, ZONE_METRICS};
use serde_saphyr::Spanned;

/// Every expectation of the form, in file order.
pub(super) fn expectations(
    cx: &Ctx,
    raw: &RawExperiment,
    expect_raw: &RawExpect,
    variants: &[Variant],
    alert_names: Option<&[String]>,
) -> Result<Vec<ExpectationSpec>, ExperimentError> {
    let zones: Vec<String> = variants[0].system.zones.clone();
    let variant_names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let mut expectations = Vec::new();
    for (vname, metrics) in expect_raw {
        if !variant_names.contains(&vname.as_str()) {
            let at = metrics
                .first()
                .map(|(_, v)| v.referenced)
                .unwrap_or(raw.name.referenced);
            return Err(cx.err(
                &at,
                format!("expect.{vname}"),
                format!("no such variant; variants are {variant_names:?}"),
            ));
        }
        for (key, value) in metrics {
            let labels = Labels {
                zones: &zones,
                alerts: alert_names,
            };
            expectations.push(expectation(cx, vname, key, value, &labels)?);
        }
    }
    Ok(expectations)
}

/// What may stand in braces: a zone, or for alert metrics a rule's name.
struct Labels<'a> {
    zones: &'a [String],
    alerts: Option<&'a [String]>,
}

/// `waves`, `failure_ratio_mean[40s..70s]`, `zone_failure_ratio_peak{az2}` with `">= 3"` or `0`.
fn expectation(
    cx: &Ctx,
    variant: &str,
    key: &str,
    value: &Spanned<ExpectValue>,
    labels: &Labels,
) -> Result<ExpectationSpec, ExperimentError> {
    let zones = labels.zones;
    let at = &value.referenced;
    let field = format!("expect.{variant}.{key}");
    let mut metric = key.trim().to_string();
    let mut window = None;
    if let Some(i) = metric.find('[') {
        let inner = metric[i + 1..].trim_end_matches(']').to_string();
        metric.truncate(i);
        let (a, b) = inner.split_once("..").ok_or_else(|| {
            cx.err(
                at,
                &field,
                "a window is written [FROM..TO], e.g. [40s..70s]",
            )
        })?;
        let a = cx.duration(at, &field, a)?.as_secs_f64();
        let b = cx.duration(at, &field, b)?.as_secs_f64();
        if b <= a {
            return Err(cx.err(at, &field, "window end must be after its start"));
        }
        window = Some((a, b));
    }
    let mut zone = None;
    if let Some(i) = metric.find('{') {
        zone = Some(metric[i + 1..].trim_end_matches('}').to_string());
        metric.truncate(i);
    }
    if !METRICS.contains(&metric.as_str()) {
        return Err(cx.err(
            at,
            &field,
            format!(
                "unknown metric {metric:?}; known metrics: {}",
                METRICS.join(", ")
            ),
        ));
    }
    if window.is_some() && !WINDOWED_METRICS.contains(&metric.as_str()) {
        return Err(cx.err(
            at,
            &field,
            format!(
                "{metric} does not take a window; windowed metrics: {}",
                WINDOWED_METRICS.join(", ")
            ),
        ));
    }
    if metric == "alerts_fired" || ALERT_METRICS.contains(&metric.as_str()) {
        let Some(names) = labels.alerts else {
            return Err(cx.err(
                at,
                &field,
                format!("{metric} needs alert rules: add `alerts: {{ rules: [FILE] }}`"),
            ));
        };
        match (&zone, ALERT_METRICS.contains(&metric.as_str())) {
            (Some(n), true) if !names.contains(n) => {
                return Err(cx.err(
                    at,
                    &field,
                    format!("no alert rule {n:?} in alerts.rules; alerts are {names:?}"),
                ))
            }
            (None, true) => {
                return Err(cx.err(
                    at,
                    &field,
                    format!("{metric} needs an alert rule's name: {metric}{{NAME}}"),
                ))
            }
            (Some(_), false) => return Err(cx.err(at, &field, format!("{metric} takes no name"))),
            _ => {}
        }
    }
    let is_zone_metric = ZONE_METRICS.contains(&metric.as_str());
    match (&zone, is_zone_metric) {
        _ if ALERT_METRICS.contains(&metric.as_str()) => {}
        (Some(z), true) if !zones.contains(z) => {
            return Err(cx.err(
                at,
                &field,
                format!("unknown zone {z:?}; zones are {zones:?}"),
            ))
        }
        (None, true) => {
            return Err(cx.err(
                at,
                &field,
                format!("{metric} needs a zone: {metric}{{ZONE}}"),
            ))
        }
        (Some(_), false) => {
            return Err(cx.err(at, &field, format!("{metric} is not a per-zone metric")))
        }
        _ => {}
    }
    if metric == "verdict" {
        return verdict_expectation(cx, variant, value);
    }
    let (op, num, source) = match &value.value {
        ExpectValue::Number(n) => (CompareOp::Eq, *n, format!("== {n}")),
        ExpectValue::Text(t) => {
            let t = t.trim();
            let (op, rest) = [
                (">=", CompareOp::Ge),
                ("<=", CompareOp::Le),
                ("==", CompareOp::Eq),
                (">", CompareOp::Gt),
                ("<", CompareOp::Lt),
            ]
            .iter()
            .find_map(|(p, op)| t.strip_prefix(p).map(|r| (*op, r)))
            .unwrap_or((CompareOp::Eq, t));
            let n: f64 = rest.trim().parse().map_err(|_| {
                cx.err(
                    at,
                    &field,
                    format!("{t:?} is not a comparison; write e.g. \">= 3\", \"<= 1.3\" or 0"),
                )
            })?;
            (op, n, t.to_string())
        }
    };
    if !num.is_finite() {
        return Err(cx.err(at, &field, "the expected value must be a finite number"));
    }
    Ok(ExpectationSpec {
        variant: variant.to_string(),
        metric,
        zone,
        window,
        op,
        value: num,
        source,
        classes: Vec::new(),
    })
}

/// `verdict: metastable` or `verdict: "stable|recovered"`.
fn verdict_expectation(
    cx: &Ctx,
    variant: &str,
    value: &Spanned<ExpectValue>,
) -> Result<ExpectationSpec, ExperimentError> {
    let field = format!("expect.{variant}.verdict");
    let known = run_report::VERDICT_CLASSES;
    let ExpectValue::Text(text) = &value.value else {
        return Err(cx.err(
            &value.referenced,
            &field,
            format!(
                "the verdict is a class, not a number: one of {}, or several joined by |",
                known.join(", ")
            ),
        ));
    };
    let classes: Vec<String> = text
        .split('|')
        .map(|c| c.trim().replace(' ', "_"))
        .collect();
    if let Some(bad) = classes.iter().find(|c| !known.contains(&c.as_str())) {
        return Err(cx.err(
            &value.referenced,
            &field,
            format!(
                "{bad:?} is not a verdict; verdicts are {}",
                known.join(", ")
            ),
        ));
    }
    Ok(ExpectationSpec {
        variant: variant.to_string(),
        metric: "verdict".into(),
        zone: None,
        window: None,
        op: CompareOp::Eq,
        value: 0.0,
        source: classes.join(" | "),
        classes,
    })
}
