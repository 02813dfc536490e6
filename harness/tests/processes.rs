//! `environment: processes`: the user's own service, started by the harness
//! from its commands. The project's `sut` binary as a user's command runs
//! today's document workload end to end, a variant changing its config
//! file; a trivial server that is not this project's (`python3 -m
//! http.server`, started through `sh` so that it has a child of its own)
//! becomes ready, takes each generic fault and is torn down; a SIGKILLed
//! harness leaves processes that the next start kills; bad input is refused
//! where it is written, or said clearly at start. After each run nothing of
//! the harness is left: no process carrying its tag, no fault cgroup, no
//! ledger record, no fault proxy. The cgroup faults need root and cgroups
//! (SKIPPED otherwise, unless `HARNESS_REQUIRE_CGROUPS=1`).

mod common;

use common::{assert_not_listening, scratch, sut_binary};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Why the cgroup faults cannot run here, if they cannot (a panic instead
/// with `HARNESS_REQUIRE_CGROUPS=1`).
fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let why = if unsafe { libc::geteuid() } != 0 {
        Some("not root: cgroups cannot be written".to_string())
    } else {
        let v1 = Path::new("/sys/fs/cgroup/cpu/cgroup.procs").exists()
            && Path::new("/sys/fs/cgroup/freezer/cgroup.procs").exists();
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        (!v1 && !v2).then(|| "no cgroup cpu/freezer hierarchy mounted".to_string())
    };
    if let Some(w) = &why {
        if std::env::var("HARNESS_REQUIRE_CGROUPS").is_ok_and(|v| v == "1") {
            panic!("HARNESS_REQUIRE_CGROUPS=1 but {w}");
        }
    }
    why
}

/// A small document workload; `SYSTEM`, `TIMELINE`, `VARIANTS` and
/// `DURATION` are filled per test.
const EXPERIMENT: &str = r#"name: NAME
duration: DURATION
environment: processes
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
TARGET
system:
  processes:
SYSTEM
workload:
  arrival: { constant: { rate: 10 } }
  documents: { pages: { uniform: { min: 1, max: 3 } }, tenants: 2 }
  client: { timeout: 500ms, retry: { max_attempts: 2, backoff: { fixed: { delay: 50ms } } } }
timeline:
TIMELINE
variants:
VARIANTS
"#;

/// `python3 -m http.server` behind `sh`, with a `sleep` child of its own.
const PYTHON: &str = r#"    web:
      command: [sh, -c, "sleep 300 & exec python3 -m http.server {port} --bind 127.0.0.1"]
      ready: { http: /, timeout: 20s }"#;

struct Exp {
    dir: PathBuf,
    file: PathBuf,
    ledger: PathBuf,
}

fn write(name: &str, fill: &[(&str, &str)]) -> Exp {
    let dir = scratch(&format!("processes-{name}"));
    let mut text = EXPERIMENT.replace("NAME", name);
    for (k, v) in fill {
        text = text.replace(k, v);
    }
    let text = text
        .replace("TARGET\n", "")
        .replace("TIMELINE\n", "  []\n")
        .replace("VARIANTS\n", "  only: {}\n")
        .replace("DURATION", "4s");
    let file = dir.join("exp.yaml");
    std::fs::write(&file, text).unwrap();
    Exp {
        ledger: dir.join("ledger"),
        file,
        dir,
    }
}

fn harness(e: &Exp) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.env("HARNESS_FAULT_DIR", &e.ledger);
    c
}

fn spawn_run(e: &Exp) -> Child {
    harness(e)
        .arg(&e.file)
        .args(["--quiet", "--out"])
        .arg(e.dir.join("reports"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(e.dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap()
}

fn stderr(e: &Exp) -> String {
    std::fs::read_to_string(e.dir.join("stderr.log")).unwrap_or_default()
}

fn run_json(e: &Exp, name: &str) -> serde_json::Value {
    let p = e.dir.join(format!("reports/{name}/latest/run.json"));
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// Live processes carrying a tag of harness `pid` (`HARNESS_PROCESS=<pid>-...`).
fn tagged_of(pid: u32) -> Vec<u32> {
    let needle = format!("HARNESS_PROCESS={pid}-");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
        let hit = env
            .split(|b| *b == 0)
            .any(|v| v.starts_with(needle.as_bytes()));
        if hit && common::alive(p) {
            out.push(p);
        }
    }
    out
}

/// Nothing of harness `pid` is left: no tagged process, no fault cgroup,
/// no ledger record, no component folder.
fn assert_nothing_left(pid: u32, ledger: &Path) {
    assert_no_process_left(pid, ledger);
    let folders: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("harness-components-{pid}-"))
        })
        .collect();
    assert!(folders.is_empty(), "component folders left: {folders:?}");
}

