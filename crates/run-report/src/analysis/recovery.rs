//! The metastability verdict: once the last trigger is gone, did the system
//! get back to how it behaved before the first trigger, and stay there?
//!
//! A metastable failure is one that outlives its trigger: the retry storm
//! keeps the system overloaded after the fault ends. The rule (the report
//! cites [`recovery_rule_text`]):
//!
//! * **Triggers.** The first trigger starts at `first_trigger_start_s` and the
//!   last ends at `last_trigger_end_s` (each falls back to the variant's fault
//!   events, then to the other). No trigger at all: [`RecoveryVerdict::NoTrigger`].
//! * **Baseline.** Over the whole seconds in `[warmup_s, first trigger)` that
//!   have at least [`MIN_ATTEMPTS`] completed attempts: the mean per-second
//!   failure ratio and the *highest* per-second p99 (the envelope of normal
//!   behaviour: a per-second p99 of ~100 samples is noisy, and judging
//!   recovery against its mean would call a healthy system metastable); every
//!   p99 here is smoothed by a centred 3-second median. No such second, or a baseline
//!   failure ratio above `wave_threshold`: [`RecoveryVerdict::NeverHealthy`].
//! * **Healthy second.** At least [`MIN_ATTEMPTS`] completed attempts, failure
//!   ratio <= max(baseline ratio x `recovery_factor`, baseline ratio + 0.02)
//!   and p99 <= max(baseline p99 x `recovery_factor`, baseline p99 + 5 ms).
//!   The absolute slack keeps noise around a near-zero baseline from being
//!   judged as "not recovered"; a second where nothing completes is not healthy.
//! * **End of the run** is its last second with at least [`MIN_ATTEMPTS`]
//!   completed attempts: the drain after the load stops is not judged.
//! * **Recovered** at the first second `t >= ceil(last trigger end)` that starts
//!   `recovery_window_s` consecutive healthy seconds, or, when fewer seconds
//!   remain in the run, that is healthy through the end of the run provided at
//!   least half the window (rounded up) remains. `after_s = t - last trigger end`.
//! * Otherwise **Metastable**.

use crate::model::{AnalysisConfig, EventKind, Second, VariantRun};
use crate::series::{self, MIN_ATTEMPTS};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering::{Equal, Less};

/// Absolute slack on the failure ratio when judging recovery.
pub const RATIO_SLACK: f64 = 0.02;
/// Absolute slack on the p99 when judging recovery (ms).
pub const P99_SLACK_MS: f64 = 5.0;

/// What happened after the last trigger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum RecoveryVerdict {
    /// The variant had no trigger: nothing to recover from.
    NoTrigger,
    /// Back to baseline `after_s` seconds after the last trigger ended.
    Recovered { after_s: f64 },
    /// Still degraded after the trigger was gone: a metastable failure.
    Metastable,
    /// Unhealthy (or unmeasurable) before the first trigger: no baseline to recover to.
    NeverHealthy,
}

impl RecoveryVerdict {
    /// Short human label, e.g. "recovered after 12 s".
    pub fn label(&self) -> String {
        match self {
            RecoveryVerdict::NoTrigger => "no trigger".to_string(),
            RecoveryVerdict::Recovered { after_s } => format!("recovered after {after_s:.0} s"),
            RecoveryVerdict::Metastable => "METASTABLE".to_string(),
            RecoveryVerdict::NeverHealthy => "never healthy".to_string(),
        }
    }
}

/// The healthy behaviour measured before the first trigger, and the limits derived from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Seconds with enough completed attempts that the baseline was measured on.
    pub seconds: u32,
    pub failure_ratio: f64,
    pub p99_ms: f64,
    /// A second is healthy at or below this failure ratio ...
    pub ratio_limit: f64,
    /// ... and at or below this p99 (ms).
    pub p99_limit_ms: f64,
}

/// The verdict with what it was judged on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryJudgement {
    pub verdict: RecoveryVerdict,
    pub baseline: Option<Baseline>,
    pub first_trigger_start_s: Option<f64>,
    pub last_trigger_end_s: Option<f64>,
}

fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite())
}

