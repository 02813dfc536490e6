//! Load spikes and trigger steps as written: located errors, the lowering.

use crate::experiment::{parse, Arrival, ExperimentError, LoadSpike, Rate, TimelineOp};
use std::time::Duration;

/// A 40 s experiment with `arrival` on line 4 and `entry` on line 8.
fn text(arrival: &str, entry: &str) -> String {
    format!(
        "name: t
duration: 40s
workload:
  arrival: {arrival}
  documents: {{ pages: {{ fixed: 2 }}, tenants: 2 }}
  client: {{ timeout: 1s, retry: {{ max_attempts: 2 }} }}
timeline:
  - {entry}
variants:
  a: {{}}
"
    )
}

const CONSTANT: &str = "{ constant: { rate: 40 } }";

fn spike(entry: &str) -> Result<crate::experiment::Experiment, ExperimentError> {
    parse(&text(CONSTANT, entry), "exp.yaml", false)
}

fn fails(r: Result<crate::experiment::Experiment, ExperimentError>, line: u64, field: &str) {
    let e = r.expect_err("should fail");
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("exp.yaml:{line}:")), "{msg}");
    assert_eq!(e.field, field, "{msg}");
}

#[test]
fn a_load_spike_is_a_trigger_with_a_duration() {
    let e = spike("{ at: 20s, duration: 4s, fault: { load_spike: { factor: 2.5 } } }").unwrap();
    let s = &e.timeline[0];
    assert_eq!(s.op, TimelineOp::LoadSpike(LoadSpike::Factor(2.5)));
    assert!(s.trigger && s.is_fault);
    assert_eq!(s.duration, Some(Duration::from_secs(4)));
    assert_eq!(s.label, "load spike x2.5");
    let e = spike(
        "{ at: 20s, duration: 4s, fault: { load_spike: { extra_capacity: 0.8 } }, trigger: false }",
    )
    .unwrap();
    assert!(!e.timeline[0].trigger);
    assert_eq!(
        e.timeline[0].op,
        TimelineOp::LoadSpike(LoadSpike::Extra(Rate::Capacity(0.8)))
    );
}

#[test]
fn impossible_spikes_are_refused_where_they_are_written() {
    let f = "timeline[0].fault.load_spike";
    for (entry, field) in [
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: { factr: 2 } } }",
            f.to_string(),
        ),
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: { factor: 1 } } }",
            format!("{f}.factor"),
        ),
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: { factor: 1000 } } }",
            format!("{f}.factor"),
        ),
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: { extra_rate: -5 } } }",
            format!("{f}.extra_rate"),
        ),
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: { extra_capacity: 0 } } }",
            format!("{f}.extra_capacity"),
        ),
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: { factor: 2, extra_rate: 5 } } }",
            f.to_string(),
        ),
        (
            "{ at: 20s, duration: 4s, fault: { load_spike: {} } }",
            f.to_string(),
        ),
        (
            "{ at: 20s, fault: { load_spike: { factor: 2 } } }",
            "timeline[0].duration".into(),
        ),
        (
            "{ at: 20s, duration: 0s, fault: { load_spike: { factor: 2 } } }",
            "timeline[0].duration".into(),
        ),
        (
            "{ at: 38s, duration: 4s, fault: { load_spike: { factor: 2 } } }",
            "timeline[0].duration".into(),
        ),
        (
            "{ at: 20s, duration: 4s, action: { load_spike: { factor: 2 } } }",
            "timeline[0].action.load_spike".into(),
        ),
    ] {
        let r = spike(entry);
        if let Err(e) = &r {
            assert!(!e.message.is_empty(), "{entry}");
        }
        fails(r, 8, &field);
    }
    // An oversized burst still has no duration to be undone at.
    let r = spike("{ at: 20s, duration: 4s, fault: { oversized_documents: { tenant: t1, count: 1, min_pages: 9, max_pages: 9 } } }");
    fails(r, 8, "timeline[0].duration");
}

const FILL: &str = "{ at: 1s, fault: { cache_fill: { entries: 1 } }, trigger: false }";

fn steps(steps: &str) -> Result<crate::experiment::Experiment, ExperimentError> {
    parse(
        &text(&format!("{{ steps: [ {steps} ] }}"), FILL),
        "exp.yaml",
        false,
    )
}

