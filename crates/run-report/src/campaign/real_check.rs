//! `campaign --clock virtual --check-real N`: the virtual clock's breadth
//! checked by a few real-time runs of the same file at the same commit.
//!
//! The virtual clock stands in for real time only where the two agree.
//! A few real runs cannot show agreement on every figure, since twenty
//! Holm-corrected tests on 3 runs have almost no power. So the decision
//! rests on the headline: for each variant, is the virtual campaign's
//! most common verdict as common in the real runs (Fisher's exact test,
//! Holm's correction over the variants at 5 %)? The full comparison of
//! every figure (`agreement::compare_sets`) is shown beside it, and any
//! difference it finds also counts as a disagreement.

use super::agreement::{compare_sets, share_check, Check};
use super::model::{counted_runs, CampaignRun};
use crate::stats::Share;
use serde::Serialize;

/// The real-time spot check of a virtual campaign.
#[derive(Debug, Clone, Serialize)]
pub struct RealCheck {
    /// The seeds run in real time (the campaign's first N).
    pub seeds: Vec<u64>,
    /// Its wall time (s).
    pub wall_s: f64,
    /// Per variant: the virtual majority verdict's share, virtual against real.
    pub headline: Vec<Check>,
    /// Every figure's comparison (information; a difference also counts).
    pub checks: Vec<Check>,
    /// No headline check and no figure check differs.
    pub agree: bool,
    /// The conclusion in words, for the page and the terminal.
    pub sentence: String,
}

/// Judges the real runs against the virtual ones, variant by variant.
pub fn judge(
    variants: &[String],
    virtual_runs: &[CampaignRun],
    real_runs: &[CampaignRun],
    seeds: Vec<u64>,
    wall_s: f64,
) -> RealCheck {
    let mut headline = Vec::new();
    for v in variants {
        let verdicts = |runs| -> Vec<String> {
            counted_runs(runs, v)
                .into_iter()
                .map(|(_, j)| j.verdict.clone())
                .collect()
        };
        let (virt, real) = (verdicts(virtual_runs), verdicts(real_runs));
        let Some(major) = majority(&virt) else {
            continue;
        };
        if real.is_empty() {
            continue;
        }
        let share = |vs: &[String]| {
            Share::new(
                vs.iter().filter(|x| **x == major).count() as u64,
                vs.len() as u64,
            )
        };
        headline.push(share_check(
            v,
            &format!("verdict {}", crate::analysis::class_words(&major)),
            share(&virt),
            share(&real),
        ));
    }
    super::agreement::holm(&mut headline);
    let checks = compare_sets(variants, virtual_runs, real_runs);
    let agree = !headline.iter().chain(&checks).any(|c| c.differs) && !headline.is_empty();
    let sentence = sentence(&headline, &checks, agree, &seeds);
    RealCheck {
        seeds,
        wall_s,
        headline,
        checks,
        agree,
        sentence,
    }
}

/// The most common verdict (the first in name order on a tie).
fn majority(verdicts: &[String]) -> Option<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for v in verdicts {
        *counts.entry(v).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, n)| *n == most)
        .map(|(v, _)| v.to_string())
}

fn sentence(headline: &[Check], checks: &[Check], agree: bool, seeds: &[u64]) -> String {
    let seeds: Vec<String> = seeds.iter().map(u64::to_string).collect();
    let seeds = seeds.join(", ");
    if headline.is_empty() {
        return format!(
            "NOT CHECKED: no variant has both virtual and real runs counted (real seeds {seeds})"
        );
    }
    if agree {
        return format!(
            "The clocks agree for this experiment at this commit: the real runs (seeds {seeds}) have the virtual campaign's verdicts, and none of {} figure checks differs",
            checks.len()
        );
    }
    let differ: Vec<String> = headline
        .iter()
        .chain(checks)
        .filter(|c| c.differs)
        .map(|c| {
            format!(
                "{}: {} {} virtual against {} real",
                c.variant, c.what, c.a, c.b
            )
        })
        .collect();
    format!(
        "The clocks DISAGREE for this experiment at this commit (real seeds {seeds}): the virtual verdict cannot stand in for real time here. {}",
        differ.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::tests::judged_run;

    fn runs(variant: &str, verdicts: &[&str]) -> Vec<CampaignRun> {
        verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| judged_run(variant, i as u64 + 1, v))
            .collect()
    }

    #[test]
    fn the_same_verdicts_agree() {
        let variants = vec!["before-fix".to_string()];
        let virt = runs("before-fix", &["metastable"; 10]);
        let real = runs("before-fix", &["metastable"; 3]);
        let c = judge(&variants, &virt, &real, vec![1, 2, 3], 1.0);
        assert!(c.agree, "{}", c.sentence);
        assert!(c.sentence.starts_with("The clocks agree"));
    }

    /// Three real runs against ten virtual ones are enough to flag a clock
    /// that turns every metastable run into a recovery: the headline test
    /// is one per variant, not one per figure.
    #[test]
    fn opposite_verdicts_on_three_real_runs_disagree() {
        let variants = vec!["before-fix".to_string(), "after-fix".to_string()];
        let mut virt = runs("before-fix", &["metastable"; 10]);
        virt.extend(runs("after-fix", &["recovered"; 10]));
        let mut real = runs("before-fix", &["recovered"; 3]);
        real.extend(runs("after-fix", &["recovered"; 3]));
        let c = judge(&variants, &virt, &real, vec![1, 2, 3], 1.0);
        assert!(!c.agree);
        assert!(
            c.headline[0].differs && !c.headline[1].differs,
            "{:?}",
            c.headline
        );
        assert!(
            c.sentence.contains("DISAGREE")
                && c.sentence.contains("before-fix: verdict metastable"),
            "{}",
            c.sentence
        );
    }
}
