//! The verdict: did the variant stay stable, recover once its trigger had
//! gone, or fall into a metastable failure that outlived it?
//!
//! A metastable failure is one that outlives its trigger because a
//! sustaining effect (work amplification) keeps the system overloaded
//! (Bronson et al., HotOS'21; Huang et al., OSDI'22). So the verdict is
//! judged from the end of each trigger's *residue* — the moment its fault was
//! undone and the work it injected had left the system — never from a timer.
//! The rule (the report cites [`verdict_rule_text`]):
//!
//! 1. **Baseline** and **health** of each second: see [`super::baseline`].
//! 2. **Episodes.** Triggers whose spans overlap (one starts before the
//!    other's residue ended) form one episode, from the first start to the
//!    last residue end. Each episode is judged up to its *horizon*: the next
//!    episode's start, or the judged end of the run.
//! 3. **Per episode**, with `r` its residue end and `W` the recovery window,
//!    the candidates are the whole seconds `t` with `r <= t < r + W`; one
//!    *recovers* when it starts `W` healthy seconds before the horizon (or
//!    is healthy through it, if at least half of `W` remains). The episode
//!    **recovered** at its first recovering candidate; with none, it was
//!    **still degraded** if most of the `W` seconds were degraded, and if
//!    most were healthy (a stray slow second broke every streak) it
//!    recovered at the first later second that starts one. It is
//!    **undecided** otherwise (the horizon came too soon, the residue never
//!    ended, or the seconds alternated up to the horizon). Health is judged
//!    on the episode's own seconds: smoothing borrows neither from the
//!    residue nor from the next trigger.
//! 4. A still-degraded episode is **metastable** when the offered load of new
//!    documents over its first `W` seconds after the residue was at or below
//!    the baseline's (the plan's rate, exactly; counted arrivals within three
//!    Poisson standard deviations) *and* a sustaining effect stood out
//!    against the baseline over the degraded seconds ([`super::sustaining`]:
//!    retries, internal retries, wasted GPU pages, slots held by waiters,
//!    lost cache writes, a cold cache). With more load than the baseline it
//!    is **overloaded** — plain overload, not a metastable failure; with no
//!    sustaining effect it is **unexplained**: degraded (typically a latency
//!    shift alone) but not a failure shown to sustain itself, so the variant
//!    is inconclusive rather than metastable.
//! 5. **The variant**: `stable` when no second from warm-up to the judged
//!    end was degraded; else `metastable` if any episode was, else
//!    `overloaded` if any episode was, else `inconclusive` if any was
//!    unexplained; else the last episode decides:
//!    `recovered` (seconds after its residue ended) or `inconclusive` (with
//!    how much longer the run needed). `never healthy` without a baseline;
//!    `no trigger` without any trigger.

use super::baseline::{self, Baseline, Health};
use super::sustaining::SustainingEffect;
use crate::model::{AnalysisConfig, EventKind, Second, TriggerSpan, VariantRun};
use serde::{Deserialize, Serialize};