/// As [`assert_nothing_left`], the folder aside (a start that failed keeps
/// the logs its message points at, until the next start sweeps them).
fn assert_no_process_left(pid: u32, ledger: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !tagged_of(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(tagged_of(pid), Vec::<u32>::new(), "user processes left");
    let cgroups: Vec<PathBuf> = harness::env::cgroup::leftover_fault_cgroups()
        .into_iter()
        .filter(|p| {
            p.display()
                .to_string()
                .contains(&format!("harness-fault-{pid}-"))
        })
        .collect();
    assert_eq!(cgroups, Vec::<PathBuf>::new(), "fault cgroups left");
    let records: Vec<_> = std::fs::read_dir(ledger)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(records.is_empty(), "ledger records left: {records:?}");
}

fn validate(e: &Exp) -> Output {
    harness(e).arg("validate").arg(&e.file).output().unwrap()
}

#[test]
fn sut_as_a_users_command_runs_the_document_workload_end_to_end() {
    let sut = sut_binary().display().to_string();
    let system = format!(
        "    api:\n      command: [{sut}, --config, \"{{config}}\", --listen, \"127.0.0.1:{{port}}\"]\n      config: {{ text: \"executor: cpu\\npool: {{ slots: 2 }}\\n\" }}\n      ready: {{ http: /metrics }}"
    );
    let e = write(
        "sut-process",
        &[
            ("SYSTEM", &system),
            ("TARGET", "target: { metrics: /metrics }"),
            (
                "VARIANTS",
                "  before-fix: {}\n  after-fix:\n    system: { processes: { api: { config: { text: \"executor: cpu\\npool: { slots: 8 }\\n\" } } } }\n",
            ),
        ],
    );
    let mut child = spawn_run(&e);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = stderr(&e);
    assert_eq!(status.code(), Some(0), "{err}");
    let run = run_json(&e, "sut-process");
    assert_eq!(run["environment"]["kind"], "processes", "{err}");
    for v in run["variants"].as_array().unwrap() {
        let i = &v["integrity"];
        let sum = i["completed"].as_u64().unwrap()
            + i["given_up"].as_u64().unwrap()
            + i["pending"].as_u64().unwrap();
        assert_eq!(i["submitted"].as_u64().unwrap(), sum, "{i}");
        assert!(i["results_checked"].as_u64().unwrap() > 10, "{i}");
        assert_eq!(i["incorrect_results"], 0, "{i}");
        assert!(i.get("processes_exited").is_none(), "{i}");
    }
    // Its /metrics was read: the system's totals are there.
    assert!(
        run["variants"][0]["system_totals"]
            .as_object()
            .is_some_and(|t| t.len() > 4),
        "{err}"
    );
    assert!(!err.contains("/admin"), "{err}");
    assert_nothing_left(pid, &e.ledger);
}

#[test]
fn a_plain_http_server_takes_each_generic_fault_and_nothing_is_left() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let e = write(
        "python-faults",
        &[
            ("SYSTEM", PYTHON),
            ("DURATION", "10s"),
            (
                "TIMELINE",
                "  - { at: 1s, duration: 2s, fault: { cpu_limit: { component: web, cpus: 0.2 } } }\n  - { at: 2s, duration: 2s, fault: { pause: { component: web } } }\n  - { at: 5s, duration: 1s, fault: { kill: { component: web } } }\n  - { at: 7s, duration: 2s, fault: { network: { component: web, delay: 100ms } } }\n",
            ),
        ],
    );
    let mut child = spawn_run(&e);
    let pid = child.id();
    // While paused, the server and its `sleep` child are frozen together.
    // (The cgroup is made before its tasks are moved in: read until both are.)
    let frozen = wait_for_cgroup(pid, "/sys/fs/cgroup/freezer/");
    let until = Instant::now() + Duration::from_millis(1500);
    let mut tasks = String::new();
    while tasks.split_whitespace().count() < 2 && Instant::now() < until {
        tasks = std::fs::read_to_string(frozen.join("cgroup.procs")).unwrap_or_default();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(tasks.split_whitespace().count() >= 2, "frozen: {tasks:?}");
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = stderr(&e);
    // No expectation fails and no process exited by itself: exit 0.
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("no `target.metrics`"), "{err}");
    assert_eq!(err.matches("no `target.metrics`").count(), 1, "{err}");
    let run = run_json(&e, "python-faults");
    let ev = run["variants"][0]["events"].as_array().unwrap().clone();
    let by = |label: &str| {
        ev.iter()
            .find(|x| x["label"].as_str() == Some(label))
            .unwrap_or_else(|| panic!("no event {label:?} in {ev:?}"))
            .clone()
    };
    for label in [
        "web limited to 0.2 CPUs",
        "web paused",
        "web killed",
        "network into web",
    ] {
        assert_eq!(by(label)["ok"], true, "{label}: {ev:?}");
        assert_eq!(by(&format!("end: {label}"))["ok"], true, "{ev:?}");
    }
    assert!(by("end: web killed")["detail"]
        .as_str()
        .unwrap()
        .contains("restarted"));
    let detail = by("network into web")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    let proxy = detail.split_whitespace().nth(2).unwrap().to_string();
    assert_not_listening(&[proxy]);
    let i = &run["variants"][0]["integrity"];
    let sum = i["completed"].as_u64().unwrap()
        + i["given_up"].as_u64().unwrap()
        + i["pending"].as_u64().unwrap();
    assert_eq!(i["submitted"].as_u64().unwrap(), sum, "{i}");
    assert_nothing_left(pid, &e.ledger);
}

