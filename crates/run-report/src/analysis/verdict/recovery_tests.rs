//! The rule on cases nobody tuned it for: load spikes as triggers, a slow
//! drain that ends by itself, overload that began before the trigger, and
//! low-rate traffic with a heavy tail (issue 34's synthetic series).

use super::tests::{cfg, concat, rep, trigger, variant, verdict};
use super::*;
use crate::model::TimelineEvent;

fn window_of_5_s() -> AnalysisConfig {
    AnalysisConfig {
        recovery_window_s: 5,
        warmup_s: 3,
        ..AnalysisConfig::default()
    }
}

#[test]
fn a_ten_second_drain_after_a_two_second_residue_recovers_slowly_by_itself() {
    // Trigger 20-21 s, residue over at 22 s; degraded until 32 s, then healthy.
    let pts = concat(&[rep(20, 1, 50.0), rep(12, 90, 900.0), rep(28, 1, 50.0)]);
    let mut v = variant(&pts, vec![trigger(20.0, 21.0, Some(22.0))]);
    for s in &mut v.seconds {
        s.queue_depth = match s.t {
            22..=31 => f64::from(32 - s.t) * 20.0,
            _ => 2.0,
        };
    }
    let cfg = window_of_5_s();
    let j = judge(&v, &cfg);
    let Verdict::Recovered {
        after_s,
        slow: Some(slow),
        ..
    } = &j.verdict
    else {
        panic!("expected a slow recovery, got {:?}", j.verdict);
    };
    assert_eq!(*after_s, 10.0);
    assert_eq!(
        (slow.took_s, slow.window_s, slow.recovered_at_s),
        (10.0, 5, 32.0)
    );
    let text = j.verdict.explanation();
    assert!(text.contains("slow recovery (10 s"), "{text}");
    assert!(
        text.contains("requests queued 200 at 22 s, 2 at 32 s (baseline 2)"),
        "{text}"
    );
    // The retries of the failing seconds drained too, against the baseline's.
    assert!(text.contains("while it drained, retries"), "{text}");
    assert_eq!(
        j.episodes[0].outcome,
        EpisodeOutcome::Recovered { at_s: 32 }
    );
}

#[test]
fn a_recovery_within_the_window_is_not_called_slow() {
    let pts = concat(&[rep(20, 1, 50.0), rep(5, 90, 900.0), rep(35, 1, 50.0)]);
    let v = variant(&pts, vec![trigger(20.0, 21.0, Some(22.0))]);
    match judge(&v, &window_of_5_s()).verdict {
        Verdict::Recovered {
            after_s,
            slow: None,
            ..
        } => assert_eq!(after_s, 3.0),
        other => panic!("expected a prompt recovery, got {other:?}"),
    }
}

#[test]
fn degraded_to_the_horizon_is_metastable_and_too_little_left_is_inconclusive() {
    let pts = concat(&[rep(20, 1, 50.0), rep(40, 90, 900.0)]);
    let v = variant(&pts, vec![trigger(20.0, 21.0, Some(22.0))]);
    match judge(&v, &window_of_5_s()).verdict {
        Verdict::Metastable {
            recovered_at_s: None,
            degraded_for_s,
            ..
        } => assert_eq!(degraded_for_s, 38.0),
        other => panic!("expected metastable, got {other:?}"),
    }
    // The residue ends 3 s before the judged end: fewer than the 5-s window left.
    let v = variant(&pts, vec![trigger(20.0, 50.0, Some(57.0))]);
    match judge(&v, &window_of_5_s()).verdict {
        Verdict::Inconclusive { needed_s, .. } => assert_eq!(needed_s, Some(2.0)),
        other => panic!("expected inconclusive, got {other:?}"),
    }
}

/// 15 s at 20 documents/s, then 60/s; `pct` % of attempts failing from 17 s;
/// a trigger (a cache flush, say) at 35 s, its residue over at 36 s.
fn stepped_into_overload(pct: i64) -> VariantRun {
    let pts = concat(&[rep(17, 1, 50.0), rep(43, pct, 900.0)]);
    let mut v = variant(&pts, vec![trigger(35.0, 35.0, Some(36.0))]);
    for s in &mut v.seconds {
        let rate = if s.t < 15 { 20 } else { 60 };
        s.offered_rate = rate as f64;
        s.arrivals = rate;
    }
    v
}

