//! A campaign judged on synthetic runs: shares, flaky expectations, the
//! headline, expectations over runs, errored and excluded runs.

use super::*;
use crate::metrics::{Metric, MetricRef, MetricValues};
use crate::model::CompareOp;

fn judged(verdict: &str, waves: f64, given_up: f64, passed: bool) -> JudgedRun {
    let mut metrics = MetricValues::default();
    metrics.insert(&MetricRef::whole(Metric::Waves), waves);
    metrics.insert(&MetricRef::whole(Metric::DocumentsGivenUp), given_up);
    metrics.insert(
        &MetricRef::whole(Metric::PeakFailureRatio),
        0.1 + waves / 10.0,
    );
    metrics.insert(&MetricRef::whole(Metric::DegradedS), waves * 3.0);
    JudgedRun {
        verdict: verdict.into(),
        metrics,
        expectations: vec![("waves >= 4".into(), passed)],
        integrity_ok: true,
        not_as_planned: None,
        interrupted: false,
        alert_rules: Vec::new(),
    }
}

/// A counted run of `variant` with `verdict` (for other modules' tests).
pub(super) fn judged_run(variant: &str, seed: u64, verdict: &str) -> CampaignRun {
    run(
        variant,
        seed,
        RunStatus::Judged(judged(verdict, 0.0, 0.0, true)),
    )
}

fn run(variant: &str, seed: u64, status: RunStatus) -> CampaignRun {
    CampaignRun {
        variant: variant.into(),
        seed,
        repeat: 0,
        report: Some(format!("runs/{variant}-s{seed}")),
        status,
    }
}

fn plan() -> CampaignPlan {
    CampaignPlan {
        experiment: "retry-storm".into(),
        quick: false,
        seeds: (1..=10).collect(),
        repeats: 1,
        variants: vec!["before-fix".into(), "after-fix".into()],
        parallel_start: 4,
        parallel_end: 4,
        estimate_s: 600.0,
        wall_s: 580.0,
        clock: crate::model::RunClock::Real,
        modeled_s: 0.0,
        interrupted: false,
        commit: None,
    }
}

/// Ten before-fix runs with 4–6 waves (seed 3 has 3: a flaky `waves >= 4`),
/// ten after-fix runs without a wave.
fn runs() -> Vec<CampaignRun> {
    let mut runs = Vec::new();
    for seed in 1..=10u64 {
        let waves = if seed == 3 {
            3.0
        } else {
            4.0 + (seed % 3) as f64
        };
        let verdict = if seed == 2 { "metastable" } else { "recovered" };
        runs.push(run(
            "before-fix",
            seed,
            RunStatus::Judged(judged(verdict, waves, 150.0 + seed as f64, waves >= 4.0)),
        ));
        runs.push(run(
            "after-fix",
            seed,
            RunStatus::Judged(judged("recovered", 0.0, 0.0, true)),
        ));
    }
    runs
}

fn spec() -> CampaignSpec {
    let share = |variant: &str, op, value: f64, cond: OverRuns| CampaignExpectation {
        variant: variant.into(),
        statistic: cond,
        op,
        value,
        source: format!("{variant} test"),
        rates: None,
    };
    let waves = MetricRef::whole(Metric::Waves);
    CampaignSpec {
        seeds: Vec::new(),
        compare: vec![("before-fix".into(), "after-fix".into())],
        expectations: vec![
            share(
                "after-fix",
                CompareOp::Eq,
                0.0,
                OverRuns::ConditionShare {
                    metric: waves.clone(),
                    op: CompareOp::Ge,
                    value: 1.0,
                },
            ),
            share(
                "before-fix",
                CompareOp::Ge,
                0.9,
                OverRuns::ConditionShare {
                    metric: waves.clone(),
                    op: CompareOp::Ge,
                    value: 1.0,
                },
            ),
            share(
                "before-fix",
                CompareOp::Ge,
                4.0,
                OverRuns::Median {
                    metric: waves.clone(),
                },
            ),
            share(
                "before-fix",
                CompareOp::Ge,
                0.5,
                OverRuns::VerdictShare {
                    classes: vec!["metastable".into()],
                },
            ),
        ],
    }
}

