//! The verdict classes on synthetic series: every class, the residue, the
//! episodes and the edges of the rule.

use super::*;
use crate::model::{EventKind, TimelineEvent};

/// One second per entry: (failure percent, p99 ms) over 100 completed
/// attempts (99 of them at half the p99, one at it), or none when the
/// percent is negative. 50 new documents/s
/// offered; each failed attempt is retried, so a second with `p` % failures
/// sends `100 + 2p` attempts, and a stalled one 300 (the sustaining effect
/// of a failing second: retries).
pub(super) fn seconds(points: &[(i64, f64)]) -> Vec<Second> {
    points
        .iter()
        .enumerate()
        .map(|(t, &(p, p99))| {
            let (ok, timeouts) = if p < 0 {
                (0, 0)
            } else {
                (100 - p as u64, p as u64)
            };
            let mut latency = crate::latency_counts::LatencyCounts::default();
            if p >= 0 {
                latency.record_n(p99 / 2.0, 99);
                latency.record_n(p99, 1);
            }
            Second {
                t: t as u32,
                arrivals: 50,
                offered_rate: 50.0,
                attempts: if p < 0 { 300 } else { 100 + 2 * p as u64 },
                distinct_documents: 100,
                ok,
                timeouts,
                p99_ms: p99,
                latency,
                ..Second::default()
            }
        })
        .collect()
}

/// A trigger from `start` to `end` whose residue ends at `residue`.
pub(super) fn trigger(start: f64, end: f64, residue: Option<f64>) -> TriggerSpan {
    TriggerSpan {
        label: format!("trigger at {start}"),
        start_s: start,
        end_s: Some(end),
        residue_end_s: residue,
        residue: "test".into(),
    }
}

pub(super) fn variant(points: &[(i64, f64)], triggers: Vec<TriggerSpan>) -> VariantRun {
    VariantRun {
        name: "v".into(),
        seconds: seconds(points),
        triggers,
        ..VariantRun::default()
    }
}

/// `n` seconds of `(pct, p99)`.
pub(super) fn rep(n: usize, pct: i64, p99: f64) -> Vec<(i64, f64)> {
    vec![(pct, p99); n]
}

pub(super) fn concat(parts: &[Vec<(i64, f64)>]) -> Vec<(i64, f64)> {
    parts.concat()
}

pub(super) fn cfg() -> AnalysisConfig {
    AnalysisConfig {
        recovery_window_s: 10,
        warmup_s: 3,
        ..AnalysisConfig::default()
    }
}

pub(super) fn verdict(v: &VariantRun) -> Verdict {
    judge(v, &cfg()).verdict
}

#[test]
fn stable_when_no_second_is_degraded() {
    let v = variant(&rep(60, 1, 50.0), vec![trigger(20.0, 30.0, Some(30.0))]);
    assert_eq!(verdict(&v), Verdict::Stable);
}

#[test]
fn recovered_is_counted_from_the_residue_not_the_trigger() {
    // The fault is undone at 30 s but its documents stay until 36 s; the
    // system is degraded until 42 s.
    let pts = concat(&[rep(20, 1, 50.0), rep(22, 90, 900.0), rep(18, 1, 52.0)]);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(36.0))]);
    assert_eq!(verdict(&v).recovered_after_s(), Some(6.0));
    // Judged from the fault's end instead, the same series would be a slow
    // recovery of 12 s (it came back by itself, longer than the window).
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    match verdict(&v) {
        Verdict::Recovered {
            after_s,
            slow: Some(slow),
            ..
        } => assert_eq!((after_s, slow.took_s), (12.0, 12.0)),
        other => panic!("expected a slow recovery, got {other:?}"),
    }
}

#[test]
fn a_wave_that_ends_exactly_when_the_residue_ends_recovered_at_once() {
    let pts = concat(&[rep(20, 1, 50.0), rep(15, 90, 900.0), rep(25, 1, 52.0)]);
    let v = variant(&pts, vec![trigger(20.0, 22.0, Some(35.0))]);
    assert_eq!(verdict(&v).recovered_after_s(), Some(0.0));
}

