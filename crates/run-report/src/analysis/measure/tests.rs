//! Metric catalogue on synthetic series: windows, zones, undefined values and
//! the guarantee that every listed name is implemented.

use super::*;
use crate::analysis::analyse_variant;
use crate::model::{CompareOp, Integrity, LatencySummary, ZoneSecond};

/// 60 seconds: 10 % failures except 80 % in [20, 30); zone az2 fails in [20, 30).
fn variant() -> VariantRun {
    let seconds = (0..60u32)
        .map(|t| {
            let bad = (20..30).contains(&t);
            let failed = if bad { 80 } else { 10 };
            let zone = |failures| ZoneSecond {
                requests: 50,
                failures,
                zombie_work: u64::from(bad),
                ..ZoneSecond::default()
            };
            Second {
                t,
                arrivals: 10,
                attempts: if bad { 100 } else { 10 },
                distinct_documents: 10,
                ok: 100 - failed,
                timeouts: failed,
                p99_ms: if bad { 900.0 } else { 50.0 },
                gateway_attempts: if bad { 300 } else { 10 },
                pages_computed: if bad { 40 } else { 10 },
                gpu_queue_pages: if bad { 250.0 } else { 2.0 },
                pages_recomputed: u64::from(bad),
                cache_writes_lost: u64::from(bad) * 2,
                cache_hits: if bad { 1 } else { 6 },
                cache_misses: if bad { 9 } else { 4 },
                repeat_submissions: u64::from(t % 2 == 0),
                slots_held_by_waiters: if bad { 7.0 } else { 0.0 },
                collector_share: Some(if bad { 0.9 } else { 0.05 }),
                zones: [
                    ("az1".to_string(), zone(0)),
                    ("az2".to_string(), zone(if bad { 40 } else { 0 })),
                ]
                .into_iter()
                .collect(),
                ..Second::default()
            }
        })
        .collect();
    let lat = |p99_ms| LatencySummary {
        count: 10,
        p99_ms,
        ..LatencySummary::default()
    };
    VariantRun {
        name: "before-fix".into(),
        seconds,
        latency: lat(700.0),
        tenant_latency: [
            ("t1".into(), lat(100.0)),
            ("t2".into(), lat(200.0)),
            ("t7".into(), lat(5000.0)),
        ]
        .into_iter()
        .collect(),
        oversized_tenants: vec!["t7".into()],
        integrity: Integrity {
            submitted: 600,
            completed: 590,
            given_up: 4,
            pending: 3,
            ..Integrity::default()
        },
        triggers: vec![crate::model::TriggerSpan::undone_at("f", 20.0, Some(25.0))],
        late_arrivals: 2,
        alerts: vec![crate::model::AlertHistory {
            name: "Dup".into(),
            pending: vec![(10.0, 15.0)],
            firing: vec![(15.0, 40.0)],
            observed_until_s: Some(60.0),
        }],
        ..VariantRun::default()
    }
}

fn value(v: &VariantRun, text: &str) -> Result<f64, String> {
    let cfg = AnalysisConfig::default();
    let a = analyse_variant(v, &cfg);
    metric_value_explained(
        v,
        &a,
        &MetricRef::parse(text).map_err(|e| e.to_string())?,
        &cfg,
    )
    .map_err(|e| e.0)
}

fn close(x: Result<f64, String>, want: f64) {
    let x = x.expect("defined");
    assert!((x - want).abs() < 1e-9, "got {x}, want {want}");
}

#[test]
fn every_catalogued_metric_is_implemented() {
    let v = variant();
    for metric in Metric::ALL {
        let label = match metric.scope() {
            Scope::Run => "",
            Scope::Zone => "{az2}",
            Scope::Alert => "{Dup}",
        };
        let r = value(&v, &format!("{metric}{label}"));
        if *metric == Metric::Verdict {
            // A class, judged by expectations, never a number.
            assert!(r.unwrap_err().contains("class"));
            continue;
        }
        assert!(r.is_ok(), "{metric}: {r:?}");
        let windowed = value(&v, &format!("{metric}{label}[0s..30s]"));
        assert_eq!(
            metric.windowed(),
            !windowed.as_ref().is_err_and(|e| e.contains("window")),
            "{metric}: {windowed:?}"
        );
    }
}

#[test]
fn zone_times_and_the_collector_share() {
    let v = variant();
    close(value(&v, "zone_failed_from_s{az2}"), 20.0);
    close(value(&v, "zone_recovered_from_s{az2}"), 30.0);
    close(value(&v, "zone_failed_from_s{az2}[25s..60s]"), 25.0);
    assert!(
        value(&v, "zone_failed_from_s{az1}").is_err(),
        "az1 never failed"
    );
    assert!(value(&v, "zone_recovered_from_s{az2}[0s..29s]").is_err());
    close(
        value(&v, "collector_share_mean"),
        (10.0 * 0.9 + 50.0 * 0.05) / 60.0,
    );
    close(value(&v, "collector_share_mean[20s..30s]"), 0.9);
    let mut none = variant();
    none.seconds
        .iter_mut()
        .for_each(|s| s.collector_share = None);
    assert!(value(&none, "collector_share_mean")
        .unwrap_err()
        .contains("no heap"));
}

