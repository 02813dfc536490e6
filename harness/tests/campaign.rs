//! Campaigns end to end, through the `harness` binary (each run is a child
//! process of it): a run killed mid-campaign is named as errored, the
//! campaign completes and exits non-zero; Ctrl-C writes the campaign of what
//! finished and leaves no process, and `--resume` completes it; `campaign:` is validated with located
//! errors.

mod common;
use common::{alive, children};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Small and CPU-only: a few seconds a run.
const SHORT: &str = r#"name: campaign-short
duration: 6s
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system:
  executor: cpu
  pool: { slots: 8, deadline: 400ms }
  gpu: { lanes: 4, page_time: 4ms }
  page: { words: 64, rounds: 2 }
workload:
  arrival: { constant: { rate: 30 } }
  documents: { pages: { uniform: { min: 1, max: 3 } }, tenants: 3 }
  client: { timeout: 600ms, retry: { max_attempts: 2, backoff: { fixed: { delay: 50ms } } } }
timeline:
  - { at: 2s, fault: { oversized_documents: { tenant: t2, count: 2, min_pages: 20, max_pages: 20 } } }
variants:
  before-fix: {}
  after-fix: {}
campaign:
  expect:
    after-fix:
      "runs with incorrect_results == 0": ">= 80% (alpha 0.05, beta 0.1, delta 0.6)"
