//! What a campaign is made of: its runs (each a normal run with its own
//! report, or an error), and the expectations an experiment states over
//! runs. Plain data, shared by the harness (which runs and records) and the
//! aggregation (which judges).

use crate::metrics::{MetricRef, MetricValues};
use crate::model::CompareOp;
use serde::{Deserialize, Serialize};

/// One (variant, seed, repeat) of a campaign.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignRun {
    pub variant: String,
    pub seed: u64,
    /// 0 for the first run of a seed; a repeat runs the same seed again.
    pub repeat: u32,
    /// Its report directory, relative to the campaign's.
    pub report: Option<String>,
    pub status: RunStatus,
}

impl CampaignRun {
    /// `seed 4` or `seed 4 (repeat 2)`: how the pages name a run.
    pub fn label(&self) -> String {
        if self.repeat == 0 {
            format!("seed {}", self.seed)
        } else {
            format!("seed {} (repeat {})", self.seed, self.repeat)
        }
    }

    /// The judged figures of a run the statistics count.
    pub fn counted(&self) -> Option<&JudgedRun> {
        match &self.status {
            RunStatus::Judged(j) => Some(j),
            _ => None,
        }
    }
}

/// The counted runs of `variant` among `runs`, each with its label.
pub fn counted_runs<'a>(runs: &'a [CampaignRun], variant: &str) -> Vec<(String, &'a JudgedRun)> {
    runs.iter()
        .filter(|r| r.variant == variant)
        .filter_map(|r| r.counted().map(|j| (r.label(), j)))
        .collect()
}

/// How a run ended, as far as the campaign is concerned.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// Judged and counted.
    Judged(JudgedRun),
    /// Crashed, killed, or wrote no report: named, never counted.
    Errored { reason: String },
    /// Judged, but its load was not delivered as planned (the host could
    /// not keep up): shown, left out of the statistics.
    Excluded { reason: String, judged: JudgedRun },
}

/// What one variant's run concluded, read back from its `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct JudgedRun {
    /// The verdict's class (`Verdict::class`).
    pub verdict: String,
    pub metrics: MetricValues,
    /// Its per-run expectations: (as written, passed).
    pub expectations: Vec<(String, bool)>,
    /// Integrity held: every document accounted for, no incorrect result.
    pub integrity_ok: bool,
    /// Why its load was not delivered as planned, if it was not.
    pub not_as_planned: Option<String>,
    /// Interrupted before its end.
    pub interrupted: bool,
    /// The alert rules it evaluated.
    pub alert_rules: Vec<String>,
}

/// What an expectation over runs measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OverRuns {
    /// The share of runs whose verdict is one of `classes`.
    VerdictShare { classes: Vec<String> },
    /// The share of runs in which `metric op value` held (an undefined
    /// value does not hold).
    ConditionShare {
        metric: MetricRef,
        op: CompareOp,
        value: f64,
    },
    /// The median of the metric over the runs where it is defined.
    Median { metric: MetricRef },
    /// The smallest value over the runs.
    Min { metric: MetricRef },
    /// The largest value over the runs.
    Max { metric: MetricRef },
}

/// `variant: "runs with waves >= 1": ">= 90%"`, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignExpectation {
    pub variant: String,
    pub statistic: OverRuns,
    pub op: CompareOp,
    /// A share (0–1) for the shares, else in the metric's unit.
    pub value: f64,
    /// As written, e.g. `runs with waves >= 1 >= 90%`.
    pub source: String,
    /// For a share: the error rates it is to be proven at
    /// (`(alpha 0.05, beta 0.1)`), which let a sequential campaign decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<ClaimRates>,
}

/// The error rates a share of runs is claimed at, and the width of the
/// indifference region below the stated share (see
/// `campaign::sequential`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClaimRates {
    /// The chance of proving the claim when the true share is at or past
    /// the indifference region's far end.
    pub alpha: f64,
    /// The chance of refuting it when the true share is as stated.
    pub beta: f64,
    /// The indifference region's width (a share, 0–1).
    pub delta: f64,
}

/// The campaign's settings from the experiment file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignSpec {
    /// The seeds a campaign runs when none are given.
    pub seeds: Vec<u64>,
    /// Pairs (baseline, candidate) whose difference is the headline.
    pub compare: Vec<(String, String)>,
    pub expectations: Vec<CampaignExpectation>,
}

impl CampaignSpec {
    /// The windowed metrics its expectations name, each once: every run
    /// of the campaign writes their values into its summary.
    pub fn windowed_metrics(&self) -> Vec<MetricRef> {
        let mut out: Vec<MetricRef> = Vec::new();
        for e in &self.expectations {
            let m = match &e.statistic {
                OverRuns::VerdictShare { .. } => continue,
                OverRuns::ConditionShare { metric, .. }
                | OverRuns::Median { metric }
                | OverRuns::Min { metric }
                | OverRuns::Max { metric } => metric,
            };
            if m.window.is_some() && !out.contains(m) {
                out.push(m.clone());
            }
        }
        out
    }
}