#[test]
fn shares_carry_exact_intervals_and_flaky_expectations_name_their_runs() {
    let c = CampaignSummary::build(plan(), &spec(), runs());
    let before = &c.variants[0];
    assert_eq!((before.counted, before.planned), (10, 10));
    assert_eq!((before.with_waves.k, before.with_waves.n), (10, 10));
    let meta = before
        .verdicts
        .iter()
        .find(|(k, _)| k == "metastable")
        .unwrap();
    assert_eq!((meta.1.k, meta.1.n), (1, 10));
    // Clopper–Pearson 1/10: [0.0025, 0.445] (scipy's beta.ppf).
    assert!(
        (meta.1.interval.lo - 0.002528).abs() < 1e-5,
        "{:?}",
        meta.1.interval
    );
    assert!(
        (meta.1.interval.hi - 0.445016).abs() < 1e-5,
        "{:?}",
        meta.1.interval
    );
    let flaky: Vec<_> = c.flaky().collect();
    assert_eq!(flaky.len(), 1);
    assert_eq!(flaky[0].0, "before-fix");
    assert_eq!(flaky[0].1.failed_in, vec!["seed 3".to_string()]);
    let waves = before.figure(&MetricRef::whole(Metric::Waves)).unwrap();
    assert_eq!(waves.spread.as_ref().unwrap().median, 5.0);
}

#[test]
fn the_headline_states_the_fix_with_its_tests() {
    let c = CampaignSummary::build(plan(), &spec(), runs());
    let s = &c.comparisons[0].sentence;
    assert!(s.starts_with("after-fix against before-fix: no shown difference (too few runs, or none) in runs that did not come back"), "{s}");
    assert!(
        s.contains("0/10 [0–31 %] against 1/10 [0–45 %], Fisher's exact test p = 1.000"),
        "{s}"
    );
    assert!(
        s.contains("removes the waves: 0/10 [0–31 %] runs with a wave against 10/10 [69–100 %]"),
        "{s}"
    );
    assert!(s.contains("Fisher's exact test p < 0.001"), "{s}");
    assert!(
        s.contains("documents given up: median 0 against 155.5, Mann–Whitney p < 0.001"),
        "{s}"
    );
}

#[test]
fn expectations_over_runs_pass_and_fail_with_the_runs_named() {
    let c = CampaignSummary::build(plan(), &spec(), runs());
    let r: Vec<bool> = c.expectations.iter().map(|e| e.passed).collect();
    assert_eq!(r, vec![true, true, true, false]);
    let spec = CampaignSpec {
        expectations: c.expectations[..3].iter().map(|e| e.spec.clone()).collect(),
        ..spec()
    };
    let flaky = CampaignSummary::build(plan(), &spec, runs());
    assert!(
        !flaky.all_passed,
        "`waves >= 4` failed in seed 3: a per-run expectation holds in every run"
    );
    assert!(write::campaign_junit(&flaky).contains("held in 9 of 10 runs; failed in seed 3"));
    assert_eq!(c.expectations[3].against.len(), 9);
    assert!(
        c.expectations[3].message.contains("10 % of 10 runs"),
        "{}",
        c.expectations[3].message
    );
    assert!(!c.all_passed);
}

#[test]
fn errored_and_excluded_runs_are_named_never_counted() {
    let mut runs = runs();
    runs[0].status = RunStatus::Errored {
        reason: "killed by signal 9".into(),
    };
    let j = judged("recovered", 0.0, 0.0, true);
    runs[2].status = RunStatus::Excluded {
        reason: "arrival lag p99 226 ms".into(),
        judged: j,
    };
    let spec = CampaignSpec {
        expectations: Vec::new(),
        ..spec()
    };
    let c = CampaignSummary::build(plan(), &spec, runs);
    let before = &c.variants[0];
    assert_eq!(before.counted, 8);
    assert_eq!(
        before.errored,
        vec![("seed 1".to_string(), "killed by signal 9".to_string())]
    );
    assert_eq!(before.excluded[0].0, "seed 2");
    assert!(!c.all_passed, "an errored run fails the campaign");
    let html = write::campaign_html(&c).unwrap();
    assert!(html.contains("ERRORED in before-fix: 1 run(s)"));
    assert!(html.contains("<svg"), "strip plots drawn");
    let junit = write::campaign_junit(&c);
    assert!(junit.contains("seed 1 ran") && junit.contains("killed by signal 9"));
}