"#;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-campaign-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn campaign(dir: &Path, extra: &[&str]) -> Command {
    let file = dir.join("campaign-short.yaml");
    std::fs::write(&file, SHORT).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.arg("campaign")
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .args(extra)
        .env(
            "XDG_RUNTIME_DIR",
            std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn wait_for_runs(c: &Child, n: usize) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let pids = children(c.id(), "");
        if pids.len() >= n || Instant::now() > until {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn campaign_json(dir: &Path) -> serde_json::Value {
    let latest = dir.join("out/campaign-short-campaign/latest/campaign.json");
    let text =
        std::fs::read_to_string(&latest).unwrap_or_else(|e| panic!("{}: {e}", latest.display()));
    serde_json::from_str(&text).unwrap()
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid this test found among its own descendants.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[test]
fn a_killed_run_is_named_as_errored_and_the_campaign_fails() {
    let dir = scratch("killed");
    let c = campaign(&dir, &["--seeds", "1..2", "--parallel", "2"])
        .spawn()
        .unwrap();
    let runs = wait_for_runs(&c, 2);
    assert_eq!(runs.len(), 2, "two runs at once");
    std::thread::sleep(Duration::from_secs(2));
    kill(runs[0], libc::SIGKILL);
    let out = c.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let j = campaign_json(&dir);
    let all = j["runs"].as_array().unwrap();
    // A run left out for a late load (a busy test machine) is run again:
    // count the planned (variant, seed) pairs.
    let mut planned: Vec<(String, u64)> = all
        .iter()
        .map(|r| {
            (
                r["variant"].as_str().unwrap().to_string(),
                r["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    planned.sort();
    planned.dedup();
    assert_eq!(planned.len(), 4, "every planned run is recorded: {stderr}");
    let errored: Vec<_> = all
        .iter()
        .filter(|r| r["status"]["status"] == "errored")
        .collect();
    assert_eq!(errored.len(), 1, "{stderr}");
    assert!(
        errored[0]["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{errored:?}"
    );
    assert_eq!(j["all_passed"], false);
    assert!(stderr.contains("errored"), "{stderr}");
}

#[test]
fn ctrl_c_writes_what_finished_leaves_no_process_and_resume_completes_it() {
    let dir = scratch("ctrl-c");
    let c = campaign(&dir, &["--seeds", "1..4", "--parallel", "2"])
        .spawn()
        .unwrap();
    let runs = wait_for_runs(&c, 2);
    assert_eq!(runs.len(), 2);
    std::thread::sleep(Duration::from_secs(2));
    kill(c.id(), libc::SIGINT);
    let out = c.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    for pid in runs {
        assert!(!alive(pid), "run {pid} outlived the campaign");
    }
    let j = campaign_json(&dir);
    assert_eq!(j["plan"]["interrupted"], true);
    assert_eq!(
        j["runs"].as_array().unwrap().len(),
        2,
        "nothing started after Ctrl-C"
    );
    let page = dir.join("out/campaign-short-campaign/latest/campaign.html");
    assert!(std::fs::read_to_string(page)
        .unwrap()
        .contains("INTERRUPTED"));

    // --resume runs the interrupted runs and the rest, and keeps the plan.
    let folder = std::fs::canonicalize(dir.join("out/campaign-short-campaign/latest")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["campaign", "--resume"])
        .arg(&folder)
        .args(["--parallel", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("campaign.json")).unwrap())
            .unwrap();
    let runs = j["runs"].as_array().unwrap();
    assert!(runs.len() >= 8, "seeds 1-4 x 2 variants: {stderr}");
    assert!(
        runs.iter().all(|r| r["status"]["status"] != "errored"),
        "{stderr}"
    );
}

#[test]
fn a_campaign_section_is_validated_with_located_errors() {
    let bad = |from: &str, to: &str| {
        let text = SHORT.replace(from, to);
        harness::experiment::parse(&text, "c.yaml", false).unwrap_err()
    };
    let e = bad(
        "\"runs with incorrect_results == 0\"",
        "\"runs with nonsense == 0\"",
    );
    assert!(e.message.contains("unknown metric"), "{e}");
    assert_eq!((e.file.as_str(), e.line), ("c.yaml", 21));
    let e = bad("\">= 80% (alpha", "\"120% (alpha");
    assert!(e.message.contains("between 0% and 100%"), "{e}");
    let e = bad("\">= 80% (alpha 0.05, beta 0.1, delta 0.6)\"", "\"100%\"");
    assert!(
        e.message
            .starts_with("100 % of runs can only be refuted by a finite campaign"),
        "{e}"
    );
    let e = bad(
        "    after-fix:\n      \"runs",
        "    during-fix:\n      \"runs",
    );
    assert!(e.message.contains("no such variant"), "{e}");
    let e = bad("\"runs with incorrect_results == 0\"", "\"mean waves\"");
    assert!(e.message.contains("median METRIC"), "{e}");
    let e = bad("campaign:\n", "campaign:\n  seeds: 5..1\n");
    assert!(e.message.contains("before the first"), "{e}");
    let e = bad(
        "campaign:\n",
        "campaign:\n  compare: [[before-fix, during-fix]]\n",
    );
    assert!(
        e.field == "campaign.compare" && e.message.contains("no such variant"),
        "{e}"
    );
    let ok = harness::experiment::parse(SHORT, "c.yaml", false).unwrap();
    assert_eq!(ok.campaign.expectations.len(), 1);
    assert_eq!(
        ok.campaign.compare,
        vec![("before-fix".to_string(), "after-fix".to_string())]
    );
}

#[test]
fn every_committed_campaign_context_names_a_shipped_experiment_and_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let Ok(entries) = std::fs::read_dir(root.join("campaigns")) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let text = std::fs::read_to_string(&path).unwrap();
        let ctx: run_report::campaign::context::CampaignContext =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let (file, quick) = match stem.strip_suffix("-quick") {
            Some(f) => (f.to_string(), true),
            None => (stem.clone(), false),
        };
        let exp = harness::experiment::load(&root.join(format!("{file}.yaml")), quick).unwrap();
        assert_eq!(
            (ctx.experiment.as_str(), ctx.quick),
            (exp.name.as_str(), quick),
            "{stem}"
        );
        let recorded =
            harness::commands::campaign::recorded_context(&root.join(format!("{file}.yaml")), &exp);
        assert_eq!(recorded, Some(ctx), "{stem} is found beside its experiment");
    }
}