/// Waits (bounded) for a fault cgroup of harness `pid` on `web` whose path
/// starts with `under`.
fn wait_for_cgroup(pid: u32, under: &str) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = harness::env::cgroup::leftover_fault_cgroups()
            .into_iter()
            .find(|p| {
                let p = p.display().to_string();
                p.starts_with(under) && p.contains(&format!("harness-fault-{pid}-web"))
            });
        if let Some(p) = found {
            return p;
        }
        assert!(Instant::now() < deadline, "no cgroup under {under}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_tears_down_the_processes_and_the_faults_in_force() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let e = write(
        "python-ctrl-c",
        &[
            ("SYSTEM", PYTHON),
            ("DURATION", "60s"),
            (
                "TIMELINE",
                "  - { at: 1s, duration: 50s, fault: { pause: { component: web } } }\n",
            ),
        ],
    );
    let mut child = spawn_run(&e);
    let pid = child.id();
    wait_for_cgroup(pid, "/sys/fs/cgroup/");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = common::wait_exit(&mut child, Duration::from_secs(60));
    let err = stderr(&e);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("undone at the variant's end"), "{err}");
    assert_nothing_left(pid, &e.ledger);
}

#[test]
fn a_peer_reaches_a_network_faulted_process_through_its_fault_proxy() {
    let system = r#"    web:
      command: [python3, -m, http.server, "{port}", --bind, 127.0.0.1]
    side:
      command: [sh, -c, "echo {port.web} > peer-port; exec python3 -m http.server {port} --bind 127.0.0.1"]"#;
    let e = write(
        "peer",
        &[
            ("SYSTEM", system),
            ("TARGET", "target: { process: web }"),
            (
                "TIMELINE",
                "  - { at: 1s, duration: 1s, fault: { network: { component: web, delay: 20ms } } }\n",
            ),
        ],
    );
    let mut child = spawn_run(&e);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = stderr(&e);
    assert_eq!(status.code(), Some(0), "{err}");
    let run = run_json(&e, "peer");
    let ev = run["variants"][0]["events"].as_array().unwrap().clone();
    let on = ev
        .iter()
        .find(|x| x["label"] == "network into web")
        .unwrap_or_else(|| panic!("{ev:?}"));
    // "fault proxy 127.0.0.1:PORT into web: ..."
    let proxy = on["detail"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap();
    let peer = std::fs::read_to_string(e.dir.join("peer-port")).unwrap();
    assert_eq!(proxy.rsplit(':').next().unwrap(), peer.trim(), "{on}");
    assert_nothing_left(pid, &e.ledger);
}

#[test]
fn after_sigkill_the_next_start_kills_the_processes_left() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let e = write(
        "python-sigkill",
        &[
            ("SYSTEM", PYTHON),
            ("DURATION", "60s"),
            (
                "TIMELINE",
                "  - { at: 1s, duration: 50s, fault: { pause: { component: web } } }\n",
            ),
        ],
    );
    let mut child = spawn_run(&e);
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !harness::env::cgroup::leftover_fault_cgroups()
        .iter()
        .any(|p| {
            p.display()
                .to_string()
                .contains(&format!("harness-fault-{pid}-web"))
        })
    {
        assert!(Instant::now() < deadline, "no pause: {}", stderr(&e));
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL: no handler, no drop
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The `sleep` child outlives its parent's death signal; the frozen
    // server cannot even die.
    assert!(!tagged_of(pid).is_empty(), "nothing was left to clean up");
    let out = validate(&e);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("killed web"), "{err}");
    assert!(err.contains("frozen"), "{err}");
    assert_nothing_left(pid, &e.ledger);
}

