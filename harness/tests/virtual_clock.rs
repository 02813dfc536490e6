//! `--clock virtual` through the `harness` binary: a seed replays byte for
//! byte (the digest of run.json in summary.json), far faster than its
//! modeled time; what virtual time cannot run is refused before anything
//! runs, with exit 2 and the file's line and column; and `alerts:`, which
//! only a real Prometheus evaluates, is left out loudly, its expectations
//! reported as not evaluated.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Small and CPU-only, with a trigger, retries, a lossy cache and
/// zone-failure draws: every source of randomness the system has.
const SMALL: &str = r#"name: virtual-small
duration: 12s
analysis: { recovery_window: 2s, warmup: 1s, min_baseline: 2s }
system:
  executor: cpu
  pool: { slots: 4, deadline: 300ms, dedup: abandoned_deadline_holds_slot }
  gpu: { lanes: 2, page_time: 5ms }
  page: { words: 64, rounds: 2 }
  cache: { capacity: 40, on_full: ack_and_drop, drop_ratio: 0.5 }
workload:
  arrival: { constant: { rate: 40 } }
  documents: { pages: { uniform: { min: 1, max: 4 } }, tenants: 2 }
  client: { timeout: 400ms, retry: { max_attempts: 3, backoff: { exponential: { base: 20ms, cap: 200ms, jitter: full } } } }
timeline:
  - { at: 0s, fault: cache_fill_to_limit, trigger: false }
  - { at: 4s, fault: { zone_fail: { zone: z1, ratio: 0.3 } }, duration: 2s }
  - { at: 4s, fault: { oversized_documents: { tenant: t2, count: 2, min_pages: 40, max_pages: 40 } } }
variants:
  before-fix: {}
  after-fix: { system: { pool: { dedup: wait_without_slot } } }
expect:
  before-fix: { incorrect_results: 0, unaccounted_documents: 0 }
  after-fix: { incorrect_results: 0, unaccounted_documents: 0 }
"#;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-virtual-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn harness(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .env(
            "XDG_RUNTIME_DIR",
            std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()),
        )
        .output()
        .unwrap()
}