#[test]
fn a_trigger_step_is_lowered_to_the_level_before_and_a_spike() {
    let e = steps(
        "{ at: 0s, rate: 40 }, { at: 20s, rate: 100, trigger: true, label: rush }, \
         { at: 26s, rate: 120, trigger: true }, { at: 30s, rate: 50 }",
    )
    .unwrap();
    let secs = Duration::from_secs;
    assert_eq!(
        e.workload.arrival,
        Arrival::Steps(vec![
            (secs(0), Rate::PerSec(40.0)),
            (secs(20), Rate::PerSec(40.0)),
            (secs(26), Rate::PerSec(40.0)),
            (secs(30), Rate::PerSec(50.0)),
        ])
    );
    let spikes: Vec<_> = e
        .timeline
        .iter()
        .filter(|t| matches!(t.op, TimelineOp::LoadSpike(_)))
        .collect();
    assert_eq!(spikes.len(), 2);
    assert_eq!(
        (spikes[0].at, spikes[0].duration),
        (secs(20), Some(secs(6)))
    );
    assert_eq!(
        spikes[0].op,
        TimelineOp::LoadSpike(LoadSpike::Extra(Rate::PerSec(60.0)))
    );
    assert_eq!(spikes[0].label, "rush");
    assert!(spikes[0].trigger && spikes[0].is_fault);
    // Consecutive trigger steps each stand on the last level not marked.
    assert_eq!(
        (spikes[1].at, spikes[1].duration),
        (secs(26), Some(secs(4)))
    );
    assert_eq!(
        spikes[1].op,
        TimelineOp::LoadSpike(LoadSpike::Extra(Rate::PerSec(80.0)))
    );
    assert_eq!(spikes[1].label, "arrivals step to 120/s");
    // The last step's spike lasts to the end of the run.
    let e = steps("{ at: 0s, capacity: 0.5 }, { at: 30s, capacity: 0.9, trigger: true }").unwrap();
    let s = e.timeline.iter().find(|t| t.trigger).unwrap();
    assert_eq!(s.duration, Some(secs(10)));
    assert!(
        matches!(s.op, TimelineOp::LoadSpike(LoadSpike::Extra(Rate::Capacity(c))) if (c - 0.4).abs() < 1e-9)
    );
}

#[test]
fn a_trigger_step_must_rise_from_a_level_before_it() {
    fails(
        steps("{ at: 0s, rate: 40, trigger: true }"),
        4,
        "workload.arrival.steps[0].trigger",
    );
    fails(
        steps("{ at: 0s, rate: 40 }, { at: 20s, rate: 40, trigger: true }"),
        4,
        "workload.arrival.steps[1].rate",
    );
    fails(
        steps("{ at: 0s, rate: 40 }, { at: 20s, capacity: 0.9, trigger: true }"),
        4,
        "workload.arrival.steps[1]",
    );
    fails(
        steps("{ at: 0s, rate: 40 }, { at: 20s, rate: 90, trigger: true }, { at: 20s, rate: 50 }"),
        4,
        "workload.arrival.steps[1].at",
    );
    // A trigger step is a trigger: the baseline before it must fit.
    fails(
        steps("{ at: 0s, rate: 40 }, { at: 4s, rate: 90, trigger: true }"),
        4,
        "workload.arrival.steps[1]",
    );
    // Unknown keys in a step are refused by the parser, with their line.
    let e = steps("{ at: 0s, rate: 40, trigerr: true }").unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    assert!(e.message.contains("trigerr"), "{e}");
}

#[test]
fn steps_written_on_their_own_lines_are_blamed_on_their_line() {
    let text = "name: t
duration: 40s
workload:
  arrival:
    steps:
      - { at: 0s, rate: 40 }
      - { at: 20s, rate: 30, trigger: true }
  documents: { pages: { fixed: 2 }, tenants: 2 }
  client: { timeout: 1s, retry: { max_attempts: 2 } }
variants:
  a: {}
";
    fails(
        parse(text, "exp.yaml", false),
        7,
        "workload.arrival.steps[1].rate",
    );
}
