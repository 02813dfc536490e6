//! The values a sweep or a threshold search tries: `FROM..TO:STEPS` ranges,
//! `LO..HI` spans, with an optional duration unit (`0.5s..8s`), and the
//! dotted paths they are set at.

use serde::Serialize;
use serde_json::Value;

/// How the values of an axis are written into the experiment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Scale {
    /// Both ends were integers: the values are whole numbers, set as integers.
    pub integer: bool,
    /// A duration unit both ends carried (`ms`, `s` or `m`): values are set as `2.5s`.
    pub unit: Option<String>,
}

impl Scale {
    /// `v` as the YAML/JSON value to set.
    pub fn json(&self, v: f64) -> Value {
        match (&self.unit, self.integer) {
            (Some(u), _) => Value::String(format!("{}{u}", fmt_value(v))),
            (None, true) => Value::from(v as i64),
            (None, false) => serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        }
    }

    /// `v` as text (axis ticks, folder names).
    pub fn text(&self, v: f64) -> String {
        format!("{}{}", fmt_value(v), self.unit.as_deref().unwrap_or(""))
    }

    /// Rounds `v` to what this scale can express (whole numbers, or microunits).
    pub fn round(&self, v: f64) -> f64 {
        if self.integer {
            v.round()
        } else {
            (v * 1e6).round() / 1e6
        }
    }
}

/// Evenly spaced values of an axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Range {
    pub values: Vec<f64>,
    #[serde(flatten)]
    pub scale: Scale,
}

impl Range {
    /// The `i`-th value as the YAML/JSON value to set.
    pub fn json(&self, i: usize) -> Value {
        self.scale.json(self.values[i])
    }

    /// The `i`-th value as text (axis ticks, folder names).
    pub fn text(&self, i: usize) -> String {
        self.scale.text(self.values[i])
    }
}

/// Why a span, a range or a trigger axis given on the command line is
/// refused (`sweep --load/--trigger`, `threshold --trigger`).
#[derive(Debug, thiserror::Error)]
pub enum AxisError {
    #[error("{0:?} is not a span; write LO..HI, e.g. 1..8 or 0.5s..8s")]
    NotSpan(String),
    #[error("{0:?}: both ends need the same unit")]
    Units(String),
    #[error("{0:?} is not a range; write FROM..TO:STEPS (e.g. 0.3..0.9:7, 1..8:5 or 1s..5s:5)")]
    NotRange(String),
    #[error("{0:?}: the number of steps must be at least 1")]
    NoSteps(String),
    #[error("{0:?}: at most 100 steps per axis")]
    TooManySteps(String),
    #[error("--trigger {s:?}: write {example}")]
    TriggerSyntax { s: String, example: String },
    #[error("--trigger {0:?}: no path before '='")]
    TriggerNoPath(String),
}

/// `LO..HI` (both ends with the same unit, or none), e.g. `1..8`, `0.5s..8s`.
pub fn parse_span(s: &str) -> Result<(f64, f64, Scale), AxisError> {
    let s = s.trim();
    let bad = || AxisError::NotSpan(s.to_string());
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (x, ua, ia) = number(a).ok_or_else(bad)?;
    let (y, ub, ib) = number(b).ok_or_else(bad)?;
    if ua != ub {
        return Err(AxisError::Units(s.to_string()));
    }
    Ok((
        x,
        y,
        Scale {
            integer: ia && ib && ua.is_none(),
            unit: ua,
        },
    ))
}

/// A finite number with an optional duration unit: (value, unit, written as an integer).
fn number(t: &str) -> Option<(f64, Option<String>, bool)> {
    let t = t.trim();
    let (digits, unit) = ["ms", "s", "m"]
        .iter()
        .find_map(|u| t.strip_suffix(u).map(|d| (d, Some(u.to_string()))))
        .unwrap_or((t, None));
    let v: f64 = digits.trim().parse().ok()?;
    v.is_finite()
        .then(|| (v, unit, digits.trim().parse::<i64>().is_ok()))
}

pub use run_report::sweep::fmt_value;

