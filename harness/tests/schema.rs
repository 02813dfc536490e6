//! The experiment file's JSON Schema: the committed copy is what `harness
//! schema` prints (so it cannot drift from the parser), every shipped
//! experiment names it, and a standard validator (`check-jsonschema`, PyPI)
//! accepts every shipped experiment and refuses an unknown key.
//!
//! The validator part prints SKIPPED without `check-jsonschema`, unless
//! `HARNESS_REQUIRE_CHECK_JSONSCHEMA=1` (as in `.ci/run`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn experiments() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    files
}

#[test]
fn the_committed_schema_is_what_harness_schema_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("schema")
        .output()
        .unwrap();
    assert!(out.status.success());
    let committed = std::fs::read_to_string(root().join(harness::experiment::schema::COMMITTED))
        .expect("the committed schema");
    assert!(
        committed == String::from_utf8_lossy(&out.stdout),
        "experiments/experiment.schema.json is stale: run `harness schema > experiments/experiment.schema.json`"
    );
}

#[test]
fn every_shipped_experiment_names_the_schema() {
    for f in experiments() {
        let first = std::fs::read_to_string(&f).unwrap();
        let first = first.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            "# yaml-language-server: $schema=experiment.schema.json",
            "{}",
            f.display()
        );
    }
}

fn check_jsonschema() -> Option<Command> {
    let ok = Command::new("check-jsonschema")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| Command::new("check-jsonschema"))
}

#[test]
fn check_jsonschema_accepts_the_experiments_and_refuses_an_unknown_key() {
    let Some(mut check) = check_jsonschema() else {
        if std::env::var("HARNESS_REQUIRE_CHECK_JSONSCHEMA").is_ok_and(|v| v == "1") {
            panic!("HARNESS_REQUIRE_CHECK_JSONSCHEMA=1 but check-jsonschema is not installed (pip install check-jsonschema)");
        }
        println!("SKIPPED: check-jsonschema not installed (pip install check-jsonschema)");
        return;
    };
    let schema = root().join(harness::experiment::schema::COMMITTED);
    let o = check
        .arg("--schemafile")
        .arg(&schema)
        .args(experiments())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // The check can fail: a misspelt key deep in the system's configuration.
    let text = std::fs::read_to_string(root().join("experiments/queue-overflow.yaml")).unwrap();
    let bad = text.replacen("  zones:", "  zones_typo: 1\n  zones:", 1);
    assert_ne!(bad, text);
    let file = std::env::temp_dir().join(format!("schema-bad-{}.yaml", std::process::id()));
    std::fs::write(&file, bad).unwrap();
    let o = Command::new("check-jsonschema")
        .arg("--schemafile")
        .arg(&schema)
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "an unknown key passed: {said}");
    assert!(said.contains("zones_typo"), "{said}");
}
