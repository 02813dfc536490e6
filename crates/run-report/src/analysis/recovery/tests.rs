//! Recovery verdict on synthetic series: recovered, metastable, never healthy,
//! no trigger, and the edges of the rule.

use super::*;
use crate::model::{EventKind, TimelineEvent};

/// One second per entry: (failure percent, p99 ms); 100 completed attempts each,
/// or none when the percent is negative.
fn variant(points: &[(i64, f64)], trigger: Option<(f64, f64)>) -> VariantRun {
    let seconds = points
        .iter()
        .enumerate()
        .map(|(t, &(p, p99))| {
            let (ok, timeouts) = if p < 0 {
                (0, 0)
            } else {
                (100 - p as u64, p as u64)
            };
            Second {
                t: t as u32,
                attempts: 100,
                distinct_documents: 100,
                ok,
                timeouts,
                p99_ms: p99,
                ..Second::default()
            }
        })
        .collect();
    VariantRun {
        name: "v".into(),
        seconds,
        first_trigger_start_s: trigger.map(|t| t.0),
        last_trigger_end_s: trigger.map(|t| t.1),
        ..VariantRun::default()
    }
}

/// `n` seconds of `(pct, p99)`.
fn rep(n: usize, pct: i64, p99: f64) -> Vec<(i64, f64)> {
    vec![(pct, p99); n]
}

fn concat(parts: &[Vec<(i64, f64)>]) -> Vec<(i64, f64)> {
    parts.concat()
}

fn cfg() -> AnalysisConfig {
    AnalysisConfig {
        recovery_window_s: 10,
        warmup_s: 3,
        ..AnalysisConfig::default()
    }
}

#[test]
fn recovered_after_the_trigger() {
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(10, 90, 900.0),
        rep(5, 60, 400.0),
        rep(20, 1, 52.0),
    ]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 5.0 });
    let b = j.baseline.unwrap();
    assert_eq!(b.seconds, 17); // seconds 3..20
    assert!((b.failure_ratio - 0.01).abs() < 1e-12);
    assert!((b.ratio_limit - 0.03).abs() < 1e-12);
    assert!((b.p99_limit_ms - 55.0).abs() < 1e-12);
}

#[test]
fn fractional_trigger_end_counts_from_the_next_whole_second() {
    let pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(20, 0, 50.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 29.5))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 0.5 });
}

#[test]
fn metastable_when_the_storm_outlives_the_trigger() {
    let pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(40, 70, 800.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Metastable);
}

#[test]
fn latency_must_recover_too() {
    let pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(40, 0, 500.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Metastable);
}

#[test]
fn healthy_stretch_too_short_is_not_recovery() {
    // 5 healthy seconds, then bad again, then healthy for good.
    let pts = concat(&[
        rep(20, 0, 50.0),
        rep(10, 90, 900.0),
        rep(5, 0, 50.0),
        rep(5, 80, 900.0),
        rep(15, 0, 50.0),
    ]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 10.0 });
}