/// First trigger start and last trigger end, with the fallbacks of the module doc.
fn trigger_span(v: &VariantRun) -> Option<(f64, f64)> {
    let faults = || v.events.iter().filter(|e| e.kind == EventKind::Fault);
    let first = finite(v.first_trigger_start_s)
        .or_else(|| series::max_finite(faults().map(|e| -e.at_s)).map(|m| -m));
    let last = finite(v.last_trigger_end_s)
        .or_else(|| series::max_finite(faults().map(|e| finite(e.end_s).unwrap_or(e.at_s))));
    match (first, last) {
        (None, None) => None,
        (first, last) => {
            let first = first.or(last).unwrap_or(0.0);
            Some((first, last.unwrap_or(first).max(first)))
        }
    }
}

fn measure_baseline(seconds: &[Second], cfg: &AnalysisConfig, first: f64) -> Option<Baseline> {
    let before: Vec<&Second> = seconds
        .iter()
        .filter(|s| s.t >= cfg.warmup_s && f64::from(s.t) + 1.0 <= first)
        .filter(|s| series::completed(s) >= MIN_ATTEMPTS)
        .collect();
    let failure_ratio =
        series::mean_finite(before.iter().filter_map(|s| series::failure_ratio(s)))?;
    let smooth = smoothed_p99(before.iter().copied());
    let p99_ms = before
        .iter()
        .filter_map(|s| smooth.get(&s.t).copied())
        .filter(|p| p.is_finite())
        .fold(0.0, f64::max);
    let factor = if cfg.recovery_factor.is_finite() {
        cfg.recovery_factor
    } else {
        1.0
    };
    Some(Baseline {
        seconds: before.len() as u32,
        failure_ratio,
        p99_ms,
        ratio_limit: (failure_ratio * factor).max(failure_ratio + RATIO_SLACK),
        p99_limit_ms: (p99_ms * factor).max(p99_ms + P99_SLACK_MS),
    })
}

fn healthy(s: &Second, p99_ms: f64, b: &Baseline) -> bool {
    series::trusted_failure_ratio(s).is_some_and(|r| r <= b.ratio_limit)
        && p99_ms.is_finite()
        && p99_ms <= b.p99_limit_ms
}

/// Per-second p99 smoothed by a centred 3-second median: a p99 of ~100
/// samples is nearly the maximum, and one slow request would otherwise break
/// a recovered streak. Seconds missing from the series are left out.
/// Only the seconds given are used, so the baseline never borrows latency
/// from the trigger's first second, nor the recovery from the trigger's last.
fn smoothed_p99<'a>(
    seconds: impl IntoIterator<Item = &'a Second>,
) -> std::collections::BTreeMap<u32, f64> {
    let by_t: std::collections::BTreeMap<u32, f64> =
        seconds.into_iter().map(|s| (s.t, s.p99_ms)).collect();
    by_t.keys()
        .map(|&t| {
            let mut w: Vec<f64> = [t.checked_sub(1), Some(t), t.checked_add(1)]
                .into_iter()
                .flatten()
                .filter_map(|x| by_t.get(&x).copied())
                .filter(|p| p.is_finite())
                .collect();
            w.sort_by(f64::total_cmp);
            (t, w.get(w.len() / 2).copied().unwrap_or(f64::NAN))
        })
        .collect()
}

