//! The containers environment with real parts in the path: HAProxy and
//! nginx as gateway containers (images of `ci/images.sh`) in front of a
//! pool container, their amplification read as in the embedded environment
//! (HAProxy's exporter, nginx's access log in a bind-mounted folder), and
//! `network` faults through fault proxies the harness puts in the path into
//! a pool container and into the gateway. At the end of each test no
//! container, network, fault proxy or bind-mounted folder of it is left.
//! Prints SKIPPED without Docker or the images, unless
//! `HARNESS_REQUIRE_DOCKER=1` or `HARNESS_REQUIRE_PROXIES=1` (as in
//! `.ci/run`), which make that a failure.

mod common;

use common::{
    assert_not_listening, assert_three_tries_each, containers_left, containers_missing,
    containers_named, HAPROXY_THREE_TRIES, NGINX_THREE_TRIES,
};
use harness::base::interrupt::StopSignal;
use harness::experiment::images::ContainerImages;
use harness::experiment::parse;
use harness::run::{self, RunOptions};
use std::path::PathBuf;
use std::sync::Arc;

const EXPERIMENT: &str = r#"name: containers-proxy
duration: DURATION
environment: containers
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system:
  executor: cpu
  zones: [z1]
  pool: { slots: 8, deadline: 500ms }
  gpu: { lanes: 2, page_time: 5ms }
  page: { words: 64, rounds: 2 }
  gateway: GATEWAY
workload:
  arrival: { constant: { rate: 10 } }
  documents: { pages: { fixed: 1 }, tenants: 2 }
  client: { timeout: 3s, retry: { max_attempts: 1 } }
timeline:
TIMELINE
variants:
  VARIANT: {}
"#;

