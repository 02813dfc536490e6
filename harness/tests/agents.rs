//! Load agents end to end, through the `harness` binary (its agents are
//! child processes of that binary): the agents together submit exactly the
//! single-process run's documents; an agent killed mid-run is named, its
//! documents count as pending (agent lost) and the run exits non-zero; the
//! handshake refuses a different seed or experiment; no agent outlives its
//! run, also after Ctrl-C or a killed coordinator.

mod common;
use common::{alive, children};
use harness::run::agent::coordinator::{check_hello, AgentSource, Coordinator, Expected};
use harness::run::agent::protocol::{self, Hello};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Small and CPU-only: three variants' worth of checks in a few seconds each.
const SHORT: &str = r#"name: agents-short
duration: 8s
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system:
  executor: cpu
  zones: [z1, z2]
  pool: { slots: 8, deadline: 400ms }
  gpu: { lanes: 4, page_time: 4ms }
  page: { words: 64, rounds: 2 }
workload:
  arrival: { constant: { rate: 40 } }
  documents: { pages: { uniform: { min: 1, max: 4 } }, tenants: 3 }
  client: { timeout: 600ms, retry: { max_attempts: 2, backoff: { fixed: { delay: 50ms } } } }
timeline:
  - { at: 2s, fault: { oversized_documents: { tenant: t2, count: 2, min_pages: 30, max_pages: 30 } } }
variants:
  only: {}
expect:
  only: { incorrect_results: 0, unaccounted_documents: 0 }
"#;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-agents-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn experiment(dir: &std::path::Path, text: &str) -> PathBuf {
    let f = dir.join("agents-short.yaml");
    std::fs::write(&f, text).unwrap();
    f
}

