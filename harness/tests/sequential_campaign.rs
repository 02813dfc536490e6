//! Sequential campaigns end to end on the virtual clock (seconds, not
//! minutes): `campaign --until-settled` on queue-overflow's quick form and
//! on retry-storm's chaotic async-clients settles, or says "not settled" at
//! `--max-seeds`, and never records a decision its runs do not support; a
//! share claimed without error rates, or with bad ones, is refused by
//! validation at its place in the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("harness-seq-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("alerts")).unwrap();
    d
}

fn experiments() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments")
}

/// The shipped claims of queue-overflow.yaml's shares.
const SHIPPED: &str = ">= 90% (alpha 0.05, beta 0.1, delta 0.4)";

/// queue-overflow.yaml with each share claimed as `claim`, beside its alert
/// rules.
fn queue_overflow(dir: &Path, claim: &str) -> PathBuf {
    let text = std::fs::read_to_string(experiments().join("queue-overflow.yaml")).unwrap();
    let rules = "alerts/queue-overflow-leading.yml";
    std::fs::copy(experiments().join(rules), dir.join(rules)).unwrap();
    let file = dir.join("queue-overflow.yaml");
    let text = text.replace(&format!("\"{SHIPPED}\""), &format!("\"{claim}\""));
    std::fs::write(&file, text).unwrap();
    file
}

fn sequential(dir: &Path, file: &Path, extra: &[&str]) -> Output {
    let mut quick = vec!["--quick"];
    quick.extend(extra);
    campaign(dir, file, &quick)
}

/// `campaign FILE --until-settled` on the virtual clock, 4 at once.
fn campaign(dir: &Path, file: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("campaign")
        .arg(file)
        .args(["--until-settled", "--clock", "virtual"])
        .args(["--without-alerts", "--parallel", "4", "--out"])
        .arg(dir.join("out"))
        .args(extra)
        .env(
            "XDG_RUNTIME_DIR",
            std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into()),
        )
        .output()
        .unwrap()
}

fn campaign_json(dir: &Path) -> serde_json::Value {
    campaign_json_of(dir, "queue-overflow")
}

