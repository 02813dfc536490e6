//! Generic faults are undone: at the end of their duration, on Ctrl-C, and
//! after a SIGKILL by the next harness start. Each test runs the `harness`
//! binary on a small two-zone experiment (its roles as child processes),
//! with a fault ledger folder of its own, and checks at its end that no
//! fault cgroup (CPU quota or frozen task), ledger record or component
//! process of that harness is left. Needs root and cgroups (v1 `cpu` and
//! `freezer`, or v2); prints SKIPPED with the reason otherwise.

mod common;

use common::{alive, assert_not_listening};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const EXPERIMENT: &str = r#"name: generic-faults
duration: DURATION
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system:
  executor: cpu
  zones: [az1, az2]
  pool: { slots: 4, deadline: 300ms }
  gpu: { lanes: 2, page_time: 5ms }
  page: { words: 64, rounds: 2 }
workload:
  arrival: { constant: { rate: 20 } }
  documents: { pages: { uniform: { min: 1, max: 4 } }, tenants: 2 }
  client: { timeout: 500ms, retry: { max_attempts: 2, backoff: { fixed: { delay: 50ms } } } }
timeline:
TIMELINE
variants:
  only: {}
"#;

/// Why these tests cannot run here, if they cannot.
fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: cgroups cannot be written".into());
    }
    let v1 = Path::new("/sys/fs/cgroup/cpu/cgroup.procs").exists()
        && Path::new("/sys/fs/cgroup/freezer/cgroup.procs").exists();
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    (!v1 && !v2).then(|| "no cgroup cpu/freezer hierarchy mounted".into())
}

struct Run {
    dir: PathBuf,
    ledger: PathBuf,
    child: Child,
}

/// Starts `harness` on the experiment with `timeline` lasting `duration`.
fn start(name: &str, duration: &str, timeline: &str) -> Run {
    let dir = std::env::temp_dir().join(format!("harness-faults-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("exp.yaml");
    let text = EXPERIMENT
        .replace("DURATION", duration)
        .replace("TIMELINE", timeline);
    std::fs::write(&file, text).unwrap();
    let ledger = dir.join("ledger");
    let child = harness(&ledger)
        .arg(&file)
        .arg("--quiet")
        .arg("--out")
        .arg(dir.join("reports"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap();
    Run { dir, ledger, child }
}

fn harness(ledger: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.env("HARNESS_FAULT_DIR", ledger);
    c
}

/// The fault cgroups of harness `pid` (named `harness-fault-<pid>-...`).
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    harness::env::cgroup::leftover_fault_cgroups()
        .into_iter()
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(&format!("harness-fault-{pid}-"))
            })
        })
        .collect()
}

/// Waits (bounded) until harness `pid` has a fault cgroup whose path holds `part`.
fn wait_for_cgroup(pid: u32, part: &str) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(p) = cgroups_of(pid)
            .into_iter()
            .find(|p| p.display().to_string().contains(part))
        {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "no {part} cgroup of harness {pid} appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Live component processes of harness `pid` (their configuration lies in
/// its `harness-components-<pid>-...` folder).
fn components_of(pid: u32) -> Vec<u32> {
    let needle = format!("harness-components-{pid}-");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(&needle) && alive(p) {
            out.push(p);
        }
    }
    out
}

/// Nothing of harness `pid` is left: no fault cgroup, no ledger record, no
/// component process.
fn assert_nothing_left(pid: u32, ledger: &Path) {
    // A component killed with its harness may take a moment to go.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !components_of(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(cgroups_of(pid), Vec::<PathBuf>::new(), "fault cgroups left");
    let records: Vec<_> = std::fs::read_dir(ledger)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(records.is_empty(), "ledger records left: {records:?}");
    assert_eq!(
        components_of(pid),
        Vec::<u32>::new(),
        "component processes left"
    );
}

