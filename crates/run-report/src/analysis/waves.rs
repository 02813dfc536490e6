//! Failure waves: the stretches of a run where most attempts failed.
//!
//! A retry storm shows up as one or more waves; a fix should remove them or
//! make them short. The rule, cited in the report:
//!
//! 1. Each second is *failing* when it has at least [`MIN_ATTEMPTS`] completed
//!    attempts and a failure ratio above `wave_threshold`, *healthy* when it has
//!    enough attempts and a ratio at or below the threshold, and *unknown* when
//!    fewer than [`MIN_ATTEMPTS`] attempts completed (including none at all).
//! 2. A run is a maximal stretch of failing seconds; unknown seconds between
//!    two failing seconds continue the run (a system so stuck that nothing
//!    completes has not recovered), unknown seconds at its edges do not belong
//!    to it. A healthy second ends the run.
//! 3. Consecutive runs separated by fewer than `wave_merge_gap_s` seconds are
//!    merged (the gap becomes part of the wave).
//! 4. Merged runs shorter than `wave_min_duration_s` seconds are dropped.
//!
//! A wave's peak and mean failure ratio are over its seconds with at least
//! [`MIN_ATTEMPTS`] completed attempts (the mean is the plain mean of per-second
//! ratios); its peak amplification is the largest attempts / distinct documents
//! of its seconds with at least [`MIN_ATTEMPTS`] attempts sent.

use crate::model::{AnalysisConfig, Second};
use crate::series::{self, MIN_ATTEMPTS};
use serde::{Deserialize, Serialize};

/// One failure wave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wave {
    /// First second of the wave.
    pub start_s: u32,
    /// Seconds from the first to the last failing second, inclusive.
    pub duration_s: u32,
    pub peak_failure_ratio: f64,
    pub mean_failure_ratio: f64,
    /// Largest attempts / distinct documents in one second of the wave (0 when unknown).
    pub peak_amplification: f64,
}

