//! The healthy behaviour a variant is judged against, and the health of each
//! second measured against it.
//!
//! * **Baseline.** Over the whole seconds in `[warmup_s, first trigger)` that
//!   have at least [`MIN_ATTEMPTS`] completed attempts: the mean per-second
//!   failure ratio, the *highest* per-second p99 (the envelope of normal
//!   behaviour: a per-second p99 of ~100 samples is noisy, and judging against
//!   its mean would call a healthy system degraded), the offered load of new
//!   documents (with a planned rate, the highest one carried for 3 seconds:
//!   traffic that stepped up was healthy at its peak, not at its mean), and the work-amplification figures of [`super::sustaining`].
//!   Fewer than `min_baseline_s` such seconds, or a failure ratio above
//!   `wave_threshold`: the variant was never healthy.
//! * **Healthy second.** At least [`MIN_ATTEMPTS`] completed attempts, and
//!   - *failures* within `L` = max(baseline ratio x `recovery_factor`,
//!     baseline ratio + [`RATIO_SLACK`]), allowing for the noise of small
//!     counts and for one isolated unlucky second: over the centred 3 seconds
//!     around it at most `n x L + 2 sqrt(n x L) + 1` of their `n` completed
//!     attempts failed (the limit plus a count's Poisson noise: one timeout
//!     among 30 attempts is not a relapse, a sustained 10 % is), or the
//!     centred 3-second median of the per-second failure ratio is within `L`
//!     (a one-second spike is not a relapse either);
//!   - *latency*: the centred 5-second median of the per-second p99 at most
//!     max(baseline p99 x `recovery_factor`, baseline p99 + [`P99_SLACK_MS`]),
//!     where the baseline p99 is the highest per-second p99 before the
//!     trigger (a p99 of ~30 attempts is nearly their maximum, so a single
//!     large document moves it; only a latency shift lasting several
//!     seconds counts).
//!
//!   A second with fewer completed attempts is *degraded* (a system so stuck
//!   that nothing completes has not recovered).
//! * **Judged end.** The last second before the load ended (the drain after
//!   it is not judged) that has at least [`MIN_ATTEMPTS`] completed attempts.

use super::sustaining::{self, EffectFigures};
use crate::model::{AnalysisConfig, Second, VariantRun};
use crate::series::{self, MIN_ATTEMPTS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Absolute slack on the failure ratio when judging health.
pub const RATIO_SLACK: f64 = 0.02;
/// Absolute slack on the p99 when judging health (ms).
pub const P99_SLACK_MS: f64 = 5.0;

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
    /// New documents offered per second (the arrival plan's rate where it
    /// was recorded, else the arrivals counted).
    pub offered_per_s: f64,
    /// Whether `offered_per_s` is the plan's rate (exact) or counted arrivals (noisy).
    pub offered_is_planned: bool,
    /// Work amplification while healthy, for comparison with a sustained failure.
    pub effect: EffectFigures,
}

/// Why no baseline could be measured.
#[derive(Debug, Clone, PartialEq)]
pub enum NoBaseline {
    /// Fewer than `min_baseline_s` seconds with enough traffic before the first trigger.
    TooShort { seconds: u32, needed: u32 },
    /// The failure ratio before the first trigger was already above the wave threshold.
    Failing { failure_ratio: f64 },
}

impl NoBaseline {
    pub fn reason(&self, cfg: &AnalysisConfig) -> String {
        match self {
            NoBaseline::TooShort { seconds, needed } => format!(
                "only {seconds} second(s) with at least {MIN_ATTEMPTS} completed attempts between \
                 warm-up ({} s) and the first trigger; the baseline needs {needed}",
                cfg.warmup_s
            ),
            NoBaseline::Failing { failure_ratio } => format!(
                "failure ratio {:.0} % before the first trigger, above the wave threshold of {:.0} %",
                failure_ratio * 100.0,
                cfg.wave_threshold * 100.0
            ),
        }
    }
}

