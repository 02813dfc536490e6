//! The metrics an experiment's `expect` and `incident` sections can name:
//! the catalogue, a reference to one metric (label, window), the values
//! measured, and why a value can be undefined.
//!
//! The names are a contract with the experiment files; it is typed once, in
//! [`catalogue`] ([`Metric`]), and every list, table and key is derived from
//! it. These are values only, below the recorded run that names them
//! ([`crate::model`]); computing them for a variant is analysis
//! (`analysis/measure.rs`).

mod catalogue;

pub use catalogue::{Metric, Scope, Unit, UnknownMetric};

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

    /// Parse `name`, `name{label}`, `name[40s..70s]` or `name{label}[40..70]` (the `s` is optional);
    /// labels are letters, digits, `_`, `-` and `.`; the name must be in the catalogue.
    pub fn parse(text: &str) -> Result<MetricRef, MetricRefError> {
        let malformed = || MetricRefError::Malformed {
            text: text.to_string(),
        };
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
        // An older record's whole-run `amplification_mean` reads as the
        // figure it was, under its own name now.
        let metric = match Metric::renamed(name).filter(|_| window.is_none()) {
            Some(m) => m,
            None => name.parse::<Metric>()?,
        };
        Ok(MetricRef {
            metric,
            label,
            window,
        })
    }
}

/// Why a text is not a [`MetricRef`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricRefError {
    /// Not `NAME`, `NAME{LABEL}` or `NAME[FROM..TO]`.
    #[error("{text:?} is not a metric: write NAME, NAME{{ZONE}} or NAME[FROMs..TOs]")]
    Malformed { text: String },
    /// The name is not in the catalogue.
    #[error(transparent)]
    Unknown(#[from] UnknownMetric),
}

/// Why a metric has no value for a variant (unknown zone, empty window,
/// zero denominator, not measured, ...), in words for the report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Undefined(pub String);

impl From<String> for Undefined {
    fn from(why: String) -> Undefined {
        Undefined(why)
    }
}

impl From<&str> for Undefined {
    fn from(why: &str) -> Undefined {
        Undefined(why.to_string())
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