/// The timeline events of the run's report.
fn events(dir: &Path) -> Vec<serde_json::Value> {
    let run = dir.join("reports/generic-faults/latest/run.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&run).unwrap()).unwrap();
    v["variants"][0]["events"].as_array().unwrap().clone()
}

#[test]
fn each_fault_kind_is_applied_then_undone_at_its_end() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let mut run = start(
        "each",
        "10s",
        "  - { at: 2s, duration: 3s, fault: { cpu_limit: { component: pool-az1, cpus: 0.2 } } }\n  - { at: 3s, duration: 2s, fault: { pause: { component: pool-az2 } } }\n  - { at: 6s, duration: 2s, fault: { kill: { component: pool-az1 } } }",
    );
    let pid = run.child.id();
    // Each cgroup fault really is in force while it lasts.
    let quota = wait_for_cgroup(pid, "pool-az1");
    let frozen = wait_for_cgroup(pid, "pool-az2");
    if quota.starts_with("/sys/fs/cgroup/cpu/") {
        let q = std::fs::read_to_string(quota.join("cpu.cfs_quota_us")).unwrap_or_default();
        assert!(q.is_empty() || q.trim() == "20000", "quota {q}");
        let f = std::fs::read_to_string(frozen.join("freezer.state")).unwrap_or_default();
        assert!(f.is_empty() || f.trim() != "THAWED", "state {f}");
    }
    let status = common::wait_exit(&mut run.child, Duration::from_secs(120));
    let stderr = std::fs::read_to_string(run.dir.join("stderr.log")).unwrap();
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 1),
        "{status}: {stderr}"
    );
    let ev = events(&run.dir);
    let by = |label: &str| {
        ev.iter()
            .find(|e| e["label"].as_str() == Some(label))
            .unwrap_or_else(|| panic!("no event {label:?} in {ev:?}"))
            .clone()
    };
    for label in [
        "pool-az1 limited to 0.2 CPUs",
        "pool-az2 paused",
        "pool-az1 killed",
    ] {
        assert_eq!(by(label)["ok"], true, "{label}: {ev:?}");
        assert_eq!(
            by(&format!("end: {label}"))["ok"],
            true,
            "end: {label}: {ev:?}"
        );
    }
    assert!(by("end: pool-az1 killed")["detail"]
        .as_str()
        .unwrap()
        .contains("restarted"));
    assert_nothing_left(pid, &run.ledger);
}

/// Stops a run with `signal` while a pause and a CPU limit are in force:
/// the report of what was measured is written, both faults are undone,
/// nothing is left, and the exit code is `code`.
fn a_stop_signal_undoes_what_is_in_force(name: &str, signal: i32, code: i32) {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let mut run = start(
        name,
        "40s",
        "  - { at: 1s, duration: 35s, fault: { pause: { component: pool-az2 } } }\n  - { at: 1s, duration: 35s, fault: { cpu_limit: { component: gateway, cpus: 0.5 } } }",
    );
    let pid = run.child.id();
    wait_for_cgroup(pid, "pool-az2");
    wait_for_cgroup(pid, "gateway");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid as i32, signal) };
    let status = common::wait_exit(&mut run.child, Duration::from_secs(60));
    let stderr = std::fs::read_to_string(run.dir.join("stderr.log")).unwrap();
    assert_eq!(status.code(), Some(code), "{stderr}");
    assert!(stderr.contains("undone at the variant's end"), "{stderr}");
    let reports = run.dir.join("reports");
    let written = walk(&reports)
        .into_iter()
        .any(|p| p.ends_with("index.html"));
    assert!(written, "no report under {}: {stderr}", reports.display());
    assert_nothing_left(pid, &run.ledger);
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn ctrl_c_undoes_what_is_in_force() {
    a_stop_signal_undoes_what_is_in_force("ctrl-c", libc::SIGINT, 130);
}

