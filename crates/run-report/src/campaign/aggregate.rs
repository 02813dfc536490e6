//! One variant's runs, summarised: the verdict distribution with exact
//! intervals, the spread of each figure, and each per-run expectation's
//! record over the runs (flaky when it held in some runs but not all).

use super::model::{CampaignRun, JudgedRun, RunStatus};
use crate::analysis::VERDICT_CLASSES;
use crate::metrics::{Metric, MetricRef};
use crate::stats::{Share, Spread};
use serde::Serialize;

/// The figures every campaign page shows, on shared axes per figure.
pub const FIGURES: &[Metric] = &[
    Metric::PeakFailureRatio,
    Metric::Waves,
    Metric::AmplificationPeak,
    Metric::DegradedS,
    Metric::DocumentsGivenUp,
    Metric::TimeToRecoverS,
];

/// A figure over the counted runs.
#[derive(Debug, Clone, Serialize)]
pub struct FigureOverRuns {
    pub metric: MetricRef,
    /// Over the runs where it is defined (absent when it is in none).
    pub spread: Option<Spread>,
    /// (run, value) for every counted run where it is defined.
    pub values: Vec<(String, f64)>,
}

/// A per-run expectation over the counted runs.
#[derive(Debug, Clone, Serialize)]
pub struct ExpectationRecord {
    /// As written, e.g. `waves >= 4`.
    pub expectation: String,
    pub held: usize,
    pub of: usize,
    /// The runs it failed in.
    pub failed_in: Vec<String>,
}

impl ExpectationRecord {
    /// Held in some runs but not all.
    pub fn flaky(&self) -> bool {
        self.held > 0 && self.held < self.of
    }
}

/// One variant over the campaign.
#[derive(Debug, Clone, Serialize)]
pub struct VariantOverRuns {
    pub variant: String,
    /// Runs planned for it, counted, errored and excluded (named with why).
    pub planned: usize,
    pub counted: usize,
    pub errored: Vec<(String, String)>,
    pub excluded: Vec<(String, String)>,
    /// Each verdict class seen, with its share of the counted runs.
    pub verdicts: Vec<(String, Share)>,
    /// Runs with at least one wave.
    pub with_waves: Share,
    pub figures: Vec<FigureOverRuns>,
    pub expectations: Vec<ExpectationRecord>,
    /// Runs whose integrity failed (documents lost or results wrong).
    pub integrity_failed: Vec<String>,
}

impl VariantOverRuns {
    /// Summarises `runs` (all of them this variant's).
    pub fn of(variant: &str, runs: &[&CampaignRun]) -> VariantOverRuns {
        let counted: Vec<(String, &JudgedRun)> = runs
            .iter()
            .filter_map(|r| r.counted().map(|j| (r.label(), j)))
            .collect();
        let n = counted.len() as u64;
        let share = |keep: &dyn Fn(&JudgedRun) -> bool| {
            Share::new(counted.iter().filter(|(_, j)| keep(j)).count() as u64, n)
        };
        let verdicts = VERDICT_CLASSES
            .iter()
            .filter(|c| counted.iter().any(|(_, j)| j.verdict == **c))
            .map(|c| (c.to_string(), share(&|j| j.verdict == *c)))
            .collect();
        VariantOverRuns {
            variant: variant.to_string(),
            planned: runs.len(),
            counted: counted.len(),
            errored: named(runs, |s| match s {
                RunStatus::Errored { reason } => Some(reason.clone()),
                _ => None,
            }),
            excluded: named(runs, |s| match s {
                RunStatus::Excluded { reason, .. } => Some(reason.clone()),
                _ => None,
            }),
            verdicts,
            with_waves: share(&|j| j.metrics.get(Metric::Waves).unwrap_or(0.0) >= 1.0),
            figures: figures(&counted),
            expectations: expectation_records(&counted),
            integrity_failed: counted
                .iter()
                .filter(|(_, j)| !j.integrity_ok)
                .map(|(l, _)| l.clone())
                .collect(),
        }
    }

    /// Runs whose verdict is bad (`BAD_CLASSES`: metastable, overloaded or
    /// never healthy).
    pub fn did_not_recover(&self) -> Share {
        let k = self
            .verdicts
            .iter()
            .filter(|(class, _)| crate::analysis::verdict::BAD_CLASSES.contains(&class.as_str()))
            .map(|(_, s)| s.k)
            .sum();
        Share::new(k, self.counted as u64)
    }

    /// A figure's values, if the page shows it.
    pub fn figure(&self, metric: &MetricRef) -> Option<&FigureOverRuns> {
        self.figures.iter().find(|f| &f.metric == metric)
    }
}

fn named(
    runs: &[&CampaignRun],
    pick: impl Fn(&RunStatus) -> Option<String>,
) -> Vec<(String, String)> {
    runs.iter()
        .filter_map(|r| pick(&r.status).map(|why| (r.label(), why)))
        .collect()
}

/// [`FIGURES`], then each alert rule's lead time.
fn figures(counted: &[(String, &JudgedRun)]) -> Vec<FigureOverRuns> {
    let rules: std::collections::BTreeSet<&String> =
        counted.iter().flat_map(|(_, j)| &j.alert_rules).collect();
    let keys = FIGURES
        .iter()
        .map(|m| MetricRef::whole(*m))
        .chain(rules.into_iter().map(|r| MetricRef {
            metric: Metric::AlertLeadS,
            label: Some(r.clone()),
            window: None,
        }));
    keys.map(|metric| {
        let values: Vec<(String, f64)> = counted
            .iter()
            .filter_map(|(l, j)| value_of(j, &metric).map(|x| (l.clone(), x)))
            .collect();
        let xs: Vec<f64> = values.iter().map(|(_, x)| *x).collect();
        FigureOverRuns {
            metric,
            spread: Spread::of(&xs),
            values,
        }
    })
    .collect()
}

/// A run's value of `m` as written (label and window); a windowed metric
/// is defined only where the run's summary carries it (`RunData::campaign_metrics`).
pub fn value_of(j: &JudgedRun, m: &MetricRef) -> Option<f64> {
    j.metrics.value(m)
}

fn expectation_records(counted: &[(String, &JudgedRun)]) -> Vec<ExpectationRecord> {
    let mut records: Vec<ExpectationRecord> = Vec::new();
    for (label, j) in counted {
        for (text, passed) in &j.expectations {
            let i = match records.iter().position(|r| &r.expectation == text) {
                Some(i) => i,
                None => {
                    records.push(ExpectationRecord {
                        expectation: text.clone(),
                        held: 0,
                        of: 0,
                        failed_in: Vec::new(),
                    });
                    records.len() - 1
                }
            };
            let r = &mut records[i];
            r.of += 1;
            if *passed {
                r.held += 1;
            } else {
                r.failed_in.push(label.clone());
            }
        }
    }
    records
}
