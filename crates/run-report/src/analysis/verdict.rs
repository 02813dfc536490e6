//! The verdict: did the variant stay stable, recover once its trigger had
//! gone, or fall into a metastable failure that outlived it?
//!
//! A metastable failure outlives its trigger because a sustaining effect
//! (work amplification) keeps the system overloaded, and it persists until
//! something intervenes (Bronson et al., HotOS'21; Huang et al., OSDI'22).
//! So each trigger is judged from the end of its *residue* (its fault
//! undone and the work it injected gone, a load spike's extra arrivals
//! included), never from a timer, against a baseline of healthy seconds
//! before the first trigger.
//!
//! The rule is stated once, in words and with the configured numbers, in
//! [`verdict_rule_text`] (`verdict/rule_text.rs`), which the report cites;
//! keep the two in step. Here it is applied, in this order:
//!
//! - [`pre_trigger`]: the healthy baseline, and overload before any trigger;
//! - [`episodes`]: overlapping triggers merged, each judged up to its horizon;
//! - [`judge_episode`]: recovered, still degraded or undecided, from the residue's end;
//! - [`judge_still_degraded`]: came back by itself (a slow recovery,
//!   [`super::drain`]) or, degraded to the horizon, metastable, overloaded
//!   or unexplained ([`super::sustaining`]);
//! - [`variant_verdict`]: the variant's class from its episodes.

use super::baseline::{self, Baseline, Health};
use super::drain::SlowRecovery;
use super::sustaining::SustainingEffect;
use crate::model::{AnalysisConfig, EventKind, Second, TriggerSpan, VariantRun};
use serde::{Deserialize, Serialize};

/// How one episode ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum EpisodeOutcome {
    Recovered {
        at_s: u32,
    },
    StillDegraded,
    Undecided {
        reason: String,
        needed_s: Option<f64>,
    },
}

/// One episode (overlapping triggers) and how it was judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    pub labels: Vec<String>,
    pub start_s: f64,
    /// The last fault of the episode was undone (None: never).
    pub trigger_end_s: Option<f64>,
    /// Its residue ended (None: still present at the end of the run).
    pub residue_end_s: Option<f64>,
    /// Judged up to here: the next episode's start, or the judged end.
    pub horizon_s: u32,
    /// The horizon is the judged end of the run (not a next trigger).
    pub horizon_is_end: bool,
    pub outcome: EpisodeOutcome,
}

/// The verdict with what it was judged on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub baseline: Option<Baseline>,
    pub episodes: Vec<Episode>,
    /// One past the last second judged.
    pub judged_end_s: u32,
    /// Seconds degraded against the baseline, from the warm-up to the judged end.
    pub degraded_s: Option<u32>,
}

fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite())
}

/// The variant's triggers; without any recorded, its fault events (undone at their end).
pub fn triggers_of(v: &VariantRun) -> Vec<TriggerSpan> {
    if !v.triggers.is_empty() {
        return v.triggers.clone();
    }
    v.events
        .iter()
        .filter(|e| e.kind == EventKind::Fault && e.at_s.is_finite())
        .map(|e| TriggerSpan::undone_at(&e.label, e.at_s, Some(finite(e.end_s).unwrap_or(e.at_s))))
        .collect()
}