/// A worker forked after the start (as gunicorn replaces one) was never
/// recorded as a process of its own: only its tag finds it.
#[test]
fn after_sigkill_a_worker_forked_later_is_found_by_its_tag() {
    let system = r#"    web:
      command: [sh, -c, "(sleep 1; sleep 301 & wait) & exec python3 -m http.server {port} --bind 127.0.0.1"]"#;
    let e = write("late-worker", &[("SYSTEM", system), ("DURATION", "60s")]);
    let mut child = spawn_run(&e);
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let is_worker = |p: &u32| {
        let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        cmd.starts_with(b"sleep\x00301")
    };
    while !tagged_of(pid).iter().any(is_worker) {
        assert!(Instant::now() < deadline, "no worker: {}", stderr(&e));
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL: no handler, no drop
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        tagged_of(pid).iter().any(is_worker),
        "the worker outlives its harness"
    );
    let out = validate(&e);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("killed web"), "{err}");
    assert_nothing_left(pid, &e.ledger);
}

#[test]
fn a_process_that_exits_during_the_run_is_named_and_the_run_fails() {
    let system = r#"    web:
      command: [sh, -c, "python3 -m http.server {port} --bind 127.0.0.1 2>/dev/null & sleep 2; echo dying-on-purpose >&2; exit 3"]"#;
    let e = write("exits", &[("SYSTEM", system)]);
    let mut child = spawn_run(&e);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = stderr(&e);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("web exited by itself"), "{err}");
    let run = run_json(&e, "exits");
    let i = &run["variants"][0]["integrity"];
    let exited = i["processes_exited"][0].as_str().unwrap_or_default();
    assert!(
        exited.contains("web") && exited.contains("dying-on-purpose"),
        "{i}"
    );
    let sum = i["completed"].as_u64().unwrap()
        + i["given_up"].as_u64().unwrap()
        + i["pending"].as_u64().unwrap();
    assert_eq!(i["submitted"].as_u64().unwrap(), sum, "{i}");
    let html = std::fs::read_to_string(e.dir.join("reports/exits/latest/index.html")).unwrap();
    assert!(html.contains("web exited by itself"));
    assert_nothing_left(pid, &e.ledger);
}

#[test]
fn a_port_that_never_becomes_ready_is_said_with_the_last_stderr_lines() {
    let system = r#"    web:
      command: [sh, -c, "echo cannot-bind-here >&2; sleep 30"]
      ready: { tcp: true, timeout: 1s }"#;
    let e = write("never-ready", &[("SYSTEM", system)]);
    let mut child = spawn_run(&e);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(60));
    let err = stderr(&e);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("web did not listen"), "{err}");
    assert!(err.contains("cannot-bind-here"), "{err}");
    assert_no_process_left(pid, &e.ledger);
}

