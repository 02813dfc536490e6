//! A campaign: one experiment run over many seeds (and repeats), judged
//! with its confidence. Every run is a normal run with its own report; this
//! module reads them back ([`read`]), summarises each variant over its runs
//! ([`aggregate`]), states the proof of the fix for each compared pair
//! ([`compare`]), judges the expectations over runs ([`expect`]) and the
//! alert rules over runs ([`detection`]), and writes `campaign.json`,
//! `campaign.html` (with its strip plots, `strip`) and `junit.xml`
//! ([`write`]). A sequential campaign decides its claims as the runs come
//! in and stops when they are settled ([`sequential`]).
//!
//! A chaotic system is judged over many runs: a per-run expectation that
//! held in some runs but not all is *flaky*, named with the runs it failed
//! in; the shares carry exact (Clopper–Pearson) 95 % intervals.

pub mod aggregate;
pub mod agreement;
pub mod compare;
pub mod context;
pub mod detection;
pub mod expect;
pub mod model;
pub mod read;
pub mod real_check;
pub mod sequential;
mod sequential_page;
mod strip;
pub mod write;

use aggregate::VariantOverRuns;
use compare::Comparison;
use detection::AlertOverRuns;
use expect::CampaignExpectationResult;
pub use model::*;
use serde::Serialize;

/// What the campaign ran: for the page's first lines and for `--resume`.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignPlan {
    pub experiment: String,
    pub quick: bool,
    pub seeds: Vec<u64>,
    pub repeats: u32,
    pub variants: Vec<String>,
    /// Runs at once when it started, and at its end (lowered when the host
    /// could not keep up).
    pub parallel_start: usize,
    pub parallel_end: usize,
    /// The estimate stated before it ran, and the wall time it took.
    pub estimate_s: f64,
    pub wall_s: f64,
    /// Stopped early (Ctrl-C): the statistics cover what finished.
    pub interrupted: bool,
    /// The source the runs were made with, when known (a campaign run here
    /// asks git; merged runs do not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The clock its runs ran on (`--clock`).
    #[serde(default)]
    pub clock: crate::model::RunClock,
    /// The modeled time of its runs (each variant's load and drain), to
    /// set against `wall_s`; 0 when merged from recorded runs.
    #[serde(default)]
    pub modeled_s: f64,
}

/// The whole campaign, judged.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignSummary {
    pub schema_version: u32,
    pub plan: CampaignPlan,
    /// The headlines: one per compared pair.
    pub comparisons: Vec<Comparison>,
    pub variants: Vec<VariantOverRuns>,
    pub expectations: Vec<CampaignExpectationResult>,
    pub detection: Vec<AlertOverRuns>,
    pub runs: Vec<CampaignRun>,
    /// Every expectation over runs passed, every per-run expectation held in
    /// every counted run, no run errored, and every run's integrity held.
    pub all_passed: bool,
    /// A sequential campaign's claims and its time to proof
    /// (`--until-settled`; [`sequential`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<sequential::SequentialSummary>,
    /// A virtual campaign's real-time spot check (`--check-real N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_check: Option<real_check::RealCheck>,
}

/// Version of campaign.json's schema.
pub const CAMPAIGN_SCHEMA: u32 = 1;

impl CampaignSummary {
    /// Judges the campaign's runs against its spec.
    pub fn build(plan: CampaignPlan, spec: &CampaignSpec, runs: Vec<CampaignRun>) -> Self {
        let variants: Vec<VariantOverRuns> = plan
            .variants
            .iter()
            .map(|name| {
                let mine: Vec<&CampaignRun> = runs.iter().filter(|r| &r.variant == name).collect();
                VariantOverRuns::of(name, &mine)
            })
            .collect();
        let find = |n: &str| variants.iter().find(|v| v.variant == n);
        let comparisons = spec
            .compare
            .iter()
            .filter_map(|(b, c)| Some(compare::compare(find(b)?, find(c)?)))
            .collect();
        // A share claimed with error rates is judged by its sequential test
        // over the runs made, in seed order, as `--until-settled` judges
        // it: a share that merely reached its number in a few runs is not
        // a proof ("not settled" fails, with what was seen).
        let expectations: Vec<CampaignExpectationResult> = spec
            .expectations
            .iter()
            .filter(|e| plan.variants.contains(&e.variant))
            .map(|e| {
                let mut result = expect::evaluate(e, &runs);
                if let Some(c) = sequential::share_claim(e, &runs, &plan.seeds) {
                    result.passed = c.outcome == sequential::Outcome::Holds;
                    result.message = c.message;
                }
                result
            })
            .collect();
        // Per-run expectations state what must hold in every run.
        let all_passed = expectations.iter().all(|e| e.passed)
            && variants.iter().all(|v| {
                v.errored.is_empty()
                    && v.integrity_failed.is_empty()
                    && v.expectations.iter().all(|e| e.held == e.of)
            })
            && !plan.interrupted;
        CampaignSummary {
            schema_version: CAMPAIGN_SCHEMA,
            detection: detection::alerts_over_runs(&plan.variants, &runs),
            plan,
            comparisons,
            variants,
            expectations,
            runs,
            all_passed,
            sequential: None,
            real_check: None,
        }
    }

    /// Per-run expectations that held in some runs but not all.
    pub fn flaky(&self) -> impl Iterator<Item = (&str, &aggregate::ExpectationRecord)> {
        self.variants.iter().flat_map(|v| {
            v.expectations
                .iter()
                .filter(|e| e.flaky())
                .map(|e| (v.variant.as_str(), e))
        })
    }
}

#[cfg(test)]
mod tests;
