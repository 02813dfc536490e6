//! The verdict classes and their words: what the report, `summary.json`
//! and expectations (`verdict: metastable`) call a variant's outcome.

use crate::analysis::drain::SlowRecovery;
use crate::analysis::sustaining::SustainingEffect;
pub use crate::format::class_words;
use serde::{Deserialize, Serialize};

/// The class of a variant, as the report and expectations name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The variant had no trigger: nothing to judge.
    NoTrigger,
    /// No degraded second after warm-up.
    Stable,
    /// Degraded only while a trigger or its residue was present, or while
    /// what they left drained by itself; back to the baseline `after_s`
    /// seconds after the last residue ended, after `degraded_s` degraded
    /// seconds in all.
    Recovered {
        after_s: f64,
        degraded_s: u32,
        /// The slowest episode whose drain took longer than the recovery
        /// window, with what drained (absent: every recovery was prompt).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slow: Option<Box<SlowRecovery>>,
    },
    /// Still degraded up to its horizon after a residue ended (or until an
    /// operator intervened), at no more than the baseline's load, with a
    /// sustaining effect: the failure sustained itself.
    Metastable {
        /// When the residue ended (seconds).
        residue_end_s: f64,
        /// How long it stayed degraded after that (up to the intervention or the horizon).
        degraded_for_s: f64,
        /// When it recovered after an operator's action, if it did.
        recovered_at_s: Option<f64>,
        /// The operator's action that came before that recovery.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended_by: Option<String>,
        /// What kept it degraded, against the baseline.
        sustaining: Box<SustainingEffect>,
    },
    /// Degraded under more offered load than the baseline's: plain overload,
    /// either after a residue or already before the first trigger.
    Overloaded {
        /// When the overload was seen from: the residue's end, or the first
        /// degraded second of the stretch that ran into the first trigger.
        since_s: f64,
        /// Degraded before any trigger: no trigger can be blamed.
        #[serde(default)]
        before_trigger: bool,
        /// Before the trigger: the planned step up that led into it, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load_step_at_s: Option<f64>,
        offered_per_s: f64,
        /// The load it was healthy at (before the step, if there was one).
        baseline_per_s: f64,
    },
    /// The run ended too soon after the residue (or the residue never ended).
    Inconclusive {
        reason: String,
        /// Seconds more the run needed, when that can be said.
        needed_s: Option<f64>,
    },
    /// Unhealthy or unmeasurable before the first trigger: no baseline to recover to.
    NeverHealthy { reason: String },
}

/// The class names, as expectations write them (`verdict: metastable`).
pub const VERDICT_CLASSES: &[&str] = &[
    "stable",
    "recovered",
    "metastable",
    "overloaded",
    "inconclusive",
    "never_healthy",
    "no_trigger",
];

/// Each class of [`VERDICT_CLASSES`] with its meaning, in the same order:
/// the reference page (`docs/reference/verdicts.md`) is generated from it.
pub const VERDICT_MEANINGS: &[(&str, &str)] = &[
    ("stable", "No degraded second after warm-up."),
    ("recovered", "Degraded only while a trigger or its residue was present, or while what they left drained by itself; back to the baseline within the recovery window of the residue's end (or later, by itself: a slow recovery, with what drained)."),
    ("metastable", "Still degraded up to the horizon after the residue ended (or until an operator acted), at no more than the baseline's load, with a sustaining effect standing out against the baseline: the failure sustained itself."),
    ("overloaded", "Degraded under more offered load than the baseline's: plain overload, after a residue or already before the first trigger."),
    ("inconclusive", "The run ended too soon after the residue (or the residue never ended), healthy and degraded seconds alternated to the end, or it stayed degraded with no sustaining effect measured."),
    ("never_healthy", "Unhealthy or unmeasurable before the first trigger: no baseline to recover to."),
    ("no_trigger", "The variant had no trigger: nothing to judge."),
];

/// The bad outcomes: a failure that outlived its trigger, or no health at
/// all. Campaigns count them by class name (`did_not_recover`).
pub const BAD_CLASSES: &[&str] = &["metastable", "overloaded", "never_healthy"];