#[test]
fn a_fixed_port_already_taken_is_said_before_anything_starts() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let system = format!(
        "    web:\n      command: [python3, -m, http.server, \"{{port}}\", --bind, 127.0.0.1]\n      port: {port}"
    );
    let e = write("port-taken", &[("SYSTEM", &system)]);
    let mut child = spawn_run(&e);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(60));
    let err = stderr(&e);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("process web: port {port} is not free")),
        "{err}"
    );
    assert_no_process_left(pid, &e.ledger);
}

/// `harness validate` on the experiment with `fill`: its stderr, and it failed.
fn refused(name: &str, fill: &[(&str, &str)]) -> String {
    let e = write(name, fill);
    let out = validate(&e);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("exp.yaml:"), "not located: {err}");
    err
}

#[test]
fn bad_processes_are_refused_where_they_are_written() {
    let err = refused(
        "no-program",
        &[(
            "SYSTEM",
            "    web:\n      command: [no-such-program-xyz, \"{port}\"]",
        )],
    );
    assert!(
        err.contains("system.processes.web.command") && err.contains("no-such-program-xyz"),
        "{err}"
    );
    let err = refused(
        "bad-placeholder",
        &[(
            "SYSTEM",
            "    web:\n      command: [sh, -c, \"echo {port.db}\"]",
        )],
    );
    assert!(err.contains("{port.db}"), "{err}");
    let err = refused(
        "admin",
        &[
            ("SYSTEM", PYTHON),
            (
                "TIMELINE",
                "  - { at: 1s, duration: 1s, fault: { cache_fill: { fraction: 0.9 } } }\n",
            ),
        ],
    );
    assert!(
        err.contains("timeline[0].fault") && err.contains("no admin API"),
        "{err}"
    );
    let err = refused(
        "oversized",
        &[
            ("SYSTEM", PYTHON),
            (
                "TIMELINE",
                "  - { at: 1s, fault: { oversized_documents: { tenant: t1, count: 2, min_pages: 5, max_pages: 9 } } }\n",
            ),
        ],
    );
    assert!(err.contains("no admin API"), "{err}");
    let err = refused(
        "unknown-component",
        &[
            ("SYSTEM", PYTHON),
            (
                "TIMELINE",
                "  - { at: 1s, duration: 1s, fault: { pause: { component: db } } }\n",
            ),
        ],
    );
    assert!(err.contains("unknown component \"db\""), "{err}");
    let err = refused("misspelt", &[("SYSTEM", "    web:\n      comand: [sh]")]);
    assert!(err.contains("comand"), "{err}");
    let err = refused(
        "new-in-variant",
        &[
            ("SYSTEM", PYTHON),
            (
                "VARIANTS",
                "  only:\n    system: { processes: { db: { command: [sh] } } }\n",
            ),
        ],
    );
    assert!(err.contains("variants.only.system.processes.db"), "{err}");
    let err = refused(
        "image-cwd",
        &[(
            "SYSTEM",
            "    web:\n      image: my:local\n      port: 80\n      cwd: .",
        )],
    );
    assert!(
        err.contains("system.processes.web.cwd") && err.contains("image"),
        "{err}"
    );
    let err = refused(
        "image-port",
        &[(
            "SYSTEM",
            "    web:\n      image: my:local\n      port: auto",
        )],
    );
    assert!(err.contains("system.processes.web.port"), "{err}");
    let err = refused(
        "image-peer",
        &[(
            "SYSTEM",
            "    web:\n      image: my:local\n      port: 80\n      env: { UP: \"{port.web}\" }",
        )],
    );
    assert!(err.contains("{port.web}"), "{err}");
    let err = refused(
        "sut-keys",
        &[
            ("SYSTEM", PYTHON),
            ("VARIANTS", "  only:\n    system: { pool: { slots: 3 } }\n"),
        ],
    );
    assert!(err.contains("variants.only.system.pool"), "{err}");
}