/// The offered load of one second: the plan's rate when recorded, else the arrivals counted.
pub fn offered(s: &Second, planned: bool) -> f64 {
    if planned {
        s.offered_rate
    } else {
        s.arrivals as f64
    }
}

/// Whether the harness recorded the arrival plan's rate in these seconds.
pub fn has_planned_rate(seconds: &[Second]) -> bool {
    seconds.iter().any(|s| s.offered_rate > 0.0)
}

/// Seconds a planned rate must have been carried in the baseline to count as
/// a load the system was healthy at (one second at a step's edge is not).
const SUSTAINED_LOAD_S: usize = 3;

/// The highest planned rate the baseline carried for [`SUSTAINED_LOAD_S`]
/// seconds: the load the system is known to be healthy at. Its mean would
/// understate a baseline whose traffic stepped up (a cache warmed at a low
/// rate, then the peak), and call the peak itself "raised load" after a
/// trigger. Counted arrivals are noisy, so they keep their mean.
fn sustained_planned_peak(before: &[&Second]) -> f64 {
    let mut rates: Vec<f64> = before
        .iter()
        .map(|s| s.offered_rate)
        .filter(|r| r.is_finite())
        .collect();
    rates.sort_by(|a, b| b.total_cmp(a));
    rates
        .get(SUSTAINED_LOAD_S - 1)
        .or(rates.last())
        .copied()
        .unwrap_or(0.0)
}

/// Measures the baseline over `[warmup_s, first)`.
pub fn measure(
    seconds: &[Second],
    cfg: &AnalysisConfig,
    first: f64,
) -> Result<Baseline, NoBaseline> {
    let before: Vec<&Second> = seconds
        .iter()
        .filter(|s| s.t >= cfg.warmup_s && f64::from(s.t) + 1.0 <= first)
        .filter(|s| series::completed(s) >= MIN_ATTEMPTS)
        .collect();
    let needed = cfg.min_baseline_s.max(1);
    if (before.len() as u32) < needed {
        return Err(NoBaseline::TooShort {
            seconds: before.len() as u32,
            needed,
        });
    }
    let failure_ratio = series::mean_finite(before.iter().filter_map(|s| series::failure_ratio(s)))
        .unwrap_or(f64::NAN);
    // At or below the threshold; NaN (threshold or ratio) counts as failing.
    use std::cmp::Ordering::{Equal, Less};
    if !matches!(
        failure_ratio.partial_cmp(&cfg.wave_threshold),
        Some(Less | Equal)
    ) {
        return Err(NoBaseline::Failing { failure_ratio });
    }
    let p99_ms = before
        .iter()
        .map(|s| s.p99_ms)
        .filter(|p| p.is_finite())
        .fold(0.0, f64::max);
    let factor = if cfg.recovery_factor.is_finite() {
        cfg.recovery_factor
    } else {
        1.0
    };
    let planned = has_planned_rate(seconds);
    let offered_per_s = if planned {
        sustained_planned_peak(&before)
    } else {
        series::mean_finite(before.iter().map(|s| offered(s, planned))).unwrap_or(0.0)
    };
    Ok(Baseline {
        seconds: before.len() as u32,
        failure_ratio,
        p99_ms,
        ratio_limit: (failure_ratio * factor).max(failure_ratio + RATIO_SLACK),
        p99_limit_ms: (p99_ms * factor).max(p99_ms + P99_SLACK_MS),
        offered_per_s,
        offered_is_planned: planned,
        effect: sustaining::figures(&before),
    })
}

/// A per-second value smoothed by a centred median over `t - half ..= t +
/// half` of the seconds given (seconds missing from them are left out).
pub fn smoothed<'a>(
    seconds: impl IntoIterator<Item = &'a Second>,
    half: u32,
    value: impl Fn(&Second) -> Option<f64>,
) -> BTreeMap<u32, f64> {
    let by_t: BTreeMap<u32, f64> = seconds
        .into_iter()
        .filter_map(|s| value(s).filter(|v| v.is_finite()).map(|v| (s.t, v)))
        .collect();
    by_t.keys()
        .map(|&t| {
            let mut w: Vec<f64> = by_t
                .range(t.saturating_sub(half)..=t.saturating_add(half))
                .map(|(_, v)| *v)
                .collect();
            w.sort_by(f64::total_cmp);
            (t, w[w.len() / 2])
        })
        .collect()
}