/// Overlapping triggers merged into episodes (rule 2), in time order.
fn episodes(mut triggers: Vec<TriggerSpan>, judged_end: u32) -> Vec<Episode> {
    triggers.retain(|t| t.start_s.is_finite());
    triggers.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let mut out: Vec<Episode> = Vec::new();
    for t in triggers {
        let residue = finite(t.residue_end_s).map(|r| r.max(t.start_s));
        let end = finite(t.end_s);
        match out.last_mut() {
            Some(e) if e.residue_end_s.is_none_or(|r| t.start_s < r) => {
                e.labels.push(t.label);
                e.trigger_end_s = match (e.trigger_end_s, end) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                e.residue_end_s = match (e.residue_end_s, residue) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            _ => out.push(Episode {
                labels: vec![t.label],
                start_s: t.start_s,
                trigger_end_s: end,
                residue_end_s: residue,
                horizon_s: judged_end,
                horizon_is_end: true,
                outcome: EpisodeOutcome::StillDegraded,
            }),
        }
    }
    let starts: Vec<f64> = out.iter().map(|e| e.start_s).collect();
    for (i, e) in out.iter_mut().enumerate() {
        if let Some(next) = starts.get(i + 1) {
            let h = whole(next.floor());
            if h < judged_end {
                e.horizon_s = h;
                e.horizon_is_end = false;
            }
        }
    }
    out
}

fn whole(x: f64) -> u32 {
    x.max(0.0).min(f64::from(u32::MAX)) as u32
}

/// Whether `t` starts a recovery: `window` healthy seconds before the
/// horizon, or healthy through the horizon with at least half the window left.
fn recovers(health: &Health, t: u32, horizon: u32, window: u32) -> bool {
    let k = health.streak(t, horizon);
    k >= window || (t + k == horizon && k >= window.div_ceil(2))
}

/// Rule 3 for one episode.
fn judge_episode(e: &Episode, health: &Health, window: u32) -> EpisodeOutcome {
    let Some(r) = e.residue_end_s else {
        return EpisodeOutcome::Undecided {
            reason: "the trigger's residue was still in the system when the run ended".into(),
            needed_s: None,
        };
    };
    let horizon = e.horizon_s;
    // Candidates: the seconds that start within the window after the residue.
    let first = whole(r.ceil());
    let last = whole((r + f64::from(window)).ceil())
        .saturating_sub(1)
        .max(first);
    if let Some(found) = first_streak(e, health, first..(last + 1).min(horizon), window) {
        return found;
    }
    if last >= horizon {
        return EpisodeOutcome::Undecided {
            reason: format!(
                "the residue ended at {r:.1} s and only {:.1} s were left to judge before {}",
                (f64::from(horizon) - r).max(0.0),
                e.horizon_what()
            ),
            needed_s: Some(f64::from(last + 1 - horizon)),
        };
    }
    // No recovery started within the window, all of whose seconds lie before
    // the horizon. Still degraded means degraded for most of it, not a blip
    // that broke every streak.
    let healthy = health.healthy_in(first, first + window).count() as u32;
    let degraded = window - healthy.min(window);
    if 2 * degraded > window {
        return EpisodeOutcome::StillDegraded;
    }
    // Mostly healthy, but a stray degraded second broke every streak that
    // started in the window: the recovery is the first full streak after it,
    // however late, and the time it took says so.
    first_streak(e, health, last + 1..horizon, window).unwrap_or_else(|| {
        EpisodeOutcome::Undecided {
            reason: format!(
                "healthy and degraded seconds alternated after the residue ended at {r:.1} s \
                 ({degraded} of the {window} s of the window degraded) up to {}: neither back \
                 to the baseline for {window} s nor degraded for most of them",
                e.horizon_what()
            ),
            needed_s: None,
        }
    })
}

/// The first of the seconds `ts` (all before the horizon) that starts a
/// recovery, or that is healthy up to the horizon but too briefly to say so.
fn first_streak(
    e: &Episode,
    health: &Health,
    ts: std::ops::Range<u32>,
    window: u32,
) -> Option<EpisodeOutcome> {
    let horizon = e.horizon_s;
    for t in ts {
        if recovers(health, t, horizon, window) {
            return Some(EpisodeOutcome::Recovered { at_s: t });
        }
        let k = health.streak(t, horizon);
        if t + k == horizon {
            return Some(EpisodeOutcome::Undecided {
                reason: format!(
                    "healthy from {t} s, but only {k} s remained before {} (the window is {window} s)",
                    e.horizon_what()
                ),
                needed_s: Some(f64::from(t + window - horizon)),
            });
        }
    }
    None
}

/// The health of an episode's own seconds, from its residue's end to its
/// horizon: smoothing never borrows from the residue or the next trigger.
fn episode_health(v: &VariantRun, b: &Baseline, e: &Episode) -> Health {
    let from = e.residue_end_s.map_or(e.horizon_s, |r| whole(r.ceil()));
    Health::classify(&v.seconds, b, from.min(e.horizon_s), e.horizon_s)
}

impl Episode {
    fn horizon_what(&self) -> String {
        if self.horizon_is_end {
            format!("the end of the judged run at {} s", self.horizon_s)
        } else {
            format!("the next trigger at {} s", self.horizon_s)
        }
    }
}

/// Whether the offered load over `[from, to)` is at or below the baseline's (rule 4).
fn load_at_or_below_baseline(seconds: &[Second], b: &Baseline, from: u32, to: u32) -> (bool, f64) {
    let inside: Vec<&Second> = seconds.iter().filter(|s| s.t >= from && s.t < to).collect();
    if inside.is_empty() {
        return (true, b.offered_per_s);
    }
    let offered = inside
        .iter()
        .map(|s| baseline::offered(s, b.offered_is_planned))
        .sum::<f64>()
        / inside.len() as f64;
    let limit = if b.offered_is_planned {
        b.offered_per_s * (1.0 + 1e-6) + 1e-9
    } else {
        let n = inside.len() as f64;
        let nb = f64::from(b.seconds.max(1));
        b.offered_per_s + 3.0 * (b.offered_per_s.max(1.0) * (1.0 / n + 1.0 / nb)).sqrt()
    };
    (offered <= limit, offered)
}

/// Judges one variant by the rule in the module doc.
pub fn judge(v: &VariantRun, cfg: &AnalysisConfig) -> Judgement {
    let judged_end = baseline::judged_end(v);
    let triggers = triggers_of(v);
    let Some(first) = triggers
        .iter()
        .map(|t| t.start_s)
        .filter(|s| s.is_finite())
        .reduce(f64::min)
    else {
        return Judgement {
            verdict: Verdict::NoTrigger,
            baseline: None,
            episodes: Vec::new(),
            judged_end_s: judged_end,
            degraded_s: None,
        };
    };
    let mut episodes = episodes(triggers, judged_end);
    let window = cfg.recovery_window_s.max(1);
    let (b, overloaded_before) = match pre_trigger::measure(&v.seconds, cfg, first, window) {
        Ok(found) => found,
        Err(why) => {
            return Judgement {
                verdict: Verdict::NeverHealthy {
                    reason: why.reason(cfg),
                },
                baseline: None,
                episodes,
                judged_end_s: judged_end,
                degraded_s: None,
            }
        }
    };
    let health = Health::classify(&v.seconds, &b, cfg.warmup_s, judged_end);
    for e in &mut episodes {
        e.outcome = judge_episode(e, &episode_health(v, &b, e), window);
    }
    let verdict = if let Some(o) = overloaded_before {
        Verdict::Overloaded {
            since_s: f64::from(o.since_s),
            before_trigger: true,
            load_step_at_s: o.load_step_at_s.map(f64::from),
            offered_per_s: o.offered_per_s,
            baseline_per_s: o.healthy_per_s,
        }
    } else if health.degraded_seconds() == 0 && judged_end > cfg.warmup_s {
        Verdict::Stable
    } else {
        variant_verdict(v, &b, &health, &mut episodes, window)
    };
    Judgement {
        verdict,
        baseline: Some(b),
        episodes,
        judged_end_s: judged_end,
        degraded_s: Some(health.degraded_seconds().min(u64::from(u32::MAX)) as u32),
    }
}

/// The operator's action (its label) that came in `[from, to)`, if any.
/// (A fault undone at the end of its duration is [`EventKind::FaultUndone`],
/// part of the trigger: a recovery after it is the system's own.)
fn intervention(v: &VariantRun, from: f64, to: f64) -> Option<String> {
    v.events
        .iter()
        .filter(|e| e.kind == EventKind::Action && e.at_s >= from && e.at_s < to)
        .map(|e| e.label.clone())
        .next()
}

/// Rules 4 and 5 for a still-degraded episode: `None` when it came back by
/// itself (its outcome becomes that recovery), else what it was: metastable,
/// overloaded, or inconclusive (unexplained).
fn judge_still_degraded(
    v: &VariantRun,
    b: &Baseline,
    e: &mut Episode,
    window: u32,
) -> Option<Verdict> {
    let r = e.residue_end_s.unwrap_or(e.start_s);
    let from = whole(r.ceil());
    let own = episode_health(v, b, e);
    let recovered_at = own
        .healthy_in(from, e.horizon_s)
        .find(|&t| recovers(&own, t, e.horizon_s, window));
    let ended_by = recovered_at.and_then(|t| intervention(v, e.start_s, f64::from(t)));
    if let (Some(t), None) = (recovered_at, &ended_by) {
        e.outcome = EpisodeOutcome::Recovered { at_s: t };
        return None;
    }
    let (ok, offered) = load_at_or_below_baseline(&v.seconds, b, from, from + window);
    if !ok {
        return Some(Verdict::Overloaded {
            since_s: r,
            before_trigger: false,
            load_step_at_s: None,
            offered_per_s: offered,
            baseline_per_s: b.offered_per_s,
        });
    }
    let until = recovered_at.unwrap_or(e.horizon_s);
    let degraded: Vec<&Second> = v
        .seconds
        .iter()
        .filter(|s| s.t >= from && s.t < until)
        .collect();
    let sustaining = SustainingEffect::measure(&degraded, from, until, &b.effect);
    let degraded_for_s = (f64::from(until) - r).max(0.0);
    if sustaining.named.is_empty() {
        // Degraded, but nothing measured keeps it so: a failure that
        // sustains itself is not shown, so it is not called one.
        return Some(Verdict::Inconclusive {
            reason: format!(
                "still degraded {degraded_for_s:.0} s after the trigger's residue ended at \
                 {r:.1} s, at no more than the baseline's load, but {} over {from}-{until} s: \
                 not a failure shown to sustain itself",
                sustaining.summary()
            ),
            needed_s: None,
        });
    }
    Some(Verdict::Metastable {
        residue_end_s: r,
        degraded_for_s,
        recovered_at_s: recovered_at.map(f64::from),
        ended_by,
        sustaining: Box::new(sustaining),
    })
}

/// Rule 6, once the episodes are judged (still-degraded ones that came
/// back by themselves become recovered ones here).
fn variant_verdict(
    v: &VariantRun,
    b: &Baseline,
    health: &Health,
    episodes: &mut [Episode],
    window: u32,
) -> Verdict {
    let (mut metastable, mut overloaded, mut unexplained) = (None, None, None);
    for e in episodes
        .iter_mut()
        .filter(|e| e.outcome == EpisodeOutcome::StillDegraded)
    {
        match judge_still_degraded(v, b, e, window) {
            None => {}
            Some(m @ Verdict::Metastable { .. }) => {
                metastable.get_or_insert(m);
            }
            Some(o @ Verdict::Overloaded { .. }) => {
                overloaded.get_or_insert(o);
            }
            Some(other) => {
                unexplained.get_or_insert(other);
            }
        }
    }
    if let Some(found) = metastable.or(overloaded).or(unexplained) {
        return found;
    }
    match episodes.last().map(|e| (&e.outcome, e.residue_end_s)) {
        Some((EpisodeOutcome::Recovered { at_s }, Some(r))) => Verdict::Recovered {
            after_s: (f64::from(*at_s) - r).max(0.0),
            degraded_s: health.degraded_seconds().min(u64::from(u32::MAX)) as u32,
            slow: slowest_recovery(v, b, episodes, window),
        },
        Some((EpisodeOutcome::Undecided { reason, needed_s }, _)) => Verdict::Inconclusive {
            reason: reason.clone(),
            needed_s: *needed_s,
        },
        _ => Verdict::Inconclusive {
            reason: "no episode could be judged".into(),
            needed_s: None,
        },
    }
}

/// The recovered episode that took longest after its residue, when that
/// was longer than the window, with what drained.
fn slowest_recovery(
    v: &VariantRun,
    b: &Baseline,
    episodes: &[Episode],
    window: u32,
) -> Option<Box<SlowRecovery>> {
    episodes
        .iter()
        .filter_map(|e| match (&e.outcome, e.residue_end_s) {
            (EpisodeOutcome::Recovered { at_s }, Some(r)) => Some((f64::from(*at_s) - r, *at_s, r)),
            _ => None,
        })
        .filter(|(took, _, _)| *took > f64::from(window))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, at, r)| Box::new(SlowRecovery::measure(&v.seconds, b, r, at, window)))
}

mod classes;
pub use classes::{class_words, Verdict, BAD_CLASSES, VERDICT_CLASSES, VERDICT_MEANINGS};
mod pre_trigger;
mod rule_text;
pub use rule_text::verdict_rule_text;
mod seconds;
#[cfg(test)]
pub(crate) use seconds::one_trigger_run;
pub use seconds::{second_roles, SecondRole};

#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod tests;