#[test]
fn virtual_time_refuses_processes_where_the_file_says_so() {
    let e = write("virtual", &[("SYSTEM", PYTHON)]);
    let out = harness(&e)
        .arg(&e.file)
        .args(["--clock", "virtual", "--quiet", "--out"])
        .arg(e.dir.join("reports"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("exp.yaml:3:") && err.contains("environment") && err.contains("processes"),
        "{err}"
    );
}

#[test]
fn a_variant_overrides_the_command_env_and_config_of_the_same_process() {
    let system = r#"    web:
      command: [sh, -c, "exec python3 -m http.server {port} --bind 127.0.0.1"]
      env: { MODE: slow, PEER: "127.0.0.1:{port}" }
      config: { text: "workers = 1\n" }"#;
    let e = write(
        "overrides",
        &[
            ("SYSTEM", system),
            (
                "VARIANTS",
                "  before-fix: {}\n  after-fix:\n    system: { processes: { web: { env: { MODE: fast }, config: { text: \"workers = 4\\n\" } } } }\n",
            ),
        ],
    );
    let out = validate(&e);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exp = harness::experiment::load(&e.file, false).unwrap();
    let harness::experiment::Environment::Processes(p) = &exp.environment else {
        panic!("{:?}", exp.environment)
    };
    let before = &p.variants["before-fix"][0];
    let after = &p.variants["after-fix"][0];
    assert_eq!(before.env["MODE"], "slow");
    assert_eq!(after.env["MODE"], "fast");
    assert_eq!(after.env["PEER"], "127.0.0.1:{port}");
    assert_eq!(before.command, after.command);
    assert_eq!(after.config.as_ref().unwrap().1, "workers = 4\n");
    assert_eq!(p.target, "web");
}

#[test]
fn target_metrics_is_a_path_or_a_loopback_url_naming_a_process() {
    for (name, target) in [
        ("metrics-path", "target: { metrics: /metrics }"),
        (
            "metrics-url",
            "target: { metrics: \"http://127.0.0.1:{port.web}/metrics\" }",
        ),
    ] {
        let e = write(name, &[("SYSTEM", PYTHON), ("TARGET", target)]);
        let out = validate(&e);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let err = refused(
        "metrics-unknown",
        &[
            ("SYSTEM", PYTHON),
            (
                "TARGET",
                "target: { metrics: \"http://127.0.0.1:{port.db}/metrics\" }",
            ),
        ],
    );
    assert!(
        err.contains("target.metrics") && err.contains("{port.db}"),
        "{err}"
    );
    let err = refused(
        "metrics-remote",
        &[
            ("SYSTEM", PYTHON),
            (
                "TARGET",
                "target: { metrics: \"http://10.1.2.3:9100/metrics\" }",
            ),
        ],
    );
    assert!(err.contains("loopback URL"), "{err}");
    let err = refused(
        "target-url",
        &[
            ("SYSTEM", PYTHON),
            ("TARGET", "target: { url: \"http://127.0.0.1:1\" }"),
        ],
    );
    assert!(
        err.contains("target.url") && err.contains("environment external"),
        "{err}"
    );
}

#[test]
fn a_compose_file_is_refused_where_it_is_wrong() {
    let cases = [
        (
            "services:\n  web:\n    build: .\n    ports: [\"80\"]\n",
            "build",
        ),
        ("services:\n  web:\n    image: my:local\n", "needs a port"),
        (
            "services:\n  web:\n    image: my:local\n    ports: [\"80\"]\n    depends_on: [db]\n",
            "no service \"db\"",
        ),
    ];
    for (i, (compose, why)) in cases.iter().enumerate() {
        let e = write(
            &format!("compose-{i}"),
            &[("SYSTEM", "    web: { command: [sh] }")],
        );
        let text = std::fs::read_to_string(&e.file).unwrap().replace(
            "system:\n  processes:\n    web: { command: [sh] }\n",
            "system: { compose: dc.yml }\n",
        );
        std::fs::write(&e.file, text).unwrap();
        std::fs::write(e.dir.join("dc.yml"), compose).unwrap();
        let out = validate(&e);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("dc.yml:") && err.contains(why), "{why}: {err}");
    }
}
