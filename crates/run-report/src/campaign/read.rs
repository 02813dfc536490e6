//! Reads a recorded run's `summary.json` back into what a campaign counts,
//! so runs made here, on other machines or by the nightly are judged alike.

use super::model::JudgedRun;
use crate::metrics::{MetricRef, MetricValues};
use serde_json::Value;

/// Why a `summary.json` cannot be counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnreadableSummary {
    #[error("summary.json schema {0} is older than 4; re-judge it with `harness report DIR`")]
    OldSchema(u64),
    #[error("summary.json has no variants")]
    NoVariants,
    #[error("a variant without a name")]
    UnnamedVariant,
    #[error("{0}: no verdict")]
    NoVerdict(String),
}

/// Every variant of one run's `summary.json`: (variant, what it concluded).
/// A summary this harness cannot read is an error that says why.
pub fn judged_variants(summary: &Value) -> Result<Vec<(String, JudgedRun)>, UnreadableSummary> {
    let schema = summary["schema_version"].as_u64().unwrap_or(0);
    if schema < 4 {
        return Err(UnreadableSummary::OldSchema(schema));
    }
    let variants = summary["variants"]
        .as_array()
        .ok_or(UnreadableSummary::NoVariants)?;
    variants.iter().map(|v| variant(summary, v)).collect()
}

fn variant(summary: &Value, v: &Value) -> Result<(String, JudgedRun), UnreadableSummary> {
    let name = v["name"]
        .as_str()
        .ok_or(UnreadableSummary::UnnamedVariant)?;
    let verdict = v["verdict"]["verdict"]
        .as_str()
        .ok_or_else(|| UnreadableSummary::NoVerdict(name.to_string()))?;
    let judged = JudgedRun {
        verdict: verdict.to_string(),
        metrics: metrics(&v["metrics"]),
        expectations: expectations(summary, name),
        integrity_ok: v["integrity"]["ok"].as_bool().unwrap_or(false),
        not_as_planned: not_as_planned(&v["harness_cost"], &v["gpu_pacing"]),
        interrupted: v["interrupted"].as_bool().unwrap_or(false),
        alert_rules: v["metrics"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| MetricRef::parse(k).ok())
            .filter(|m| m.metric.scope() == crate::metrics::Scope::Alert)
            .filter_map(|m| m.label)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    Ok((name.to_string(), judged))
}

/// The defined metrics; a key this harness does not know (a newer
/// catalogue) is skipped, never guessed.
fn metrics(m: &Value) -> MetricValues {
    let mut values = MetricValues::default();
    for (key, x) in m.as_object().into_iter().flatten() {
        if let (Ok(key), Some(x)) = (MetricRef::parse(key), x.as_f64()) {
            values.insert(&key, x);
        }
    }
    values
}

fn expectations(summary: &Value, variant: &str) -> Vec<(String, bool)> {
    summary["expectations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["variant"] == variant)
        // Not evaluated (an alert metric on the virtual clock): neither held nor failed.
        .filter(|e| e["not_evaluated"].is_null())
        .map(|e| {
            let text = format!(
                "{} {}",
                e["metric"].as_str().unwrap_or("?"),
                e["expected"].as_str().unwrap_or("?")
            );
            (text, e["passed"].as_bool().unwrap_or(false))
        })
        .collect()
}

/// Why the run was not the experiment it meant to be: the harness-cost
/// panel's verdict on the load's delivery, and a GPU slower than its model.
fn not_as_planned(cost: &Value, gpu: &Value) -> Option<String> {
    let mut why: Vec<String> = Vec::new();
    if cost["delivered_as_planned"].as_bool() == Some(false) {
        let warnings = cost["warnings"].as_array().into_iter().flatten();
        why.extend(warnings.filter_map(Value::as_str).map(str::to_string));
        if why.is_empty() {
            why.push("the load was not delivered as planned".into());
        }
    }
    if let Some(w) = gpu["warning"].as_str() {
        why.push(w.to_string());
    }
    (!why.is_empty()).then(|| why.join("; "))
}