#[test]
fn a_recorded_summary_reads_back() {
    let summary = serde_json::json!({
        "schema_version": 4,
        "variants": [{
            "name": "before-fix",
            "verdict": { "verdict": "metastable" },
            "metrics": { "waves": 5.0, "peak_failure_ratio": null, "alert_fired{Dup}": 1.0, "alert_lead_s{Dup}": -3.0, "future_metric": 1.0 },
            "integrity": { "ok": true },
            "interrupted": false,
            "harness_cost": { "delivered_as_planned": false, "warnings": ["arrival lag p99 226 ms"] },
        }],
        "expectations": [{ "variant": "before-fix", "metric": "waves", "expected": ">= 4", "passed": true }],
    });
    let v = read::judged_variants(&summary).unwrap();
    let (name, j) = &v[0];
    assert_eq!(name, "before-fix");
    assert_eq!(j.verdict, "metastable");
    assert_eq!(j.metrics.get(Metric::Waves), Some(5.0));
    assert_eq!(j.metrics.get(Metric::PeakFailureRatio), None);
    assert_eq!(j.metrics.labelled(Metric::AlertLeadS, "Dup"), Some(-3.0));
    assert_eq!(j.alert_rules, vec!["Dup".to_string()]);
    assert_eq!(j.expectations, vec![("waves >= 4".to_string(), true)]);
    assert_eq!(j.not_as_planned.as_deref(), Some("arrival lag p99 226 ms"));
    let old = serde_json::json!({ "schema_version": 3, "variants": [] });
    assert!(read::judged_variants(&old)
        .unwrap_err()
        .to_string()
        .contains("older"));
}

#[test]
fn a_run_is_placed_in_the_campaign_it_belongs_to() {
    let c = CampaignSummary::build(plan(), &spec(), runs());
    let ctx = context::CampaignContext::of(&c, "20261204T203025Z-seed1");
    assert_eq!(ctx.seeds_text(), "seeds 1–10");
    let before = &ctx.variants["before-fix"];
    assert_eq!(before.runs, 10);
    assert_eq!(before.verdicts["metastable"], 1);
    assert_eq!(before.figures[&Metric::Waves], (3.0, 5.0, 6.0));
    let json = serde_json::to_string(&ctx).unwrap();
    let back: context::CampaignContext = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ctx, "a committed context reads back as written");
    // One run of before-fix with 9 waves: recovered as 9 of 10 were, waves outside.
    let mut run = crate::model::VariantRun {
        name: "before-fix".into(),
        ..Default::default()
    };
    run.seconds = (0..5)
        .map(|t| crate::model::Second {
            t,
            ..Default::default()
        })
        .collect();
    let mut a = crate::analysis::analyse_variant(&run, &crate::model::AnalysisConfig::default());
    a.metrics.insert(&MetricRef::whole(Metric::Waves), 9.0);
    let analysis = crate::analysis::Analysis {
        variants: vec![a],
        expectations: Vec::new(),
        all_passed: true,
        fidelity: Vec::new(),
        verdict_rule: String::new(),
        wave_rule: String::new(),
    };
    let lines = ctx.place(&analysis);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains("waves 9 (above seeds 1–10: 3–6, median 5)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with("2 figures outside the range of the 10 recorded runs, as about 1 new run in 5.5 is by chance alone (2/(n+1) per figure)"),
        "{}",
        lines[0]
    );
    assert!(!lines[0].contains("OUTSIDE"), "no capitals: {}", lines[0]);
}

