//! Expectations: `variant: metric op value` (metrics, windows and zones
//! checked against run-report's catalogue) and `verdict: CLASS[|CLASS]`.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use run_report::{CompareOp, Metric, MetricScope};
use serde_saphyr::{Location, Spanned};

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
pub(super) struct Labels<'a> {
    pub(super) zones: &'a [String],
    pub(super) alerts: Option<&'a [String]>,
}

/// Where one expectation was written: its location and field, for errors.
pub(super) struct Site<'a> {
    pub(super) cx: &'a Ctx<'a>,
    pub(super) at: &'a Location,
    pub(super) field: String,
}

impl Site<'_> {
    pub(super) fn err(&self, message: impl Into<String>) -> ExperimentError {
        self.cx.err(self.at, &self.field, message)
    }
}

/// `waves`, `failure_ratio_mean[40s..70s]`, `zone_failure_ratio_peak{az2}` with `">= 3"` or `0`.
fn expectation(
    cx: &Ctx,
    variant: &str,
    key: &str,
    value: &Spanned<ExpectValue>,
    labels: &Labels,
) -> Result<ExpectationSpec, ExperimentError> {
    let site = Site {
        cx,
        at: &value.referenced,
        field: format!("expect.{variant}.{key}"),
    };
    let MetricKey {
        metric,
        label: zone,
        window,
    } = split_key(&site, key)?;
    let metric = known_metric(&site, &metric, window.is_some())?;
    check_alert_label(&site, metric, zone.as_ref(), labels.alerts)?;
    check_zone_label(&site, metric, zone.as_ref(), labels.zones)?;
    if metric == Metric::Verdict {
        return verdict_expectation(cx, variant, value);
    }
    let (op, num, source) = comparison(&site, &value.value)?;
    satisfiable(&site, metric, op, num)?;
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

/// An expectation's key, `name{label}[FROM..TO]`, taken apart.
pub(super) struct MetricKey {
    pub(super) metric: String,
    /// A zone, or an alert rule's name.
    pub(super) label: Option<String>,
    /// Seconds from and to.
    pub(super) window: Option<(f64, f64)>,
}

/// `name{label}[FROM..TO]` into the name, its label and its window.
pub(super) fn split_key(site: &Site, key: &str) -> Result<MetricKey, ExperimentError> {
    let mut metric = key.trim().to_string();
    let mut window = None;
    if let Some(i) = metric.find('[') {
        let inner = metric[i + 1..].trim_end_matches(']').to_string();
        metric.truncate(i);
        let (a, b) = inner
            .split_once("..")
            .ok_or_else(|| site.err("a window is written [FROM..TO], e.g. [40s..70s]"))?;
        let a = site.cx.duration(site.at, &site.field, a)?.as_secs_f64();
        let b = site.cx.duration(site.at, &site.field, b)?.as_secs_f64();
        if b <= a {
            return Err(site.err("window end must be after its start"));
        }
        window = Some((a, b));
    }
    let mut label = None;
    if let Some(i) = metric.find('{') {
        label = Some(metric[i + 1..].trim_end_matches('}').to_string());
        metric.truncate(i);
    }
    Ok(MetricKey {
        metric,
        label,
        window,
    })
}

/// The catalogue's metric of that name, and a window only on a windowed one.
pub(super) fn known_metric(
    site: &Site,
    name: &str,
    windowed: bool,
) -> Result<Metric, ExperimentError> {
    let metric: Metric = name.parse().map_err(|e| site.err(format!("{e}")))?;
    if metric.needs_window() && !windowed {
        return Err(site.err(format!(
            "{metric} needs a window, {metric}[FROMs..TOs]; the whole run's client attempts per document submitted (what {metric} without a window was) is {}",
            Metric::renamed(metric.name()).unwrap_or(metric)
        )));
    }
    if windowed && !metric.windowed() {
        return Err(site.err(format!(
            "{metric} does not take a window; windowed metrics: {}",
            Metric::names_where(Metric::windowed)
        )));
    }
    Ok(metric)
}

/// Alert metrics need alert rules, and the per-rule ones a rule's name.
pub(super) fn check_alert_label(
    site: &Site,
    metric: Metric,
    label: Option<&String>,
    alerts: Option<&[String]>,
) -> Result<(), ExperimentError> {
    if !metric.needs_alerts() {
        return Ok(());
    }
    let per_rule = metric.scope() == MetricScope::Alert;
    let Some(names) = alerts else {
        return Err(site.err(format!(
            "{metric} needs alert rules: add `alerts: {{ rules: [FILE] }}`"
        )));
    };
    match (label, per_rule) {
        (Some(n), true) if !names.contains(n) => Err(site.err(format!(
            "no alert rule {n:?} in alerts.rules; alerts are {names:?}"
        ))),
        (None, true) => Err(site.err(format!(
            "{metric} needs an alert rule's name: {metric}{{NAME}}"
        ))),
        (Some(_), false) => Err(site.err(format!("{metric} takes no name"))),
        _ => Ok(()),
    }
}

/// Per-zone metrics need a known zone; no other metric takes one.
pub(super) fn check_zone_label(
    site: &Site,
    metric: Metric,
    label: Option<&String>,
    zones: &[String],
) -> Result<(), ExperimentError> {
    match (label, metric.scope()) {
        (_, MetricScope::Alert) => Ok(()),
        (Some(z), MetricScope::Zone) if !zones.contains(z) => {
            Err(site.err(format!("unknown zone {z:?}; zones are {zones:?}")))
        }
        (None, MetricScope::Zone) => {
            Err(site.err(format!("{metric} needs a zone: {metric}{{ZONE}}")))
        }
        (Some(_), MetricScope::Run) => Err(site.err(format!("{metric} is not a per-zone metric"))),
        _ => Ok(()),
    }
}

/// `">= 3"`, `"<= 1.3"` or a bare number (`==`): the operator, the number
/// and the text as written.
pub(super) fn comparison(
    site: &Site,
    value: &ExpectValue,
) -> Result<(CompareOp, f64, String), ExperimentError> {
    let (op, num, source) = match value {
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
                site.err(format!(
                    "{t:?} is not a comparison; write e.g. \">= 3\", \"<= 1.3\" or 0"
                ))
            })?;
            (op, n, t.to_string())
        }
    };
    if !num.is_finite() {
        return Err(site.err("the expected value must be a finite number"));
    }
    Ok((op, num, source))
}

/// Refuses `metric op value` when no value the metric can take (its
/// catalogue range, whole numbers for counts and flags) satisfies it:
/// `failure_ratio_mean <= -1` could never hold, whatever the run did.
pub(super) fn satisfiable(
    site: &Site,
    metric: Metric,
    op: CompareOp,
    value: f64,
) -> Result<(), ExperimentError> {
    let Some((lo, hi)) = metric.range() else {
        return Ok(());
    };
    let never = match op {
        CompareOp::Lt => value <= lo,
        CompareOp::Le => value < lo,
        CompareOp::Gt => value >= hi,
        CompareOp::Ge => value > hi,
        CompareOp::Eq => value < lo || value > hi || (metric.integral() && value.fract() != 0.0),
    };
    if !never {
        return Ok(());
    }
    let whole = if metric.integral() {
        ", whole numbers"
    } else {
        ""
    };
    Err(site.err(format!(
        "{metric} {} {} can never hold: {metric} is {}{whole} (its range in the metric catalogue)",
        run_report::op_symbol(op),
        value,
        metric.range_text()
    )))
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
        metric: Metric::Verdict,
        zone: None,
        window: None,
        op: CompareOp::Eq,
        value: 0.0,
        source: classes.join(" | "),
        classes,
    })
}
