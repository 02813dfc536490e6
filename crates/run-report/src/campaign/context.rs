//! One run in context: where its figures sit within the experiment's last
//! recorded campaign, so a reader of one run sees whether it was typical
//! ("4 waves; seeds 1–10 had 4–6"). A campaign writes `context.json`; a
//! committed copy beside the experiment (`experiments/campaigns/NAME.json`,
//! `NAME-quick.json` for the quick form) is what runs compare against.
//!
//! The context itself is a value of the recorded run
//! ([`crate::model::CampaignContext`]); this is how a campaign makes one,
//! and where its public path stays.

pub use crate::model::{CampaignContext, VariantContext};

use super::aggregate::FIGURES;
use super::CampaignSummary;
use crate::metrics::MetricRef;

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
            commit: c.plan.commit.clone(),
            variants,
        }
    }
}