#[test]
fn names_parse_back_to_their_metric() {
    for metric in Metric::ALL {
        assert_eq!(metric.name().parse::<Metric>(), Ok(*metric));
        assert!(!metric.doc().is_empty());
        assert!(Metric::markdown_table().contains(&format!("`{metric}`")));
    }
    let e = "nonsense".parse::<Metric>().unwrap_err().to_string();
    assert!(
        e.contains("unknown metric") && e.contains("peak_failure_ratio"),
        "{e}"
    );
    let json = serde_json::to_string(&Metric::AlertLeadS).unwrap();
    assert_eq!(json, "\"alert_lead_s\"");
    assert_eq!(
        serde_json::from_str::<Metric>(&json).unwrap(),
        Metric::AlertLeadS
    );
}

#[test]
fn whole_run_values() {
    let v = variant();
    close(value(&v, "waves"), 1.0);
    close(value(&v, "peak_failure_ratio"), 0.8);
    close(
        value(&v, "failure_ratio_mean"),
        (50.0 * 0.1 + 10.0 * 0.8) / 60.0,
    );
    close(value(&v, "amplification_peak"), 10.0);
    close(
        value(&v, "attempts_per_document"),
        (50.0 * 10.0 + 10.0 * 100.0) / 600.0,
    );
    // An older record's whole-run `amplification_mean` reads as the figure
    // it was, under its own name; with a window it is the window's.
    assert_eq!(
        MetricRef::parse("amplification_mean").unwrap().metric,
        Metric::AttemptsPerDocument
    );
    assert_eq!(
        MetricRef::parse("amplification_mean[1s..2s]")
            .unwrap()
            .metric,
        Metric::AmplificationMean
    );
    close(
        value(&v, "gateway_amplification"),
        (500.0 + 3000.0) / 1500.0,
    );
    close(value(&v, "duplicate_compute_share"), 10.0 / 900.0);
    close(value(&v, "gpu_pages_per_s"), 900.0 / 60.0);
    close(value(&v, "cache_writes_lost"), 20.0);
    close(value(&v, "cache_hit_ratio"), (50.0 * 6.0 + 10.0) / 600.0);
    close(value(&v, "repeat_submissions"), 30.0);
    close(value(&v, "slots_held_by_waiters_peak"), 7.0);
    close(value(&v, "lost_documents"), 7.0);
    close(value(&v, "unaccounted_documents"), 3.0);
    close(value(&v, "p99_ms"), 700.0);
    close(value(&v, "p99_ms_peak"), 900.0);
    close(value(&v, "other_tenants_p99_ms"), 200.0);
    close(value(&v, "oversized_tenant_p99_ms"), 5000.0);
    close(value(&v, "late_arrivals"), 2.0);
    close(value(&v, "metastable"), 0.0);
    // Outside the one wave (20-30 s) after the trigger at 20 s: 10 % failures.
    close(value(&v, "failure_ratio_between_waves"), 0.1);
    close(value(&v, "failure_ratio_between_waves[0s..25s]"), 0.1);
    close(value(&v, "time_to_recover_s"), 5.0);
}

#[test]
fn windows_select_seconds() {
    let v = variant();
    close(value(&v, "failure_ratio_mean[20s..30s]"), 0.8);
    close(value(&v, "failure_ratio_mean[25..35]"), 0.45);
    close(value(&v, "failure_ratio_peak[30s..60s]"), 0.1);
    close(value(&v, "amplification_mean[20s..30s]"), 10.0);
    close(value(&v, "duplicate_compute_share[20s..30s]"), 10.0 / 400.0);
    close(value(&v, "gpu_pages_per_s[20s..30s]"), 40.0);
    close(value(&v, "gpu_pages_per_s[0s..20s]"), 10.0);
    close(value(&v, "gpu_queue_pages_mean[20s..30s]"), 250.0);
    close(value(&v, "gpu_queue_pages_mean[15s..25s]"), 126.0);
    close(value(&v, "cache_writes_lost[0s..21s]"), 2.0);
    close(value(&v, "cache_hit_ratio[20s..30s]"), 0.1);
    close(value(&v, "cache_hit_ratio[0s..20s]"), 0.6);
    close(value(&v, "repeat_submissions[0s..10s]"), 5.0);
    close(value(&v, "zone_failure_ratio_mean{az2}[20s..30s]"), 0.8);
    close(value(&v, "zone_zombie_work{az2}[0s..25s]"), 5.0);
    // The window end is exclusive, the start inclusive.
    close(value(&v, "failure_ratio_peak[19s..20s]"), 0.1);
    close(value(&v, "failure_ratio_peak[29s..30s]"), 0.8);
}

