//! `--environment` moves this project's system between embedded and
//! containers; an external target or the user's own processes are the
//! file's. `--help` lists only what the option takes, and `external` is
//! refused before anything runs, saying where it is set.

use std::process::Command;

fn harness(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn help_lists_only_the_switchable_environments() {
    let (code, help) = harness(&["--help"]);
    assert_eq!(code, Some(0), "{help}");
    let at = help
        .find("--environment <ENVIRONMENT>")
        .expect("documented");
    let values = &help[at..help[at..].find("\n      --").map_or(help.len(), |e| at + e)];
    assert!(values.contains("- embedded:"), "{values}");
    assert!(values.contains("- containers:"), "{values}");
    assert!(!values.contains("- external:"), "{values}");
    assert!(!values.contains("- processes:"), "{values}");
}

#[test]
fn external_and_processes_say_where_they_are_set() {
    let dir = std::env::temp_dir().join(format!("harness-env-option-{}", std::process::id()));
    let reports = dir.join("reports").display().to_string();
    for (kind, key) in [("external", "target:"), ("processes", "system.processes")] {
        let (code, text) = harness(&[
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../experiments/retry-storm.yaml"
            ),
            "--environment",
            kind,
            "--out",
            &reports,
        ]);
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("set in the experiment file"), "{text}");
        assert!(text.contains(key), "{text}");
        assert!(!dir.join("reports").exists(), "nothing ran");
    }
}