/// Whether `failed` of `n` completed attempts is within the limit ratio
/// `limit` plus the Poisson noise of the count (see the module doc).
pub fn failures_within(failed: u64, n: u64, limit: f64) -> bool {
    let expected = n as f64 * limit.max(0.0);
    failed as f64 <= expected + 2.0 * expected.sqrt() + 1.0
}

/// Health of the seconds `[from, end)`. Only seconds present in the series
/// can be healthy (a missing second is degraded, like one with too few
/// completed attempts), so the memory is bounded by the series, not by `end`.
#[derive(Debug, Clone)]
pub struct Health {
    pub from: u32,
    pub end: u32,
    healthy: std::collections::BTreeSet<u32>,
}

impl Health {
    /// Classifies the seconds `[from, end)` against `b` (rule in the module doc).
    pub fn classify(seconds: &[Second], b: &Baseline, from: u32, end: u32) -> Health {
        let judged: Vec<&Second> = seconds
            .iter()
            .filter(|s| s.t >= from && s.t < end)
            .collect();
        let p99 = smoothed(
            judged
                .iter()
                .copied()
                .filter(|s| series::completed(s) >= MIN_ATTEMPTS),
            2,
            |s| Some(s.p99_ms),
        );
        let by_t: BTreeMap<u32, &Second> = judged.iter().map(|s| (s.t, *s)).collect();
        let ratio = smoothed(judged.iter().copied(), 1, series::trusted_failure_ratio);
        let failures_ok = |t: u32| {
            let (failed, n) = by_t
                .range(t.saturating_sub(1)..=t.saturating_add(1))
                .fold((0u64, 0u64), |(f, n), (_, s)| {
                    (f + series::failed(s), n + series::completed(s))
                });
            failures_within(failed, n, b.ratio_limit)
                || ratio.get(&t).is_some_and(|r| *r <= b.ratio_limit)
        };
        let healthy = judged
            .iter()
            .filter(|s| {
                series::completed(s) >= MIN_ATTEMPTS
                    && failures_ok(s.t)
                    && p99.get(&s.t).is_some_and(|p| *p <= b.p99_limit_ms)
            })
            .map(|s| s.t)
            .collect();
        Health {
            from,
            end: end.max(from),
            healthy,
        }
    }

    /// Consecutive healthy seconds from `t`, stopping before `horizon`.
    pub fn streak(&self, t: u32, horizon: u32) -> u32 {
        let horizon = horizon.min(self.end);
        let mut n = 0;
        for &x in self.healthy.range(t..horizon) {
            if x != t + n {
                break;
            }
            n += 1;
        }
        n
    }

    /// Healthy seconds in `[from, to)`, in order.
    pub fn healthy_in(&self, from: u32, to: u32) -> impl Iterator<Item = u32> + '_ {
        self.healthy.range(from..to.max(from)).copied()
    }

    /// Seconds judged degraded in `[from, end)`.
    pub fn degraded_seconds(&self) -> u64 {
        u64::from(self.end - self.from) - self.healthy.len() as u64
    }
}

/// The judged end of a run: one past its last second before the load ended
/// with at least [`MIN_ATTEMPTS`] completed attempts (0 when there is none).
pub fn judged_end(v: &VariantRun) -> u32 {
    let load_end = v
        .load_end_s
        .filter(|e| e.is_finite() && *e >= 0.0)
        .map(|e| e.floor().min(f64::from(u32::MAX)) as u32)
        .unwrap_or(u32::MAX);
    v.seconds
        .iter()
        .filter(|s| s.t < load_end && series::completed(s) >= MIN_ATTEMPTS)
        .map(|s| s.t.saturating_add(1))
        .max()
        .unwrap_or(0)
}
