//! An external target with no admin API: the system under test started by
//! hand (its admin token not given to the harness), so only generic faults
//! can break it. `target.components` names its process; a `pause` freezes
//! it for 3 s and the verdict is reached on the client-side figures. At the
//! end the process runs again (not frozen) and no fault cgroup is left.
//! Needs root and cgroups; prints SKIPPED otherwise.

mod common;

fn skip_reason() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: cgroups cannot be written");
    }
    let v1 = std::path::Path::new("/sys/fs/cgroup/freezer/cgroup.procs").exists();
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    (!v1 && !v2).then_some("no cgroup freezer mounted")
}

#[test]
fn a_target_without_admin_api_is_broken_by_generic_faults_and_judged() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let dir = common::scratch("external");
    // Started by hand, as a team would: the harness gets no admin token.
    let (mut sut, port) = common::start_sut(&dir);
    let exp = dir.join("external.yaml");
    std::fs::write(
        &exp,
        format!(
            r#"name: external-generic
duration: 14s
environment: external
target:
  url: http://127.0.0.1:{port}
  components: {{ service: {{ pid: {pid} }} }}
analysis: {{ recovery_window: 2s, warmup: 1s, min_baseline: 2s }}
system: {{ executor: cpu }}
workload:
  arrival: {{ constant: {{ rate: 10 }} }}
  documents: {{ pages: {{ fixed: 1 }}, tenants: 2 }}
  client: {{ timeout: 1s, retry: {{ max_attempts: 1 }} }}
timeline:
  - {{ at: 4s, duration: 3s, fault: {{ pause: {{ component: service }} }} }}
variants:
  only: {{}}
"#,
            pid = sut.id()
        ),
    )
    .unwrap();
    let out = common::harness_run(&exp, &dir.join("reports"))
        .env("HARNESS_FAULT_DIR", dir.join("ledger"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let frozen_left = harness::env::cgroup::leftover_fault_cgroups()
        .into_iter()
        .any(|p| {
            p.display()
                .to_string()
                .contains(&format!("-service-{}", sut.id()))
        });
    let state = std::fs::read_to_string(format!("/proc/{}/stat", sut.id())).unwrap_or_default();
    let _ = sut.kill();
    let _ = sut.wait();
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("reports/external-generic/latest/summary.json")).unwrap(),
    )
    .unwrap();
    let v = &summary["variants"][0];
    let verdict = v["verdict"]["verdict"].as_str().unwrap_or("").to_string();
    // The freeze shows on the client side, and a verdict is reached on it.
    assert!(
        v["metrics"]["peak_failure_ratio"].as_f64().unwrap_or(0.0) >= 0.5,
        "the pause failed the clients: {v}"
    );
    assert!(
        ["recovered", "stable", "metastable", "overloaded"].contains(&verdict.as_str()),
        "verdict {verdict}: {v}"
    );
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("reports/external-generic/latest/run.json")).unwrap(),
    )
    .unwrap();
    let events = run["variants"][0]["events"].as_array().unwrap();
    assert!(events.iter().all(|e| e["ok"] == true), "{events:?}");
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(!frozen_left, "the fault cgroup was left");
    let after_paren = state
        .rsplit_once(')')
        .map(|(_, r)| r.trim_start())
        .unwrap_or("");
    assert!(
        !after_paren.starts_with('D') && !after_paren.starts_with('T'),
        "still frozen: {state}"
    );
}