#[test]
fn metastable_names_its_sustaining_effect() {
    let mut v = variant(
        &concat(&[rep(20, 1, 50.0), rep(40, 80, 900.0)]),
        vec![trigger(20.0, 25.0, Some(25.0))],
    );
    for s in &mut v.seconds {
        s.gateway_attempts = s.attempts;
        s.pages_computed = 200;
        s.pages_delivered = 200;
        if s.t >= 25 {
            // 3.2 attempts per new document, a third of the GPU's pages for callers gone.
            s.attempts = 160;
            s.gateway_attempts = 160;
            s.pages_delivered = 40;
            s.zombie_pages = 70;
        }
    }
    match verdict(&v) {
        Verdict::Metastable {
            residue_end_s,
            degraded_for_s,
            recovered_at_s,
            sustaining,
            ..
        } => {
            assert_eq!(residue_end_s, 25.0);
            assert_eq!(degraded_for_s, 35.0);
            assert_eq!(recovered_at_s, None);
            let text = sustaining.summary();
            assert!(
                text.contains("retries: 3.2 attempts per new document (baseline 2.0)"),
                "{text}"
            );
            assert!(
                text.contains("zombie work 35 % of GPU pages (baseline 0 %)"),
                "{text}"
            );
            assert!(
                text.contains("5.0 GPU pages computed per page delivered (baseline 1.0)"),
                "{text}"
            );
        }
        other => panic!("expected metastable, got {other:?}"),
    }
}

#[test]
fn a_degraded_tail_under_raised_load_is_overloaded_not_metastable() {
    let mut v = variant(
        &concat(&[rep(20, 1, 50.0), rep(40, 80, 900.0)]),
        vec![trigger(20.0, 25.0, Some(25.0))],
    );
    for s in v.seconds.iter_mut().filter(|s| s.t >= 23) {
        s.offered_rate = 80.0;
        s.arrivals = 80;
    }
    match verdict(&v) {
        Verdict::Overloaded {
            offered_per_s,
            baseline_per_s,
            ..
        } => {
            assert_eq!(offered_per_s, 80.0);
            assert_eq!(baseline_per_s, 50.0);
        }
        other => panic!("expected overloaded, got {other:?}"),
    }
}

#[test]
fn a_baseline_that_stepped_up_was_healthy_at_its_peak() {
    // 10 s at 20/s, then 50/s: the degraded tail at 50/s is not raised load.
    let mut v = variant(
        &concat(&[rep(20, 1, 50.0), rep(40, 80, 900.0)]),
        vec![trigger(20.0, 25.0, Some(25.0))],
    );
    for s in v.seconds.iter_mut().filter(|s| s.t < 10) {
        s.offered_rate = 20.0;
        s.arrivals = 20;
    }
    assert_eq!(verdict(&v).class(), "metastable");
    // One second at 50/s is not a load it was seen healthy at.
    for s in v.seconds.iter_mut().filter(|s| s.t < 19) {
        s.offered_rate = 20.0;
    }
    assert_eq!(verdict(&v).class(), "overloaded");
}

/// overload-before-trigger's quick form, seed 4: the step came 5 s before
/// the trigger and the door took 4 s to fill, so 4 seconds at the new rate
/// looked healthy. A load is known to be carried only on the verdict's own
/// time scale (the 10-s window here), so the tail is plain overload.
#[test]
fn a_load_carried_for_less_than_the_window_is_not_the_baseline() {
    let mut v = variant(
        &concat(&[rep(20, 1, 50.0), rep(40, 80, 900.0)]),
        vec![trigger(20.0, 25.0, Some(25.0))],
    );
    for s in v.seconds.iter_mut().filter(|s| s.t < 16) {
        s.offered_rate = 20.0;
    }
    assert_eq!(verdict(&v).class(), "overloaded");
    // Carried healthy for the whole window (10 s): that load is the baseline.
    for s in v.seconds.iter_mut().filter(|s| (10..16).contains(&s.t)) {
        s.offered_rate = 50.0;
    }
    assert_eq!(verdict(&v).class(), "metastable");
}

#[test]
fn counted_arrivals_within_poisson_noise_are_not_raised_load() {
    let mut v = variant(
        &concat(&[rep(20, 1, 50.0), rep(40, 80, 900.0)]),
        vec![trigger(20.0, 25.0, Some(25.0))],
    );
    for s in &mut v.seconds {
        s.offered_rate = 0.0; // no plan recorded: counted arrivals
        if s.t >= 25 {
            s.arrivals = 55;
        }
    }
    assert_eq!(verdict(&v).class(), "metastable");
}