/// Runs `file` on the virtual clock with `seed` into `out`; its summary.json.
fn run_virtual(file: &Path, out: &Path, seed: u64) -> serde_json::Value {
    let seed = seed.to_string();
    let o = harness(&[
        file.as_os_str(),
        "--clock".as_ref(),
        "virtual".as_ref(),
        "--seed".as_ref(),
        seed.as_ref(),
        "--quiet".as_ref(),
        "--json".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{stderr}"
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

fn digest(summary: &serde_json::Value) -> String {
    summary["run_json_sha256"]
        .as_str()
        .expect("summary.json has run_json_sha256")
        .to_string()
}

#[test]
fn a_seed_replays_byte_for_byte_in_virtual_time() {
    let dir = scratch("replay");
    let file = dir.join("virtual-small.yaml");
    std::fs::write(&file, SMALL).unwrap();
    let wall = std::time::Instant::now();
    let first = run_virtual(&file, &dir.join("a"), 7);
    let second = run_virtual(&file, &dir.join("b"), 7);
    let wall = wall.elapsed();
    assert_eq!(first["clock"]["kind"], "virtual");
    assert_eq!(
        digest(&first),
        digest(&second),
        "same file and seed, same run.json"
    );
    // The digest is of what was recorded: another seed, other traffic.
    let other = run_virtual(&file, &dir.join("c"), 8);
    assert_ne!(digest(&first), digest(&other));
    // And the two run.json files are the same bytes.
    let read = |d: &str| {
        let latest = dir.join(d).join("virtual-small").join("latest");
        std::fs::read(latest.join("run.json")).unwrap()
    };
    assert!(read("a") == read("b"), "run.json differs between replays");
    // Two variants of 12 s plus drain each, twice: 50 s of modeled time
    // in less wall time than that, even in a debug build.
    let modeled = first["clock"]["clock_s"].as_f64().unwrap();
    assert!(modeled >= 24.0, "{modeled}");
    assert!(
        wall.as_secs_f64() < modeled * 2.0,
        "3 runs took {wall:?} for {modeled} s of modeled time each"
    );
}

/// Exit 2, and the message, of `harness FILE --clock virtual EXTRA...`.
fn refused(yaml: &str, name: &str, extra: &[&str]) -> String {
    let dir = scratch(name);
    std::fs::write(
        dir.join("rules.yml"),
        "groups:\n  - name: g\n    rules:\n      - alert: Failing\n        expr: sut_gateway_requests_total > 0\n",
    )
    .unwrap();
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, yaml).unwrap();
    let mut args: Vec<&std::ffi::OsStr> = vec![
        file.as_os_str(),
        "--clock".as_ref(),
        "virtual".as_ref(),
        "--out".as_ref(),
    ];
    let out = dir.join("out");
    args.push(out.as_os_str());
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    let o = harness(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
    assert!(!out.exists(), "{name}: nothing ran: {stderr}");
    stderr
}

/// `file:line:` of the first line of `yaml` that holds `needle`.
fn at(file: &str, yaml: &str, needle: &str) -> String {
    let line = yaml.lines().position(|l| l.contains(needle)).unwrap() + 1;
    format!("{file}.yaml:{line}:")
}

/// `SMALL` with `line` inserted after its `name:` line.
fn with(line: &str) -> String {
    SMALL.replacen(
        "name: virtual-small\n",
        &format!("name: virtual-small\n{line}\n"),
        1,
    )
}

#[test]
fn what_virtual_time_cannot_run_is_refused_with_its_location() {
    let redis = SMALL.replace(
        "  cache: { capacity: 40, on_full: ack_and_drop, drop_ratio: 0.5 }",
        "  cache: { capacity: 40, backend: { redis: { maxmemory_mb: 1, policy: allkeys_random } } }",
    );
    let e = refused(&redis, "redis", &[]);
    assert!(e.contains(&at("redis", &redis, "backend:")), "{e}");
    assert!(
        e.contains("system.cache.backend") && e.contains("Redis"),
        "{e}"
    );

    let variant_redis = SMALL.replace(
        "  before-fix: {}",
        "  before-fix: { system: { cache: { backend: { redis: { maxmemory_mb: 1, policy: noeviction } } } } }",
    );
    let e = refused(&variant_redis, "variant-redis", &[]);
    assert!(
        e.contains(&at("variant-redis", &variant_redis, "backend:")),
        "{e}"
    );
    assert!(
        e.contains("variants.before-fix.system.cache.backend"),
        "{e}"
    );

    let e = refused(&with("environment: containers"), "containers", &[]);
    assert!(
        e.contains("containers.yaml:2:") && e.contains("environment"),
        "{e}"
    );

    // An external target's variants may change only the clients.
    let external =
        with("environment: external\ntarget: { url: \"http://127.0.0.1:9\", admin_token: t }")
            .replace(
                "  after-fix: { system: { pool: { dedup: wait_without_slot } } }",
                "  after-fix: {}",
            );
    let e = refused(&external, "external", &[]);
    assert!(
        e.contains("external.yaml:2:") && e.contains("environment"),
        "{e}"
    );

    // Generic faults and a proxy gateway act on real processes.
    let generic = SMALL.replace(
        "  - { at: 4s, fault: { zone_fail: { zone: z1, ratio: 0.3 } }, duration: 2s }",
        "  - { at: 4s, fault: { pause: { component: pool-z1 } }, duration: 2s }",
    );
    assert_ne!(generic, SMALL);
    let e = refused(&generic, "generic", &[]);
    assert!(e.contains(&at("generic", &generic, "pause:")), "{e}");
    assert!(
        e.contains("timeline[1].fault.pause") && e.contains("generic fault"),
        "{e}"
    );
    let proxy = SMALL.replace(
        "  after-fix: { system: { pool: { dedup: wait_without_slot } } }",
        "  after-fix: { system: { gateway: { proxy: { haproxy: { config: h.cfg } } } } }",
    );
    let e = harness::experiment::check_virtual_clock(&proxy, "proxy.yaml")
        .expect_err("refused")
        .to_string();
    assert!(e.contains(&at("proxy", &proxy, "proxy:")), "{e}");
    assert!(e.contains("variants.after-fix.system.gateway.proxy"), "{e}");

    let e = refused(SMALL, "agents", &["--agents", "2"]);
    assert!(e.contains("--agents"), "{e}");
    let e = refused(
        SMALL,
        "deployed",
        &[
            "--deployed",
            "http://127.0.0.1:9",
            "--variant",
            "before-fix",
        ],
    );
    assert!(e.contains("--deployed"), "{e}");
    let e = refused(SMALL, "env-flag", &["--environment", "containers"]);
    assert!(e.contains("--environment containers"), "{e}");
}

/// `harness sweep --clock virtual --runs-per-cell N`: every seed of every cell runs,
/// two at once on their own threads, and the same sweep gives the same
/// classes again (each run replays its seed, whatever ran beside it).
#[test]
fn a_virtual_sweep_runs_every_seed_of_every_cell_and_replays() {
    let dir = scratch("sweep");
    let file = dir.join("small.yaml");
    // A sweep runs the quick form: here the whole file.
    std::fs::write(&file, format!("{SMALL}quick: {{ duration: 12s }}\n")).unwrap();
    let sweep = |out: &str| -> serde_json::Value {
        let out = dir.join(out);
        let o = harness(&[
            "sweep".as_ref(),
            file.as_os_str(),
            "--load-path".as_ref(),
            "workload.arrival.constant.rate".as_ref(),
            "--load".as_ref(),
            "30..40:2".as_ref(),
            "--trigger".as_ref(),
            "timeline.2.fault.oversized_documents.count=1..3:2".as_ref(),
            "--runs-per-cell".as_ref(),
            "2".as_ref(),
            "--parallel".as_ref(),
            "2".as_ref(),
            "--clock".as_ref(),
            "virtual".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        let grid = std::fs::read_dir(out.join("virtual-small-sweep"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("grid.json").exists())
            .expect("grid.json written");
        serde_json::from_slice(&std::fs::read(grid.join("grid.json")).unwrap()).unwrap()
    };
    let first = sweep("a");
    let cells = first["cells"].as_array().unwrap();
    // 2 loads x 2 trigger values x 2 seeds x 2 variants, each classified.
    assert_eq!(cells.len(), 16);
    assert!(cells.iter().all(|c| c["class"] != "not_run"), "{cells:?}");
    let seeds: std::collections::BTreeSet<u64> =
        cells.iter().map(|c| c["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds.len(), 8, "{seeds:?}");
    assert_eq!(first["clock"], "virtual");
    assert_eq!(first["seeds_per_cell"], 2);
    let classes = |g: &serde_json::Value| -> Vec<(u64, String, String, String)> {
        g["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["seed"].as_u64().unwrap(),
                    c["variant"].to_string(),
                    c["class"].to_string(),
                    c["peak_failure_ratio"].to_string(),
                )
            })
            .collect()
    };
    assert_eq!(classes(&first), classes(&sweep("b")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file with `alerts:` runs on the virtual clock (docs/virtual-time.md's
/// first example is such a file): the alerts are left out with a warning on
/// the terminal and a banner in the report, and an expectation on an alert
/// metric is NOT EVALUATED, neither passed nor failed.
#[test]
fn alerts_are_left_out_loudly_on_the_virtual_clock() {
    let dir = scratch("alerts");
    std::fs::write(
        dir.join("rules.yml"),
        "groups:\n  - name: g\n    rules:\n      - alert: Failing\n        expr: sut_gateway_requests_total > 0\n",
    )
    .unwrap();
    let yaml = with("alerts: { rules: [rules.yml] }").replace(
        "  after-fix: { incorrect_results: 0, unaccounted_documents: 0 }",
        "  after-fix: { incorrect_results: 0, unaccounted_documents: 0, \"alert_fired{Failing}\": 0 }",
    );
    let file = dir.join("alerts.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let out = dir.join("out");
    let o = harness(&[
        file.as_os_str(),
        "--clock".as_ref(),
        "virtual".as_ref(),
        "--json".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("WARNING: alerts: left out on the virtual clock"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[NOT EVALUATED] after-fix: alert_fired{Failing}"),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["all_passed"], true);
    let alert = summary["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["metric_name"] == "alert_fired")
        .unwrap();
    assert_eq!(alert["passed"], false);
    assert!(alert["not_evaluated"]
        .as_str()
        .unwrap()
        .contains("virtual clock"));
    let latest = out.join("virtual-small").join("latest");
    let html = std::fs::read_to_string(latest.join("index.html")).unwrap();
    assert!(html.contains("id=\"not-evaluated\""), "a banner");
    let junit = std::fs::read_to_string(latest.join("junit.xml")).unwrap();
    assert!(
        junit.contains("skipped=\"1\"") && junit.contains("<skipped"),
        "{junit}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
