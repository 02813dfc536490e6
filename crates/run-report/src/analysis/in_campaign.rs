//! One run placed in its experiment's last campaign: each variant's verdict
//! and figures against the campaign's (the report's "In context" list).
//!
//! A figure is set against the range of the campaign's n recorded runs. That
//! range is a prediction interval: a new run of the same experiment, drawn
//! like the recorded ones, falls outside it with probability 2/(n+1) by
//! chance alone (it is equally likely to rank anywhere among the n+1), so
//! with 5 recorded runs about 1 new run in 3 does. A figure outside it is
//! named as above or below it, and the line says how often that happens by
//! chance; it is no alarm by itself.

use super::Analysis;
use crate::format::num;
use crate::model::CampaignContext;

impl CampaignContext {
    /// One line per variant of `analysis`: its verdict and figures against
    /// the campaign's ranges, with how often a new run falls outside them
    /// by chance when one does.
    pub fn place(&self, analysis: &Analysis) -> Vec<String> {
        analysis
            .variants
            .iter()
            .filter_map(|a| {
                let ctx = self.variants.get(&a.name)?;
                let class = a.verdict.class();
                let mut parts = vec![format!(
                    "{} in {} of {} runs",
                    super::class_words(class),
                    ctx.verdicts.get(class).copied().unwrap_or(0),
                    ctx.runs
                )];
                let mut outside = 0;
                for (m, (lo, med, hi)) in &ctx.figures {
                    let Some(x) = a.metrics.get(*m) else { continue };
                    let place = if x < *lo {
                        "below"
                    } else if x > *hi {
                        "above"
                    } else {
                        "within"
                    };
                    outside += usize::from(place != "within");
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
                if outside > 0 {
                    parts.push(chance_note(outside, ctx.runs));
                }
                Some(format!("{}: {}", a.name, parts.join("; ")))
            })
            .collect()
    }
}

/// "1 figure outside the range of the 5 recorded runs, as about 1 new run
/// in 3 is by chance alone (2/(n+1) per figure)".
fn chance_note(outside: usize, runs: usize) -> String {
    let figures = if outside == 1 {
        "1 figure".to_string()
    } else {
        format!("{outside} figures")
    };
    format!(
        "{figures} outside the range of the {runs} recorded runs, as about 1 new run in {} is by chance alone (2/(n+1) per figure)",
        num((runs as f64 + 1.0) / 2.0)
    )
}

#[cfg(test)]
mod tests {
    use super::chance_note;

    #[test]
    fn the_chance_of_falling_outside_n_runs_is_two_in_n_plus_one() {
        assert!(chance_note(1, 5).contains("about 1 new run in 3 is by chance"));
        assert!(chance_note(2, 10).starts_with("2 figures outside the range of the 10"));
        assert!(chance_note(2, 10).contains("1 new run in 5.5"));
    }
}