#[test]
fn a_run_cut_off_before_the_window_is_inconclusive_with_the_time_it_needed() {
    // Residue ends at 40 s; the run's last judged second is 44.
    let pts = concat(&[rep(20, 1, 50.0), rep(20, 90, 900.0), rep(5, 90, 900.0)]);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(40.0))]);
    match verdict(&v) {
        Verdict::Inconclusive { needed_s, reason } => {
            assert_eq!(needed_s, Some(50.0 - 45.0), "{reason}");
        }
        other => panic!("expected inconclusive, got {other:?}"),
    }
    // Healthy at the end, but for fewer than half the window: still inconclusive.
    let pts = concat(&[rep(20, 1, 50.0), rep(20, 90, 900.0), rep(4, 1, 50.0)]);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(40.0))]);
    match verdict(&v) {
        Verdict::Inconclusive { needed_s, .. } => assert_eq!(needed_s, Some(6.0)),
        other => panic!("expected inconclusive, got {other:?}"),
    }
    // Half the window healthy through the end is enough.
    let pts = concat(&[rep(20, 1, 50.0), rep(20, 90, 900.0), rep(5, 1, 50.0)]);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(40.0))]);
    assert_eq!(verdict(&v).recovered_after_s(), Some(0.0));
}

#[test]
fn a_residue_that_never_ends_is_inconclusive() {
    let pts = concat(&[rep(20, 1, 50.0), rep(40, 90, 900.0)]);
    let v = variant(&pts, vec![trigger(20.0, 30.0, None)]);
    assert_eq!(verdict(&v).class(), "inconclusive");
}

#[test]
fn never_healthy_without_enough_baseline_or_with_a_failing_one() {
    let pts = concat(&[rep(7, 1, 50.0), rep(40, 90, 900.0)]);
    match verdict(&variant(&pts, vec![trigger(7.0, 10.0, Some(10.0))])) {
        Verdict::NeverHealthy { reason } => assert!(reason.contains("only 4 second"), "{reason}"),
        other => panic!("expected never healthy, got {other:?}"),
    }
    let pts = concat(&[rep(20, 70, 50.0), rep(40, 90, 900.0)]);
    assert_eq!(
        verdict(&variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))])).class(),
        "never_healthy"
    );
    // Seconds with too few attempts do not count towards the baseline.
    let pts = concat(&[rep(20, -1, 0.0), rep(40, 1, 50.0)]);
    assert_eq!(
        verdict(&variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))])).class(),
        "never_healthy"
    );
}

#[test]
fn no_trigger_and_the_fallback_to_fault_events() {
    let mut v = variant(&rep(40, 1, 50.0), vec![]);
    assert_eq!(verdict(&v), Verdict::NoTrigger);
    v.events.push(TimelineEvent {
        at_s: 20.0,
        end_s: Some(25.0),
        kind: EventKind::Fault,
        label: "f".into(),
        ok: true,
        detail: String::new(),
    });
    let j = judge(&v, &cfg());
    assert_eq!(j.verdict, Verdict::Stable);
    assert_eq!(j.episodes[0].residue_end_s, Some(25.0));
}

#[test]
fn overlapping_triggers_form_one_episode_and_later_ones_their_own() {
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(12, 90, 900.0), // 20..32: the first episode (two triggers)
        rep(18, 1, 50.0),   // 32..50
        rep(5, 90, 900.0),  // 50..55: the second episode
        rep(25, 1, 50.0),
    ]);
    let v = variant(
        &pts,
        vec![
            trigger(20.0, 22.0, Some(28.0)),
            trigger(25.0, 26.0, Some(32.0)),
            trigger(50.0, 51.0, Some(55.0)),
        ],
    );
    let j = judge(&v, &cfg());
    assert_eq!(j.episodes.len(), 2);
    assert_eq!(j.episodes[0].labels.len(), 2);
    assert_eq!(j.episodes[0].residue_end_s, Some(32.0));
    assert_eq!(j.episodes[0].horizon_s, 50);
    assert_eq!(
        j.episodes[0].outcome,
        EpisodeOutcome::Recovered { at_s: 32 }
    );
    assert_eq!(
        j.episodes[1].outcome,
        EpisodeOutcome::Recovered { at_s: 55 }
    );
    assert_eq!(j.verdict.recovered_after_s(), Some(0.0));
}

