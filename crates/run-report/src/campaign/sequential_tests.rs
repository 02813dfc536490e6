//! Sequential claims on synthetic runs: the hypotheses a claim states, a
//! claim proven, refuted and not settled, the headline's paired test, and
//! the record attached to the campaign.

use super::*;
use crate::campaign::{
    CampaignExpectation, CampaignPlan, CampaignRun, CampaignSpec, JudgedRun, RunStatus,
};
use crate::metrics::{MetricRef, MetricValues};

fn rates(delta: f64) -> ClaimRates {
    ClaimRates {
        alpha: 0.05,
        beta: 0.1,
        delta,
    }
}

#[test]
fn a_claim_states_its_indifference_region() {
    let h = hypotheses(CompareOp::Ge, 0.9, &rates(0.2)).unwrap();
    assert!((h.p0 - 0.7).abs() < 1e-12 && h.p1 == 0.9 && !h.upper);
    let h = hypotheses(CompareOp::Le, 0.1, &rates(0.2)).unwrap();
    assert!((h.p1 - 0.9).abs() < 1e-12 && (h.p0 - 0.7).abs() < 1e-12 && h.upper);
    let every = hypotheses(CompareOp::Ge, 1.0, &rates(0.2)).unwrap_err();
    assert!(every
        .to_string()
        .starts_with("100 % of runs can only be refuted"));
    let none = hypotheses(CompareOp::Le, 0.0, &rates(0.2)).unwrap_err();
    assert!(none.to_string().starts_with("0 % of runs"));
    let written = hypotheses(CompareOp::Eq, 1.0, &rates(0.2)).unwrap_err();
    assert_eq!(written, every);
    assert_eq!(
        hypotheses(CompareOp::Eq, 0.5, &rates(0.2)),
        Err(ClaimError::NotABound)
    );
    assert!(matches!(
        hypotheses(CompareOp::Ge, 0.15, &rates(0.2)),
        Err(ClaimError::NoRoom { .. })
    ));
}

fn judged(verdict: &str, waves: f64) -> JudgedRun {
    let mut metrics = MetricValues::default();
    metrics.insert(&MetricRef::whole(Metric::Waves), waves);
    JudgedRun {
        verdict: verdict.into(),
        metrics,
        expectations: Vec::new(),
        integrity_ok: true,
        not_as_planned: None,
        interrupted: false,
        alert_rules: Vec::new(),
    }
}

fn run(variant: &str, seed: u64, verdict: &str, waves: f64) -> CampaignRun {
    CampaignRun {
        variant: variant.into(),
        seed,
        repeat: 0,
        report: None,
        status: RunStatus::Judged(judged(verdict, waves)),
    }
}

fn spec(value: f64, delta: f64) -> CampaignSpec {
    CampaignSpec {
        seeds: Vec::new(),
        compare: vec![("before-fix".into(), "after-fix".into())],
        expectations: vec![CampaignExpectation {
            variant: "before-fix".into(),
            statistic: OverRuns::VerdictShare {
                classes: vec!["metastable".into()],
            },
            op: CompareOp::Ge,
            value,
            source: "runs with verdict metastable: >= 90% (alpha 0.05, beta 0.1)".into(),
            rates: Some(rates(delta)),
        }],
    }
}

fn variants() -> Vec<String> {
    vec!["before-fix".into(), "after-fix".into()]
}

/// `n` seeds: before-fix metastable with waves except at the seeds in
/// `calm`, after-fix recovered without.
fn campaign(n: u64, calm: &[u64]) -> Vec<CampaignRun> {
    let mut runs = Vec::new();
    for seed in 1..=n {
        let storm = !calm.contains(&seed);
        let (v, w) = if storm {
            ("metastable", 5.0)
        } else {
            ("recovered", 0.0)
        };
        runs.push(run("before-fix", seed, v, w));
        runs.push(run("after-fix", seed, "recovered", 0.0));
    }
    runs
}