/// Writes the experiment (and a proxy file) to a folder of its own; returns
/// the folder and the parsed experiment.
fn experiment(
    variant: &str,
    gateway: &str,
    timeline: &str,
    proxy: Option<&str>,
) -> (PathBuf, harness::experiment::Experiment) {
    let dir = std::env::temp_dir().join(format!(
        "harness-containers-proxies-{}-{variant}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(text) = proxy {
        std::fs::write(dir.join("proxy.conf"), text).unwrap();
    }
    let text = EXPERIMENT
        .replace("DURATION", "5s")
        .replace("GATEWAY", gateway)
        .replace("TIMELINE", timeline)
        .replace("VARIANT", variant);
    let file = dir.join("exp.yaml");
    std::fs::write(&file, &text).unwrap();
    let exp = parse(&text, &file.display().to_string(), false).unwrap();
    (dir, exp)
}

async fn run(dir: &std::path::Path, exp: &harness::experiment::Experiment) -> run::RunOutcome {
    let opts = RunOptions {
        out_dir: dir.join("reports"),
        quiet: true,
        ..RunOptions::default()
    };
    run::run(exp, &opts, Arc::new(StopSignal::default()))
        .await
        .unwrap()
}

/// Folders of this process's proxy containers still on disk.
fn mounts_left() -> Vec<PathBuf> {
    let prefix = format!("harness-components-{}-overload-", std::process::id());
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Every attempt fails (`zone_fail` at 100 %), so each request costs
/// exactly the proxy's three tries, read from the proxy in its container.
/// From 1 s the proxy reaches the pool through a fault proxy (a `network`
/// delay on `pool-z1`), and each try takes that delay.
async fn three_tries_per_request(kind: &str, config: &str) {
    let images = ContainerImages::resolve(None, None);
    let image = if kind == "haproxy" {
        &images.haproxy
    } else {
        &images.nginx
    };
    if let Some(why) = containers_missing(&[&images.sut, image], true).await {
        println!("SKIPPED: {why}");
        return;
    }
    let gateway = format!(
        "{{ retry: {{ max_attempts: 1 }}, proxy: {{ {kind}: {{ config: proxy.conf }} }} }}"
    );
    let timeline = "  - { at: 0s, fault: { zone_fail: { zone: z1, ratio: 1.0 } }, trigger: false }\n  - { at: 1s, duration: 3s, fault: { network: { component: pool-z1, delay: 100ms } }, trigger: false }";
    let (dir, exp) = experiment(kind, &gateway, timeline, Some(config));
    let o = run(&dir, &exp).await;
    let v = &o.run.variants[0];
    assert_three_tries_each(kind, v);
    // From 1 s each of the three tries crossed the fault proxy's 100 ms
    // each way: the proxy container reached the pool through it.
    let p50 = |t: usize| v.seconds.get(t).map_or(0.0, |s| s.p50_ms);
    assert!(
        p50(2) >= 500.0 && p50(0) < 300.0,
        "{kind}: p50 {} at 0 s, {} at 2 s",
        p50(0),
        p50(2)
    );
    assert_eq!(containers_left(kind), Vec::<String>::new(), "{kind}: left");
    assert_eq!(mounts_left(), Vec::<PathBuf>::new(), "{kind}: folders left");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_container_retries_are_read_from_its_exporter() {
    three_tries_per_request("haproxy", HAPROXY_THREE_TRIES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_container_tries_are_read_from_its_access_log() {
    three_tries_per_request("nginx", NGINX_THREE_TRIES).await;
}

/// `network` faults in containers: a delay on the path into the pool
/// container (the sut gateway reaches it through a fault proxy on the
/// network's gateway address) and into the gateway (the load reaches it
/// through one on loopback). While the gateway's path is delayed every
/// request takes the delay each way; once the run is over neither fault
/// proxy listens and nothing of the run is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_faults_in_containers_go_through_fault_proxies() {
    let images = ContainerImages::resolve(None, None);
    if let Some(why) = containers_missing(&[&images.sut], false).await {
        println!("SKIPPED: {why}");
        return;
    }
    let timeline = "  - { at: 1s, duration: 1s, fault: { network: { component: pool-z1, delay: 50ms } } }\n  - { at: 2s, duration: 2s, fault: { network: { component: gateway, delay: 100ms } } }";
    let (dir, exp) = experiment("network", "{ retry: { max_attempts: 1 } }", timeline, None);
    let o = run(&dir, &exp).await;
    let v = &o.run.variants[0];
    assert_eq!(v.events.len(), 4, "{:?}", v.events);
    assert!(v.events.iter().all(|e| e.ok), "{:?}", v.events);
    let mut proxies = Vec::new();
    for e in v
        .events
        .iter()
        .filter(|e| e.detail.starts_with("fault proxy "))
    {
        proxies.push(e.detail.split_whitespace().nth(2).unwrap().to_string());
    }
    assert_eq!(proxies.len(), 4, "{:?}", v.events);
    // The pool's fault proxy listens where the containers reach this
    // machine, the gateway's on loopback.
    assert!(
        proxies.iter().any(|p| !p.starts_with("127.")),
        "{proxies:?}"
    );
    assert!(proxies.iter().any(|p| p.starts_with("127.")), "{proxies:?}");
    let p50 = |t: usize| v.seconds.get(t).map(|s| s.p50_ms).unwrap_or(0.0);
    assert!(
        p50(1) >= 100.0 && p50(2) >= 190.0 && p50(0) < 100.0,
        "p50 {} at 0 s, {} at 1 s (pool's path), {} at 2 s (gateway's)",
        p50(0),
        p50(1),
        p50(2)
    );
    assert_not_listening(&proxies);
    assert_eq!(containers_left("network"), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(dir);
}

/// A proxy image that was never built: the run exits 2 before any
/// container starts, and the error names the command that builds it.
#[test]
fn a_missing_proxy_image_exits_2_and_names_images_sh() {
    let images = ContainerImages::resolve(None, None);
    let rt = tokio::runtime::Runtime::new().unwrap();
    if let Some(why) = rt.block_on(containers_missing(&[&images.sut], false)) {
        println!("SKIPPED: {why}");
        return;
    }
    let gateway = "{ retry: { max_attempts: 1 }, proxy: { haproxy: { config: proxy.conf } } }";
    let (dir, _) = experiment("missing", gateway, "  []", Some(HAPROXY_THREE_TRIES));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg(dir.join("exp.yaml"))
        .args(["--quiet", "--out"])
        .arg(dir.join("reports"))
        .env("HARNESS_HAPROXY_IMAGE", "overload-harness/never-built:none")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("overload-harness/never-built:none")
            && stderr.contains("bash ci/images.sh"),
        "{stderr}"
    );
    // Nothing started (the harness child's containers would carry its pid).
    assert_eq!(containers_named("overload-missing-"), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(dir);
}
