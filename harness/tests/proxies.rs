//! A real proxy as the gateway: HAProxy and nginx started in front of a pool
//! process, the admin API reached through the harness's face, and gateway
//! amplification read from the proxy itself (HAProxy's exporter, nginx's
//! access log). Every attempt fails (`zone_fail` at 100 %, an initial
//! condition sent through the face), so each request costs exactly the
//! proxy's tries. After the run no proxy or component process is left.
//! Prints SKIPPED when the binary is missing, unless
//! `HARNESS_REQUIRE_PROXIES=1` (as in `.ci/run`), which makes it a failure.

mod common;

use common::{alive, assert_three_tries_each, HAPROXY_THREE_TRIES, NGINX_THREE_TRIES};
use harness::base::interrupt::StopSignal;
use harness::experiment::parse;
use harness::run::{self, RunOptions};
use std::sync::Arc;

const EXPERIMENT: &str = r#"name: proxy-gateway
duration: 3s
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system:
  executor: cpu
  zones: [z1]
  pool: { slots: 8, deadline: 500ms }
  gpu: { lanes: 2, page_time: 5ms }
  page: { words: 64, rounds: 2 }
  gateway: { proxy: { KIND: { config: FILE } } }
workload:
  arrival: { constant: { rate: 10 } }
  documents: { pages: { fixed: 1 }, tenants: 2 }
  client: { timeout: 3s, retry: { max_attempts: 1 } }
timeline:
  - { at: 0s, fault: { zone_fail: { zone: z1, ratio: 1.0 } }, trigger: false }
variants:
  KIND: {}
"#;

fn missing(binary: &str) -> bool {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(binary).is_file());
    if found {
        return false;
    }
    let package = if binary == "nginx" {
        "nginx-light"
    } else {
        binary
    };
    if std::env::var_os("HARNESS_REQUIRE_PROXIES").is_some_and(|v| v == "1") {
        panic!(
            "HARNESS_REQUIRE_PROXIES=1 but `{binary}` is not installed (apt-get install {package})"
        );
    }
    eprintln!("SKIPPED: `{binary}` is not installed (apt-get install {package})");
    true
}

/// Live processes whose command line mentions this test process's
/// component folder for variant `kind` (`harness-components-<pid>-<n>-<kind>`).
fn components_left(kind: &str) -> Vec<u32> {
    let needle = format!("harness-components-{}-", std::process::id());
    let variant = format!("-{kind}/");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains(&needle) && cmd.contains(&variant) && alive(*p)
        })
        .collect()
}

async fn three_tries_per_request(kind: &str, config: &str) {
    let dir = std::env::temp_dir().join(format!("harness-proxies-{}-{kind}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("proxy.conf"), config).unwrap();
    let text = EXPERIMENT
        .replace("KIND", kind)
        .replace("FILE", "proxy.conf");
    let file = dir.join("exp.yaml");
    let exp = parse(&text, &file.display().to_string(), false).unwrap();
    let opts = RunOptions {
        out_dir: dir.join("reports"),
        quiet: true,
        ..RunOptions::default()
    };
    let o = run::run(&exp, &opts, Arc::new(StopSignal::default()))
        .await
        .unwrap();
    assert_three_tries_each(kind, &o.run.variants[0]);
    assert_eq!(
        components_left(kind),
        Vec::<u32>::new(),
        "{kind}: processes left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_retries_are_read_from_its_exporter() {
    if missing("haproxy") {
        return;
    }
    three_tries_per_request("haproxy", HAPROXY_THREE_TRIES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_tries_are_read_from_its_access_log() {
    if missing("nginx") {
        return;
    }
    three_tries_per_request("nginx", NGINX_THREE_TRIES).await;
}

/// Live `nginx` processes whose command line names `needle`, or whose
/// parent's does (its workers show only "nginx: worker process").
fn nginx_of(needle: &str) -> Vec<u32> {
    let cmd = |p: u32| {
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default())
            .replace('\0', " ")
    };
    let ppid = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.to_string()))
            .and_then(|r| {
                r.split_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse::<u32>().ok())
            })
    };
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .collect();
    let masters: Vec<u32> = all
        .iter()
        .copied()
        .filter(|p| cmd(*p).contains(needle))
        .collect();
    all.into_iter()
        .filter(|p| {
            (masters.contains(p) || ppid(*p).is_some_and(|pp| masters.contains(&pp)))
                && cmd(*p).starts_with("nginx")
                && alive(*p)
        })
        .collect()
}

/// After a SIGKILL of the harness, nginx's workers outlive their killed
/// master; the next harness start finds them in the fault ledger and kills
/// them.
#[test]
fn nginx_left_by_a_killed_harness_is_stopped_by_the_next_start() {
    if missing("nginx") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("harness-proxies-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("proxy.conf"), NGINX_THREE_TRIES).unwrap();
    let text = EXPERIMENT
        .replace("KIND", "nginx")
        .replace("FILE", "proxy.conf")
        .replace("duration: 3s", "duration: 30s");
    std::fs::write(dir.join("exp.yaml"), text).unwrap();
    let ledger = dir.join("ledger");
    let harness = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness"));
        c.args(args)
            .env("HARNESS_FAULT_DIR", &ledger)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c
    };
    let exp = dir.join("exp.yaml").display().to_string();
    let out = dir.join("reports").display().to_string();
    let mut run = harness(&[exp.as_str(), "--quiet", "--out", out.as_str()])
        .spawn()
        .unwrap();
    let needle = format!("harness-components-{}-", run.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while nginx_of(&needle).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "nginx never ran");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = nginx_of(&needle);
    run.kill().unwrap();
    run.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // The workers, reparented once their master died with the harness.
    let left = || {
        before
            .iter()
            .copied()
            .filter(|p| alive(*p))
            .collect::<Vec<u32>>()
    };
    assert!(
        !left().is_empty(),
        "nothing outlived the harness: the test proves nothing"
    );
    let next = harness(&["validate", exp.as_str()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    assert!(
        stderr.contains("undone, left by an earlier harness"),
        "{stderr}"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(left(), Vec::<u32>::new(), "{stderr}");
}