impl Wave {
    /// First second after the wave.
    pub fn end_s(&self) -> u32 {
        self.start_s.saturating_add(self.duration_s)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Failing,
    Healthy,
    Unknown,
}

fn state(s: &Second, threshold: f64) -> State {
    match series::trusted_failure_ratio(s) {
        Some(r) if r > threshold => State::Failing,
        Some(_) => State::Healthy,
        None => State::Unknown,
    }
}

/// Raw runs `[start, end)` of failing seconds (step 2 of the rule).
fn raw_runs(seconds: &[Second], threshold: f64) -> Vec<(u32, u32)> {
    let mut runs = Vec::new();
    let mut current: Option<(u32, u32)> = None;
    for s in seconds {
        match state(s, threshold) {
            State::Failing => {
                let end = s.t.saturating_add(1);
                current = Some(current.map_or((s.t, end), |(start, _)| (start, end)));
            }
            State::Healthy => runs.extend(current.take()),
            State::Unknown => {}
        }
    }
    runs.extend(current);
    runs
}

/// Merge runs whose gap is shorter than `merge_gap` (step 3).
fn merge(runs: Vec<(u32, u32)>, merge_gap: u32) -> Vec<(u32, u32)> {
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(runs.len());
    for (start, end) in runs {
        match merged.last_mut() {
            Some(last) if start.saturating_sub(last.1) < merge_gap => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn describe(seconds: &[Second], start: u32, end: u32) -> Wave {
    let inside: Vec<&Second> = seconds
        .iter()
        .filter(|s| s.t >= start && s.t < end)
        .collect();
    let ratios: Vec<f64> = inside
        .iter()
        .filter_map(|s| series::trusted_failure_ratio(s))
        .collect();
    Wave {
        start_s: start,
        duration_s: end - start,
        peak_failure_ratio: series::max_finite(ratios.iter().copied()).unwrap_or(0.0),
        mean_failure_ratio: series::mean_finite(ratios).unwrap_or(0.0),
        peak_amplification: series::max_finite(
            inside.iter().filter_map(|s| series::amplification(s)),
        )
        .unwrap_or(0.0),
    }
}

/// The waves of one variant's seconds (ordered by `t`), by the rule in the module doc.
pub fn detect_waves(seconds: &[Second], cfg: &AnalysisConfig) -> Vec<Wave> {
    if !seconds.is_sorted_by_key(|s| s.t) {
        let mut sorted = seconds.to_vec();
        sorted.sort_by_key(|s| s.t);
        return detect_waves(&sorted, cfg);
    }
    let runs = merge(raw_runs(seconds, cfg.wave_threshold), cfg.wave_merge_gap_s);
    runs.into_iter()
        .filter(|(start, end)| end - start >= cfg.wave_min_duration_s)
        .map(|(start, end)| describe(seconds, start, end))
        .collect()
}

/// The rule above in one sentence, with the configured numbers, for the report.
pub fn wave_rule_text(cfg: &AnalysisConfig) -> String {
    format!(
        "A wave is a stretch of seconds whose failure ratio (rejected + timeouts + errors over \
         completed attempts, seconds with at least {MIN_ATTEMPTS} completed attempts) is above {:.0} %; \
         seconds with fewer completions between two failing seconds continue it, stretches \
         separated by fewer than {} s are merged, and stretches shorter than {} s are ignored.",
        cfg.wave_threshold * 100.0,
        cfg.wave_merge_gap_s,
        cfg.wave_min_duration_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds with 100 completed attempts each and the given failure percentages;
    /// a negative value means "nothing completed".
    fn series(pcts: &[i64]) -> Vec<Second> {
        pcts.iter()
            .enumerate()
            .map(|(t, &p)| {
                let (ok, rejected) = if p < 0 {
                    (0, 0)
                } else {
                    (100 - p as u64, p as u64)
                };
                Second {
                    t: t as u32,
                    attempts: 100,
                    distinct_documents: 25,
                    ok,
                    rejected,
                    ..Second::default()
                }
            })
            .collect()
    }

    fn cfg() -> AnalysisConfig {
        AnalysisConfig {
            wave_threshold: 0.5,
            wave_merge_gap_s: 3,
            wave_min_duration_s: 2,
            ..AnalysisConfig::default()
        }
    }

    #[test]
    fn no_waves_in_a_healthy_run() {
        assert!(detect_waves(&series(&[0, 10, 50, 20, 0]), &cfg()).is_empty());
        assert!(detect_waves(&[], &cfg()).is_empty());
    }

    #[test]
    fn one_second_blip_is_not_a_wave() {
        assert!(detect_waves(&series(&[0, 0, 90, 0, 0, 0]), &cfg()).is_empty());
    }

    #[test]
    fn wave_at_the_very_end_is_closed() {
        let w = detect_waves(&series(&[0, 0, 0, 80, 90]), &cfg());
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].start_s, w[0].duration_s), (3, 2));
        assert_eq!(w[0].peak_failure_ratio, 0.9);
        assert!((w[0].mean_failure_ratio - 0.85).abs() < 1e-12);
        assert_eq!(w[0].peak_amplification, 4.0);
    }

    #[test]
    fn short_gap_is_merged_long_gap_is_not() {
        // Gap of 2 healthy seconds (< 3): one wave of 2 + 2 + 2 seconds.
        let w = detect_waves(&series(&[0, 80, 80, 0, 0, 80, 80, 0]), &cfg());
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].start_s, w[0].duration_s), (1, 6));
        // Mean counts the healthy gap seconds that became part of the wave.
        assert!((w[0].mean_failure_ratio - 0.8 * 4.0 / 6.0).abs() < 1e-12);
        // Gap of 3 seconds (not < 3): two waves.
        let w = detect_waves(&series(&[0, 80, 80, 0, 0, 0, 80, 80, 0]), &cfg());
        assert_eq!(w.len(), 2);
        assert_eq!((w[1].start_s, w[1].duration_s), (6, 2));
    }

    #[test]
    fn blips_merged_into_a_long_enough_wave_count() {
        // Two 1-second blips 2 s apart merge into a 3-second wave.
        let w = detect_waves(&series(&[0, 90, 0, 90, 0, 0, 0, 0]), &cfg());
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].start_s, w[0].duration_s), (1, 3));
    }

    #[test]
    fn stalled_seconds_inside_a_wave_continue_it_but_not_at_edges() {
        let mut c = cfg();
        c.wave_merge_gap_s = 0;
        let w = detect_waves(&series(&[-1, 90, -1, -1, -1, -1, 90, -1, 0]), &c);
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].start_s, w[0].duration_s), (1, 6));
        // A healthy second between them splits it.
        let w = detect_waves(&series(&[90, 90, -1, 0, -1, 90, 90]), &c);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn unordered_seconds_are_sorted_first() {
        let mut s = series(&[0, 80, 80, 80, 0]);
        s.reverse();
        let w = detect_waves(&s, &cfg());
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].start_s, w[0].duration_s), (1, 3));
    }

    #[test]
    fn few_attempts_do_not_make_a_wave() {
        let mut s = series(&[0, 0, 0, 0]);
        for x in &mut s[1..3] {
            x.ok = 0;
            x.rejected = 4;
        }
        assert!(detect_waves(&s, &cfg()).is_empty());
    }
}
