//! `harness report DIR --with FILE` judges a recorded run against FILE: its
//! expectations, and the windowed metrics its campaign claims name, which
//! the rewritten summary.json must carry (a campaign reads each run back
//! from it; a claim added to the file would otherwise read as undefined).

use std::process::Command;

const FILE: &str = "name: t
duration: 10s
system:
  pool: { slots: 4 }
workload:
  arrival: { constant: { rate: 10 } }
  documents: { pages: { fixed: 2 }, tenants: 2 }
  client: { timeout: 1s, retry: { max_attempts: 2 } }
timeline:
  - { at: 1s, fault: { cache_fill: { entries: 10 } }, trigger: false }
variants:
  a: {}
";

fn harness(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: {err}");
    err
}

#[test]
fn a_campaign_claim_added_to_the_file_is_measured_when_judged_again() {
    let dir = std::env::temp_dir().join(format!("harness-report-with-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (file, with) = (dir.join("t.yaml"), dir.join("with.yaml"));
    std::fs::write(&file, FILE).unwrap();
    let claim =
        "campaign:\n  expect:\n    a: { \"median failure_ratio_mean[4s..8s]\": \"<= 1\" }\n";
    std::fs::write(&with, format!("{FILE}{claim}")).unwrap();
    let out = dir.join("out");
    harness(&[
        file.as_os_str(),
        "--clock".as_ref(),
        "virtual".as_ref(),
        "--quiet".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let run = out.join("t").join("latest");
    let key = "failure_ratio_mean[4s..8s]";
    let summary = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
    };
    assert!(
        summary()["variants"][0]["metrics"].get(key).is_none(),
        "the run's own file names no such claim"
    );
    harness(&[
        "report".as_ref(),
        run.as_os_str(),
        "--with".as_ref(),
        with.as_os_str(),
        "--quiet".as_ref(),
    ]);
    let value = &summary()["variants"][0]["metrics"][key];
    assert!(
        value.is_number(),
        "{key} measured when judged again: {value}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
