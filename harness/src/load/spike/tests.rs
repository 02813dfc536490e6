//! The spike's stream and the offered rate, on small experiments.

use super::*;
use crate::experiment::Experiment;
use std::collections::HashSet;

/// An experiment of `secs` seconds at `arrival` with one timeline entry
/// (and a population when `population` is given).
fn exp(arrival: &str, entry: &str, secs: u32, population: &str) -> Experiment {
    let text = format!(
        r#"name: t
duration: {secs}s
workload:
  arrival: {arrival}
  documents: {{ pages: {{ uniform: {{ min: 1, max: 9 }} }}, tenants: 4{population} }}
  client: {{ timeout: 1s, retry: {{ max_attempts: 2 }} }}
timeline:
  - {entry}
variants:
  a: {{}}
"#
    );
    crate::experiment::parse(&text, "spike-test.yaml", false).unwrap()
}

const SPIKE: &str = "{ at: 10s, duration: 20s, fault: { load_spike: { factor: 2.5 } } }";

fn spike_index(e: &Experiment) -> usize {
    e.timeline
        .iter()
        .position(|t| matches!(t.op, TimelineOp::LoadSpike(_)))
        .expect("a load spike")
}

#[test]
fn same_seed_same_documents_and_a_poisson_count() {
    let e = exp("{ constant: { rate: 100 } }", SPIKE, 40, "");
    let i = spike_index(&e);
    let a = documents(&e, i, 0.0);
    assert_eq!(a, documents(&e, i, 0.0), "seeded");
    let mut other = e.clone();
    other.seed += 1;
    assert_ne!(a, documents(&other, i, 0.0));
    // 150 documents/s extra over 20 s: 3,000 expected, sd 55, 5 sd = 274.
    assert!((a.len() as i64 - 3000).abs() < 274, "{}", a.len());
    assert!(a.windows(2).all(|w| w[0].planned <= w[1].planned));
    let (from, to) = (Duration::from_secs(10), Duration::from_secs(30));
    assert!(a.iter().all(|d| d.planned >= from && d.planned < to));
    // Drawn like the regular traffic: its tenants, its page range.
    assert!(a.iter().all(|d| (1..=9).contains(&d.pages)));
    let tenants: HashSet<&str> = a.iter().map(|d| d.tenant.as_str()).collect();
    assert_eq!(tenants, HashSet::from(["t1", "t2", "t3", "t4"]));
}

#[test]
fn spike_ids_never_collide_with_anyone_elses() {
    let e = exp("{ constant: { rate: 100 } }", SPIKE, 40, "");
    let spike: Vec<u64> = documents(&e, spike_index(&e), 0.0)
        .iter()
        .map(|d| d.id)
        .collect();
    let own: HashSet<u64> = spike.iter().copied().collect();
    assert_eq!(own.len(), spike.len(), "distinct among themselves");
    let regular = crate::load::plan_documents(
        &exp("{ constant: { rate: 100 } }", SPIKE, 40, ""),
        crate::load::Capacity {
            pages_per_sec: 0.0,
            docs_per_sec: 0.0,
        },
    );
    // The plan holds both; every spike id exactly once.
    let all: Vec<u64> = regular.iter().map(|d| d.id).collect();
    assert_eq!(all.iter().copied().collect::<HashSet<_>>().len(), all.len());
    assert!(spike.iter().all(|id| all.contains(id)));
    // Nor with oversized documents' streams, nor a population's members.
    for stream in [0, 1, 2, 3, 4] {
        for k in 0..4000 {
            assert!(!own.contains(&document_id(e.seed, stream, k)));
        }
    }
}

#[test]
fn with_a_population_the_spike_draws_its_members() {
    let pop = ", population: { size: 50, popularity: { zipf: { s: 1.1 } } }";
    let e = exp("{ constant: { rate: 100 } }", SPIKE, 40, pop);
    let docs = documents(&e, spike_index(&e), 0.0);
    let members: Vec<(u64, String, u32)> = (0..50)
        .map(|k| crate::load::workload::member(e.seed, k, &e.workload.pages, 4))
        .collect();
    for d in &docs {
        assert!(
            members.contains(&(d.id, d.tenant.clone(), d.pages)),
            "{d:?} is a member"
        );
    }
    assert!(docs.iter().map(|d| d.id).collect::<HashSet<_>>().len() < docs.len());
}

#[test]
fn a_factor_follows_the_base_profile_and_extras_are_constant() {
    // Steps 50 then 100 documents/s from 20 s; x3 over 10-30 s adds 100
    // then 200 documents/s: 1,000 and 2,000 expected (sd 32 and 45).
    let steps = "{ steps: [ { at: 0s, rate: 50 }, { at: 20s, rate: 100 } ] }";
    let e = exp(
        steps,
        "{ at: 10s, duration: 20s, fault: { load_spike: { factor: 3 } } }",
        40,
        "",
    );
    let docs = documents(&e, spike_index(&e), 0.0);
    let before = docs.iter().filter(|d| d.planned.as_secs() < 20).count() as i64;
    let after = docs.len() as i64 - before;
    assert!((before - 1000).abs() < 160, "{before}");
    assert!((after - 2000).abs() < 225, "{after}");
    // An extra share of capacity resolves at the calibrated capacity.
    let e = exp(
        "{ constant: { capacity: 0.5 } }",
        "{ at: 10s, duration: 20s, fault: { load_spike: { extra_capacity: 0.8 } } }",
        40,
        "",
    );
    let n = documents(&e, spike_index(&e), 100.0).len() as i64;
    assert!((n - 1600).abs() < 200, "{n}");
}

#[test]
fn the_offered_rate_includes_the_spike_while_it_lasts() {
    let e = exp("{ constant: { rate: 40 } }", SPIKE, 40, "");
    let o = Offered::new(&e, 0.0);
    let at = |ms| o.rate_at(Duration::from_millis(ms));
    assert_eq!(at(9_500), 40.0);
    assert_eq!(at(10_000), 100.0);
    assert_eq!(at(29_500), 100.0);
    assert_eq!(at(30_000), 40.0);
    let e = exp(
        "{ constant: { capacity: 0.5 } }",
        "{ at: 10s, duration: 5s, fault: { load_spike: { extra_rate: 30 } }, trigger: false }",
        40,
        "",
    );
    let o = Offered::new(&e, 80.0);
    assert_eq!(o.rate_at(Duration::from_secs(12)), 70.0);
    assert_eq!(o.rate_at(Duration::from_secs(16)), 40.0);
}

#[test]
fn a_trigger_step_offers_what_it_says_and_spikes_above_the_level_before() {
    let steps = "{ steps: [ { at: 0s, rate: 40 }, { at: 20s, rate: 90, trigger: true }, \
                 { at: 25s, rate: 40 } ] }";
    let e = exp(
        steps,
        "{ at: 1s, fault: { cache_fill: { entries: 1 } }, trigger: false }",
        40,
        "",
    );
    let o = Offered::new(&e, 0.0);
    for (t, want) in [(10, 40.0), (20, 90.0), (24, 90.0), (25, 40.0), (39, 40.0)] {
        assert_eq!(o.rate_at(Duration::from_secs(t)), want, "at {t} s");
        assert_eq!(
            e.workload
                .arrival
                .rate_at(Duration::from_secs(t), e.duration, 0.0),
            40.0,
            "the base stays at the level before the step"
        );
    }
    // 50 documents/s over 5 s: 250 expected (sd 16).
    let n = documents(&e, spike_index(&e), 0.0).len() as i64;
    assert!((n - 250).abs() < 80, "{n}");
}
