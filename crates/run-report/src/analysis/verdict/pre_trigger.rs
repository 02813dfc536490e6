//! The seconds before the first trigger: a healthy baseline, and whether the
//! variant was already overloaded when the trigger came.
//!
//! A baseline averaged over every second before the first trigger takes in
//! whatever was wrong there: a variant whose traffic stepped above its
//! capacity 18 s before a cache flush would be judged against a failure
//! ratio and a recomputation share that already were the overload's, and
//! the flush blamed for it. So the baseline is made of healthy seconds
//! only, in two passes:
//!
//! 1. a first baseline over the seconds whose failure ratio is within the
//!    wave threshold (customer-visible failure is never healthy);
//! 2. each second before the trigger judged against it ([`Health`]), and
//!    the baseline measured again over the healthy ones alone, until the
//!    healthy seconds no longer change; the others are listed in
//!    [`Baseline::excluded_s`].
//!
//! The variant was **overloaded before its first trigger** when most of the
//! last W seconds before it (W the recovery window, the time scale on which
//! the verdict calls a state sustained) were degraded against that
//! baseline: degraded after warm-up and after any load step, at the load it
//! carried when the trigger came. A transient after a step that settled
//! before the trigger is not overload, and neither is a 2-s latency blip
//! just before it. When the planned rate stepped up to the overload's rate
//! shortly before it began, the verdict names that step and the load the
//! system was healthy at before it.

use super::whole;
use crate::analysis::baseline::{self, Baseline, Health, NoBaseline};
use crate::model::{AnalysisConfig, Second};
use crate::series;

/// At most this many baselines are measured: the healthy set shrinks to a
/// fixed point within two or three on any series seen.
const MAX_PASSES: usize = 5;

/// Degraded before the first trigger: since when, and at what load.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PreTriggerOverload {
    pub since_s: u32,
    pub offered_per_s: f64,
    /// The planned step up to that load, when one led into the overload.
    pub load_step_at_s: Option<u32>,
    /// The load the system was healthy at: before that step, if there was
    /// one, else the baseline's.
    pub healthy_per_s: f64,
}

/// The healthy baseline before `first`, and whether the variant was already
/// overloaded then (see the module doc).
pub(super) fn measure(
    seconds: &[Second],
    cfg: &AnalysisConfig,
    first: f64,
    window: u32,
) -> Result<(Baseline, Option<PreTriggerOverload>), NoBaseline> {
    let threshold = cfg.wave_threshold;
    let not_failing =
        |s: &Second| series::failure_ratio(s).is_some_and(|r| r.is_finite() && r <= threshold);
    // Never healthy: say why as before (too short, or failing on average),
    // or else that too few seconds were within the threshold one by one.
    let b1 = baseline::measure_where(seconds, cfg, first, not_failing)
        .map_err(|few| baseline::measure(seconds, cfg, first).err().unwrap_or(few))?;
    let end = whole(first.floor());
    // Measured again over the seconds healthy against the last baseline
    // until that set settles: a first baseline that took in a 40 % failure
    // ratio lets a second at its edge pass, the next one does not.
    let mut b = b1;
    let mut health = Health::classify(seconds, &b, cfg.warmup_s, end);
    for _ in 0..MAX_PASSES {
        let Ok(next) = baseline::measure_where(seconds, cfg, first, |s| health.is_healthy(s.t))
        else {
            break;
        };
        let next_health = Health::classify(seconds, &next, cfg.warmup_s, end);
        let settled = next_health.healthy_in(0, end).eq(health.healthy_in(0, end));
        (b, health) = (next, next_health);
        if settled {
            break;
        }
    }
    b.excluded_s = seconds
        .iter()
        .map(|s| s.t)
        .filter(|&t| t >= cfg.warmup_s && t < end && !health.is_healthy(t))
        .collect();
    let overload = overloaded_since(&health, cfg.warmup_s, end, window)
        .map(|since| describe(seconds, &b, &health, since, end));
    Ok((b, overload))
}

/// The overload from `since` to `end`: its load, and the step that led into it.
fn describe(
    seconds: &[Second],
    b: &Baseline,
    health: &Health,
    since: u32,
    end: u32,
) -> PreTriggerOverload {
    let offered_per_s = series::mean_finite(
        seconds
            .iter()
            .filter(|s| s.t >= since && s.t < end)
            .map(|s| baseline::offered(s, b.offered_is_planned)),
    )
    .unwrap_or(0.0);
    // The planned rate held since the last change at or before `since`.
    let planned: std::collections::BTreeMap<u32, f64> = seconds
        .iter()
        .filter(|s| b.offered_is_planned && s.t <= since)
        .map(|s| (s.t, s.offered_rate))
        .collect();
    let at_since = planned.get(&since).copied();
    let step = at_since.and_then(|r| {
        let start = planned
            .iter()
            .rev()
            .take_while(|(_, x)| (*x - r).abs() <= 1e-9 * r.abs().max(1.0))
            .last()
            .map(|(t, _)| *t)?;
        let before = planned.range(..start).next_back().map(|(_, x)| *x)?;
        (before < r).then_some(start)
    });
    let healthy_per_s = step
        .and_then(|t| {
            seconds
                .iter()
                .filter(|s| s.t < t && health.is_healthy(s.t))
                .map(|s| s.offered_rate)
                .reduce(f64::max)
        })
        .unwrap_or(b.offered_per_s);
    PreTriggerOverload {
        since_s: since,
        offered_per_s,
        load_step_at_s: step,
        healthy_per_s,
    }
}

/// The first second of the degraded stretch that runs into `end`, when most
/// of the last W seconds before `end` (from `from` on) were degraded; the
/// stretch goes back to the last healthy streak of ceil(W/2) seconds (a
/// healthy blip inside it does not end it).
fn overloaded_since(health: &Health, from: u32, end: u32, window: u32) -> Option<u32> {
    let k = window.div_ceil(2).max(1);
    let tail = end.saturating_sub(window.max(1)).max(from)..end;
    let len = tail.len() as u32;
    let degraded = tail.clone().filter(|&t| !health.is_healthy(t)).count() as u32;
    if len == 0 || 2 * degraded <= len {
        return None;
    }
    let mut since = end;
    let mut healthy_run = 0;
    for t in (from..end).rev() {
        if health.is_healthy(t) {
            healthy_run += 1;
            if healthy_run >= k {
                break;
            }
        } else {
            healthy_run = 0;
            since = t;
        }
    }
    Some(since)
}