#[test]
fn end_of_run_needs_half_the_window() {
    // Healthy from 32 to the end (60): 28 s remain, window 30, half 15: recovered.
    let mut c = cfg();
    c.recovery_window_s = 30;
    let pts = concat(&[rep(20, 0, 50.0), rep(12, 90, 900.0), rep(28, 0, 50.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &c);
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 2.0 });
    // Healthy only for the last 14 s: not enough evidence.
    let pts = concat(&[rep(20, 0, 50.0), rep(26, 90, 900.0), rep(14, 0, 50.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &c);
    assert_eq!(j.verdict, RecoveryVerdict::Metastable);
}

#[test]
fn noise_around_a_zero_baseline_is_tolerated() {
    let pts = concat(&[rep(20, 0, 10.0), rep(10, 90, 900.0), rep(20, 2, 14.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 0.0 });
}

#[test]
fn stalled_seconds_are_not_healthy() {
    let pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(30, -1, 0.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Metastable);
}

#[test]
fn never_healthy_when_the_baseline_already_fails() {
    let pts = concat(&[rep(20, 70, 50.0), rep(10, 90, 900.0), rep(20, 0, 50.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::NeverHealthy);
}

#[test]
fn never_healthy_without_a_measurable_baseline() {
    // Trigger during warm-up.
    let pts = concat(&[rep(10, 90, 900.0), rep(20, 0, 50.0)]);
    let j = judge_recovery(&variant(&pts, Some((2.0, 10.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::NeverHealthy);
    assert!(j.baseline.is_none());
}

#[test]
fn no_trigger() {
    let pts = rep(30, 0, 50.0);
    let j = judge_recovery(&variant(&pts, None), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::NoTrigger);
    let empty = judge_recovery(&VariantRun::default(), &cfg());
    assert_eq!(empty.verdict, RecoveryVerdict::NoTrigger);
}

#[test]
fn triggers_fall_back_to_fault_events() {
    let pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(20, 0, 50.0)]);
    let mut v = variant(&pts, None);
    let ev = |at_s: f64, end_s: Option<f64>, kind| TimelineEvent {
        at_s,
        end_s,
        kind,
        label: "x".into(),
        ok: true,
        detail: String::new(),
    };
    v.events = vec![
        ev(20.0, Some(30.0), EventKind::Fault),
        ev(25.0, None, EventKind::Action),
    ];
    let j = judge_recovery(&v, &cfg());
    assert_eq!(j.first_trigger_start_s, Some(20.0));
    assert_eq!(j.last_trigger_end_s, Some(30.0));
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 0.0 });
}

#[test]
fn run_cut_short_before_the_trigger_ends_is_metastable() {
    let pts = concat(&[rep(20, 0, 50.0), rep(5, 90, 900.0)]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Metastable);
}

#[test]
fn nan_inputs_do_not_panic() {
    let mut pts = concat(&[rep(20, 0, f64::NAN), rep(10, 90, 900.0), rep(20, 0, 50.0)]);
    pts[25].1 = f64::NAN;
    let mut c = cfg();
    c.recovery_factor = f64::NAN;
    // No finite baseline p99: it counts as 0 ms, so recovery needs p99 <= 5 ms.
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &c);
    assert_eq!(j.verdict, RecoveryVerdict::Metastable);
    // A NaN trigger start falls back to the trigger end.
    let j = judge_recovery(&variant(&pts, Some((f64::NAN, 30.0))), &c);
    assert_eq!(j.first_trigger_start_s, Some(30.0));
}

#[test]
fn gaps_in_time_break_a_healthy_streak_and_huge_t_is_cheap() {
    let pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(30, 0, 50.0)]);
    let mut v = variant(&pts, Some((20.0, 30.0)));
    // Drop second 35: the streak from 30 is broken; recovery starts at 36.
    v.seconds.retain(|s| s.t != 35);
    let j = judge_recovery(&v, &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 6.0 });
    // A bogus far-future second must not allocate per second of time.
    v.seconds.push(Second {
        t: u32::MAX - 1,
        ..Second::default()
    });
    let j = judge_recovery(&v, &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 6.0 });
}

#[test]
fn verdict_serializes_with_a_tag() {
    let v = serde_json::to_value(RecoveryVerdict::Recovered { after_s: 3.0 }).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"verdict": "recovered", "after_s": 3.0})
    );
    let v = serde_json::to_value(RecoveryVerdict::NeverHealthy).unwrap();
    assert_eq!(v, serde_json::json!({"verdict": "never_healthy"}));
}

#[test]
fn one_slow_second_does_not_break_a_recovery() {
    // A lone p99 spike after the trigger is smoothed away by the 3-second median ...
    let mut pts = concat(&[rep(20, 0, 50.0), rep(10, 90, 900.0), rep(20, 0, 50.0)]);
    pts[38].1 = 400.0;
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 0.0 });
    // ... but two in a row are a real slowdown.
    pts[39].1 = 400.0;
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 10.0 });
}

#[test]
fn the_drain_after_the_load_is_not_a_relapse() {
    // Recovered for 6 s, then 2 s of drain with almost nothing completing.
    let pts = concat(&[
        rep(20, 0, 50.0),
        rep(10, 90, 900.0),
        rep(6, 0, 50.0),
        rep(2, -1, 0.0),
    ]);
    let j = judge_recovery(&variant(&pts, Some((20.0, 30.0))), &cfg());
    assert_eq!(j.verdict, RecoveryVerdict::Recovered { after_s: 0.0 });
}