#[test]
fn a_clear_campaign_settles_and_later_runs_do_not_move_it() {
    let seeds: Vec<u64> = (1..=30).collect();
    // p1 0.9, p0 0.5: ln(1.8) = 0.588 a metastable run; A = ln(18) = 2.890.
    let claims = judge(&spec(0.9, 0.4), &variants(), &campaign(5, &[]), &seeds);
    assert_eq!(claims.len(), 2);
    let c = &claims[0];
    assert_eq!((c.outcome, c.runs), (Outcome::Holds, 5));
    assert!(
        c.boundary.as_deref().unwrap().starts_with("A = 2.89"),
        "{:?}",
        c.boundary
    );
    // The headline at alpha: A = ln(0.9/0.05) = 2.89, ln(1.8) a
    // discordant seed: 5 seeds, 10 runs; 4 seeds do not settle it.
    let claims = judge(&spec(0.9, 0.4), &variants(), &campaign(4, &[]), &seeds);
    assert_eq!(claims[1].outcome, Outcome::NotSettled);
    assert_eq!(undecided_variants(&claims, &variants()), variants());
    let claims = judge(&spec(0.9, 0.4), &variants(), &campaign(9, &[]), &seeds);
    assert_eq!((claims[1].outcome, claims[1].runs), (Outcome::Holds, 10));
    assert!(undecided_variants(&claims, &variants()).is_empty());
    // A calm run after the decision changes nothing.
    let later = judge(
        &spec(0.9, 0.4),
        &variants(),
        &campaign(8, &[6, 7, 8]),
        &seeds,
    );
    assert_eq!((later[0].outcome, later[0].runs), (Outcome::Holds, 5));
}

#[test]
fn a_claim_refuted_and_one_not_settled() {
    let seeds: Vec<u64> = (1..=30).collect();
    // Calm in half the runs: far below 90 %.
    let calm: Vec<u64> = (1..=30).filter(|s| s % 2 == 0).collect();
    let claims = judge(&spec(0.9, 0.2), &variants(), &campaign(30, &calm), &seeds);
    assert_eq!(claims[0].outcome, Outcome::Refuted);
    assert!(claims[0].boundary.as_deref().unwrap().starts_with("B = "));
    // Two runs are not enough to decide anything.
    let claims = judge(&spec(0.9, 0.2), &variants(), &campaign(2, &[]), &seeds);
    assert_eq!(claims[0].outcome, Outcome::NotSettled);
    assert!(
        claims[0].message.contains("2/2 [16–100 %]"),
        "{}",
        claims[0].message
    );
    assert_eq!(undecided_variants(&claims, &variants()), variants());
}

#[test]
fn the_record_decides_the_expectations_and_the_pass() {
    let seeds: Vec<u64> = (1..=5).collect();
    let s = spec(0.9, 0.2);
    let runs = campaign(5, &[]);
    let plan = CampaignPlan {
        experiment: "x".into(),
        quick: true,
        seeds: seeds.clone(),
        repeats: 1,
        variants: variants(),
        parallel_start: 2,
        parallel_end: 2,
        estimate_s: 1.0,
        wall_s: 1.0,
        interrupted: false,
        commit: None,
        clock: crate::model::RunClock::Virtual,
        modeled_s: 1.0,
    };
    let summary = CampaignSummary::build(plan, &s, runs.clone());
    // Five metastable runs of five do not prove ">= 90 %" against 70 % at
    // alpha 0.05: a fixed-size campaign says so too, it does not pass the
    // share because it reached the number ...
    assert!(!summary.expectations[0].passed);
    assert!(
        summary.expectations[0]
            .message
            .starts_with("not settled after 5 runs"),
        "{}",
        summary.expectations[0].message
    );
    // ... and a sequential one records the same.
    let claims = judge(&s, &variants(), &runs, &seeds);
    let time = TimeToProof {
        wall_s: 1.0,
        runs_used: 10,
        fixed_runs: 10,
    };
    let summary = summary.with_sequential(SequentialSummary::new(claims, 5, time));
    assert!(!summary.expectations[0].passed);
    assert!(summary.expectations[0].message.starts_with("not settled"));
    assert!(!summary.all_passed);
    let seq = summary.sequential.as_ref().unwrap();
    assert!(
        !seq.settled
            && seq
                .suggestion
                .as_deref()
                .unwrap()
                .contains("--max-seeds 10")
    );
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["sequential"]["claims"][0]["outcome"], "not_settled");
    let page = crate::campaign::write::campaign_html(&summary).unwrap();
    assert!(page.contains("Time to proof") && page.contains("NOT SETTLED"));
}

