//! `harness render k8s`: the manifests' shape (one pool per zone, an Indexed
//! Job of agents, NetworkPolicies), bad input refused, and the output
//! accepted by `kubernetes-validate` against a pinned Kubernetes schema.
//!
//! The schema check needs `kubernetes-validate` (PyPI); without it the test
//! prints SKIPPED, unless `HARNESS_REQUIRE_KUBERNETES_VALIDATE=1` (as in
//! `.ci/run`, which also pins the same version).

use harness::cli::K8sArgs;
use harness::commands::render::k8s_to_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kubernetes version the manifests are checked against (also in .ci/run).
const K8S_VERSION: &str = "1.30.0";

fn experiment(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-k8s-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn args(file: &str, agents: u32, out: &Path) -> K8sArgs {
    K8sArgs {
        experiment: experiment(file),
        agents,
        namespace: "chaos".into(),
        out: out.to_path_buf(),
        quick: false,
        image: "registry.example/overload-harness/sut:1".into(),
        redis_image: "registry.example/overload-harness/redis:1".into(),
        seeds: None,
        parallel: 10,
        reader_image: "debian:bookworm-slim".into(),
    }
}

fn seed_args(file: &str, seeds: &str, parallel: u32, out: &Path) -> K8sArgs {
    K8sArgs {
        seeds: Some(seeds.into()),
        parallel,
        quick: true,
        ..args(file, 1, out)
    }
}

/// Every YAML document of a file, through the same YAML crate the harness reads with.
fn documents(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn all(dir: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files.iter().flat_map(|f| documents(f)).collect()
}

fn find<'a>(docs: &'a [serde_json::Value], kind: &str, name: &str) -> &'a serde_json::Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn zone_failover_renders_the_split_system_and_an_indexed_agent_job() {
    let out = scratch("zf");
    k8s_to_dir(&args("zone-failover.yaml", 4, &out)).expect("renders");
    let docs = all(&out);
    assert!(docs
        .iter()
        .all(|d| d["kind"] == "Namespace" || d["metadata"]["namespace"] == "chaos"));
    find(&docs, "Namespace", "chaos");
    for v in ["before-fix", "after-fix"] {
        for z in ["az1", "az2", "az3"] {
            let d = find(&docs, "Deployment", &format!("{v}-pool-{z}"));
            let args = &d["spec"]["template"]["spec"]["containers"][0]["args"];
            assert!(args.as_array().unwrap().iter().any(|a| a == z), "{args}");
            find(&docs, "Service", &format!("{v}-pool-{z}"));
            find(&docs, "NetworkPolicy", &format!("{v}-allow-pool-{z}"));
        }
        let gw = find(&docs, "Deployment", &format!("{v}-gateway"));
        let gw_args = gw["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(
            gw_args.contains(&format!("az2=http://{v}-pool-az2:8080")),
            "{gw_args}"
        );
        find(&docs, "Service", &format!("{v}-gateway"));
        let coord = find(&docs, "Job", &format!("{v}-coordinator"));
        assert_eq!(coord["spec"]["completions"], 1);
        find(&docs, "Service", &format!("{v}-coordinator"));
        let agents = find(&docs, "Job", &format!("{v}-agents"));
        assert_eq!(agents["spec"]["completionMode"], "Indexed");
        assert_eq!(agents["spec"]["completions"], 4);
        assert_eq!(agents["spec"]["parallelism"], 4);
        let a = agents["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(a.contains("agent") && a.contains(&format!("http://{v}-coordinator:7070")));
    }
    // No Redis: zone-failover's cache is in memory.
    assert!(!docs.iter().any(|d| d["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n.ends_with("-redis"))));
    // Deny everything, then one allow policy per pod group within the namespace.
    let deny = find(&docs, "NetworkPolicy", "default-deny");
    assert_eq!(
        deny["spec"]["podSelector"],
        serde_json::json!({"matchLabels": {}})
    );
    assert!(deny["spec"].get("ingress").is_none() && deny["spec"].get("egress").is_none());
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("kubectl apply -f 10-before-fix-system.yaml"));
    assert!(readme.contains("not"), "says what was not run");
    // The system configuration the pods read is the variant's own.
    let cm = find(&docs, "ConfigMap", "harness-config");
    let after: serde_json::Value =
        serde_json::from_str(cm["data"]["system-after-fix.json"].as_str().unwrap()).unwrap();
    assert_eq!(after["pool"]["cancel_queued_on_deadline"], true);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_redis_cache_gets_its_deployment_and_the_url_of_its_service() {
    let out = scratch("redis");
    // zone-failover with its cache in a Redis the harness starts.
    let text = std::fs::read_to_string(experiment("zone-failover.yaml"))
        .unwrap()
        .replace(
            "cache: { capacity: 1000000, on_full: error }",
            "cache: { capacity: 1000000, on_full: error, backend: { redis: { maxmemory_mb: 8, policy: allkeys_random } } }",
        );
    assert!(
        text.contains("backend: { redis"),
        "the experiment changed; update this test"
    );
    std::fs::create_dir_all(&out).unwrap();
    let file = out.join("zone-failover-redis.yaml");
    std::fs::write(&file, text).unwrap();
    let mut a = args("zone-failover.yaml", 2, &out.join("k8s"));
    a.experiment = file;
    k8s_to_dir(&a).expect("renders");
    let docs = all(&out.join("k8s"));
    let cm = find(&docs, "ConfigMap", "harness-config");
    for v in ["before-fix", "after-fix"] {
        let redis = find(&docs, "Deployment", &format!("{v}-redis"));
        let c = &redis["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "registry.example/overload-harness/redis:1");
        assert!(
            c["args"].to_string().contains("allkeys-random"),
            "{}",
            c["args"]
        );
        find(&docs, "Service", &format!("{v}-redis"));
        find(&docs, "NetworkPolicy", &format!("{v}-allow-redis"));
        let system = cm["data"][format!("system-{v}.json")].as_str().unwrap();
        assert!(
            system.contains(&format!("redis://{v}-redis:6379")),
            "{system}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_names_and_agent_counts_are_refused() {
    let out = scratch("bad");
    let mut a = args("zone-failover.yaml", 4, &out);
    a.namespace = "Chaos_NS".into();
    let e = k8s_to_dir(&a).expect_err("refused").to_string();
    assert!(
        e.contains("Chaos_NS") && e.contains("Kubernetes name"),
        "{e}"
    );
    let mut a = args("zone-failover.yaml", 0, &out);
    a.namespace = "chaos".into();
    let e = k8s_to_dir(&a).expect_err("refused").to_string();
    assert!(e.contains("--agents"), "{e}");
    // The image carries no Prometheus: an experiment with alerts: is refused, not half-rendered.
    let e = k8s_to_dir(&args("retry-storm.yaml", 2, &out))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("alerts:") && e.contains("Prometheus"), "{e}");
    assert!(!out.exists(), "nothing written for refused input");
}

/// The validator's command line: on PATH, else the Python module.
fn validator() -> Option<Command> {
    for (program, pre) in [
        ("kubernetes-validate", vec![]),
        ("python3", vec!["-m", "kubernetes_validate"]),
    ] {
        let ok = Command::new(program)
            .args(&pre)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            let mut c = Command::new(program);
            c.args(pre);
            return Some(c);
        }
    }
    None
}

fn validate(dir: &Path) -> (bool, String) {
    let mut c = validator().expect("checked");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let o = c
        .args(["-k", K8S_VERSION, "--strict", "--quiet"])
        .args(&files)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn the_manifests_pass_kubernetes_validate_and_a_broken_one_does_not() {
    if validator().is_none() {
        if std::env::var("HARNESS_REQUIRE_KUBERNETES_VALIDATE").is_ok_and(|v| v == "1") {
            panic!("HARNESS_REQUIRE_KUBERNETES_VALIDATE=1 but kubernetes-validate is not installed (pip install kubernetes-validate)");
        }
        println!("SKIPPED: kubernetes-validate not installed (pip install kubernetes-validate)");
        return;
    }
    for (file, agents) in [("zone-failover.yaml", 4), ("cache-flush.yaml", 3)] {
        let out = scratch(&format!("v-{file}"));
        k8s_to_dir(&args(file, agents, &out)).expect("renders");
        let (ok, text) = validate(&out);
        assert!(ok, "{file}: {text}");
        let _ = std::fs::remove_dir_all(&out);
    }
    let out = scratch("v-seeds");
    k8s_to_dir(&seed_args("zone-failover.yaml", "1..20", 5, &out)).expect("renders");
    let (ok, text) = validate(&out);
    assert!(ok, "--seeds: {text}");
    let _ = std::fs::remove_dir_all(&out);
    // The check can fail: an Indexed Job with a misspelt field is refused.
    let out = scratch("broken");
    k8s_to_dir(&args("zone-failover.yaml", 4, &out)).expect("renders");
    let run = out.join("20-before-fix-run.yaml");
    let text = std::fs::read_to_string(&run).unwrap();
    std::fs::write(&run, text.replace("completionMode:", "completionModes:")).unwrap();
    let (ok, text) = validate(&out);
    assert!(!ok, "a misspelt field passed: {text}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn seeds_render_one_indexed_job_per_variant_whose_index_picks_the_seed() {
    let out = scratch("seeds");
    k8s_to_dir(&seed_args("zone-failover.yaml", "1..20", 5, &out)).expect("renders");
    let docs = all(&out);
    for v in ["before-fix", "after-fix"] {
        let job = find(&docs, "Job", &format!("{v}-seeds"));
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], 20);
        assert_eq!(spec["parallelism"], 5);
        // Each index is a run of its own: one that exits 1 ends only itself.
        assert_eq!(spec["backoffLimitPerIndex"], 0);
        assert!(spec.get("backoffLimit").is_none(), "{spec}");
        let pod = &spec["template"]["spec"];
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        for want in [v, "--seeds", "1..20", "embedded", "--quick"] {
            assert!(args.contains(&want), "{want} not in {args:?}");
        }
        assert!(
            !args.contains(&"--seed-index"),
            "the index comes from the pod: {args:?}"
        );
        assert_eq!(
            pod["volumes"][1]["persistentVolumeClaim"]["claimName"],
            "harness-reports"
        );
    }
    // A self-contained run per pod: no system Deployments, no agents, no coordinator.
    assert!(docs.iter().all(|d| d["kind"] != "Deployment"));
    let claim = find(&docs, "PersistentVolumeClaim", "harness-reports");
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteMany");
    find(&docs, "Pod", "reports-reader");
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("harness campaign merge"), "{readme}");
    let _ = std::fs::remove_dir_all(&out);
    // Agents and bad seed lists are refused before anything is written.
    let mut a = seed_args("zone-failover.yaml", "1..20", 5, &out);
    a.agents = 2;
    let e = k8s_to_dir(&a).expect_err("refused").to_string();
    assert!(e.contains("--agents 2"), "{e}");
    let e = k8s_to_dir(&seed_args("zone-failover.yaml", "5..1", 5, &out))
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("--seeds") && e.contains("before the first"),
        "{e}"
    );
    assert!(!out.exists(), "nothing written for refused input");
}

/// A pod's run finds its seed from its index; a bad index is refused before
/// anything runs (nothing is written).
#[test]
fn a_run_refuses_a_seed_index_outside_its_seeds() {
    let out = scratch("seed-index");
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_harness"))
            .arg(experiment("zone-failover.yaml"))
            .args(["--quick", "--seeds", "1..3", "--out"])
            .arg(&out)
            .args(extra)
            .env_remove("JOB_COMPLETION_INDEX")
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, err) = run(&["--seed-index", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("past the 3 seeds"), "{err}");
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--seed-index or $JOB_COMPLETION_INDEX"),
        "{err}"
    );
    let (code, err) = run(&["--seed", "4", "--seed-index", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
    assert!(!out.exists(), "nothing written for refused input");
}
