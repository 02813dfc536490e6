//! `alerts:` on a real Prometheus: rule files judged by `promtool`, a
//! missing installation refused before anything runs, the alert history
//! read back, and no server process or port outliving its variant, also
//! after Ctrl-C.
//!
//! Tests that need `prometheus` print `SKIPPED: ...` where it is not
//! installed, unless `HARNESS_REQUIRE_PROMETHEUS=1` (as in `.ci/run`).

mod common;
use harness::experiment::Alerts;
use harness::observe::prometheus::{Monitor, Prometheus};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

/// False (after printing SKIPPED) when the test cannot run here.
fn can_run(test: &str) -> bool {
    match common::prometheus_missing() {
        None => true,
        Some(why) => {
            println!("SKIPPED: {test}: {why}");
            false
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("prom-test-{name}"))
}

const EXPERIMENT: &str = "name: alerts-test
duration: 30s
analysis: { warmup: 2s, recovery_window: 5s }
system:
  zones: [z1]
  pool: { slots: 8 }
workload:
  arrival: { constant: { rate: 20 } }
  documents: { pages: { fixed: 2 }, tenants: 4 }
  client: { timeout: 1s, retry: { max_attempts: 2 } }
alerts: { rules: [rules.yml] }
variants:
  a: {}
expect:
  a: { alerts_fired: 0 }
";

fn validate(dir: &Path, path_env: Option<&str>) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.arg("validate").arg(dir.join("exp.yaml"));
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_prometheus_an_experiment_with_alerts_is_refused_with_the_package_to_install() {
    let dir = scratch("missing");
    std::fs::write(dir.join("exp.yaml"), EXPERIMENT).unwrap();
    std::fs::write(
        dir.join("rules.yml"),
        "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: vector(1)\n",
    )
    .unwrap();
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, err) = validate(&dir, Some(empty.to_str().unwrap()));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("apt-get install prometheus"), "{err}");
    // The run refuses too, before anything runs.
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg(dir.join("exp.yaml"))
        .arg("--out")
        .arg(dir.join("out"))
        .env("PATH", &empty)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("apt-get install prometheus"), "{err}");
    assert!(!dir.join("out").exists(), "nothing ran, nothing written");
}

#[test]
fn a_broken_rule_is_refused_naming_the_file_and_the_rule() {
    if !can_run("a_broken_rule_is_refused_naming_the_file_and_the_rule") {
        return;
    }
    for (rule, expr) in [
        ("UnknownFunction", "no_such_function(up) > 1"),
        ("SyntaxError", "sum(rate(up[5s]) >"),
    ] {
        let dir = scratch(rule);
        std::fs::write(dir.join("exp.yaml"), EXPERIMENT).unwrap();
        std::fs::write(
            dir.join("rules.yml"),
            format!(
                "groups:\n- name: g\n  rules:\n  - alert: Fine\n    expr: vector(1)\n  - alert: {rule}\n    expr: {expr:?}\n"
            ),
        )
        .unwrap();
        let (code, err) = validate(&dir, None);
        assert_eq!(code, 2, "{rule}: {err}");
        assert!(err.contains("rules.yml"), "{rule}: {err}");
        assert!(err.contains(rule), "{rule}: {err}");
        assert!(!err.contains("\"Fine\""), "{rule}: {err}");
    }
}

fn alive(pid: u32) -> bool {
    // Reaped children leave /proc; a zombie would still be there.
    Path::new(&format!("/proc/{pid}")).exists()
}

fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn alerts_in(dir: &Path) -> Alerts {
    let rules = dir.join("rules.yml");
    std::fs::write(
        &rules,
        "groups:\n- name: g\n  rules:\n  - alert: AlwaysOn\n    expr: vector(1)\n  - alert: Never\n    expr: vector(0) > 1\n",
    )
    .unwrap();
    Alerts {
        rules: vec![rules],
        rule_names: vec!["AlwaysOn".into(), "Never".into()],
        scrape_interval: Duration::from_secs(1),
        evaluation_interval: Duration::from_secs(1),
    }
}

#[tokio::test]
async fn the_history_is_read_back_and_nothing_outlives_the_variant() {
    if !can_run("the_history_is_read_back_and_nothing_outlives_the_variant") {
        return;
    }
    let dir = scratch("lifecycle");
    let alerts = alerts_in(&dir);
    // A stand-in for the system under test's /metrics.
    let sut = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sut_addr = sut.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async { "# TYPE sut_up gauge\nsut_up 1\n" }),
    );
    let server = tokio::spawn(async move { axum::serve(sut, app).await });

    // A bare server: up while held, gone with its port when dropped.
    let p = Prometheus::start(
        &alerts,
        &[("sut", format!("http://{sut_addr}/metrics"))],
        "bare",
    )
    .await
    .unwrap();
    let (pid, port) = (p.pid().unwrap(), p.port);
    assert!(alive(pid) && !port_free(port));
    drop(p);
    assert!(!alive(pid), "prometheus {pid} outlived its drop");
    assert!(port_free(port), "port {port} still taken");

    // A variant's monitor: the rules' history comes back, then it stops.
    let t0 = SystemTime::now();
    let m = Monitor::start(&alerts, &format!("http://{sut_addr}"), "v")
        .await
        .unwrap();
    let pids = prometheus_pids(&format!("harness-prometheus-{}-", std::process::id()));
    assert_eq!(pids.len(), 1, "{pids:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let http = reqwest::Client::new();
    let h = m.finish(&http, t0).await.unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].name, "AlwaysOn");
    assert!(!h[0].firing.is_empty(), "{h:?}");
    assert!(h[1].firing.is_empty() && h[1].pending.is_empty(), "{h:?}");
    assert!(!alive(pids[0].0) && port_free(pids[0].1));
    server.abort();
}

/// `(pid, port)` of every prometheus whose config lies under a folder starting `marker`.
fn prometheus_pids(marker: &str) -> Vec<(u32, u16)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if !cmd.starts_with("prometheus ") || !cmd.contains(marker) {
            continue;
        }
        let port = cmd
            .split("--web.listen-address=127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        out.push((pid, port));
    }
    out
}

#[test]
fn ctrl_c_leaves_no_prometheus_behind() {
    if !can_run("ctrl_c_leaves_no_prometheus_behind") {
        return;
    }
    let out = scratch("ctrl-c");
    let exp = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../experiments/retry-storm.yaml"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            exp,
            "--quick",
            "--quiet",
            "--variant",
            "before-fix",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let marker = format!("harness-prometheus-{}-", child.id());
    let deadline = Instant::now() + Duration::from_secs(120);
    let servers = loop {
        let s = prometheus_pids(&marker);
        if !s.is_empty() {
            break s;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the harness never started its prometheus");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // Some seconds into the variant, as a user would press Ctrl-C.
    std::thread::sleep(Duration::from_secs(6));
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the harness did not end after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status.code(), Some(130), "interrupted runs exit 130");
    for (pid, port) in servers {
        assert!(
            !alive(pid),
            "prometheus {pid} outlived the interrupted variant"
        );
        assert!(
            port_free(port),
            "port {port} outlived the interrupted variant"
        );
    }
    assert!(prometheus_pids(&marker).is_empty());
}