#[test]
fn an_episode_too_close_to_the_next_is_undecided_and_the_last_decides() {
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(14, 90, 900.0), // degraded until the next trigger at 34
        rep(10, 90, 900.0), // 34..44
        rep(20, 1, 50.0),
    ]);
    let v = variant(
        &pts,
        vec![
            trigger(20.0, 22.0, Some(28.0)),
            trigger(34.0, 35.0, Some(44.0)),
        ],
    );
    let j = judge(&v, &cfg());
    assert!(matches!(
        j.episodes[0].outcome,
        EpisodeOutcome::Undecided { .. }
    ));
    assert_eq!(j.verdict.recovered_after_s(), Some(0.0));
}

/// 38 s whose trigger's residue ends at 30: healthy 30-33, then a slow
/// recomputation 34-37 that breaks every streak starting in an 8 s window.
fn mostly_healthy_after_the_residue() -> Vec<(i64, f64)> {
    concat(&[
        rep(20, 1, 50.0),
        rep(10, 90, 900.0),
        rep(4, 1, 50.0),
        rep(4, 1, 600.0),
    ])
}

/// [`cfg`] with an 8 s recovery window.
fn window_of_8_s() -> AnalysisConfig {
    AnalysisConfig {
        recovery_window_s: 8,
        ..cfg()
    }
}

#[test]
fn a_blip_before_the_next_trigger_is_undecided_not_metastable() {
    // The next trigger at 38: no 8 healthy seconds fit, yet it was mostly healthy.
    let pts = concat(&[
        mostly_healthy_after_the_residue(),
        rep(10, 90, 900.0),
        rep(20, 1, 50.0),
    ]);
    let v = variant(
        &pts,
        vec![
            trigger(20.0, 22.0, Some(30.0)),
            trigger(38.0, 39.0, Some(48.0)),
        ],
    );
    let j = judge(&v, &window_of_8_s());
    match &j.episodes[0].outcome {
        EpisodeOutcome::Undecided { reason, .. } => {
            assert!(reason.contains("alternated"), "{reason}")
        }
        other => panic!("expected undecided, got {other:?}"),
    }
    assert_eq!(j.verdict.recovered_after_s(), Some(0.0));
}

#[test]
fn a_blip_in_a_mostly_healthy_window_delays_the_recovery_it_does_not_hide_it() {
    // The same seconds with no next trigger: the slow stretch at 34-37 breaks
    // every streak that starts in the window (30-37), but 38 starts 8 healthy
    // seconds, so the episode recovered 8 s after its residue.
    let pts = concat(&[mostly_healthy_after_the_residue(), rep(22, 1, 50.0)]);
    let v = variant(&pts, vec![trigger(20.0, 22.0, Some(30.0))]);
    let c = window_of_8_s();
    let j = judge(&v, &c);
    assert_eq!(
        j.episodes[0].outcome,
        EpisodeOutcome::Recovered { at_s: 38 }
    );
    assert_eq!(j.verdict.recovered_after_s(), Some(8.0));
    // Cut off 3 s after the later streak began: undecided, with what it needed.
    let v = variant(&pts[..41], vec![trigger(20.0, 22.0, Some(30.0))]);
    match judge(&v, &c).episodes[0].outcome.clone() {
        EpisodeOutcome::Undecided { reason, needed_s } => {
            assert!(reason.contains("only 3 s remained"), "{reason}");
            assert_eq!(needed_s, Some(5.0));
        }
        other => panic!("expected undecided, got {other:?}"),
    }
    // Blips that keep coming up to the end never give a full streak: undecided.
    let mut pts = pts;
    for t in (41..60).filter(|t| t % 5 != 4 && t % 5 != 0) {
        pts[t] = (1, 600.0);
    }
    let v = variant(&pts, vec![trigger(20.0, 22.0, Some(30.0))]);
    match judge(&v, &c).episodes[0].outcome.clone() {
        EpisodeOutcome::Undecided { reason, .. } => {
            assert!(reason.contains("alternated"), "{reason}")
        }
        other => panic!("expected undecided, got {other:?}"),
    }
}