fn campaign_json_of(dir: &Path, experiment: &str) -> serde_json::Value {
    let path = dir.join(format!("out/{experiment}-campaign/latest/campaign.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every recorded decision is one its log-likelihood ratio reached, and a
/// claim is settled only when it is.
fn check_decisions(seq: &serde_json::Value) {
    let claims = seq["claims"].as_array().unwrap();
    assert!(claims.len() >= 3, "two share claims and the headline");
    for c in claims {
        let f = |k: &str| c[k].as_f64().unwrap();
        let (llr, upper, lower) = (f("llr"), f("upper"), f("lower"));
        match c["outcome"].as_str().unwrap() {
            "holds" => assert!(llr >= upper && c["decision"] == "accept_h1", "{c}"),
            "refuted" => assert!(llr <= lower && c["decision"] == "accept_h0", "{c}"),
            "not_settled" => assert!(llr > lower && llr < upper && c["boundary"].is_null(), "{c}"),
            other => panic!("outcome {other}"),
        }
    }
    let open = claims.iter().any(|c| c["outcome"] == "not_settled");
    assert_eq!(seq["settled"].as_bool(), Some(!open));
}

#[test]
fn a_virtual_campaign_settles_or_says_not_settled() {
    let dir = scratch("settles");
    let file = queue_overflow(&dir, ">= 90% (alpha 0.05, beta 0.1, delta 0.4)");
    let out = sequential(&dir, &file, &["--max-seeds", "12"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let j = campaign_json(&dir);
    let seq = &j["sequential"];
    check_decisions(seq);
    let time = &seq["time_to_proof"];
    let used = time["runs_used"].as_u64().unwrap();
    assert_eq!(used as usize, j["runs"].as_array().unwrap().len());
    assert!(time["wall_s"].as_f64().unwrap() > 0.0);
    assert_eq!(
        time["fixed_runs"].as_u64(),
        Some(10),
        "5 seeds x 2 variants"
    );
    if seq["settled"] == true {
        assert!(stderr.contains("time to proof"), "{stderr}");
        assert!(used < 24, "settled before --max-seeds: {used} runs");
    } else {
        assert!(stderr.contains("NOT SETTLED"), "{stderr}");
        assert!(seq["suggestion"].is_string());
    }
    let page = dir.join("out/queue-overflow-campaign/latest/campaign.html");
    let page = std::fs::read_to_string(page).unwrap();
    assert!(page.contains("Time to proof") && page.contains("boundary crossed"));
    // Exit 0 only when every claim holds and everything else passed.
    let all_hold = seq["claims"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["outcome"] == "holds");
    let passed = j["all_passed"].as_bool().unwrap();
    assert!(all_hold || !passed);
    assert_eq!(
        out.status.code(),
        Some(if passed { 0 } else { 1 }),
        "{stderr}"
    );
}

#[test]
fn too_few_seeds_end_not_settled_with_the_share_and_its_interval() {
    let dir = scratch("unsettled");
    let file = queue_overflow(&dir, ">= 90% (alpha 0.05, beta 0.1)");
    let out = sequential(&dir, &file, &["--max-seeds", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("NOT SETTLED"), "{stderr}");
    assert!(stderr.contains("--max-seeds 4"), "{stderr}");
    let j = campaign_json(&dir);
    check_decisions(&j["sequential"]);
    assert_eq!(j["sequential"]["settled"], false);
    let first = &j["sequential"]["claims"][0];
    assert_eq!(first["outcome"], "not_settled");
    assert!(
        first["message"].as_str().unwrap().contains("[16–100 %]"),
        "2 of 2 runs, with the exact interval: {first}"
    );
}

/// The edge case: retry-storm's async-clients came back in 81 of 100
/// virtual seeds (BENCHMARKS.md), so "recovered in at least 90 %, against
/// 80 %" is a close call. Within 10 seeds the campaign either decides it,
/// with a share its runs support, or says "not settled" with the share
/// seen and its interval; never a decision its runs do not support.
#[test]
fn a_chaotic_variant_is_decided_only_as_far_as_its_runs_go() {
    let dir = scratch("edge");
    let text = std::fs::read_to_string(experiments().join("retry-storm.yaml")).unwrap();
    for rules in ["retry-storm-incident.yml", "retry-storm-leading.yml"] {
        let rules = format!("alerts/{rules}");
        std::fs::copy(experiments().join(&rules), dir.join(&rules)).unwrap();
    }
    let shipped = "\n    async-clients: { \"runs with waves >= 1\": \"{SHIPPED}\" }";
    let shipped = shipped.replace("{SHIPPED}", SHIPPED);
    assert!(
        text.contains(&shipped),
        "the full form's async-clients claim"
    );
    let claim = ">= 90% (alpha 0.05, beta 0.1, delta 0.1)";
    let edge = format!("\n    async-clients: {{ \"runs with verdict recovered\": \"{claim}\" }}");
    let file = dir.join("retry-storm.yaml");
    std::fs::write(&file, text.replace(&shipped, &edge)).unwrap();
    let out = campaign(
        &dir,
        &file,
        &["--variant", "async-clients", "--max-seeds", "10"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let j = campaign_json_of(&dir, "retry-storm");
    let claims = j["sequential"]["claims"].as_array().unwrap();
    assert_eq!(
        claims.len(),
        1,
        "one variant: its share, no headline: {stderr}"
    );
    for c in claims {
        let f = |k: &str| c[k].as_f64().unwrap();
        let decided = match c["outcome"].as_str().unwrap() {
            "holds" => f("llr") >= f("upper"),
            "refuted" => f("llr") <= f("lower"),
            "not_settled" => {
                let message = c["message"].as_str().unwrap();
                assert!(message.contains(" %]"), "share and interval: {c}");
                assert!(stderr.contains("NOT SETTLED"), "{stderr}");
                f("llr") > f("lower") && f("llr") < f("upper")
            }
            other => panic!("outcome {other}"),
        };
        assert!(decided, "{c}");
    }
    let runs = j["runs"].as_array().unwrap().len();
    assert!((5..=10).contains(&runs), "{runs} runs: {stderr}");
}

#[test]
fn a_share_without_error_rates_is_refused_at_its_place() {
    let dir = scratch("refused");
    let file = queue_overflow(&dir, "100%");
    let out = sequential(&dir, &file, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("queue-overflow.yaml:35:53: campaign.expect.before-fix.runs with verdict metastable: 100 % of runs can only be refuted by a finite campaign; state the proportion and alpha/beta"),
        "{stderr}"
    );
    assert!(!dir.join("out").exists(), "nothing ran");
}

#[test]
fn error_rates_are_validated_with_located_errors() {
    let text = std::fs::read_to_string(experiments().join("queue-overflow.yaml")).unwrap();
    let parse = |claim: &str| {
        let t = text.replace(&format!("\"{SHIPPED}\""), &format!("\"{claim}\""));
        let file = experiments().join("q.yaml");
        harness::experiment::parse(&t, &file.display().to_string(), false)
    };
    let err = |claim: &str| parse(claim).unwrap_err();
    let e = err("100%");
    assert!(
        e.message.starts_with("100 % of runs can only be refuted"),
        "{e}"
    );
    let e = err(">= 90%");
    assert!(e.message.contains("state alpha/beta"), "{e}");
    let e = err("100% (alpha 0.05, beta 0.1)");
    assert!(
        e.message.starts_with("100 % of runs can only be refuted"),
        "{e}"
    );
    // The full form's `campaign:` (not the quick form's): where its claim's
    // value starts, found in the file rather than pinned to a line.
    let full = text.find("\ncampaign:").expect("a full-form campaign");
    let at = full + text[full..].find(&format!("\"{SHIPPED}\"")).unwrap();
    let line = text[..at].matches('\n').count() as u64 + 1;
    let column = (at - text[..at].rfind('\n').unwrap()) as u64;
    assert_eq!((e.line, e.column), (line, column), "{e}");
    assert!(err(">= 90% (alpha 0.05)")
        .message
        .contains("both error rates"));
    assert!(err(">= 90% (alpha 0.05, beta 0.1")
        .message
        .contains("end with `)`"));
    assert!(err(">= 90% (alpha 0.05, beta 0.1, gamma 2)")
        .message
        .contains("\"gamma\""));
    assert!(err(">= 90% (alpha 0.6, beta 0.1)")
        .message
        .contains("alpha 0.6"));
    assert!(err(">= 10% (alpha 0.05, beta 0.1)")
        .message
        .contains("smaller delta"));
    let ok = parse(">= 90 % (alpha 0.05, beta 0.1)").unwrap();
    let e = &ok.campaign.expectations[0];
    let rates = e.rates.unwrap();
    assert_eq!((rates.alpha, rates.beta, rates.delta), (0.05, 0.1, 0.2));
    assert_eq!(
        e.source,
        "runs with verdict metastable: >= 90% (alpha 0.05, beta 0.1, delta 0.2)"
    );
}
