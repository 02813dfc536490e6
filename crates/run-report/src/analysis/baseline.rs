//! The healthy behaviour a variant is judged against, and the health of each
//! second measured against it.
//!
//! * **Baseline.** Over the whole seconds in `[warmup_s, first trigger)` that
//!   have at least [`MIN_ATTEMPTS`] completed attempts: the mean per-second
//!   failure ratio, the p95 of all their attempts' latencies pooled, the offered load of new
//!   documents (with a planned rate, the highest one carried for the
//!   recovery window's length: traffic that stepped up was healthy at its
//!   peak, not at its mean), and the work-amplification figures of [`super::sustaining`].
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
//!   - *latency*: the same test on *slow* attempts, those slower than
//!     max(baseline p95 x `recovery_factor`, baseline p95 + [`LATENCY_SLACK_MS`]),
//!     with [`SLOW_SHARE`] (5 %, the share of healthy attempts above the
//!     baseline's p95) as the limit ratio. A per-second p99 cannot be
//!     judged: at ~30 attempts a second it is the slowest attempt, so one
//!     ordinary large document would decide it. Counting the slow attempts
//!     lets a heavy tail through and still calls a latency shift that slows
//!     one attempt in six degraded. The p95, not the p99: a baseline of a
//!     few seconds holds ~100-200 attempts, so its p99 is set by one or two
//!     of them, while several lie above its p95. A run recorded without
//!     latency counts ([`crate::LatencyCounts`]) has its latency not
//!     judged, and says so.
//!
//!   A second with fewer completed attempts is *degraded* (a system so stuck
//!   that nothing completes has not recovered).
//! * **Judged end.** The last second before the load ended (the drain after
//!   it is not judged) that has at least [`MIN_ATTEMPTS`] completed attempts.

use super::backlog::Backlog;
use super::sustaining::{self, EffectFigures};
use crate::latency_counts::LatencyCounts;
use crate::model::{AnalysisConfig, Second, VariantRun};
use crate::series::{self, MIN_ATTEMPTS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Absolute slack on the failure ratio when judging health.
pub const RATIO_SLACK: f64 = 0.02;
/// Absolute slack on the baseline's latency quantile when judging health (ms).
pub const LATENCY_SLACK_MS: f64 = 5.0;
/// The quantile of the baseline's latencies that sets the slow limit ...
const LATENCY_QUANTILE: f64 = 0.95;
/// ... and so the share of healthy attempts that may be slower than it.
pub const SLOW_SHARE: f64 = 1.0 - LATENCY_QUANTILE;

/// The healthy behaviour measured before the first trigger, and the limits derived from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Seconds with enough completed attempts that the baseline was measured on.
    pub seconds: u32,
    pub failure_ratio: f64,
    /// The p99 of the baseline's attempts, pooled, for the record (with no
    /// latency counts: the highest per-second p99).
    pub p99_ms: f64,
    /// The p95 of the baseline's attempts, pooled (0 with no latency counts).
    pub p95_ms: f64,
    /// A second is healthy at or below this failure ratio ...
    pub ratio_limit: f64,
    /// ... and with no more than [`SLOW_SHARE`] (plus noise) of its attempts
    /// slower than this (ms): max(p95 x factor, p95 + [`LATENCY_SLACK_MS`]).
    pub slow_above_ms: f64,
    /// Whether latency is judged: false for a run recorded without
    /// per-second latency counts.
    #[serde(default = "yes")]
    pub latency_judged: bool,
    /// New documents offered per second (the arrival plan's rate where it
    /// was recorded, else the arrivals counted).
    pub offered_per_s: f64,
    /// Whether `offered_per_s` is the plan's rate (exact) or counted arrivals (noisy).
    pub offered_is_planned: bool,
    /// Work amplification while healthy, for comparison with a sustained failure.
    pub effect: EffectFigures,
    /// The backlog gauges while healthy, for comparison with a slow drain.
    #[serde(default)]
    pub backlog: Backlog,
    /// Seconds before the first trigger that were degraded against the
    /// healthy ones, and so left out of the baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_s: Vec<u32>,
}