impl Verdict {
    /// The class name (one of [`VERDICT_CLASSES`]).
    pub fn class(&self) -> &'static str {
        match self {
            Verdict::NoTrigger => "no_trigger",
            Verdict::Stable => "stable",
            Verdict::Recovered { .. } => "recovered",
            Verdict::Metastable { .. } => "metastable",
            Verdict::Overloaded { .. } => "overloaded",
            Verdict::Inconclusive { .. } => "inconclusive",
            Verdict::NeverHealthy { .. } => "never_healthy",
        }
    }

    /// Seconds from the residue's end to recovery, for a recovered variant.
    pub fn recovered_after_s(&self) -> Option<f64> {
        match self {
            Verdict::Recovered { after_s, .. } => Some(*after_s),
            _ => None,
        }
    }

    /// Whether this is a bad outcome (one of [`BAD_CLASSES`]).
    pub fn is_bad(&self) -> bool {
        BAD_CLASSES.contains(&self.class())
    }

    /// Short label, e.g. "recovered 2 s after the residue".
    pub fn label(&self) -> String {
        match self {
            Verdict::NoTrigger => class_words(self.class()),
            Verdict::Stable => "stable".into(),
            Verdict::Recovered {
                after_s,
                degraded_s,
                slow,
            } => {
                let slow = slow
                    .as_ref()
                    .map(|s| format!("; slow recovery ({:.0} s)", s.took_s))
                    .unwrap_or_default();
                format!(
                    "recovered {after_s:.0} s after the residue (degraded {degraded_s} s in all{slow})"
                )
            }
            Verdict::Metastable { degraded_for_s, .. } => {
                format!("METASTABLE: degraded {degraded_for_s:.0} s after the residue")
            }
            Verdict::Overloaded {
                before_trigger: true,
                ..
            } => "overloaded before the first trigger".into(),
            Verdict::Overloaded { .. } => "overloaded (load above the baseline)".into(),
            Verdict::Inconclusive {
                needed_s: Some(n), ..
            } => format!("inconclusive (needed at least {n:.0} s more)"),
            Verdict::Inconclusive { .. } => "inconclusive".into(),
            Verdict::NeverHealthy { .. } => class_words(self.class()),
        }
    }

    /// The label with what it rests on, in one sentence.
    pub fn explanation(&self) -> String {
        match self {
            Verdict::Metastable {
                residue_end_s,
                degraded_for_s,
                recovered_at_s,
                ended_by,
                sustaining,
            } => {
                let end = match (recovered_at_s, ended_by) {
                    (Some(t), Some(action)) => format!("until {t:.0} s, after \"{action}\""),
                    (Some(t), None) => format!("until {t:.0} s"),
                    _ => "up to its horizon: it did not come back by itself".into(),
                };
                format!(
                    "still degraded {degraded_for_s:.0} s after the trigger's residue ended at \
                     {residue_end_s:.1} s ({end}), at no more than the baseline's load; sustaining \
                     effect over {}-{} s: {}",
                    sustaining.from_s,
                    sustaining.to_s,
                    sustaining.summary()
                )
            }
            Verdict::Overloaded {
                since_s,
                before_trigger: true,
                load_step_at_s,
                offered_per_s,
                baseline_per_s,
            } => {
                let step = load_step_at_s
                    .map(|t| format!(" after the load stepped up at {t:.0} s"))
                    .unwrap_or_default();
                format!(
                    "already degraded from {since_s:.0} s{step} up to the first trigger, at \
                     {offered_per_s:.1} new documents/s offered (healthy at {baseline_per_s:.1}/s): \
                     the variant was overloaded at its offered load before any trigger, so no \
                     trigger can be blamed"
                )
            }
            Verdict::Overloaded {
                since_s,
                offered_per_s,
                baseline_per_s,
                ..
            } => format!(
                "degraded after the residue ended at {since_s:.1} s, but {offered_per_s:.1} \
                 new documents/s were offered against {baseline_per_s:.1}/s in the baseline: \
                 plain overload, not a metastable failure"
            ),
            Verdict::Recovered {
                after_s,
                degraded_s,
                slow,
            } => {
                let slow = slow
                    .as_ref()
                    .map(|s| format!("; {}", s.sentence()))
                    .unwrap_or_default();
                format!(
                    "back to its baseline {after_s:.0} s after the last trigger's residue ended; \
                     degraded {degraded_s} s in all, only while triggers or their residues were \
                     present or while what they left drained by itself{slow}"
                )
            }
            Verdict::Stable => {
                "no degraded second after warm-up: the triggers did not move it off its baseline"
                    .into()
            }
            Verdict::Inconclusive { reason, .. } | Verdict::NeverHealthy { reason } => {
                format!("{}: {reason}", self.label())
            }
            other => other.label(),
        }
    }
}
