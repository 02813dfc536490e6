//! A campaign reduced to what one run is compared with: per variant the
//! verdicts over its runs and each figure's range. A run carries it
//! (`RunData::campaign_context`) and a campaign writes it (`context.json`;
//! how: `campaign/context.rs`), so it is a value of the recorded run,
//! with the words that present it.

use crate::format::num;
use crate::metrics::Metric;
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
    /// The source it ran with (`git rev-parse --short=12 HEAD`, `-dirty`
    /// with uncommitted changes), when the campaign could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
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

    /// When it ran, in words: `2026-12-04 20:30 UTC` from a folder named
    /// `20261204T203025Z-seed1`; the name itself when it is not one.
    pub fn recorded_text(&self) -> String {
        let r = &self.recorded;
        let digits = |a: usize, b: usize| {
            r.get(a..b)
                .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
        };
        match (
            digits(0, 4),
            digits(4, 6),
            digits(6, 8),
            r.get(8..9),
            digits(9, 11),
            digits(11, 13),
        ) {
            (Some(y), Some(mo), Some(d), Some("T"), Some(h), Some(mi)) => {
                // A note after the folder's name, e.g. "(re-judged)", stays.
                match r.split_once(' ') {
                    Some((_, note)) => format!("{y}-{mo}-{d} {h}:{mi} UTC {note}"),
                    None => format!("{y}-{mo}-{d} {h}:{mi} UTC"),
                }
            }
            _ => r.clone(),
        }
    }

    /// The campaign's figures as a Markdown table, one row per variant
    /// (verdicts, then each figure's median with its range), under a line
    /// naming the campaign, when it ran and its commit. The documents print
    /// this (`harness campaign table FILE`) instead of typing figures.
    pub fn figures_markdown(&self) -> String {
        let form = if self.quick {
            "quick form"
        } else {
            "full form"
        };
        let commit = self.commit.as_deref().unwrap_or("not recorded");
        let runs: std::collections::BTreeSet<usize> =
            self.variants.values().map(|v| v.runs).collect();
        let runs: Vec<String> = runs.iter().map(usize::to_string).collect();
        let mut out = format!(
            "`{}` ({form}), {}, {} run(s) per variant; recorded {}, commit `{commit}`.\n\n",
            self.experiment,
            self.seeds_text(),
            runs.join("/"),
            self.recorded_text(),
        );
        let metrics: std::collections::BTreeSet<Metric> = self
            .variants
            .values()
            .flat_map(|v| v.figures.keys().copied())
            .collect();
        out.push_str("| variant | verdicts |");
        for m in &metrics {
            out.push_str(&format!(" {} |", m.words()));
        }
        out.push_str("\n|---|---|");
        for _ in &metrics {
            out.push_str("---|");
        }
        out.push('\n');
        for (name, v) in &self.variants {
            let verdicts: Vec<String> = v
                .verdicts
                .iter()
                .map(|(class, k)| format!("{} {k}", crate::format::class_words(class)))
                .collect();
            out.push_str(&format!("| {name} | {} |", verdicts.join(", ")));
            for m in &metrics {
                let cell = match v.figures.get(m) {
                    Some((lo, med, hi)) if lo == hi => num(*med),
                    Some((lo, med, hi)) => {
                        format!("{} ({}–{})", num(*med), num(*lo), num(*hi))
                    }
                    None => "—".to_string(),
                };
                out.push_str(&format!(" {cell} |"));
            }
            out.push('\n');
        }
        out.push_str(
            "\nEach figure: the median over the runs, with the smallest and largest in brackets.\n",
        );
        out
    }
}