/// SIGTERM (a CI runner's timeout, Kubernetes stopping a pod) is Ctrl-C,
/// with 143 for its exit code.
#[test]
fn sigterm_undoes_what_is_in_force() {
    a_stop_signal_undoes_what_is_in_force("sigterm", libc::SIGTERM, 143);
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_still_undoes() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let mut run = start(
        "ctrl-c-twice",
        "40s",
        "  - { at: 1s, duration: 35s, fault: { pause: { component: pool-az1 } } }",
    );
    let pid = run.child.id();
    wait_for_cgroup(pid, "pool-az1");
    for _ in 0..2 {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(300));
    }
    let status = common::wait_exit(&mut run.child, Duration::from_secs(30));
    let stderr = std::fs::read_to_string(run.dir.join("stderr.log")).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("second Ctrl-C"), "{stderr}");
    assert_nothing_left(pid, &run.ledger);
}

#[test]
fn after_sigkill_the_next_start_undoes_what_was_left() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let mut run = start(
        "sigkill",
        "40s",
        "  - { at: 1s, duration: 35s, fault: { pause: { component: pool-az1 } } }\n  - { at: 1s, duration: 35s, fault: { cpu_limit: { component: pool-az2, cpus: 0.3 } } }",
    );
    let pid = run.child.id();
    let frozen = wait_for_cgroup(pid, "pool-az1");
    let quota = wait_for_cgroup(pid, "pool-az2");
    run.child.kill().unwrap(); // SIGKILL: no handler, no drop
    run.child.wait().unwrap();
    // Left behind: the cgroups (the frozen pool cannot even die) and the ledger.
    assert!(
        frozen.exists() && quota.exists(),
        "the faults outlive a SIGKILL"
    );
    assert!(run.ledger.join(format!("{pid}.json")).exists());
    // The next start (any command) finds them, undoes them and says so.
    let out = harness(&run.ledger)
        .arg("validate")
        .arg(run.dir.join("exp.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("undone, left by an earlier harness"),
        "{stderr}"
    );
    assert!(
        stderr.contains("frozen") && stderr.contains("CPU quota"),
        "{stderr}"
    );
    assert_nothing_left(pid, &run.ledger);
}

#[test]
fn a_network_fault_goes_through_a_fault_proxy_that_ends_with_the_run() {
    // No cgroup is involved: this one runs without root too.
    let mut run = start(
        "network",
        "8s",
        "  - { at: 2s, duration: 3s, fault: { network: { component: pool-az1, delay: 50ms } } }\n  - { at: 3s, duration: 2s, fault: { network: { component: gateway, delay: 100ms, jitter: 5ms } } }",
    );
    let pid = run.child.id();
    let status = common::wait_exit(&mut run.child, Duration::from_secs(120));
    let stderr = std::fs::read_to_string(run.dir.join("stderr.log")).unwrap();
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 1),
        "{status}: {stderr}"
    );
    let ev = events(&run.dir);
    let mut proxies = Vec::new();
    for label in ["network into pool-az1", "network into gateway"] {
        let on = ev
            .iter()
            .find(|e| e["label"] == label)
            .unwrap_or_else(|| panic!("{ev:?}"));
        let off = ev
            .iter()
            .find(|e| e["label"] == format!("end: {label}"))
            .unwrap();
        assert_eq!(
            (&on["ok"], &off["ok"]),
            (&true.into(), &true.into()),
            "{ev:?}"
        );
        let detail = on["detail"].as_str().unwrap();
        assert!(
            detail.contains("delay: 50ms") || detail.contains("delay: 100ms"),
            "{detail}"
        );
        let addr = detail.split_whitespace().nth(2).unwrap().to_string();
        proxies.push(addr);
    }
    // While the gateway's path was delayed every request took the delay
    // each way, and no fault proxy listens once the run is over.
    let run_json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(run.dir.join("reports/generic-faults/latest/run.json")).unwrap(),
    )
    .unwrap();
    let p50 = |t: usize| {
        run_json["variants"][0]["seconds"][t]["p50_ms"]
            .as_f64()
            .unwrap_or(0.0)
    };
    assert!(
        p50(3) >= 190.0 && p50(1) < 190.0,
        "p50 {} at 1 s, {} at 3 s",
        p50(1),
        p50(3)
    );
    assert_not_listening(&proxies);
    assert_nothing_left(pid, &run.ledger);
}
