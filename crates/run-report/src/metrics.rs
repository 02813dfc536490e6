//! The metrics an experiment's `expect` and `incident` sections can name,
//! and how each is computed for one variant.
//!
//! The names are a contract with the experiment files; it is typed once, in
//! [`catalogue`] ([`Metric`]), and every list, table and key is derived from
//! it. This module computes the values ([`compute`]) and keeps the measured
//! ones ([`MetricValues`]).

mod catalogue;
mod compute;

pub use catalogue::{Metric, Scope, Unit, UnknownMetric};

use crate::analysis::VariantAnalysis;
use crate::model::{AnalysisConfig, ExpectationSpec, Second, VariantRun};
use crate::series;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// A metric with its optional label (a zone, or an alert rule's name) and
/// window, written `name{label}[from s..to s]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRef {
    pub metric: Metric,
    /// A zone for [`Scope::Zone`], a rule's name for [`Scope::Alert`].
    pub label: Option<String>,
    /// Seconds `[from, to)`.
    pub window: Option<(f64, f64)>,
}

impl MetricRef {
    /// A whole-run metric without label or window.
    pub fn whole(metric: Metric) -> MetricRef {
        MetricRef {
            metric,
            label: None,
            window: None,
        }
    }

    /// The metric an expectation names.
    pub fn of(spec: &ExpectationSpec) -> MetricRef {
        MetricRef {
            metric: spec.metric,
            label: spec.zone.clone(),
            window: spec.window,
        }
    }

    /// Parse `name`, `name{label}`, `name[40s..70s]` or `name{label}[40..70]` (the `s` is optional);
    /// labels are letters, digits, `_`, `-` and `.`; the name must be in the catalogue.
    pub fn parse(text: &str) -> Result<MetricRef, String> {
        let malformed =
            || format!("{text:?} is not a metric: write NAME, NAME{{ZONE}} or NAME[FROMs..TOs]");
        let text = text.trim();
        let (head, window) = match text.strip_suffix(']') {
            Some(rest) => {
                let (head, w) = rest.split_once('[').ok_or_else(malformed)?;
                let (from, to) = w.split_once("..").ok_or_else(malformed)?;
                let num = |s: &str| s.trim().trim_end_matches('s').trim().parse::<f64>().ok();
                let window = num(from).zip(num(to)).ok_or_else(malformed)?;
                (head, Some(window))
            }
            None => (text, None),
        };
        let (name, label) = match head.strip_suffix('}') {
            Some(rest) => {
                let (name, label) = rest.split_once('{').ok_or_else(malformed)?;
                (name, Some(label.trim().to_string()))
            }
            None => (head, None),
        };
        let word =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || "_-.".contains(c));
        if !label.as_deref().is_none_or(word) {
            return Err(malformed());
        }
        let metric = name.parse::<Metric>().map_err(|e| e.to_string())?;
        Ok(MetricRef {
            metric,
            label,
            window,
        })
    }
}

impl fmt::Display for MetricRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.metric)?;
        if let Some(z) = &self.label {
            write!(f, "{{{z}}}")?;
        }
        if let Some((from, to)) = self.window {
            write!(f, "[{from}s..{to}s]")?;
        }
        Ok(())
    }
}

/// Recorded (run.json's incident figures) as written.
impl Serialize for MetricRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MetricRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MetricRef, D::Error> {
        MetricRef::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The metrics measured over a whole variant: every run-scope metric, and
/// each zone or alert metric per zone or rule; read back from a summary,
/// also the windowed ones its campaign names. Undefined ones are absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricValues(BTreeMap<ValueKey, f64>);

/// A [`MetricRef`] as a map key: the window's bounds by their bits.
type ValueKey = (Metric, Option<String>, Option<(u64, u64)>);

fn value_key(m: &MetricRef) -> ValueKey {
    let window = m.window.map(|(from, to)| (from.to_bits(), to.to_bits()));
    (m.metric, m.label.clone(), window)
}

impl MetricValues {
    /// A run-scope metric's value.
    pub fn get(&self, metric: Metric) -> Option<f64> {
        self.0.get(&(metric, None, None)).copied()
    }

    /// A zone's or an alert rule's value.
    pub fn labelled(&self, metric: Metric, label: &str) -> Option<f64> {
        self.0
            .get(&(metric, Some(label.to_string()), None))
            .copied()
    }

    /// The value of `m` exactly as written: label and window included (a
    /// windowed metric is never answered with its whole-run value).
    pub fn value(&self, m: &MetricRef) -> Option<f64> {
        self.0.get(&value_key(m)).copied()
    }

    /// Every measured value with its key as written (`name`, `name{label}`,
    /// `name{label}[from..to]`).
    pub fn iter(&self) -> impl Iterator<Item = (MetricRef, f64)> + '_ {
        self.0.iter().map(|((metric, label, window), x)| {
            let key = MetricRef {
                metric: *metric,
                label: label.clone(),
                window: window.map(|(from, to)| (f64::from_bits(from), f64::from_bits(to))),
            };
            (key, *x)
        })
    }

    pub(crate) fn insert(&mut self, key: &MetricRef, value: f64) {
        self.0.insert(value_key(key), value);
    }
}

/// As `{ "name" | "name{label}": value }`.
impl Serialize for MetricValues {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter().map(|(k, x)| (k.to_string(), x)))
    }
}

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
) -> Result<f64, String> {
    check_shape(m)?;
    if let Some(why) = v.unmeasured.get(&m.metric) {
        return Err(format!("not measured: {why}"));
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
        return Err("not a number".to_string());
    }
    Ok(value)
}

/// A label where the scope wants one, a window only where the metric takes one.
fn check_shape(m: &MetricRef) -> Result<(), String> {
    let name = m.metric.name();
    match (m.metric.scope(), &m.label) {
        (Scope::Zone, None) => return Err(format!("`{name}` needs a zone, e.g. `{name}{{az1}}`")),
        (Scope::Alert, None) => {
            return Err(format!("`{name}` needs a rule name, e.g. `{name}{{NAME}}`"))
        }
        (Scope::Run, Some(_)) => return Err(format!("`{name}` is not a per-zone metric")),
        _ => {}
    }
    if m.window.is_some() && !m.metric.windowed() {
        return Err(format!("`{name}` does not accept a time window"));
    }
    Ok(())
}

fn window_seconds(all: &[Second], window: Option<(f64, f64)>) -> Result<Vec<&Second>, String> {
    if let Some((from, to)) = window {
        if from.is_nan() || to.is_nan() || from >= to {
            return Err(format!("empty window [{from}s..{to}s)"));
        }
        let inside = series::select(all, window);
        if inside.is_empty() {
            return Err(format!("no second of this run lies in [{from}s..{to}s)"));
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
