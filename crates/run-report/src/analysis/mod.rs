//! From a recorded run to verdicts: waves, amplification, the verdict
//! (stable, recovered, metastable ... judged from each trigger's residue),
//! integrity, expectations and the fidelity panel. Everything here is
//! a pure function of [`crate::model`], so it is tested on synthetic series.

pub mod amplification;
pub mod backlog;
pub mod baseline;
pub mod detection;
pub mod drain;
pub mod expect;
pub mod fidelity;
mod in_campaign;
pub mod measure;
pub mod sustaining;
pub mod verdict;
pub mod waves;

pub use baseline::Baseline;
pub use drain::SlowRecovery;
pub use expect::{evaluate_expectation, op_symbol, ExpectationResult};
pub use fidelity::FidelityRow;
pub use measure::{metric_value, metric_value_explained};
pub use sustaining::{EffectFigures, SustainingEffect};
pub use verdict::{
    class_words, verdict_rule_text, Episode, EpisodeOutcome, Verdict, VERDICT_CLASSES,
};
pub use waves::{wave_rule_text, Wave};

use crate::metrics::MetricValues;
use crate::model::{AnalysisConfig, Integrity, RunData, VariantRun};
use serde::Serialize;
use std::borrow::Cow;

/// Everything concluded about one variant.
#[derive(Debug, Clone, Serialize)]
pub struct VariantAnalysis {
    pub name: String,
    pub waves: Vec<Wave>,
    /// Every whole-run metric that is defined (see [`crate::Metric`]); zone
    /// and alert metrics per zone or rule. Undefined metrics are absent.
    pub metrics: MetricValues,
    pub verdict: Verdict,
    /// What the verdict was judged against (absent without trigger or baseline).
    pub baseline: Option<Baseline>,
    /// The triggers, merged where they overlap, each with its residue and how it was judged.
    pub episodes: Vec<Episode>,
    /// One past the last second judged (the drain after the load is not).
    pub judged_end_s: u32,
    /// Seconds degraded against the baseline from the warm-up to the judged
    /// end (absent without a baseline).
    pub degraded_s: Option<u32>,
    /// No incorrect result and every document accounted for.
    pub integrity_ok: bool,
    /// Why integrity failed, in words (empty when it held).
    pub integrity_problems: Vec<String>,
    pub interrupted: bool,
}

/// The whole run's conclusions.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub variants: Vec<VariantAnalysis>,
    pub expectations: Vec<ExpectationResult>,
    /// Every expectation passed and every variant's integrity held.
    pub all_passed: bool,
    pub fidelity: Vec<FidelityRow>,
    /// The verdict rule in words, with the configured numbers.
    pub verdict_rule: String,
    /// The wave rule in words, with the configured numbers.
    pub wave_rule: String,
}

impl Analysis {
    /// The analysis of the variant called `name`.
    pub fn variant(&self, name: &str) -> Option<&VariantAnalysis> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// The analysis of `v`: the one [`analyse`] computed, or a fresh one when this
    /// analysis does not cover it (so report pieces never pair a variant with
    /// another variant's analysis).
    pub fn variant_for<'a>(
        &'a self,
        v: &VariantRun,
        cfg: &AnalysisConfig,
    ) -> Cow<'a, VariantAnalysis> {
        match self.variant(&v.name) {
            Some(a) => Cow::Borrowed(a),
            None => Cow::Owned(analyse_variant(v, cfg)),
        }
    }
}

/// Integrity problems in words: incorrect results, documents not accounted for.
pub fn integrity_problems(i: &Integrity) -> Vec<String> {
    let mut problems = Vec::new();
    if i.incorrect_results > 0 {
        problems.push(format!(
            "{} incorrect result(s) out of {} checked",
            i.incorrect_results, i.results_checked
        ));
    }
    if i.pending_agent_lost > 0 {
        problems.push(format!(
            "{} document(s) pending (agent lost): the load agent driving them stopped before it reported their end",
            i.pending_agent_lost
        ));
    }
    for p in &i.processes_exited {
        problems.push(format!("the system under test's process {p}"));
    }
    if !i.accounted() {
        problems.push(format!(
            "{} submitted but {} completed + {} given up + {} pending = {}",
            i.submitted,
            i.completed,
            i.given_up,
            i.pending,
            i.completed
                .saturating_add(i.given_up)
                .saturating_add(i.pending)
        ));
    }
    problems
}

/// Analyse one variant.
pub fn analyse_variant(v: &VariantRun, cfg: &AnalysisConfig) -> VariantAnalysis {
    let judgement = verdict::judge(v, cfg);
    let problems = integrity_problems(&v.integrity);
    let mut a = VariantAnalysis {
        name: v.name.clone(),
        waves: waves::detect_waves(&v.seconds, cfg),
        metrics: MetricValues::default(),
        verdict: judgement.verdict,
        baseline: judgement.baseline,
        episodes: judgement.episodes,
        judged_end_s: judgement.judged_end_s,
        degraded_s: judgement.degraded_s,
        integrity_ok: problems.is_empty(),
        integrity_problems: problems,
        interrupted: v.interrupted,
    };
    a.metrics = measure::measure_all(v, &a, cfg);
    a
}

/// Analyse the whole run with its own [`AnalysisConfig`].
pub fn analyse(run: &RunData) -> Analysis {
    let cfg = &run.analysis;
    let variants: Vec<VariantAnalysis> = run
        .variants
        .iter()
        .map(|v| analyse_variant(v, cfg))
        .collect();
    let expectations: Vec<ExpectationResult> = run
        .expectations
        .iter()
        .map(|spec| evaluate_expectation(run, &variants, spec))
        .collect();
    let fidelity = fidelity::fidelity_rows(run, &variants);
    let all_passed =
        !expectations.iter().any(|e| e.failed()) && variants.iter().all(|v| v.integrity_ok);
    Analysis {
        variants,
        expectations,
        all_passed,
        fidelity,
        verdict_rule: verdict_rule_text(cfg),
        wave_rule: wave_rule_text(cfg),
    }
}