/// First second from which the variant stays healthy long enough (see module doc).
fn recovery_second(
    seconds: &[Second],
    b: &Baseline,
    cfg: &AnalysisConfig,
    last: f64,
) -> Option<u32> {
    let start = last.max(0.0).ceil().min(f64::from(u32::MAX)) as u32;
    // The run ends at its last second with enough traffic to judge: the
    // drain after the load stops has too few completions to be healthy, and
    // must not be read as a relapse.
    let end = seconds
        .iter()
        .filter(|s| series::completed(s) >= MIN_ATTEMPTS)
        .map(|s| s.t.saturating_add(1))
        .max()?;
    let seconds: Vec<Second> = seconds.iter().filter(|s| s.t < end).cloned().collect();
    let seconds = &seconds[..];
    // (t, healthy) of the seconds after the trigger, in time order; a missing
    // second breaks a streak like an unhealthy one.
    let smooth = smoothed_p99(seconds.iter().filter(|s| s.t >= start));
    let mut after: Vec<(u32, bool)> = seconds
        .iter()
        .filter(|s| s.t >= start)
        .map(|s| {
            (
                s.t,
                healthy(s, smooth.get(&s.t).copied().unwrap_or(f64::NAN), b),
            )
        })
        .collect();
    after.sort_by_key(|&(t, _)| t);
    after.dedup_by_key(|&mut (t, _)| t);
    // streak[i]: consecutive healthy seconds starting at after[i].
    let mut streak = vec![0u32; after.len() + 1];
    for i in (0..after.len()).rev() {
        let next_contiguous = after.get(i + 1).is_some_and(|n| n.0 == after[i].0 + 1);
        streak[i] = match (after[i].1, next_contiguous) {
            (false, _) => 0,
            (true, true) => streak[i + 1] + 1,
            (true, false) => 1,
        };
    }
    let window = cfg.recovery_window_s.max(1);
    let min_tail = window.div_ceil(2);
    after
        .iter()
        .zip(&streak)
        .find(|((t, _), &run)| {
            let need = window.min(end - t);
            (need == window || need >= min_tail) && run >= need
        })
        .map(|((t, _), _)| *t)
}

/// Judge one variant by the rule in the module doc.
pub fn judge_recovery(v: &VariantRun, cfg: &AnalysisConfig) -> RecoveryJudgement {
    let Some((first, last)) = trigger_span(v) else {
        return RecoveryJudgement {
            verdict: RecoveryVerdict::NoTrigger,
            baseline: None,
            first_trigger_start_s: None,
            last_trigger_end_s: None,
        };
    };
    let baseline = measure_baseline(&v.seconds, cfg, first);
    let verdict = match &baseline {
        None => RecoveryVerdict::NeverHealthy,
        // At or below the threshold; NaN (threshold or ratio) counts as unhealthy.
        Some(b)
            if !matches!(
                b.failure_ratio.partial_cmp(&cfg.wave_threshold),
                Some(Less | Equal)
            ) =>
        {
            RecoveryVerdict::NeverHealthy
        }
        Some(b) => match recovery_second(&v.seconds, b, cfg, last) {
            Some(t) => RecoveryVerdict::Recovered {
                after_s: (f64::from(t) - last).max(0.0),
            },
            None => RecoveryVerdict::Metastable,
        },
    };
    RecoveryJudgement {
        verdict,
        baseline,
        first_trigger_start_s: Some(first),
        last_trigger_end_s: Some(last),
    }
}

/// The rule in words with the configured numbers; the report cites it.
pub fn recovery_rule_text(cfg: &AnalysisConfig) -> String {
    format!(
        "Baseline = mean per-second failure ratio and highest per-second p99 (each p99 smoothed by a \
         centred 3-second median) over the whole seconds \
         from {warm} s (after warm-up) to the first trigger, counting seconds with at least \
         {MIN_ATTEMPTS} completed attempts; no such second, or a baseline failure ratio above \
         {thr:.0} %, is judged NEVER HEALTHY. After the last trigger ends, a second is healthy when \
         at least {MIN_ATTEMPTS} attempts completed, its failure ratio is at most \
         max(baseline x {f}, baseline + {rs:.0} points) and its p99 at most \
         max(baseline x {f}, baseline + {ps:.0} ms). The variant RECOVERED at the first second that \
         starts {w} consecutive healthy seconds (or is healthy through the end of the run when \
         fewer remain, if at least {half} remain); otherwise it is METASTABLE. A variant without \
         any trigger has NO TRIGGER.",
        warm = cfg.warmup_s,
        thr = cfg.wave_threshold * 100.0,
        f = cfg.recovery_factor,
        rs = RATIO_SLACK * 100.0,
        ps = P99_SLACK_MS,
        w = cfg.recovery_window_s.max(1),
        half = cfg.recovery_window_s.max(1).div_ceil(2),
    )
}

#[cfg(test)]
mod tests;
