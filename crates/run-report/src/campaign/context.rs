//! One run in context: where its figures sit within the experiment's last
//! recorded campaign, so a reader of one run sees whether it was typical
//! ("4 waves; seeds 1–10 had 4–6"). A campaign writes `context.json`; a
//! committed copy beside the experiment (`experiments/campaigns/NAME.json`,
//! `NAME-quick.json` for the quick form) is what runs compare against.

use super::aggregate::FIGURES;
use super::CampaignSummary;
use crate::analysis::Analysis;
use crate::format::num;
use crate::metrics::{Metric, MetricRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The campaign, reduced to what a run is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignContext {
    pub experiment: String,
    pub quick: bool,
    pub seeds: Vec<u64>,
    pub repeats: u32,
    /// When the campaign ran (its folder's name).
    pub recorded: String,
    pub variants: BTreeMap<String, VariantContext>,
}

/// One variant over the campaign's counted runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantContext {
    pub runs: usize,
    /// Verdict class -> runs.
    pub verdicts: BTreeMap<String, u64>,
    /// Metric name -> (min, median, max).
    pub figures: BTreeMap<Metric, (f64, f64, f64)>,
}

impl CampaignContext {
    /// The context a campaign leaves.
    pub fn of(c: &CampaignSummary, recorded: &str) -> CampaignContext {
        let variants = c
            .variants
            .iter()
            .map(|v| {
                let figures = FIGURES
                    .iter()
                    .filter_map(|m| {
                        let s = v.figure(&MetricRef::whole(*m))?.spread?;
                        Some((*m, (s.min, s.median, s.max)))
                    })
                    .collect();
                let verdicts = v.verdicts.iter().map(|(k, s)| (k.clone(), s.k)).collect();
                let ctx = VariantContext {
                    runs: v.counted,
                    verdicts,
                    figures,
                };
                (v.variant.clone(), ctx)
            })
            .collect();
        CampaignContext {
            experiment: c.plan.experiment.clone(),
            quick: c.plan.quick,
            seeds: c.plan.seeds.clone(),
            repeats: c.plan.repeats,
            recorded: recorded.to_string(),
            variants,
        }
    }

    /// `seeds 1–10` or `seeds 1, 4, 7`.
    pub fn seeds_text(&self) -> String {
        let contiguous = self.seeds.windows(2).all(|w| w[1] == w[0] + 1);
        match (self.seeds.first(), self.seeds.last()) {
            (Some(a), Some(b)) if contiguous && a != b => format!("seeds {a}–{b}"),
            _ => {
                let s: Vec<String> = self.seeds.iter().map(u64::to_string).collect();
                format!("seeds {}", s.join(", "))
            }
        }
    }

    /// One line per variant of `analysis`: its verdict and figures against
    /// the campaign's, with the figures outside the campaign's range named.
    pub fn place(&self, analysis: &Analysis) -> Vec<String> {
        analysis
            .variants
            .iter()
            .filter_map(|a| {
                let ctx = self.variants.get(&a.name)?;
                let class = a.verdict.class();
                let mut parts = vec![format!(
                    "{} in {} of {} runs",
                    class,
                    ctx.verdicts.get(class).copied().unwrap_or(0),
                    ctx.runs
                )];
                for (m, (lo, med, hi)) in &ctx.figures {
                    let Some(x) = a.metrics.get(*m) else { continue };
                    let place = if x < *lo || x > *hi {
                        "OUTSIDE"
                    } else {
                        "within"
                    };
                    parts.push(format!(
                        "{} {} ({place} {}: {}–{}, median {})",
                        m.words(),
                        num(x),
                        self.seeds_text(),
                        num(*lo),
                        num(*hi),
                        num(*med)
                    ));
                }
                Some(format!("{}: {}", a.name, parts.join("; ")))
            })
            .collect()
    }
}