#[test]
fn smoothing_does_not_borrow_from_the_next_trigger() {
    // Healthy from the residue's end up to the next trigger, 5 s later:
    // the next trigger's slow seconds must not make the last ones degraded.
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(10, 90, 900.0),
        rep(5, 1, 50.0),
        rep(25, 90, 900.0),
    ]);
    let v = variant(
        &pts,
        vec![trigger(20.0, 22.0, Some(30.0)), trigger(35.0, 36.0, None)],
    );
    let j = judge(&v, &cfg());
    assert_eq!(
        j.episodes[0].outcome,
        EpisodeOutcome::Recovered { at_s: 30 }
    );
}

#[test]
fn latency_must_recover_too() {
    let pts = concat(&[rep(20, 1, 50.0), rep(10, 1, 900.0), rep(30, 1, 400.0)]);
    let mut v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    // Slow after the residue, and nothing measured keeps it so: degraded,
    // but not a failure shown to sustain itself.
    let unexplained = verdict(&v);
    assert_eq!(unexplained.class(), "inconclusive");
    assert!(
        unexplained
            .explanation()
            .contains("no work amplification above the baseline was measured"),
        "{}",
        unexplained.explanation()
    );
    // The same slowness with slots held by waiting duplicates: metastable.
    for s in v.seconds.iter_mut().filter(|s| s.t >= 30) {
        s.slots_held_by_waiters = 6.0;
    }
    assert_eq!(verdict(&v).class(), "metastable");
}

#[test]
fn one_bad_second_neither_breaks_nor_fakes_a_recovery() {
    let mut pts = concat(&[rep(20, 1, 50.0), rep(10, 90, 900.0), rep(30, 1, 50.0)]);
    pts[41] = (40, 700.0);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    assert_eq!(verdict(&v).recovered_after_s(), Some(0.0));
    let mut pts = concat(&[rep(20, 1, 50.0), rep(40, 90, 900.0)]);
    pts[35] = (1, 50.0);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    assert_eq!(verdict(&v).class(), "metastable");
}

#[test]
fn the_drain_after_the_load_is_not_judged() {
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(10, 90, 900.0),
        rep(12, 1, 50.0),
        rep(8, 95, 2000.0),
    ]);
    let mut v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    v.load_end_s = Some(42.0);
    let j = judge(&v, &cfg());
    assert_eq!(j.judged_end_s, 42);
    assert_eq!(j.verdict.recovered_after_s(), Some(0.0));
}

#[test]
fn gaps_in_time_are_degraded_and_huge_t_is_cheap() {
    let mut v = variant(
        &concat(&[rep(20, 1, 50.0), rep(10, 90, 900.0), rep(30, 1, 50.0)]),
        vec![trigger(20.0, 30.0, Some(30.0))],
    );
    v.seconds.retain(|s| s.t != 35);
    assert_eq!(verdict(&v).recovered_after_s(), Some(6.0));
    let mut far = v.clone();
    far.seconds.push(Second {
        t: u32::MAX - 1,
        ..far.seconds[0].clone()
    });
    // Does not allocate per second up to t, and does not panic.
    let _ = judge(&far, &cfg());
}

#[test]
fn nan_inputs_do_not_panic() {
    let mut v = variant(&concat(&[rep(20, 1, f64::NAN), rep(20, 90, 900.0)]), vec![]);
    v.triggers = vec![TriggerSpan {
        start_s: f64::NAN,
        ..trigger(20.0, f64::NAN, Some(f64::INFINITY))
    }];
    let _ = judge(&v, &cfg());
    v.triggers = vec![trigger(20.0, f64::NAN, Some(f64::NAN))];
    let mut c = cfg();
    c.recovery_factor = f64::NAN;
    c.wave_threshold = f64::NAN;
    assert_eq!(judge(&v, &c).verdict.class(), "never_healthy");
}

#[test]
fn verdict_serializes_with_its_class_as_a_tag() {
    let j = serde_json::to_value(Verdict::Recovered {
        after_s: 4.0,
        degraded_s: 9,
        slow: None,
    })
    .unwrap();
    assert_eq!(
        j,
        serde_json::json!({"verdict": "recovered", "after_s": 4.0, "degraded_s": 9})
    );
    for (v, c) in [
        (Verdict::Stable, "stable"),
        (Verdict::NoTrigger, "no_trigger"),
        (
            Verdict::NeverHealthy {
                reason: String::new(),
            },
            "never_healthy",
        ),
    ] {
        assert_eq!(v.class(), c);
        assert!(VERDICT_CLASSES.contains(&c));
        assert_eq!(serde_json::to_value(&v).unwrap()["verdict"], c);
    }
}
