//! One run placed in its experiment's last campaign: each variant's verdict
//! and figures against the campaign's, with the figures outside the
//! campaign's range named (the report's "In context" list).

use super::Analysis;
use crate::format::num;
use crate::model::CampaignContext;

impl CampaignContext {
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
