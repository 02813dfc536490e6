//! An external target's own series: the system under test
//! started by hand (no admin token), `target.metrics` its `/metrics`, and
//! `target_series:` expressions over its own series evaluated on the run's
//! Prometheus; a load spike at 4 s is the trigger. The page compute rate
//! comes back as a series and a figure in summary.json, run.json,
//! timeseries.csv and the page; an expression on a series nobody exports
//! reads "not measured", never 0.
//!
//! Prints `SKIPPED: ...` without `prometheus`, unless
//! `HARNESS_REQUIRE_PROMETHEUS=1` (as in `.ci/run`).

mod common;
use std::process::Command;

/// The experiment on the target at `port`: 10 documents/s of 2 pages.
fn experiment(port: u16) -> String {
    format!(
        r#"name: external-target-series
duration: 10s
environment: external
target:
  url: http://127.0.0.1:{port}
  metrics: http://127.0.0.1:{port}/metrics
analysis: {{ warmup: 1s, min_baseline: 2s }}
system: {{ executor: cpu }}
workload:
  arrival: {{ constant: {{ rate: 10 }} }}
  documents: {{ pages: {{ fixed: 2 }}, tenants: 2 }}
  client: {{ timeout: 2s, retry: {{ max_attempts: 1 }} }}
timeline:
  - {{ at: 4s, duration: 2s, fault: {{ load_spike: {{ factor: 3 }} }} }}
target_series:
  - {{ name: pages, expr: "sum(rate(sut_gpu_pages_computed_total[3s]))" }}
  - {{ name: absent, expr: "sum(rate(no_such_series_total[3s]))" }}
variants:
  only: {{}}
"#
    )
}

#[test]
fn target_series_read_the_targets_own_metrics() {
    if let Some(why) = common::prometheus_missing() {
        println!("SKIPPED: {why}");
        return;
    }
    let dir = common::scratch("ext-target-series");
    let (mut sut, port) = common::start_sut(&dir);
    let exp = dir.join("external.yaml");
    std::fs::write(&exp, experiment(port)).unwrap();
    let out = common::harness_run(&exp, &dir.join("reports"))
        .output()
        .unwrap();
    let _ = sut.kill();
    let _ = sut.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{stderr}"
    );
    let report = dir.join("reports/external-target-series/latest");
    let read = |f: &str| std::fs::read_to_string(report.join(f)).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&read("summary.json")).unwrap();
    let series = &summary["variants"][0]["target_series"];
    let pages = &series[0];
    println!("pages: {pages}");
    assert_eq!(pages["name"], "pages");
    assert!(pages["unmeasured"].is_null(), "{pages}");
    // 10 documents/s of 2 pages: about 20 pages/s while the load runs.
    let mean = pages["mean"].as_f64().unwrap_or(0.0);
    let max = pages["max"].as_f64().unwrap_or(0.0);
    assert!(mean > 5.0 && max > 12.0 && max < 150.0, "{pages}");
    assert!(pages["samples"].as_u64().unwrap_or(0) >= 8, "{pages}");
    // The load spike at 4 s is the trigger: the figures split there.
    let before = pages["before_trigger"].as_f64().unwrap_or(0.0);
    assert!(before > 2.0 && before < max, "{pages}");
    assert!(
        pages["after_residue_from_s"].as_f64().unwrap_or(0.0) >= 6.0,
        "{pages}"
    );
    let absent = &series[1];
    assert!(
        absent["unmeasured"]
            .as_str()
            .is_some_and(|w| w.contains("no data")),
        "{absent}"
    );
    assert!(absent["mean"].is_null(), "{absent}");
    let run: serde_json::Value = serde_json::from_str(&read("run.json")).unwrap();
    let values = run["variants"][0]["target_series"][0]["values"]
        .as_array()
        .unwrap();
    assert!(values.iter().filter(|v| v.as_f64().is_some()).count() >= 8);
    let csv = read("timeseries.csv");
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",target_pages,target_absent"),
        "{}",
        csv.lines().next().unwrap()
    );
    let html = read("index.html");
    assert!(html.contains("The target's own series"));
    assert!(html.contains("NOT MEASURED: the expression returned no data"));
    assert!(
        stderr.contains("target series `absent` not measured"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_expression_exits_2_located_before_anything_runs() {
    if let Some(why) = common::prometheus_missing() {
        println!("SKIPPED: {why}");
        return;
    }
    let dir = common::scratch("ext-badexpr");
    let exp = dir.join("external.yaml");
    // Nothing listens on port 9: the run must stop before reaching it.
    let text = experiment(9).replace(
        "sum(rate(no_such_series_total[3s]))",
        "sum(rate(no_such_series_total[3s])",
    );
    std::fs::write(&exp, text).unwrap();
    for args in [vec!["validate"], vec![]] {
        let out = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(&args)
            .arg(&exp)
            .args(if args.is_empty() {
                vec!["--quiet"]
            } else {
                vec![]
            })
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("external.yaml:17:27: target_series[1].expr: not valid PromQL: 1:"),
            "{args:?}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_prometheus_target_series_is_refused_naming_the_package() {
    let dir = common::scratch("ext-noprom");
    let exp = dir.join("external.yaml");
    std::fs::write(&exp, experiment(9)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("validate")
        .arg(&exp)
        .env("PATH", dir.join("empty"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the experiment has `target_series:`")
            && stderr.contains("apt-get install prometheus"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
