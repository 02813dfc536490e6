//! `workload.http` against a service that is not this project's: Python's
//! own `http.server`, started from its command, with no admin API and no
//! `/metrics`. A run reaches a verdict on what the clients saw, checks
//! each answer's body, accounts for every request, and says which of the
//! report's figures do not apply. Bad input gets located errors.

mod common;

use harness::experiment::parse;

const HTTP: &str = r#"name: h
duration: 10s
environment: external
target: { url: "http://127.0.0.1:9" }
workload:
  arrival: { constant: { rate: 10 } }
  http:
    keys: { size: 20 }
    classes:
      - { name: read, share: 9, path: "/items/{key}", check: { json_pointer: { pointer: /key, equals: "{key}" } } }
      - { name: write, share: 1, method: POST, path: /w, body: { bytes: { fixed: 100 } } }
    success: { status: [200] }
  client: { timeout: 1s, retry: { max_attempts: 2 } }
variants:
  a: {}
"#;

fn broken(from: &str, to: &str) -> harness::experiment::ExperimentError {
    assert_eq!(HTTP.matches(from).count(), 1, "{from:?} must occur once");
    parse(&HTTP.replace(from, to), "exp.yaml", false).expect_err(&format!("should fail: {to}"))
}

#[test]
fn the_generic_workload_validates() {
    let e = parse(HTTP, "exp.yaml", false).unwrap();
    let h = e.workload.http.as_ref().unwrap();
    assert_eq!(h.classes.len(), 2);
    assert_eq!(h.success.retry_later, vec![429, 503]);
}

/// A burst of one class's requests is the generic workload's own trigger.
#[test]
fn a_burst_of_requests_is_a_trigger_of_a_named_class() {
    let burst = |class: &str| {
        HTTP.replace(
            "variants:",
            &format!("timeline:\n  - {{ at: 8s, fault: {{ requests: {{ class: {class}, count: 20, spread: 1s }} }} }}\nvariants:"),
        )
    };
    let e = parse(&burst("write"), "exp.yaml", false).unwrap();
    let t = &e.timeline[0];
    assert!(t.trigger && t.label.contains("x20 write requests"), "{t:?}");
    let err = parse(&burst("nope"), "exp.yaml", false).unwrap_err();
    assert_eq!(
        (err.line, err.field.as_str()),
        (15, "timeline[0].requests.class")
    );
    assert!(err.message.contains("read, write"), "{err}");
    // Documents have no classes.
    let docs = burst("write").replace(
        "  http:\n",
        "  documents: { pages: { fixed: 1 }, tenants: 1 }\n  ignored:\n",
    );
    assert!(parse(&docs, "exp.yaml", false).is_err());
}

#[test]
fn bad_generic_workloads_are_located() {
    let e = broken("status: [200]", "status: []");
    assert_eq!(
        (e.line, e.field.as_str()),
        (12, "workload.http.success.status")
    );
    assert!(e.message.contains("is empty"), "{e}");
    let e = broken("equals: \"{key}\"", "equals: \"{kye}\"");
    assert_eq!(e.line, 10);
    assert_eq!(
        e.field,
        "workload.http.classes[0].check.json_pointer.equals"
    );
    assert!(e.message.contains("{kye} is not a variable"), "{e}");
    let e = broken("path: /w", "path: \"/w/{nope}\"");
    assert_eq!(e.field, "workload.http.classes[1].path");
    let e = broken("method: POST", "method: \"PO ST\"");
    assert_eq!(e.field, "workload.http.classes[1].method");
    let e = broken("share: 9", "share: 0");
    assert_eq!(e.field, "workload.http.classes[0].share");
    let e = broken("environment: external", "environment: embedded");
    assert!(e.message.contains("service of your own"), "{e}");
    let e = broken("127.0.0.1:9", "example.com:80");
    assert_eq!(e.field, "target.url");
    let e = broken("variants:", "timeline:\n  - { at: 9s, fault: { oversized_documents: { tenant: t1, count: 5, min_pages: 10, max_pages: 20 } } }\nvariants:");
    assert_eq!((e.line, e.field.as_str()), (15, "timeline[0]"), "{e}");
    let e = broken(
        "  http:",
        "  documents: { pages: { fixed: 1 }, tenants: 1 }\n  http:",
    );
    assert!(e.message.contains("not both"), "{e}");
}

/// The site Python's `http.server` serves: `/items/K` answers
/// `{"key": K}` (K < 20), but for key 13, whose answer is wrong on purpose.
fn site(dir: &std::path::Path) -> std::path::PathBuf {
    let items = dir.join("site/items");
    std::fs::create_dir_all(&items).unwrap();
    for k in 0..20 {
        let key = if k == 13 { 31 } else { k };
        std::fs::write(items.join(k.to_string()), format!("{{\"key\": {key}}}")).unwrap();
    }
    dir.join("site")
}

/// The acceptance case of issue 47: a service that is not this project's,
/// started by the harness from its command, with no admin API and no
/// `/metrics`, is driven, checked, judged and accounted for.
#[test]
fn a_service_that_is_not_ours_is_driven_checked_and_judged() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no python3 to serve the site");
        return;
    }
    let dir = common::scratch("http-workload");
    let site = site(&dir);
    let exp = dir.join("h.yaml");
    let text = HTTP
        .replace(
            "environment: external\ntarget: { url: \"http://127.0.0.1:9\" }",
            &format!(
                "environment: processes\nsystem:\n  processes:\n    web: {{ command: [python3, -m, http.server, --bind, 127.0.0.1, \"{{port}}\"], cwd: {} }}",
                site.display()
            ),
        )
        .replace("duration: 10s", "duration: 8s\nanalysis: { warmup: 1s, min_baseline: 2s }");
    std::fs::write(&exp, text).unwrap();
    let out = common::harness_run(&exp, &dir.join("reports"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{stderr}"
    );
    let run: run_report::RunData =
        serde_json::from_slice(&std::fs::read(dir.join("reports/h/latest/run.json")).unwrap())
            .unwrap();
    let v = &run.variants[0];
    let i = &v.integrity;
    assert!(i.submitted > 40, "{i:?}");
    assert!(i.accounted(), "every request accounted for: {i:?}");
    // http.server answers a POST with 501: the write class fails, visibly.
    assert!(i.given_up > 0, "{i:?}");
    // Reads of key 13 answer another key: incorrect, with an example.
    assert!(i.results_checked > 0 && i.incorrect_results > 0, "{i:?}");
    assert!(
        i.incorrect_examples
            .iter()
            .all(|e| e.contains("(read)") && e.contains("expected \"13\"")),
        "{i:?}"
    );
    assert!(
        v.unmeasured
            .values()
            .any(|why| why.starts_with("not applicable")),
        "{:?}",
        v.unmeasured
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("reports/h/latest/summary.json")).unwrap())
            .unwrap();
    assert!(
        summary["variants"][0]["verdict"]["verdict"].is_string(),
        "{summary}"
    );
    // Nothing of the service is left running (an orphan would be init's
    // child, so look for any process serving the test's site).
    let site = site.canonicalize().unwrap();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == site))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "processes left serving {}: {left:?}",
        site.display()
    );
}