fn harness(file: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.arg(file)
        .args(["--quiet", "--json", "--out"])
        .arg(out)
        .args(extra)
        .env(
            "XDG_RUNTIME_DIR",
            std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn summary(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no summary JSON in {text}"));
    serde_json::from_str(line).unwrap()
}

/// Waits for the run's agents to be up (and returns their pids).
fn wait_for_agents(run: &Child, n: usize) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let pids = children(run.id(), " agent ");
        if pids.len() == n || Instant::now() > until {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn three_agents_submit_the_single_process_run_s_documents() {
    let dir = scratch("ids");
    let file = experiment(&dir, SHORT);
    let single = harness(&file, &dir.join("r1"), &[]).output().unwrap();
    let agents = harness(&file, &dir.join("r3"), &["--agents", "3"])
        .output()
        .unwrap();
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(single.status.code(), Some(0), "{}", err(&single));
    assert_eq!(agents.status.code(), Some(0), "{}", err(&agents));
    let (s, a) = (summary(&single.stdout), summary(&agents.stdout));
    let (si, ai) = (
        &s["variants"][0]["integrity"],
        &a["variants"][0]["integrity"],
    );
    assert!(si["submitted"].as_u64().unwrap() > 200, "{si}");
    // The same ids, the same number of times: same count and same digest.
    assert_eq!(si["submitted"], ai["submitted"]);
    assert_eq!(si["submitted_digest"], ai["submitted_digest"]);
    assert_eq!(ai["accounted"], true);
    assert_eq!(ai["incorrect_results"], 0);
    let shards = a["variants"][0]["agents"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    let docs: u64 = shards
        .iter()
        .map(|x| x["documents"].as_u64().unwrap())
        .sum();
    assert_eq!(docs, si["submitted"].as_u64().unwrap());
    assert!(shards.iter().all(|x| x["lost"].is_null()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_agent_is_named_its_documents_pending_and_the_run_fails() {
    let dir = scratch("kill");
    let file = experiment(&dir, SHORT);
    let run = harness(&file, &dir.join("r"), &["--agents", "3"])
        .spawn()
        .unwrap();
    let pids = wait_for_agents(&run, 3);
    assert_eq!(pids.len(), 3, "three agents");
    let victim = *children(run.id(), "--shard 1 ")
        .first()
        .expect("agent of shard 1");
    // Mid-run: the clock starts 1.5 s after the handshake; the load lasts 8 s.
    std::thread::sleep(Duration::from_secs(4));
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "degraded run exits 1: {stderr}");
    let s = summary(&out.stdout);
    let v = &s["variants"][0];
    let lost = &v["agents"][1];
    assert!(
        lost["lost"].as_str().is_some_and(|r| r.contains("exited")),
        "{lost}"
    );
    assert!(lost["name"].as_str().unwrap().contains(&victim.to_string()));
    assert!(lost["pending_agent_lost"].as_u64().unwrap() > 0, "{lost}");
    assert!(v["agents"][0]["lost"].is_null() && v["agents"][2]["lost"].is_null());
    let i = &v["integrity"];
    assert_eq!(i["pending_agent_lost"], lost["pending_agent_lost"]);
    assert_eq!(i["accounted"], true, "nothing goes missing: {i}");
    assert_eq!(i["ok"], false);
    assert!(i["problems"].to_string().contains("agent lost"), "{i}");
    // Every planned document is accounted for, the lost shard's included.
    let planned: u64 = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["documents"].as_u64().unwrap())
        .sum();
    assert_eq!(i["submitted"].as_u64().unwrap(), planned);
    let html = std::fs::read_to_string(dir.join("r/agents-short/latest/index.html")).unwrap();
    assert!(
        html.contains("DEGRADED") && html.contains("agent-1"),
        "banner"
    );
    assert!(pids.iter().all(|p| !alive(*p)), "no agent outlives the run");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn agents_never_outlive_their_run_after_ctrl_c_or_a_killed_coordinator() {
    let dir = scratch("outlive");
    let file = experiment(&dir, SHORT);
    // Ctrl-C to the run alone (not its process group): it stops its agents.
    let run = harness(&file, &dir.join("r"), &["--agents", "2"])
        .spawn()
        .unwrap();
    let pids = wait_for_agents(&run, 2);
    assert_eq!(pids.len(), 2);
    std::thread::sleep(Duration::from_secs(3));
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(pids.iter().all(|p| !alive(*p)), "agents gone after Ctrl-C");
    // SIGKILL of the run: the kernel kills its agents (PR_SET_PDEATHSIG).
    let mut run = harness(&file, &dir.join("r"), &["--agents", "2"])
        .spawn()
        .unwrap();
    let pids = wait_for_agents(&run, 2);
    assert_eq!(pids.len(), 2);
    run.kill().unwrap();
    let _ = run.wait();
    let until = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pids.iter().all(|p| !alive(*p)), "agents gone after SIGKILL");
    let _ = std::fs::remove_dir_all(&dir);
}

fn hello(seed: u64, hash: &str) -> Hello {
    Hello {
        harness_version: protocol::harness_version().into(),
        experiment_hash: hash.into(),
        seed,
        shard: 0,
        of: 2,
        whereabouts: "test".into(),
    }
}

#[test]
fn the_handshake_refuses_a_different_seed_experiment_or_version() {
    let e = Expected {
        experiment_hash: protocol::experiment_hash(SHORT, false),
        seed: 42,
        of: 2,
    };
    assert!(check_hello(&e, &hello(42, &e.experiment_hash)).is_ok());
    let m = check_hello(&e, &hello(7, &e.experiment_hash))
        .unwrap_err()
        .to_string();
    assert!(m.contains("seed 7") && m.contains("seed 42"), "{m}");
    let other = protocol::experiment_hash(SHORT, true);
    assert_ne!(other, e.experiment_hash, "the form is part of the hash");
    let m = check_hello(&e, &hello(42, &other)).unwrap_err().to_string();
    assert!(m.contains("different experiment"), "{m}");
    let mut h = hello(42, &e.experiment_hash);
    h.harness_version = "0.0.0-other".into();
    assert!(check_hello(&e, &h)
        .unwrap_err()
        .to_string()
        .contains("0.0.0-other"));
    h = hello(42, &e.experiment_hash);
    h.shard = 2;
    assert!(check_hello(&e, &h).is_err(), "shard out of range");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_agent_hears_why_and_the_run_does_not_start() {
    let e = Expected {
        experiment_hash: protocol::experiment_hash(SHORT, false),
        seed: 42,
        of: 1,
    };
    let mut c = Coordinator::start(([127, 0, 0, 1], 0).into(), e.clone(), &AgentSource::Remote)
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let mut h = hello(43, &e.experiment_hash);
    h.of = 1;
    let err = harness::run::agent::handshake(&http, &c.url, &h)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("seed 43"), "{err}");
    let err = c.wait_for_agents(Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
}

#[test]
fn a_silent_agent_is_lost_after_3_s_and_killed() {
    let dir = scratch("silent");
    let file = experiment(&dir, SHORT);
    let run = harness(&file, &dir.join("r"), &["--agents", "2"])
        .spawn()
        .unwrap();
    let pids = wait_for_agents(&run, 2);
    assert_eq!(pids.len(), 2);
    let victim = *children(run.id(), "--shard 0 ")
        .first()
        .expect("agent of shard 0");
    std::thread::sleep(Duration::from_secs(4));
    // Stopped, not dead: it holds its connections but reports nothing.
    unsafe { libc::kill(victim as i32, libc::SIGSTOP) };
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = &summary(&out.stdout)["variants"][0];
    let lost = &v["agents"][0];
    assert!(
        lost["lost"]
            .as_str()
            .is_some_and(|r| r.contains("stopped reporting for 3 s")),
        "{lost}"
    );
    assert!(v["agents"][1]["lost"].is_null());
    assert_eq!(v["integrity"]["accounted"], true);
    assert!(!alive(victim), "the silent agent was killed with its run");
    let _ = std::fs::remove_dir_all(&dir);
}
