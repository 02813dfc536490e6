//! `campaign --clock virtual --check-real N` on queue-overflow's quick form
//! (before-fix), with a virtual clock broken on purpose: this debug build's
//! `HARNESS_TEST_SKEW_VIRTUAL_GPU=10` makes the virtual GPU ten times
//! faster, so the virtual runs are stable while the real ones fall into the
//! storm. The page must say the clocks disagree, and the campaign fail.
//! Without the skew the clocks agree; the nightly (`ci/nightly.sh`) checks
//! that for every experiment the virtual clock accepts.

mod common;

fn campaign(
    dir: &std::path::Path,
    skew: Option<&str>,
) -> (std::process::Output, serde_json::Value) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.args(["campaign", "../experiments/queue-overflow.yaml", "--quick"])
        .args([
            "--clock",
            "virtual",
            "--without-alerts",
            "--variant",
            "before-fix",
        ])
        .args(["--seeds", "1..6", "--check-real", "2", "--parallel", "2"])
        .arg("--out")
        .arg(dir)
        .env("XDG_RUNTIME_DIR", common::scratch("check-real-xdg"));
    if let Some(f) = skew {
        cmd.env("HARNESS_TEST_SKEW_VIRTUAL_GPU", f);
    }
    let out = cmd.output().unwrap();
    let json = std::fs::read(dir.join("queue-overflow-campaign/latest/campaign.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_default();
    (out, json)
}

#[test]
fn a_broken_virtual_clock_is_flagged_by_real_runs() {
    // The real runs evaluate queue-overflow's alert rules.
    if let Some(why) = common::prometheus_missing() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let dir = common::scratch("check-real");
    let (out, c) = campaign(&dir, Some("10"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let check = &c["real_check"];
    assert_eq!(check["agree"], false, "{check}");
    assert_eq!(check["seeds"], serde_json::json!([1, 2]));
    let sentence = check["sentence"].as_str().unwrap_or("");
    assert!(
        sentence.contains("DISAGREE") && sentence.contains("cannot stand in"),
        "{sentence}"
    );
    assert!(stderr.contains("The clocks DISAGREE"), "{stderr}");
    let page =
        std::fs::read_to_string(dir.join("queue-overflow-campaign/latest/campaign.html")).unwrap();
    assert!(page.contains("Checked in real time") && page.contains("DISAGREE"));
    // The real runs are a campaign of their own beside the virtual one.
    assert!(dir
        .join("queue-overflow-campaign/latest/real-check/campaign.json")
        .is_file());
}