#[test]
fn overload_after_a_load_step_before_the_trigger_is_overloaded_not_metastable() {
    // 40 % fails: within the 50 % wave threshold, so only the second pass
    // (healthy against the first baseline) leaves the overload out.
    for pct in [40, 70] {
        let v = stepped_into_overload(pct);
        let j = judge(&v, &window_of_5_s());
        match &j.verdict {
            Verdict::Overloaded {
                since_s,
                before_trigger: true,
                load_step_at_s,
                offered_per_s,
                baseline_per_s,
            } => {
                assert_eq!(*since_s, 17.0, "{pct} %");
                assert_eq!(*load_step_at_s, Some(15.0), "{pct} %");
                assert_eq!((*offered_per_s, *baseline_per_s), (60.0, 20.0), "{pct} %");
            }
            other => panic!("{pct} %: expected overloaded before the trigger, got {other:?}"),
        }
        let b = j.baseline.clone().expect("a healthy baseline");
        assert!(b.failure_ratio < 0.02, "{pct} %: {b:?}");
        assert_eq!(b.excluded_s, (17..35).collect::<Vec<u32>>(), "{pct} %");
        let text = j.verdict.explanation();
        assert!(
            text.contains("from 17 s after the load stepped up at 15 s"),
            "{text}"
        );
        assert!(text.contains("healthy at 20.0/s"), "{text}");
    }
}

#[test]
fn a_two_second_latency_blip_just_before_the_trigger_is_not_overload() {
    // W = 5: two of the last five seconds before the trigger were slow
    // (here so few that the baseline's own p95 takes them in).
    let pts = concat(&[rep(23, 1, 50.0), rep(2, 1, 900.0), rep(35, 1, 50.0)]);
    let v = variant(&pts, vec![trigger(25.0, 26.0, Some(27.0))]);
    assert_eq!(verdict(&v).class(), "stable");
    // Three slow seconds of the last five, as many as 40 % of the attempts
    // failing: most of the window, so overloaded, since the first of them.
    let pts = concat(&[rep(22, 1, 50.0), rep(3, 40, 900.0), rep(35, 1, 50.0)]);
    let v = variant(&pts, vec![trigger(25.0, 26.0, Some(27.0))]);
    match judge(&v, &window_of_5_s()).verdict {
        Verdict::Overloaded {
            since_s,
            before_trigger: true,
            load_step_at_s: None,
            ..
        } => assert_eq!(since_s, 22.0),
        other => panic!("expected overloaded before the trigger, got {other:?}"),
    }
}

#[test]
fn a_fault_undone_at_its_end_is_not_an_intervention_but_an_operator_is() {
    let pts = concat(&[rep(20, 1, 50.0), rep(20, 90, 900.0), rep(20, 1, 50.0)]);
    let event = |kind, label: &str| TimelineEvent {
        at_s: 38.0,
        end_s: None,
        kind,
        label: label.into(),
        ok: true,
        detail: String::new(),
    };
    let mut v = variant(&pts, vec![trigger(20.0, 25.0, Some(25.0))]);
    v.events
        .push(event(EventKind::FaultUndone, "end: GPU at 0.3 speed"));
    match judge(&v, &window_of_5_s()).verdict {
        Verdict::Recovered {
            slow: Some(slow), ..
        } => assert_eq!(slow.took_s, 15.0),
        other => panic!("expected a slow recovery, got {other:?}"),
    }
    v.events
        .push(event(EventKind::Action, "operators add a node"));
    match judge(&v, &window_of_5_s()).verdict {
        Verdict::Metastable {
            ended_by: Some(by),
            recovered_at_s: Some(at),
            ..
        } => assert_eq!((by.as_str(), at), ("operators add a node", 40.0)),
        other => panic!("expected metastable ended by the operator, got {other:?}"),
    }
}

#[test]
fn a_transient_after_a_load_step_that_settled_before_the_trigger_is_not_overload() {
    // A step at 10 s degrades 10-12 s, settles, then a trigger at 20 s.
    let pts = concat(&[
        rep(10, 1, 50.0),
        rep(3, 80, 900.0),
        rep(7, 1, 50.0),
        rep(7, 90, 900.0),
        rep(33, 1, 50.0),
    ]);
    let v = variant(&pts, vec![trigger(20.0, 22.0, Some(25.0))]);
    let j = judge(&v, &window_of_5_s());
    assert_eq!(j.verdict.recovered_after_s(), Some(2.0), "{:?}", j.verdict);
    assert_eq!(j.baseline.unwrap().excluded_s, vec![10, 11, 12]);
}