#[test]
fn metrics_a_target_cannot_feed_read_not_measured() {
    let mut v = variant();
    v.unmeasured.insert(
        Metric::CacheWritesLost,
        "the target does not export sut_cache_writes_lost_total".into(),
    );
    let e = value(&v, "cache_writes_lost[0s..21s]").unwrap_err();
    assert!(
        e.contains("not measured") && e.contains("sut_cache_writes_lost_total"),
        "{e}"
    );
    let a = analyse_variant(&v, &AnalysisConfig::default());
    assert_eq!(a.metrics.get(Metric::CacheWritesLost), None, "n/a, never 0");
}

#[test]
fn undefined_values_say_why() {
    let v = variant();
    assert!(value(&v, "failure_ratio_mean[100s..200s]")
        .unwrap_err()
        .contains("no second"));
    assert!(value(&v, "failure_ratio_mean[30s..20s]")
        .unwrap_err()
        .contains("empty window"));
    assert!(value(&v, "zone_failure_ratio_peak{az9}")
        .unwrap_err()
        .contains("az1, az2"));
    assert!(value(&v, "zone_failure_ratio_peak")
        .unwrap_err()
        .contains("needs a zone"));
    assert!(value(&v, "waves{az1}")
        .unwrap_err()
        .contains("not a per-zone"));
    assert!(value(&v, "waves[0s..10s]").unwrap_err().contains("window"));
    assert!(value(&v, "nonsense")
        .unwrap_err()
        .contains("unknown metric"));
    let empty = VariantRun::default();
    assert!(value(&empty, "peak_failure_ratio").is_err());
    assert!(value(&empty, "attempts_per_document").is_err());
    assert!(value(&empty, "duplicate_compute_share").is_err());
    assert!(value(&empty, "cache_hit_ratio")
        .unwrap_err()
        .contains("no cache read"));
    assert!(value(&empty, "time_to_recover_s").is_err());
    close(value(&empty, "waves"), 0.0);
    close(value(&empty, "other_tenants_p99_ms"), 0.0);
    close(value(&empty, "cache_writes_lost"), 0.0);
}

#[test]
fn metric_value_uses_the_spec() {
    let v = variant();
    let cfg = AnalysisConfig::default();
    let a = analyse_variant(&v, &cfg);
    let spec = ExpectationSpec {
        variant: "before-fix".into(),
        metric: Metric::ZoneFailureRatioPeak,
        zone: Some("az2".into()),
        window: Some((0.0, 20.0)),
        op: CompareOp::Lt,
        value: 0.1,
        source: "< 0.1".into(),
        classes: Vec::new(),
    };
    assert_eq!(metric_value(&v, &a, &spec, &cfg), Some(0.0));
    let map = &a.metrics;
    assert_eq!(map.labelled(Metric::ZoneFailureRatioPeak, "az2"), Some(0.8));
    assert_eq!(map.get(Metric::Waves), Some(1.0));
}

#[test]
fn metric_refs_parse_and_print() {
    let m = MetricRef::parse("zone_failure_ratio_mean{az2}[40s..70.5s]").unwrap();
    assert_eq!(m.metric, Metric::ZoneFailureRatioMean);
    assert_eq!(m.label.as_deref(), Some("az2"));
    assert_eq!(m.window, Some((40.0, 70.5)));
    assert_eq!(m.to_string(), "zone_failure_ratio_mean{az2}[40s..70.5s]");
    assert_eq!(MetricRef::parse("waves").unwrap().to_string(), "waves");
    assert!(MetricRef::parse("waves[1..").is_err());
    assert!(MetricRef::parse("").is_err());
    assert!(MetricRef::parse("waves{a b}").is_err());
}

#[test]
fn alert_metrics_read_the_alert_history() {
    let v = variant();
    // Failure ratio 10 % from the first second after the warm-up (3 s) is a
    // customer-visible failure at the default threshold (5 %).
    close(value(&v, "alert_lead_s{Dup}"), 3.0 - 15.0);
    close(value(&v, "alert_fired{Dup}"), 1.0);
    close(value(&v, "alerts_fired"), 1.0);
    assert!(value(&v, "alert_fired{Other}").unwrap_err().contains("Dup"));
    assert!(value(&v, "alert_fired").unwrap_err().contains("rule name"));
    let mut quiet = variant();
    quiet.alerts.clear();
    assert!(value(&quiet, "alerts_fired").is_err());
}