/// The class of a variant, as the report and expectations name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The variant had no trigger: nothing to judge.
    NoTrigger,
    /// No degraded second after warm-up.
    Stable,
    /// Degraded only while a trigger or its residue was present; back to the
    /// baseline `after_s` seconds after the last residue ended, after
    /// `degraded_s` degraded seconds in all.
    Recovered { after_s: f64, degraded_s: u32 },
    /// Still degraded for the recovery window after a residue ended, at no
    /// more than the baseline's load: the failure sustained itself.
    Metastable {
        /// When the residue ended (seconds).
        residue_end_s: f64,
        /// How long it stayed degraded after that (up to recovery or the horizon).
        degraded_for_s: f64,
        /// When it recovered after all (an operator's action, the load ending), if it did.
        recovered_at_s: Option<f64>,
        /// What kept it degraded, against the baseline.
        sustaining: Box<SustainingEffect>,
    },
    /// Still degraded after a residue, but under more offered load than the baseline's.
    Overloaded {
        residue_end_s: f64,
        offered_per_s: f64,
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

    /// Whether this is a bad outcome (a failure that outlived its trigger, or no health at all).
    pub fn is_bad(&self) -> bool {
        matches!(
            self,
            Verdict::Metastable { .. } | Verdict::Overloaded { .. } | Verdict::NeverHealthy { .. }
        )
    }

    /// Short label, e.g. "recovered 2 s after the residue".
    pub fn label(&self) -> String {
        match self {
            Verdict::NoTrigger => "no trigger".into(),
            Verdict::Stable => "stable".into(),
            Verdict::Recovered {
                after_s,
                degraded_s,
            } => {
                format!(
                    "recovered {after_s:.0} s after the residue (degraded {degraded_s} s in all)"
                )
            }
            Verdict::Metastable { degraded_for_s, .. } => {
                format!("METASTABLE: degraded {degraded_for_s:.0} s after the residue")
            }
            Verdict::Overloaded { .. } => "overloaded (load above the baseline)".into(),
            Verdict::Inconclusive {
                needed_s: Some(n), ..
            } => format!("inconclusive (needed at least {n:.0} s more)"),
            Verdict::Inconclusive { .. } => "inconclusive".into(),
            Verdict::NeverHealthy { .. } => "never healthy".into(),
        }
    }

    /// The label with what it rests on, in one sentence.
    pub fn explanation(&self) -> String {
        match self {
            Verdict::Metastable {
                residue_end_s,
                degraded_for_s,
                recovered_at_s,
                sustaining,
            } => {
                let end = match recovered_at_s {
                    Some(t) => format!("until {t:.0} s"),
                    None => "to the end of what was judged".into(),
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
                residue_end_s,
                offered_per_s,
                baseline_per_s,
            } => format!(
                "degraded after the residue ended at {residue_end_s:.1} s, but {offered_per_s:.1} \
                 new documents/s were offered against {baseline_per_s:.1}/s in the baseline: \
                 plain overload, not a metastable failure"
            ),
            Verdict::Recovered {
                after_s,
                degraded_s,
            } => format!(
                "back to its baseline {after_s:.0} s after the last trigger's residue ended; \
                 degraded {degraded_s} s in all, only while triggers or their residues were \
                 present or right after"
            ),
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
        };
    };
    let mut episodes = episodes(triggers, judged_end);
    let b = match baseline::measure(&v.seconds, cfg, first) {
        Ok(b) => b,
        Err(why) => {
            return Judgement {
                verdict: Verdict::NeverHealthy {
                    reason: why.reason(cfg),
                },
                baseline: None,
                episodes,
                judged_end_s: judged_end,
            }
        }
    };
    let window = cfg.recovery_window_s.max(1);
    let health = Health::classify(&v.seconds, &b, cfg.warmup_s, judged_end);
    for e in &mut episodes {
        e.outcome = judge_episode(e, &episode_health(v, &b, e), window);
    }
    let verdict = if health.degraded_seconds() == 0 && judged_end > cfg.warmup_s {
        Verdict::Stable
    } else {
        variant_verdict(v, &b, &health, &episodes, window)
    };
    Judgement {
        verdict,
        baseline: Some(b),
        episodes,
        judged_end_s: judged_end,
    }
}

/// Rule 5, once the episodes are judged.
fn variant_verdict(
    v: &VariantRun,
    b: &Baseline,
    health: &Health,
    episodes: &[Episode],
    window: u32,
) -> Verdict {
    let mut overloaded = None;
    let mut unexplained = None;
    for e in episodes
        .iter()
        .filter(|e| e.outcome == EpisodeOutcome::StillDegraded)
    {
        let r = e.residue_end_s.unwrap_or(e.start_s);
        let from = whole(r.ceil());
        let (ok, offered) = load_at_or_below_baseline(&v.seconds, b, from, from + window);
        if !ok {
            overloaded.get_or_insert(Verdict::Overloaded {
                residue_end_s: r,
                offered_per_s: offered,
                baseline_per_s: b.offered_per_s,
            });
            continue;
        }
        // How long it stayed degraded: to a later recovery before the horizon, if any.
        let own = episode_health(v, b, e);
        let recovered_at = own
            .healthy_in(from, e.horizon_s)
            .find(|&t| recovers(&own, t, e.horizon_s, window));
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
            unexplained.get_or_insert(Verdict::Inconclusive {
                reason: format!(
                    "still degraded {degraded_for_s:.0} s after the trigger's residue ended at \
                     {r:.1} s, at no more than the baseline's load, but {} over {from}-{until} s: \
                     not a failure shown to sustain itself",
                    sustaining.summary()
                ),
                needed_s: None,
            });
            continue;
        }
        return Verdict::Metastable {
            residue_end_s: r,
            degraded_for_s,
            recovered_at_s: recovered_at.map(f64::from),
            sustaining: Box::new(sustaining),
        };
    }
    if let Some(o) = overloaded.or(unexplained) {
        return o;
    }
    match episodes.last().map(|e| (&e.outcome, e.residue_end_s)) {
        Some((EpisodeOutcome::Recovered { at_s }, Some(r))) => Verdict::Recovered {
            after_s: (f64::from(*at_s) - r).max(0.0),
            degraded_s: health.degraded_seconds().min(u64::from(u32::MAX)) as u32,
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

mod rule_text;
pub use rule_text::verdict_rule_text;
mod seconds;
#[cfg(test)]
pub(crate) use seconds::one_trigger_run;
pub use seconds::{second_roles, SecondRole};

#[cfg(test)]
mod tests;