/// A fix whose runs still have waves but come back ranks better than a
/// baseline that does not come back; alike runs settle nothing; a worse
/// candidate is refuted.
#[test]
fn the_headline_ranks_coming_back_above_a_wave() {
    let seeds: Vec<u64> = (1..=30).collect();
    let mut runs = Vec::new();
    for seed in 1..=10 {
        // Waves in both; only the baseline does not come back.
        runs.push(run("before-fix", seed, "metastable", 4.0));
        runs.push(run("after-fix", seed, "recovered", 2.0));
    }
    let c = &judge(&spec(0.9, 0.4), &variants(), &runs, &seeds)[1];
    assert_eq!((c.outcome, c.runs), (Outcome::Holds, 10), "{}", c.message);
    assert!(
        c.message.contains("5 seeds went better in the candidate"),
        "{}",
        c.message
    );
    // Nothing differs: every seed a tie, and the headline stays open
    // however many seeds.
    let same: Vec<CampaignRun> = (1..=30)
        .flat_map(|s| {
            [
                run("before-fix", s, "recovered", 3.0),
                run("after-fix", s, "recovered", 3.0),
            ]
        })
        .collect();
    let c = &judge(&spec(0.9, 0.4), &variants(), &same, &seeds)[1];
    assert_eq!(c.outcome, Outcome::NotSettled);
    // The candidate worse: the headline is refuted.
    let worse: Vec<CampaignRun> = (1..=30)
        .flat_map(|s| {
            [
                run("before-fix", s, "recovered", 0.0),
                run("after-fix", s, "metastable", 3.0),
            ]
        })
        .collect();
    let c = &judge(&spec(0.9, 0.4), &variants(), &worse, &seeds)[1];
    assert_eq!(c.outcome, Outcome::Refuted, "{}", c.message);
}

/// SplitMix64, for the simulation below.
struct Rng(u64);

impl Rng {
    fn chance(&mut self, p: f64) -> bool {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// The share of 10,000 synthetic campaigns whose headline ends in
/// `wrong`, each seed's runs ranked by drawing their badness from
/// `baseline` and `candidate` (probabilities of 0, 1 and 2).
fn headline_error(baseline: [f64; 3], candidate: [f64; 3], wrong: Decision, seed: u64) -> f64 {
    let mut rng = Rng(seed);
    let mut draw = |p: [f64; 3]| -> u8 {
        if rng.chance(p[0]) {
            0
        } else if rng.chance(p[1] / (1.0 - p[0])) {
            1
        } else {
            2
        }
    };
    let mut hits = 0u32;
    for _ in 0..10_000 {
        let mut t = HeadlineTest::default();
        while t.decision() == Decision::Continue && t.pairs() < 100_000 {
            let (b, c) = (draw(baseline), draw(candidate));
            t.observe(b, c);
        }
        hits += u32::from(t.decision() == wrong);
    }
    f64::from(hits) / 10_000.0
}

/// The headline keeps alpha when the fix changes nothing, and beta when
/// a discordant seed favours the fix with odds 9, whether the fix removes
/// waves or the failures to come back (3 Monte-Carlo standard errors).
#[test]
fn the_headline_keeps_its_error_rates() {
    let within = |observed: f64, stated: f64, what: &str| {
        let se = (stated * (1.0 - stated) / 10_000.0).sqrt();
        eprintln!("headline {what}: observed {observed:.4}, stated {stated}");
        assert!(observed <= stated + 3.0 * se, "{what}: {observed}");
    };
    let same = [0.3, 0.4, 0.3];
    within(
        headline_error(same, same, Decision::AcceptH1, 1),
        HEADLINE_ALPHA,
        "alpha",
    );
    // Waves only: baseline 0/1 with P(1) = 0.9, candidate with P(1) = 0.5:
    // P(b > c) = 0.45, P(c > b) = 0.05, odds 9.
    within(
        headline_error([0.1, 0.9, 0.0], [0.5, 0.5, 0.0], Decision::AcceptH0, 2),
        HEADLINE_BETA,
        "beta (waves)",
    );
    // Coming back only: baseline 1/2 with P(2) = 0.9, candidate 0.5.
    within(
        headline_error([0.0, 0.1, 0.9], [0.0, 0.5, 0.5], Decision::AcceptH0, 3),
        HEADLINE_BETA,
        "beta (come back)",
    );
}

/// A sequential campaign's first batch is as wide as the fewest seeds that
/// could prove every claim: 5 for 90 % against 50 % at alpha 0.05 (ln 1.8 a
/// run, A = ln 18), then what is left of it.
#[test]
fn the_fewest_seeds_that_could_prove_every_claim() {
    let seeds: Vec<u64> = (1..=30).collect();
    let none = judge(&spec(0.9, 0.4), &variants(), &[], &seeds);
    assert_eq!(fewest_seeds_to_settle(&none), 5);
    let three = judge(&spec(0.9, 0.4), &variants(), &campaign(3, &[]), &seeds);
    assert_eq!(fewest_seeds_to_settle(&three), 2);
    let all = judge(&spec(0.9, 0.4), &variants(), &campaign(9, &[]), &seeds);
    assert_eq!(fewest_seeds_to_settle(&all), 0);
}
