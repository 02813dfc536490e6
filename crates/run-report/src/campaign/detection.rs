//! Detection over runs: for each alert rule, on which verdicts it fired,
//! how early or late against the first customer-visible failure, and its
//! false alarms (fired in a run without a wave or a degraded second). A
//! latent condition (the lossy cache) can lead; a rule on an effect
//! (duplication, saturation) fires after the first failure, and the figure
//! to beat is the incident's own monitoring.

use super::model::{counted_runs, CampaignRun, JudgedRun};
use crate::metrics::Metric;
use crate::stats::{Share, Spread};
use serde::Serialize;
use std::collections::BTreeMap;

/// One alert rule over one variant's counted runs.
#[derive(Debug, Clone, Serialize)]
pub struct AlertOverRuns {
    pub variant: String,
    pub rule: String,
    /// Runs in which it fired.
    pub fired: Share,
    /// Verdict class -> (runs it fired in, runs of that class).
    pub by_verdict: BTreeMap<String, (u64, u64)>,
    /// First customer-visible failure minus its first firing (positive: before).
    pub lead_s: Option<Spread>,
    /// Runs where it fired without a wave or a degraded second.
    pub false_alarms: Vec<String>,
}

/// Every (variant, rule) of the campaign's counted runs.
pub fn alerts_over_runs(variants: &[String], runs: &[CampaignRun]) -> Vec<AlertOverRuns> {
    let mut out = Vec::new();
    for variant in variants {
        let counted = counted_runs(runs, variant);
        let rules: std::collections::BTreeSet<&String> =
            counted.iter().flat_map(|(_, j)| &j.alert_rules).collect();
        for rule in rules {
            out.push(rule_over_runs(variant, rule, &counted));
        }
    }
    out
}

fn rule_over_runs(variant: &str, rule: &str, counted: &[(String, &JudgedRun)]) -> AlertOverRuns {
    let fired = |j: &JudgedRun| j.metrics.labelled(Metric::AlertFired, rule) == Some(1.0);
    let mut by_verdict: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (_, j) in counted {
        let e = by_verdict.entry(j.verdict.clone()).or_default();
        e.1 += 1;
        e.0 += u64::from(fired(j));
    }
    let leads: Vec<f64> = counted
        .iter()
        .filter_map(|(_, j)| j.metrics.labelled(Metric::AlertLeadS, rule))
        .collect();
    let quiet = |j: &JudgedRun| {
        j.metrics.get(Metric::Waves).unwrap_or(0.0) == 0.0
            && j.metrics.get(Metric::DegradedS).unwrap_or(0.0) == 0.0
    };
    AlertOverRuns {
        variant: variant.to_string(),
        rule: rule.to_string(),
        fired: Share::new(
            counted.iter().filter(|(_, j)| fired(j)).count() as u64,
            counted.len() as u64,
        ),
        by_verdict,
        lead_s: Spread::of(&leads),
        false_alarms: counted
            .iter()
            .filter(|(_, j)| fired(j) && quiet(j))
            .map(|(l, _)| l.clone())
            .collect(),
    }
}
