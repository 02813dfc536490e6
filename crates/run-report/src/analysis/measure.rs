//! Each metric of the catalogue ([`crate::metrics`]) measured on one
//! variant: a value, or why it is undefined. The values are read from the
//! variant's seconds and its analysis (waves, verdict, alerts), so this sits
//! inside analysis, above the parts it reads and below the expectations and
//! the fidelity panel that compare its values.

mod compute;
mod zone_times;

use super::VariantAnalysis;
use crate::metrics::{Metric, MetricRef, MetricValues, Scope, Undefined};
use crate::model::{AnalysisConfig, ExpectationSpec, Second, VariantRun};
use crate::series;

/// Value of one metric (with optional label/window) for one variant; `None` if not
/// defined (unknown zone, empty window, zero denominator, not recovered...).
pub fn metric_value(
    v: &VariantRun,
    a: &VariantAnalysis,
    spec: &ExpectationSpec,
    cfg: &AnalysisConfig,
) -> Option<f64> {
    metric_value_explained(v, a, &MetricRef::of(spec), cfg).ok()
}

/// Like [`metric_value`], but says why a value is undefined.
pub fn metric_value_explained(
    v: &VariantRun,
    a: &VariantAnalysis,
    m: &MetricRef,
    cfg: &AnalysisConfig,
) -> Result<f64, Undefined> {
    check_shape(m)?;
    if let Some(why) = v.unmeasured.get(&m.metric) {
        return Err(format!("not measured: {why}").into());
    }
    let seconds = window_seconds(&v.seconds, m.window)?;
    let value = compute::value(
        &compute::Inputs {
            v,
            a,
            cfg,
            seconds: &seconds,
        },
        m,
    )?;
    if value.is_nan() {
        return Err("not a number".into());
    }
    Ok(value)
}

/// A label where the scope wants one, a window only where the metric takes one.
fn check_shape(m: &MetricRef) -> Result<(), Undefined> {
    let name = m.metric.name();
    match (m.metric.scope(), &m.label) {
        (Scope::Zone, None) => {
            return Err(format!("`{name}` needs a zone, e.g. `{name}{{az1}}`").into())
        }
        (Scope::Alert, None) => {
            return Err(format!("`{name}` needs a rule name, e.g. `{name}{{NAME}}`").into())
        }
        (Scope::Run, Some(_)) => return Err(format!("`{name}` is not a per-zone metric").into()),
        _ => {}
    }
    if m.window.is_some() && !m.metric.windowed() {
        return Err(format!("`{name}` does not accept a time window").into());
    }
    Ok(())
}

fn window_seconds(all: &[Second], window: Option<(f64, f64)>) -> Result<Vec<&Second>, Undefined> {
    if let Some((from, to)) = window {
        if from.is_nan() || to.is_nan() || from >= to {
            return Err(format!("empty window [{from}s..{to}s)").into());
        }
        let inside = series::select(all, window);
        if inside.is_empty() {
            return Err(format!("no second of this run lies in [{from}s..{to}s)").into());
        }
        return Ok(inside);
    }
    Ok(all.iter().collect())
}

/// Every whole-variant metric that is defined: each run-scope metric, each
/// zone metric per zone seen, each alert metric per rule.
pub fn measure_all(v: &VariantRun, a: &VariantAnalysis, cfg: &AnalysisConfig) -> MetricValues {
    let zones = series::zone_names(&v.seconds);
    let rules: Vec<String> = v.alerts.iter().map(|r| r.name.clone()).collect();
    let mut values = MetricValues::default();
    for &metric in Metric::ALL {
        let labels: Vec<Option<String>> = match metric.scope() {
            Scope::Run => vec![None],
            Scope::Zone => zones.iter().cloned().map(Some).collect(),
            Scope::Alert => rules.iter().cloned().map(Some).collect(),
        };
        for label in labels {
            let key = MetricRef {
                metric,
                label,
                window: None,
            };
            if let Ok(x) = metric_value_explained(v, a, &key, cfg) {
                values.insert(&key, x);
            }
        }
    }
    values
}

#[cfg(test)]
mod tests;
