//! The sequential tests against `ci/sprt_reference.py`'s table (written
//! from Wald's formulas, independently of this code), and their error rates
//! measured over 10,000 synthetic campaigns per case with known
//! proportions.

use super::*;
use serde_json::Value;

const REFERENCE: &str = include_str!("sprt_reference.json");
const TOLERANCE: f64 = 1e-9;

fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        v => v.as_f64().expect("a number"),
    }
}

fn close(actual: f64, expected: f64, what: &str) {
    let ok = if expected.is_infinite() {
        actual == expected
    } else {
        (actual - expected).abs() <= TOLERANCE * expected.abs().max(1.0)
    };
    assert!(ok, "{what}: {actual:e}, expected {expected:e}");
}

fn decision_of(v: &Value) -> Decision {
    match v.as_str() {
        Some("accept_h1") => Decision::AcceptH1,
        Some("accept_h0") => Decision::AcceptH0,
        _ => Decision::Continue,
    }
}

#[test]
fn proportion_sprt_matches_the_reference() {
    let table: Value = serde_json::from_str(REFERENCE).unwrap();
    let cases = table["proportion"].as_array().unwrap();
    assert!(cases.len() >= 8);
    for (i, case) in cases.iter().enumerate() {
        let f = |k: &str| case[k].as_f64().unwrap();
        let mut t = Sprt::new(f("p0"), f("p1"), f("alpha"), f("beta")).unwrap();
        let (upper, lower) = t.boundaries();
        close(upper, f("upper"), &format!("case {i}: A"));
        close(lower, f("lower"), &format!("case {i}: B"));
        let obs = case["observations"].as_array().unwrap();
        let llrs = case["llrs"].as_array().unwrap();
        let mut last = Decision::Continue;
        for (k, (x, want)) in obs.iter().zip(llrs).enumerate() {
            last = t.observe(x.as_u64() == Some(1));
            close(
                t.llr,
                number(want),
                &format!("case {i}: LLR after {}", k + 1),
            );
        }
        assert_eq!(last, decision_of(&case["decision"]), "case {i}");
        close(
            t.llr_after(t.successes, t.n),
            t.llr,
            &format!("case {i}: closed form"),
        );
    }
}

#[test]
fn paired_sprt_matches_the_reference() {
    let table: Value = serde_json::from_str(REFERENCE).unwrap();
    for (i, case) in table["paired"].as_array().unwrap().iter().enumerate() {
        let f = |k: &str| case[k].as_f64().unwrap();
        let mut t = PairedSprt::new(f("u1"), f("alpha"), f("beta")).unwrap();
        let mut last = Decision::Continue;
        let pairs = case["pairs"].as_array().unwrap();
        for (k, (p, want)) in pairs
            .iter()
            .zip(case["llrs"].as_array().unwrap())
            .enumerate()
        {
            last = t.observe(Pair {
                baseline: p[0].as_u64() == Some(1),
                candidate: p[1].as_u64() == Some(1),
            });
            close(t.test.llr, number(want), &format!("pair case {i}: LLR {k}"));
        }
        assert_eq!(t.pairs as usize, pairs.len());
        assert_eq!(last, decision_of(&case["decision"]), "pair case {i}");
    }
}

/// The committed table is what the script computes (skipped loudly where
/// there is no python3).
#[test]
fn the_reference_script_reproduces_the_table() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = std::process::Command::new("python3")
        .arg(format!("{root}/ci/sprt_reference.py"))
        .arg("--check")
        .output();
    match out {
        Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => eprintln!("SKIPPED: python3 not runnable ({e})"),
    }
}

#[test]
fn bad_parameters_are_refused() {
    assert!(Sprt::new(0.9, 0.5, 0.05, 0.1).is_err());
    assert!(Sprt::new(0.0, 0.5, 0.05, 0.1).is_err());
    assert!(Sprt::new(0.5, 0.9, 0.0, 0.1).is_err());
    assert!(Sprt::new(0.5, 0.9, 0.05, 0.5).is_err());
    assert!(PairedSprt::new(1.0, 0.05, 0.1).is_err());
}

/// SplitMix64: a seeded generator, so the simulation is the same each time.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

const CAMPAIGNS: u32 = 10_000;