fn yes() -> bool {
    true
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

/// The highest planned rate the baseline carried for `sustained_s` healthy
/// seconds (the recovery window): the load the system is known to be
/// healthy at. Its mean would understate a baseline whose traffic stepped
/// up (a cache warmed at a low rate, then the peak), and call the peak
/// itself "raised load" after a trigger. The window, not a shorter span:
/// after a step above capacity the queues take seconds to fill and the
/// seconds until then look healthy, yet a load is only known to be carried
/// on the time scale on which the verdict calls any state sustained; with
/// 3 s, a step 3-4 s before a trigger made the overload after it look like
/// a failure at the baseline's load (metastable). Counted arrivals are
/// noisy, so they keep their mean.
fn sustained_planned_peak(before: &[&Second], sustained_s: u32) -> f64 {
    let mut rates: Vec<f64> = before
        .iter()
        .map(|s| s.offered_rate)
        .filter(|r| r.is_finite())
        .collect();
    rates.sort_by(|a, b| b.total_cmp(a));
    rates
        .get(sustained_s.max(1) as usize - 1)
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
    measure_where(seconds, cfg, first, |_| true)
}

/// Measures the baseline over the seconds of `[warmup_s, first)` that `keep` keeps.
pub fn measure_where(
    seconds: &[Second],
    cfg: &AnalysisConfig,
    first: f64,
    keep: impl Fn(&Second) -> bool,
) -> Result<Baseline, NoBaseline> {
    let before: Vec<&Second> = seconds
        .iter()
        .filter(|s| s.t >= cfg.warmup_s && f64::from(s.t) + 1.0 <= first)
        .filter(|s| series::completed(s) >= MIN_ATTEMPTS && keep(s))
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
    let mut pooled = LatencyCounts::default();
    for s in &before {
        pooled.merge(&s.latency);
    }
    let p95_ms = pooled.quantile_upper_ms(LATENCY_QUANTILE);
    let p99_ms = pooled.quantile_upper_ms(0.99).unwrap_or_else(|| {
        before
            .iter()
            .map(|s| s.p99_ms)
            .filter(|p| p.is_finite())
            .fold(0.0, f64::max)
    });
    let factor = if cfg.recovery_factor.is_finite() {
        cfg.recovery_factor
    } else {
        1.0
    };
    let planned = has_planned_rate(seconds);
    let offered_per_s = if planned {
        sustained_planned_peak(&before, cfg.recovery_window_s)
    } else {
        series::mean_finite(before.iter().map(|s| offered(s, planned))).unwrap_or(0.0)
    };
    Ok(Baseline {
        seconds: before.len() as u32,
        failure_ratio,
        p99_ms,
        p95_ms: p95_ms.unwrap_or(0.0),
        ratio_limit: (failure_ratio * factor).max(failure_ratio + RATIO_SLACK),
        slow_above_ms: p95_ms.map_or(0.0, |p| (p * factor).max(p + LATENCY_SLACK_MS)),
        latency_judged: p95_ms.is_some(),
        offered_per_s,
        offered_is_planned: planned,
        effect: sustaining::figures(&before),
        backlog: Backlog::mean(before.iter().copied()),
        excluded_s: Vec::new(),
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

/// Whether the seconds around `t` keep their `(bad, of)` attempts within
/// the ratio `limit`: over the centred 3 seconds at most the limit plus a
/// count's Poisson noise, or a centred 3-second median of the per-second
/// ratios (seconds with at least [`MIN_ATTEMPTS`] attempts) within it.
fn within_limit<'a>(
    by_t: &'a BTreeMap<u32, &'a Second>,
    bad: impl Fn(&Second) -> (u64, u64) + 'a,
    limit: f64,
) -> impl Fn(u32) -> bool + 'a {
    let ratio = smoothed(by_t.values().copied(), 1, |s| {
        let (k, n) = bad(s);
        (n >= MIN_ATTEMPTS).then(|| k as f64 / n as f64)
    });
    move |t| {
        let (k, n) = by_t.range(t.saturating_sub(1)..=t.saturating_add(1)).fold(
            (0u64, 0u64),
            |(k, n), (_, s)| {
                let (bk, bn) = bad(s);
                (k + bk, n + bn)
            },
        );
        failures_within(k, n, limit) || ratio.get(&t).is_some_and(|r| *r <= limit)
    }
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
        let by_t: BTreeMap<u32, &Second> = judged.iter().map(|s| (s.t, *s)).collect();
        let failures = |s: &Second| (series::failed(s), series::completed(s));
        let slow = |s: &Second| {
            let n = s.latency.count();
            (s.latency.count_slower_than(b.slow_above_ms), n)
        };
        let failures_ok = within_limit(&by_t, failures, b.ratio_limit);
        let latency_ok = within_limit(&by_t, slow, SLOW_SHARE);
        let healthy = judged
            .iter()
            .filter(|s| {
                series::completed(s) >= MIN_ATTEMPTS
                    && failures_ok(s.t)
                    && (!b.latency_judged || latency_ok(s.t))
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

    /// Whether `t` was judged healthy (false outside `[from, end)`).
    pub fn is_healthy(&self, t: u32) -> bool {
        self.healthy.contains(&t)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` seconds from `t0` of 30 completed attempts, `slow` of them at
    /// `slow_ms` and the rest at 40 ms; none failed.
    fn seconds(t0: u32, n: u32, slow: u64, slow_ms: f64) -> Vec<Second> {
        (t0..t0 + n)
            .map(|t| {
                let mut latency = LatencyCounts::default();
                latency.record_n(40.0, 30 - slow);
                latency.record_n(slow_ms, slow);
                Second {
                    t,
                    ok: 30,
                    p99_ms: if slow > 0 { slow_ms } else { 40.0 },
                    latency,
                    ..Second::default()
                }
            })
            .collect()
    }

    fn judge(after: Vec<Second>) -> (Baseline, Health) {
        let mut all = seconds(0, 13, 0, 0.0);
        all.extend(after);
        let cfg = AnalysisConfig::default();
        let b = measure(&all, &cfg, 13.0).expect("a baseline");
        let h = Health::classify(&all, &b, 13, 13 + 20);
        (b, h)
    }

    #[test]
    fn the_limit_comes_from_the_pooled_p95() {
        let (b, _) = judge(vec![]);
        assert!(b.latency_judged);
        assert!((40.0..40.0 * 1.095).contains(&b.p95_ms), "{b:?}");
        assert!(
            (b.slow_above_ms - (b.p95_ms + LATENCY_SLACK_MS)).abs() < 1e-9,
            "{b:?}"
        );
    }

    #[test]
    fn one_slow_attempt_a_second_is_a_heavy_tail_not_a_relapse() {
        // Every second's p99 is 900 ms (the slowest of 30), yet 29 of 30 are as before.
        let (_, h) = judge(seconds(13, 20, 1, 900.0));
        assert_eq!(h.degraded_seconds(), 0);
    }

    #[test]
    fn one_attempt_in_five_slowed_is_degraded() {
        let (_, h) = judge(seconds(13, 20, 6, 300.0));
        assert_eq!(h.degraded_seconds(), 20);
    }

    #[test]
    fn one_slowed_second_alone_is_not_a_relapse_but_three_are() {
        let mut after = seconds(13, 20, 0, 0.0);
        after[5] = seconds(18, 1, 30, 300.0).remove(0);
        let (_, h) = judge(after.clone());
        assert_eq!(h.degraded_seconds(), 0);
        for s in &mut after[5..8] {
            *s = seconds(s.t, 1, 30, 300.0).remove(0);
        }
        let (_, h) = judge(after);
        assert_eq!(h.degraded_seconds(), 3);
        assert_eq!(h.healthy_in(18, 21).count(), 0);
    }

    #[test]
    fn a_run_recorded_without_latency_counts_is_not_judged_on_latency() {
        let strip = |v: Vec<Second>| -> Vec<Second> {
            v.into_iter()
                .map(|s| Second {
                    latency: LatencyCounts::default(),
                    ..s
                })
                .collect()
        };
        let mut all = strip(seconds(0, 13, 0, 0.0));
        all.extend(strip(seconds(13, 20, 30, 900.0)));
        let b = measure(&all, &AnalysisConfig::default(), 13.0).unwrap();
        assert!(!b.latency_judged);
        assert_eq!((b.p99_ms, b.p95_ms, b.slow_above_ms), (40.0, 0.0, 0.0));
        assert_eq!(Health::classify(&all, &b, 13, 33).degraded_seconds(), 0);
    }
}