/// 50 documents/s, and 150/s during a 3-s spike from 20 s whose extra
/// arrivals were all done at 26 s; degraded from 20 s to `until`.
fn spike(until: usize, sustained: bool) -> VariantRun {
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(until - 20, 90, 900.0),
        rep(60 - until, 1, 50.0),
    ]);
    let mut v = variant(&pts, vec![trigger(20.0, 23.0, Some(26.0))]);
    for s in &mut v.seconds {
        if (20..23).contains(&s.t) {
            s.offered_rate = 150.0;
            s.arrivals = 150;
        }
        // Without a sustaining effect: as many attempts per document as before.
        if !sustained && s.t >= 23 {
            s.attempts = 102;
        }
    }
    v
}

#[test]
fn a_load_spike_is_a_trigger_judged_from_its_residue_at_the_load_after_it() {
    // With retries sustaining it, degraded to the end at the baseline's load.
    let v = spike(60, true);
    let j = judge(&v, &cfg());
    assert_eq!(j.baseline.as_ref().unwrap().offered_per_s, 50.0);
    match &j.verdict {
        Verdict::Metastable { sustaining, .. } => {
            assert!(sustaining.summary().contains("retries"), "{sustaining:?}")
        }
        other => panic!("expected metastable, got {other:?}"),
    }
    // Degraded to the end with no sustaining effect: not shown to sustain itself.
    assert_eq!(verdict(&spike(60, false)).class(), "inconclusive");
    // Back 2 s after the extra arrivals were done: recovered.
    assert_eq!(verdict(&spike(28, true)).recovered_after_s(), Some(2.0));
    // A spike's backlog drained by itself over 20 s: a slow recovery, never metastable.
    match verdict(&spike(46, true)) {
        Verdict::Recovered {
            slow: Some(slow), ..
        } => assert_eq!(slow.took_s, 20.0),
        other => panic!("expected a slow recovery, got {other:?}"),
    }
}

#[test]
fn a_low_rate_run_with_one_slow_attempt_in_each_healthy_second_is_stable() {
    // 30 attempts a second, one of them 20 times slower than the rest: every
    // second's p99 is that attempt, yet 29 of 30 are as in the baseline.
    let mut v = variant(&rep(60, 0, 40.0), vec![trigger(20.0, 21.0, Some(22.0))]);
    for s in &mut v.seconds {
        s.ok = 30;
        s.attempts = 30;
        s.arrivals = 30;
        s.offered_rate = 30.0;
        s.latency = crate::latency_counts::LatencyCounts::default();
        s.latency.record_n(40.0, 29);
        s.latency
            .record_n(if s.t % 3 == 0 { 800.0 } else { 45.0 }, 1);
        s.p99_ms = 800.0;
    }
    assert_eq!(verdict(&v), Verdict::Stable);
}

#[test]
fn metastable_then_ended_by_an_operator_says_how_long_and_when() {
    let pts = concat(&[rep(20, 1, 50.0), rep(30, 90, 900.0), rep(20, 1, 50.0)]);
    let mut v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    v.events.push(TimelineEvent {
        at_s: 48.0,
        end_s: None,
        kind: EventKind::Action,
        label: "operators restart the pool".into(),
        ok: true,
        detail: String::new(),
    });
    let j = judge(&v, &cfg());
    match &j.verdict {
        Verdict::Metastable {
            degraded_for_s,
            recovered_at_s,
            ..
        } => {
            assert_eq!(*degraded_for_s, 20.0);
            assert_eq!(*recovered_at_s, Some(50.0));
        }
        other => panic!("expected metastable, got {other:?}"),
    }
    let text = j.verdict.explanation();
    assert!(
        text.contains("until 50 s, after \"operators restart the pool\""),
        "{text}"
    );
}

#[test]
fn stalled_seconds_are_degraded() {
    let pts = concat(&[
        rep(20, 1, 50.0),
        rep(10, 90, 900.0),
        rep(30, -1, 0.0),
        rep(5, 1, 50.0),
    ]);
    let v = variant(&pts, vec![trigger(20.0, 30.0, Some(30.0))]);
    // Nothing completed from 30 s to 60 s: degraded, so the recovery that
    // came by itself at 60 s took 30 s.
    match verdict(&v) {
        Verdict::Recovered {
            slow: Some(slow), ..
        } => assert_eq!(slow.took_s, 30.0),
        other => panic!("expected a slow recovery, got {other:?}"),
    }
}