/// Parses `FROM..TO:STEPS` (or a single value `X`); the ends may carry a
/// duration unit (`1s..5s:5`).
pub fn parse_range(s: &str) -> Result<Range, AxisError> {
    let s = s.trim();
    let bad = || AxisError::NotRange(s.to_string());
    let Some((span, steps)) = s.split_once(':') else {
        if s.contains("..") {
            return Err(bad());
        }
        let (v, unit, integer) = number(s).ok_or_else(bad)?;
        return Ok(Range {
            values: vec![v],
            scale: Scale {
                integer: integer && unit.is_none(),
                unit,
            },
        });
    };
    let (x, y, scale) = parse_span(span).map_err(|_| bad())?;
    let n: usize = steps.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(AxisError::NoSteps(s.to_string()));
    }
    if n > 100 {
        return Err(AxisError::TooManySteps(s.to_string()));
    }
    let mut values: Vec<f64> = (0..n)
        .map(|i| {
            let v = if n == 1 {
                x
            } else {
                x + (y - x) * i as f64 / (n - 1) as f64
            };
            scale.round(v)
        })
        .collect();
    values.dedup();
    Ok(Range { values, scale })
}

/// The trigger axis: one or more paths sharing one range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trigger {
    pub paths: Vec<String>,
    pub range: Range,
}

/// Splits `PATH[,PATH..]=VALUES` into the paths and the values' text;
/// `example` shows the form in the error.
pub fn split_paths<'a>(s: &'a str, example: &str) -> Result<(Vec<String>, &'a str), AxisError> {
    let (paths, values) = s.split_once('=').ok_or_else(|| AxisError::TriggerSyntax {
        s: s.to_string(),
        example: example.to_string(),
    })?;
    let paths: Vec<String> = paths
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if paths.is_empty() {
        return Err(AxisError::TriggerNoPath(s.to_string()));
    }
    Ok((paths, values))
}

/// Parses `PATH[,PATH..]=RANGE`.
pub fn parse_trigger(s: &str) -> Result<Trigger, AxisError> {
    let (paths, range) = split_paths(
        s,
        "PATH=FROM..TO:STEPS, e.g. quick.timeline.1.fault.oversized_documents.count=1..8:5",
    )?;
    Ok(Trigger {
        paths,
        range: parse_range(range)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ranges() {
        let r = parse_range("0.3..0.9:7").unwrap();
        assert!(!r.scale.integer);
        assert_eq!(r.values, vec![0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]);
        assert_eq!(r.json(1), json!(0.4));
        let r = parse_range("1..8:5").unwrap();
        assert!(r.scale.integer);
        assert_eq!(r.values, vec![1.0, 3.0, 5.0, 6.0, 8.0]);
        assert_eq!(r.json(0), json!(1));
        assert_eq!(r.text(2), "5");
        assert_eq!(parse_range("4").unwrap().values, vec![4.0]);
        assert_eq!(parse_range("2..6:1").unwrap().values, vec![2.0]);
        // Rounding to integers never repeats a value.
        assert_eq!(parse_range("1..3:5").unwrap().values, vec![1.0, 2.0, 3.0]);
        for bad in [
            "",
            "0.3..0.9",
            "a..b:3",
            "0.3..0.9:0",
            "0.3-0.9:3",
            "1..2:x",
        ] {
            assert!(parse_range(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(fmt_value(0.45), "0.45");
        assert_eq!(fmt_value(8.0), "8");
        // Durations keep their unit when set into the experiment.
        let r = parse_range("1s..4s:4").unwrap();
        assert_eq!(r.values, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.json(1), json!("2s"));
        assert_eq!(r.text(3), "4s");
        assert!(parse_range("1s..4:4").is_err());
        let (lo, hi, scale) = parse_span("0.5s..8s").unwrap();
        assert_eq!((lo, hi), (0.5, 8.0));
        assert_eq!(scale.json(2.25), json!("2.25s"));
        assert!(parse_span("500ms..2s").is_err());
        assert!(parse_span("3").is_err());
    }

    #[test]
    fn triggers() {
        let t = parse_trigger("a.1.b,a.2.b=1..8:5").unwrap();
        assert_eq!(t.paths, vec!["a.1.b", "a.2.b"]);
        assert_eq!(t.range.values.len(), 5);
        assert!(parse_trigger("1..8:5").is_err());
        assert!(parse_trigger("=1..8:5").is_err());
    }
}
