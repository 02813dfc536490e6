//! An external target's own series: the experiment's
//! `target_series: [{ name, expr }]` PromQL expressions, evaluated on the
//! run's Prometheus over each variant.
//!
//! Why Prometheus and not the harness's sampler: the expressions are
//! PromQL (`rate()` windows, aggregation, staleness), and the real server
//! already runs per variant for `alerts:` (`prometheus.rs`). Its `sut` job
//! scrapes `target.metrics` instead of the target's `/metrics` when the
//! file names one, so rules and expressions read the same series.
//!
//! Before anything runs, [`check`] has `promtool check rules` parse each
//! expression (as a recording rule), offline; an error is located at the
//! expression in the file. After a variant, [`evaluate`] runs one range
//! query per expression at one-second steps, the run's resolution, and
//! records the series, or why it could not be measured (no data, more
//! than one series, a failed query): never a silent 0.

use crate::experiment::target_series::TargetSeriesExpr;
use crate::experiment::{Alerts, Environment, Experiment, ExperimentError};
use crate::observe::prometheus::{Monitor, PromError};
use run_report::TargetSeries;
use std::time::{Duration, SystemTime};

/// Why the expressions cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A bad expression, located in the file.
    #[error("{0}")]
    Bad(#[from] ExperimentError),
    #[error("`{0}` is not installed (the experiment has `target_series:`); install the Debian package `{p}` (apt-get install {p}), version 2.42 or later", p = crate::observe::prometheus::PACKAGE)]
    Missing(&'static str),
    #[error("running promtool: {0}")]
    Io(std::io::Error),
}

/// Before anything runs: Prometheus is installed and `promtool` parses
/// every expression. Nothing to do without `target_series:`.
pub fn check(exp: &Experiment) -> Result<(), CheckError> {
    if exp.target_series.is_empty() {
        return Ok(());
    }
    if let Err(PromError::Missing(bin)) = crate::observe::prometheus::check_installed() {
        return Err(CheckError::Missing(bin));
    }
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("harness-target-series-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(CheckError::Io)?;
    let result = exp
        .target_series
        .iter()
        .try_for_each(|s| check_one(&dir, s));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// `promtool check rules` on a file holding `s` as a recording rule.
fn check_one(dir: &std::path::Path, s: &TargetSeriesExpr) -> Result<(), CheckError> {
    let file = dir.join("target_series.yml");
    // JSON strings are valid YAML scalars, whatever the expression holds.
    let rules = format!(
        "groups:\n- name: target_series\n  rules:\n  - record: harness_target_series_check\n    expr: {}\n",
        serde_json::json!(s.expr)
    );
    std::fs::write(&file, rules).map_err(CheckError::Io)?;
    let Some(text) =
        crate::observe::prometheus::promtool_check_rules(&[&file]).map_err(CheckError::Io)?
    else {
        return Ok(());
    };
    Err(CheckError::Bad(ExperimentError {
        file: s.site.file.clone(),
        line: s.site.line,
        column: s.site.column,
        field: s.site.field.clone(),
        message: format!("not valid PromQL: {}", promtool_reason(&text)),
    }))
}

/// promtool's reason, without its temporary file's name: `1:13: parse
/// error: ...` (line and column inside the expression).
fn promtool_reason(text: &str) -> String {
    const MARK: &str = "could not parse expression: ";
    match text.find(MARK) {
        Some(i) => text[i + MARK.len()..]
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string(),
        None => format!("promtool check rules said: {}", text.trim()),
    }
}

/// The variant's Prometheus when the experiment needs one (`alerts:` or
/// `target_series:`), scraping `target.metrics` where the file names it and
/// the target's `/metrics` otherwise.
pub(crate) async fn monitor(
    exp: &Experiment,
    base: &str,
    variant: &str,
) -> Result<Option<Monitor>, PromError> {
    if exp.alerts.is_none() && exp.target_series.is_empty() {
        return Ok(None);
    }
    let alerts = exp.alerts.clone().unwrap_or_else(|| Alerts {
        rules: Vec::new(),
        rule_names: Vec::new(),
        scrape_interval: Duration::from_secs(1),
        evaluation_interval: Duration::from_secs(1),
    });
    let metrics = match &exp.environment {
        Environment::External {
            metrics: Some(m), ..
        } => m.clone(),
        _ => format!("{}/metrics", base.trim_end_matches('/')),
    };
    Monitor::start_on(&alerts, &metrics, variant)
        .await
        .map(Some)
}

/// Each expression over the variant's `secs` seconds from `from`, one
/// value a second; what could not be measured says why (also on stderr).
pub(crate) async fn evaluate(
    http: &reqwest::Client,
    prometheus: &str,
    exprs: &[TargetSeriesExpr],
    (from, secs): (SystemTime, usize),
    variant: &str,
) -> Vec<TargetSeries> {
    let start = from
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        let mut series = TargetSeries {
            name: e.name.clone(),
            expr: e.expr.clone(),
            values: vec![None; secs],
            unmeasured: None,
        };
        let end = start + secs.saturating_sub(1) as f64;
        match crate::observe::prometheus::query_range(http, prometheus, &e.expr, (start, end), 1.0)
            .await
        {
            Ok(result) => fill(&mut series, &result, start),
            Err(why) => series.unmeasured = Some(format!("the query failed: {why}")),
        }
        if let Some(why) = &series.unmeasured {
            eprintln!(
                "WARNING ({variant}): target series `{}` not measured: {why}",
                e.name
            );
        }
        out.push(series);
    }
    out
}

/// The values of a one-series matrix into `s` (second `t` at `start + t`);
/// no series or several make `s` unmeasured with why.
fn fill(s: &mut TargetSeries, result: &[serde_json::Value], start: f64) {
    let [one] = result else {
        s.unmeasured = Some(if result.is_empty() {
            "the expression returned no data over the run (does target.metrics export the series it names?)".into()
        } else {
            let labels: Vec<String> = result.iter().map(|r| r["metric"].to_string()).collect();
            format!(
                "the expression gave {} series ({}); aggregate it to one, e.g. sum(...)",
                result.len(),
                labels.join(", ")
            )
        });
        return;
    };
    for point in one["values"].as_array().into_iter().flatten() {
        let (Some(t), Some(v)) = (point[0].as_f64(), point[1].as_str()) else {
            continue;
        };
        let k = (t - start).round();
        let value = v.parse::<f64>().ok().filter(|v| v.is_finite());
        if k >= 0.0 && (k as usize) < s.values.len() {
            s.values[k as usize] = value;
        }
    }
    if s.values.iter().all(Option::is_none) {
        s.unmeasured =
            Some("the expression gave no number over the run (NaN or infinite only)".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn series() -> TargetSeries {
        TargetSeries {
            name: "q".into(),
            expr: "x".into(),
            values: vec![None; 4],
            unmeasured: None,
        }
    }

    #[test]
    fn one_series_fills_its_seconds() {
        let mut s = series();
        let r = [
            json!({"metric": {}, "values": [[100.0, "2"], [101.0, "NaN"], [103.0, "5.5"], [110.0, "9"]]}),
        ];
        fill(&mut s, &r, 100.0);
        assert_eq!(s.values, vec![Some(2.0), None, None, Some(5.5)]);
        assert_eq!(s.unmeasured, None);
    }

    #[test]
    fn no_data_or_several_series_are_not_measured() {
        let mut s = series();
        fill(&mut s, &[], 100.0);
        assert!(s.unmeasured.as_deref().unwrap().contains("no data"));
        let mut s = series();
        let r = [
            json!({"metric": {"zone": "a"}, "values": []}),
            json!({"metric": {"zone": "b"}, "values": []}),
        ];
        fill(&mut s, &r, 100.0);
        assert!(
            s.unmeasured.as_deref().unwrap().contains("2 series"),
            "{s:?}"
        );
    }

    #[test]
    fn promtool_reason_keeps_the_position_in_the_expression() {
        let text = "Checking /tmp/x.yml\n  FAILED:\n/tmp/x.yml: 5:11: group \"target_series\", rule 1, \"harness_target_series_check\": could not parse expression: 1:13: parse error: unclosed left parenthesis\n";
        assert_eq!(
            promtool_reason(text),
            "1:13: parse error: unclosed left parenthesis"
        );
    }
}
