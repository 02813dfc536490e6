//! End to end: a synthetic two-variant run through `analyse` and
//! `write_report` into a temporary directory; every file checked, the PNGs
//! decoded, and the page rendered by headless Chromium when it is installed.

mod fixture;

use run_report::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("run-report-{tag}-{}-{nanos}", std::process::id()))
}

/// Width, height and the share of non-white pixels of a PNG.
fn decode_png(path: &Path) -> (u32, u32, f64, usize) {
    let file = std::fs::File::open(path).expect("open png");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png data");
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let mut non_white = 0usize;
    let mut colors = std::collections::HashSet::new();
    for p in pixels.chunks(px) {
        if p.iter().take(3).any(|&c| c < 245) {
            non_white += 1;
        }
        if colors.len() < 1000 {
            colors.insert(p.to_vec());
        }
    }
    let total = (info.width * info.height) as f64;
    (
        info.width,
        info.height,
        non_white as f64 / total,
        colors.len(),
    )
}

#[test]
fn writes_a_complete_report() {
    let run = fixture::synthetic_run(true);
    let analysis = analyse(&run);
    // RUN_REPORT_TEST_OUT=<dir> keeps the report there for a look.
    let keep = std::env::var_os("RUN_REPORT_TEST_OUT").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| temp_dir("full"));
    let t0 = Instant::now();
    let written = write_report(&dir, &run, &analysis).expect("report written");
    eprintln!("write_report took {:?}", t0.elapsed());

    for rel in [
        "index.html",
        "summary.json",
        "timeseries.csv",
        "junit.xml",
        "charts/waves.svg",
        "charts/waves.png",
        "charts/latency.svg",
        "charts/latency.png",
    ] {
        let p = dir.join(rel);
        assert!(written.contains(&p), "{rel} not reported as written");
        assert!(
            std::fs::metadata(&p).map(|m| m.len() > 0).unwrap_or(false),
            "{rel} missing or empty"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind");

    // Verdicts.
    let before = analysis.variant("before-fix").unwrap();
    let after = analysis.variant("after-fix").unwrap();
    assert_eq!(before.verdict.class(), "metastable");
    assert_eq!(after.verdict.recovered_after_s(), Some(3.0));
    assert_eq!(
        analysis.expectations.iter().filter(|e| !e.passed).count(),
        1,
        "{:#?}",
        analysis.expectations
    );
    assert!(!analysis.all_passed);
    assert_eq!(analysis.fidelity.len(), 1);

    // HTML: self-contained, with verdicts, expectation rows and the fallback banner.
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("METASTABLE"));
    assert!(html.contains("recovered 3 s after the residue (degraded"));
    assert!(html.contains("<code>failure_ratio_mean[40s..60s]</code>"));
    assert!(html.contains("<code>zone_failure_ratio_peak{az2}</code>"));
    assert_eq!(html.matches("<span class=\"pass\">PASS</span>").count(), 5);
    assert_eq!(html.matches("<span class=\"fail\">FAIL</span>").count(), 1);
    assert!(html.contains("id=\"gpu-fallback\""));
    assert!(html.contains("GPU FALLBACK"));
    assert!(html.contains("Fidelity to the incident"));
    // Detection: the fixture's leading rule fires at 17 s, before the storm's
    // failures at 20 s; the late one never fires; the fixed system is quiet.
    assert!(html.contains("<section id=\"detection\">"));
    assert!(html.contains("<code>RetryDuplication</code>"));
    assert!(
        html.contains("+3 s</span> (before customers)"),
        "lead time shown"
    );
    assert!(html.contains("missed</span> (never fired)"));
    assert!(html.contains("Alerts fired: <b>0</b> of 2"));
    let m = &analysis.variant("before-fix").unwrap().metrics;
    assert_eq!(
        m.labelled(Metric::AlertLeadS, "RetryDuplication"),
        Some(3.0)
    );
    assert_eq!(m.get(Metric::AlertsFired), Some(1.0));
    assert!(
        html.contains("&lt;b&gt;not bold&lt;/b&gt;"),
        "YAML is escaped"
    );
    assert!(html.contains("&lt;script&gt;"), "event details are escaped");
    assert!(!html.contains("<script"), "no script");
    assert!(
        !html.contains("src=\"http") && !html.contains("<link"),
        "no external resource"
    );
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 2);
    // The harness-cost panel, with the red note for the overloaded variant only.
    assert!(html.contains("<section id=\"harness-cost\">"));
    assert_eq!(html.matches("id=\"harness-cost-warning\"").count(), 1);
    assert!(html.contains("HARNESS COST in before-fix"));
    assert!(html.contains("the harness used 33% of the machine"));
    assert!(html.contains("lag p99 12.0 ms"));

    // summary.json.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["schema_version"], 4);
    assert_eq!(summary["variants"][0]["verdict"]["verdict"], "metastable");
    // The sustaining effect is named against the baseline, in the JSON and the page.
    let named = summary["variants"][0]["verdict"]["sustaining"]["named"]
        .as_array()
        .unwrap();
    assert!(
        named.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("retries: 16.0 attempts per new document")),
        "{named:?}"
    );
    assert!(html.contains("Sustaining effect"));
    assert_eq!(summary["variants"][0]["triggers"][0]["residue_end_s"], 30.0);
    assert_eq!(summary["variants"][1]["last_residue_end_s"], 30.0);
    assert_eq!(summary["variants"][1]["verdict"]["after_s"], 3.0);
    assert!(summary["variants"][0]["metrics"]["time_to_recover_s"].is_null());
    assert!(
        summary["variants"][0]["metrics"]["zone_zombie_work{az2}"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(summary["expectations"].as_array().unwrap().len(), 6);
    assert_eq!(
        summary["expectations"][3]["metric"],
        "failure_ratio_mean[40s..60s]"
    );
    assert_eq!(summary["all_passed"], false);
    let cost = &summary["variants"][0]["harness_cost"];
    assert_eq!(cost["delivered_as_planned"], false);
    assert!((cost["machine_share"].as_f64().unwrap() - 40.0 / 120.0).abs() < 1e-9);
    assert_eq!(cost["warnings"].as_array().unwrap().len(), 4);
    assert_eq!(
        summary["variants"][1]["harness_cost"]["warnings"],
        serde_json::json!([])
    );

    // CSV: header + one row per (variant, second).
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 120);
    assert!(csv.lines().next().unwrap().contains("zone_az2_zombie_work"));

    // JUnit.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuite name=\"retry-storm-demo\" tests=\"8\" failures=\"1\""));
    assert!(junit
        .contains("classname=\"retry-storm-demo.after-fix\" name=\"amplification_peak &lt; 1.5\""));
    assert!(junit.contains("name=\"integrity\""));
    assert_eq!(junit.matches("<failure ").count(), 1);

    // PNGs: right width, not blank.
    for name in ["waves", "latency"] {
        let (w, h, ink, colors) = decode_png(&dir.join(format!("charts/{name}.png")));
        eprintln!(
            "{name}.png: {w}x{h}, {:.1} % ink, {colors} colours",
            ink * 100.0
        );
        assert_eq!(w, 1400);
        assert!(h >= 600);
        assert!(ink > 0.02, "{name}.png looks blank");
        assert!(colors > 20, "{name}.png has too few colours to be a chart");
    }
    let svg = std::fs::read_to_string(dir.join("charts/waves.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("oversized t7 x3"));

    chromium_screenshot(&dir);
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Render index.html with headless Chromium when it is installed.
fn chromium_screenshot(dir: &Path) {
    let required = std::env::var("HARNESS_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
    let shot = dir.join("screenshot.png");
    let profile = temp_dir("chromium-profile");
    let index = std::fs::canonicalize(dir.join("index.html")).unwrap();
    let mut child = None;
    for exe in ["chromium", "chromium-browser", "google-chrome"] {
        let spawned = Command::new(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--window-size=1440,2400",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", index.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(c) => {
                child = Some(c);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("starting {exe}: {e}"),
        }
    }
    let Some(mut child) = child else {
        assert!(
            !required,
            "HARNESS_REQUIRE_CHROMIUM=1 but chromium is not installed"
        );
        eprintln!("SKIPPED: chromium not installed");
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = std::fs::remove_dir_all(&profile);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 0, "chromium ({status}) produced no screenshot");
    let (w, _, ink, _) = decode_png(&shot);
    eprintln!(
        "chromium screenshot: {size} bytes, {w} px wide, {:.1} % ink",
        ink * 100.0
    );
    assert!(ink > 0.01, "chromium screenshot is blank");
}

#[test]
fn odd_data_does_not_panic() {
    // No variant at all.
    let empty = RunData::default();
    let a = analyse(&empty);
    assert!(a.all_passed);
    let dir = temp_dir("empty");
    write_report(&dir, &empty, &a).expect("empty report");
    let _ = std::fs::remove_dir_all(&dir);

    // Variants with no seconds, NaN everywhere, an expectation on a missing variant,
    // an interrupted variant and broken integrity.
    let mut run = fixture::synthetic_run(false);
    run.variants[0].seconds.clear();
    run.variants[0].interrupted = true;
    run.variants[0].interrupted_reason = Some("Ctrl-C".into());
    run.variants[0].integrity.incorrect_results = 2;
    run.variants[0].integrity.incorrect_examples = vec!["doc 17 page 3: \u{1}bad".into()];
    for s in &mut run.variants[1].seconds {
        s.p99_ms = f64::NAN;
        s.slots_busy = f64::INFINITY;
        s.p50_ms = -1.0;
    }
    run.variants[1].latency = LatencySummary {
        p99_ms: f64::NAN,
        ..LatencySummary::default()
    };
    run.variants[1].events.push(TimelineEvent {
        at_s: f64::NAN,
        end_s: Some(f64::INFINITY),
        kind: EventKind::Fault,
        label: "weird\u{7}".into(),
        ok: false,
        detail: String::new(),
    });
    run.expectations.push(ExpectationSpec {
        variant: "nope".into(),
        metric: Metric::Waves,
        zone: None,
        window: None,
        op: CompareOp::Ge,
        value: 1.0,
        source: ">= 1".into(),
        classes: Vec::new(),
    });
    run.analysis.wave_threshold = f64::NAN;
    let a = analyse(&run);
    assert!(!a.all_passed);
    let missing = a.expectations.last().unwrap();
    assert!(!missing.passed && missing.measured.is_none());
    assert!(
        missing.message.contains("not in this run"),
        "{}",
        missing.message
    );
    let dir = temp_dir("odd");
    write_report(&dir, &run, &a).expect("odd report");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("VARIANT INTERRUPTED"));
    assert!(html.contains("INTEGRITY FAILED"));
    assert!(!html.contains("id=\"gpu-fallback\""));
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        !junit.contains('\u{1}'),
        "control characters are not valid XML"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tiny_sizes_are_raised_not_panicking() {
    let run = fixture::synthetic_run(false);
    let a = analyse(&run);
    let png = wave_chart_png(&run, &a, 10, 10).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let svg = latency_chart_svg(&run, &a, 0, 0).unwrap();
    assert!(svg.contains("<svg"));
}

#[test]
fn a_ten_minute_run_renders() {
    // A 10-minute run: the 60-s pattern repeated.
    let mut run = fixture::synthetic_run(false);
    for v in &mut run.variants {
        let base = v.seconds.clone();
        v.seconds = (0..600u32)
            .map(|t| Second {
                t,
                ..base[(t % 60) as usize].clone()
            })
            .collect();
    }
    let a = analyse(&run);
    // Speed is measured by `harness bench`, not here: this checks the charts
    // of a long run draw at their natural size (600 seconds per panel).
    let (w, h) = wave_chart_size(&run);
    assert!(!wave_chart_png(&run, &a, w, h).unwrap().is_empty());
    let (w, h) = latency_chart_size(&run);
    assert!(!latency_chart_png(&run, &a, w, h).unwrap().is_empty());
}

/// A virtual-clock run records the epoch as its start (it replays byte for
/// byte); its page and charts name it as a virtual-clock run, never as a
/// run of 1 January 1970.
#[test]
fn a_virtual_run_is_not_dated_1970() {
    let mut run = fixture::synthetic_run(false);
    run.clock = run_report::RunClock::Virtual;
    run.run_id = "19700101T000000Z-seed42".into();
    run.started_at = "1970-01-01T00:00:00+00:00".into();
    let dir = temp_dir("virtual");
    write_report(&dir, &run, &analyse(&run)).expect("report written");
    for rel in ["index.html", "charts/waves.svg"] {
        let text = std::fs::read_to_string(dir.join(rel)).unwrap();
        assert!(!text.contains("19700101"), "{rel} dated by the epoch");
        assert!(!text.contains("1970-01-01"), "{rel} dated by the epoch");
        assert!(text.contains("virtual-clock run"), "{rel} names the clock");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run recorded before `attempts_per_document` had its name judged its
/// whole run's attempts per document as `amplification_mean`: read back, that
/// expectation is on `attempts_per_document`, with the same value.
#[test]
fn an_old_whole_run_amplification_mean_reads_as_attempts_per_document() {
    let mut run = fixture::synthetic_run(false);
    let dir = temp_dir("renamed");
    std::fs::create_dir_all(&dir).unwrap();
    let mut spec = run.expectations[0].clone();
    spec.metric = Metric::AttemptsPerDocument;
    spec.window = None;
    spec.zone = None;
    spec.op = CompareOp::Ge;
    spec.value = 0.0;
    run.expectations = vec![spec];
    let text = serde_json::to_string(&run)
        .unwrap()
        .replace("\"attempts_per_document\"", "\"amplification_mean\"");
    assert!(text.contains("\"amplification_mean\""));
    std::fs::write(dir.join("run.json"), text).unwrap();
    let back = read_run(&dir).unwrap();
    assert_eq!(back.expectations[0].metric, Metric::AttemptsPerDocument);
    let judged = analyse(&back);
    assert!(
        judged.expectations[0].passed,
        "{}",
        judged.expectations[0].message
    );
    let _ = std::fs::remove_dir_all(&dir);
}
