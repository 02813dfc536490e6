//! Slow recovery: a system that came back to its baseline by itself, but
//! took longer than the recovery window after its trigger's residue ended.
//!
//! That is not a metastable failure, which persists until something
//! intervenes (Bronson et al., HotOS'21), so the verdict is `recovered`;
//! but a drain that outlasts the window is worth saying how slow it was and
//! what drained: the backlog the trigger left (requests queued, GPU pages
//! queued, requests in flight) and the work amplification while it drained,
//! each against the baseline.

use super::backlog::Backlog;
use super::baseline::Baseline;
use super::sustaining::SustainingEffect;
use crate::model::Second;
use serde::{Deserialize, Serialize};

/// How long a self-recovery took and what drained meanwhile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowRecovery {
    pub residue_end_s: f64,
    /// The first second of the healthy streak that ended it.
    pub recovered_at_s: f64,
    /// From the residue's end to the recovery.
    pub took_s: f64,
    pub window_s: u32,
    /// What drained, in words, each against the baseline.
    pub drained: Vec<String>,
}

impl SlowRecovery {
    /// Measures the drain `[ceil(residue_end), recovered_at)` of `seconds` against `b`.
    pub fn measure(
        seconds: &[Second],
        b: &Baseline,
        residue_end_s: f64,
        recovered_at: u32,
        window_s: u32,
    ) -> SlowRecovery {
        let from = residue_end_s.max(0.0).ceil() as u32;
        let at = |t: u32| seconds.iter().find(|s| s.t == t);
        let start = Backlog::mean(at(from));
        let end = Backlog::mean(at(recovered_at));
        let mut drained = Vec::new();
        for ((what, unit, was), ((_, _, then), (_, _, base))) in start
            .named()
            .into_iter()
            .zip(end.named().into_iter().zip(b.backlog.named()))
        {
            // A gauge that stood at least twice the baseline's (plus one)
            // when the residue ended is a backlog that had to drain.
            if was >= 2.0 * base + 1.0 {
                drained.push(format!(
                    "{what} {was:.0}{unit} at {from} s, {then:.0} at {recovered_at} s (baseline {base:.0})"
                ));
            }
        }
        let during: Vec<&Second> = seconds
            .iter()
            .filter(|s| s.t >= from && s.t < recovered_at)
            .collect();
        let effect = SustainingEffect::measure(&during, from, recovered_at, &b.effect);
        drained.extend(
            effect
                .named
                .into_iter()
                .map(|e| format!("while it drained, {e}")),
        );
        SlowRecovery {
            residue_end_s,
            recovered_at_s: f64::from(recovered_at),
            took_s: (f64::from(recovered_at) - residue_end_s).max(0.0),
            window_s,
            drained,
        }
    }

    /// "slow recovery (14 s, against an 8-s window) from the residue's end at ...: what drained".
    pub fn sentence(&self) -> String {
        let what = if self.drained.is_empty() {
            "no backlog or work amplification above the baseline was measured while it drained"
                .to_string()
        } else {
            self.drained.join("; ")
        };
        format!(
            "slow recovery ({:.0} s, longer than the {}-s recovery window) from the residue's end \
             at {:.1} s to {:.0} s, by itself: {what}",
            self.took_s, self.window_s, self.residue_end_s, self.recovered_at_s
        )
    }
}