#[test]
fn a_context_prints_its_figures_with_date_and_commit() {
    let c = CampaignSummary::build(plan(), &spec(), runs());
    let mut ctx = context::CampaignContext::of(&c, "20261204T203025Z-seed1");
    assert_eq!(ctx.commit, None, "the plan did not say");
    ctx.commit = Some("bbac0266c2d1".into());
    assert_eq!(ctx.recorded_text(), "2026-12-04 20:30 UTC");
    let table = ctx.figures_markdown();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "`retry-storm` (full form), seeds 1–10, 10 run(s) per variant; \
         recorded 2026-12-04 20:30 UTC, commit `bbac0266c2d1`."
    );
    assert!(lines[2].starts_with("| variant | verdicts |"), "{table}");
    assert!(lines[2].contains(" waves |"), "{table}");
    let before = lines
        .iter()
        .find(|l| l.starts_with("| before-fix |"))
        .expect("a row per variant");
    assert!(before.contains("metastable 1"), "{before}");
    assert!(before.contains(" 5 (3–6) |"), "median (min–max): {before}");
    ctx.recorded = "20261204T210012Z-seed1 (re-judged)".into();
    assert_eq!(ctx.recorded_text(), "2026-12-04 21:00 UTC (re-judged)");
    // A folder that is not a date is shown as it is.
    ctx.recorded = "merged".into();
    assert_eq!(ctx.recorded_text(), "merged");
}

/// A windowed campaign metric is read from the run's summary under its
/// window, never answered with the whole-run value of the same metric
/// (which read 0.47 where az2's window read 0.75).
#[test]
fn a_windowed_metric_is_its_window_value_or_undefined() {
    let windowed = MetricRef::parse("zone_failure_ratio_mean{az2}[17s..26s]").unwrap();
    let summary = |metrics: serde_json::Value| {
        serde_json::json!({
            "schema_version": 4,
            "variants": [{ "name": "before-fix", "verdict": { "verdict": "metastable" }, "metrics": metrics }],
        })
    };
    let value = |s: serde_json::Value| {
        let (_, j) = read::judged_variants(&s).unwrap().remove(0);
        aggregate::value_of(&j, &windowed)
    };
    let with_window = summary(serde_json::json!({
        "zone_failure_ratio_mean{az2}": 0.47,
        "zone_failure_ratio_mean{az2}[17s..26s]": 0.75,
    }));
    assert_eq!(value(with_window), Some(0.75));
    let whole_run_only = summary(serde_json::json!({ "zone_failure_ratio_mean{az2}": 0.47 }));
    assert_eq!(value(whole_run_only), None);

    let spec = CampaignSpec {
        expectations: vec![CampaignExpectation {
            variant: "before-fix".into(),
            statistic: OverRuns::Median {
                metric: windowed.clone(),
            },
            op: CompareOp::Ge,
            value: 0.5,
            source: "median".into(),
            rates: None,
        }],
        ..CampaignSpec::default()
    };
    assert_eq!(spec.windowed_metrics(), vec![windowed]);
}

/// A verdict reads the same on every page: the campaign's verdict table and
/// its recorded context say "never healthy" as a run's report does, not
/// the class's key `never_healthy`.
#[test]
fn verdicts_are_written_in_words() {
    let mut all = runs();
    all[0] = judged_run("before-fix", 1, "never_healthy");
    let c = CampaignSummary::build(plan(), &spec(), all);
    let html = write::campaign_html(&c).unwrap();
    let table = &html[html.find("id=\"verdicts\"").unwrap()..];
    let table = &table[..table.find("</section>").unwrap()];
    assert!(table.contains("never healthy 1/10"), "{table}");
    assert!(!table.contains("never_healthy"), "{table}");
    let ctx = context::CampaignContext::of(&c, "20261204T203025Z-seed1");
    let md = ctx.figures_markdown();
    assert!(md.contains("never healthy 1"), "{md}");
    assert!(!md.contains("never_healthy"), "{md}");
}