/// The share of `CAMPAIGNS` synthetic campaigns that end in `wrong`, each
/// observing successes at rate `p` until the test decides.
fn error_rate(fresh: &dyn Fn() -> Sprt, p: f64, wrong: Decision, seed: u64) -> f64 {
    let mut rng = Rng(seed);
    let mut hits = 0;
    for _ in 0..CAMPAIGNS {
        let mut t = fresh();
        let mut d = Decision::Continue;
        for _ in 0..100_000 {
            d = t.observe(rng.uniform() < p);
            if d != Decision::Continue {
                break;
            }
        }
        hits += u32::from(d == wrong);
    }
    f64::from(hits) / f64::from(CAMPAIGNS)
}

/// Observed at or below `stated` within 3 Monte-Carlo standard errors.
fn at_most(observed: f64, stated: f64, what: &str) {
    let se = (stated * (1.0 - stated) / f64::from(CAMPAIGNS)).sqrt();
    eprintln!("{what}: observed {observed:.4}, stated {stated}");
    assert!(
        observed <= stated + 3.0 * se,
        "{what}: observed {observed:.4} above stated {stated} + 3 SE ({se:.4})"
    );
}

#[test]
fn proportion_sprt_keeps_its_error_rates() {
    let cases = [
        (0.5, 0.9, 0.05, 0.1),
        (0.7, 0.9, 0.05, 0.1),
        (0.6, 0.8, 0.05, 0.05),
        (0.1, 0.3, 0.01, 0.01),
        (0.4, 0.6, 0.2, 0.2),
    ];
    for (i, &(p0, p1, alpha, beta)) in cases.iter().enumerate() {
        let fresh = || Sprt::new(p0, p1, alpha, beta).unwrap();
        let seed = 1000 + i as u64;
        let a = error_rate(&fresh, p0, Decision::AcceptH1, seed);
        let b = error_rate(&fresh, p1, Decision::AcceptH0, seed + 500);
        at_most(a, alpha, &format!("p0 {p0} p1 {p1}: alpha"));
        at_most(b, beta, &format!("p0 {p0} p1 {p1}: beta"));
    }
}

/// With p1 = 1 the test is "k successes in a row"; Wald's boundaries then
/// only promise alpha/(1 - beta): at p0 0.8, alpha 0.05, beta 0.1 it takes
/// 13 in a row, which happens at p0 with probability 0.8^13 = 0.055. Why
/// claims must state a proportion below 100 %.
#[test]
fn every_run_claims_exceed_alpha_up_to_walds_bound() {
    let fresh = || Sprt::new(0.8, 1.0, 0.05, 0.1).unwrap();
    let a = error_rate(&fresh, 0.8, Decision::AcceptH1, 7);
    assert!((a - 0.8f64.powi(13)).abs() < 0.01, "{a}");
    at_most(a, 0.05 / 0.9, "p1 = 1: alpha against Wald's bound");
}

#[test]
fn paired_sprt_keeps_its_error_rates() {
    // (u1, alpha, beta, P(event) of baseline and candidate under H0 and H1)
    let cases = [(9.0, 0.05, 0.1), (4.0, 0.05, 0.05), (19.0, 0.01, 0.1)];
    for (i, &(u1, alpha, beta)) in cases.iter().enumerate() {
        let fresh = || PairedSprt::new(u1, alpha, beta).unwrap();
        // Runs with the event at the same rate (H0: the fix does nothing),
        // and at rates whose odds ratio is exactly u1 (H1: the baseline's
        // odds q1/(1 - q1) = u1, the candidate's 1).
        let q1: f64 = u1 / (1.0 + u1);
        let (pb, pc) = (q1, 0.5);
        let mut wrong = [0u32; 2];
        for (h, (b_rate, c_rate, bad)) in
            [(0.6, 0.6, Decision::AcceptH1), (pb, pc, Decision::AcceptH0)]
                .into_iter()
                .enumerate()
        {
            let mut rng = Rng(77 + i as u64 * 10 + h as u64);
            for _ in 0..CAMPAIGNS {
                let mut t = fresh();
                while t.decision() == Decision::Continue && t.pairs < 100_000 {
                    let pair = Pair {
                        baseline: rng.uniform() < b_rate,
                        candidate: rng.uniform() < c_rate,
                    };
                    t.observe(pair);
                }
                wrong[h] += u32::from(t.decision() == bad);
            }
        }
        let rate = |w: u32| f64::from(w) / f64::from(CAMPAIGNS);
        at_most(rate(wrong[0]), alpha, &format!("paired u1 {u1}: alpha"));
        at_most(rate(wrong[1]), beta, &format!("paired u1 {u1}: beta"));
    }
}
