//! A tiny experiment end to end in the embedded environment: two variants,
//! the report files, the integrity ledger; and the load path's promise that
//! no request reaches a system after its variant's load has returned.

use harness::base::interrupt::StopSignal;
use harness::experiment::parse;
use harness::run::{self, RunOptions};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const TINY: &str = r#"name: tiny
duration: 4s
quick: { duration: 3s }
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system:
  executor: cpu
  pool: { slots: 4, deadline: 300ms, dedup: abandoned_deadline_holds_slot }
  gpu: { lanes: 2, page_time: 5ms }
  page: { words: 64, rounds: 2 }
  cache: { capacity: 50, on_full: ack_and_drop, drop_ratio: 1.0 }
workload:
  arrival: { constant: { rate: 20 } }
  documents: { pages: { uniform: { min: 1, max: 4 } }, tenants: 2 }
  client: { timeout: 500ms, retry: { max_attempts: 2, backoff: { fixed: { delay: 50ms } } } }
timeline:
  - { at: 0s, fault: cache_fill_to_limit, trigger: false }
  - { at: 1s, fault: { oversized_documents: { tenant: t2, count: 1, min_pages: 60, max_pages: 60 } } }
variants:
  before-fix: {}
  after-fix: { system: { pool: { dedup: wait_without_slot }, cache: { on_full: error } } }
expect:
  before-fix: { incorrect_results: 0, unaccounted_documents: 0 }
  after-fix: { incorrect_results: 0, unaccounted_documents: 0, cache_writes_lost: 0 }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_experiment_two_variants_with_report_and_integrity() {
    let exp = parse(TINY, "tiny.yaml", false).unwrap();
    let out = std::env::temp_dir().join(format!("harness-e2e-{}", std::process::id()));
    let opts = RunOptions {
        out_dir: out.clone(),
        quiet: true,
        variant: None,
        ..RunOptions::default()
    };
    let o = run::run(&exp, &opts, Arc::new(StopSignal::default()))
        .await
        .unwrap();
    assert_eq!(o.run.variants.len(), 2);
    for v in &o.run.variants {
        let i = &v.integrity;
        assert!(i.submitted >= 50, "{}: {i:?}", v.name);
        assert!(
            i.accounted(),
            "{}: every document accounted for: {i:?}",
            v.name
        );
        assert_eq!(i.incorrect_results, 0);
        assert_eq!(i.results_checked, i.completed, "every 200 was checked");
        assert!(!v.seconds.is_empty());
        assert!(v.events.iter().all(|e| e.ok), "{:?}", v.events);
    }
    let before = &o.run.variants[0];
    assert!(
        before.system_totals["sut_cache_writes_lost_total"] > 0.0,
        "lossy cache lost writes"
    );
    for f in [
        "index.html",
        "summary.json",
        "timeseries.csv",
        "junit.xml",
        "charts/waves.png",
        "charts/waves.svg",
    ] {
        assert!(o.report_dir.join(f).is_file(), "{f} written");
    }
    // The oversized document's residue was measured on the system's side:
    // its journey ended and its pages were computed once, well inside the run.
    for v in &o.run.variants {
        let t = &v.triggers[0];
        let end = t
            .residue_end_s
            .unwrap_or_else(|| panic!("{}: {t:?}", v.name));
        assert!(end >= t.start_s && end < 4.0, "{}: {t:?}", v.name);
        assert!(t.residue.starts_with("1 document ("), "{}: {t:?}", v.name);
    }
    // run.json holds the recorded run: judged again, it gives the same verdicts.
    let again = run_report::analyse(&run_report::read_run(&o.report_dir).unwrap());
    for (a, b) in again.variants.iter().zip(&o.analysis.variants) {
        assert_eq!(a.verdict, b.verdict);
    }
    assert!(o.analysis.all_passed, "{:?}", o.analysis.expectations);
    let _ = std::fs::remove_dir_all(out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_after_the_load_returns() {
    use axum::routing::post;
    let hits = Arc::new(AtomicU64::new(0));
    let app = {
        let hits = hits.clone();
        axum::Router::new().route(
            "/v1/extract",
            post(move || {
                let hits = hits.clone();
                async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    // Always overloaded: every journey retries until it gives up or is cut off.
                    (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        [("retry-after-ms", "30")],
                        "busy",
                    )
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let exp = parse(TINY, "tiny.yaml", false).unwrap();
    let docs = harness::load::plan_documents(
        &exp,
        harness::load::Capacity {
            pages_per_sec: 0.0,
            docs_per_sec: 0.0,
        },
    );
    let start = tokio::time::Instant::now();
    let load_end = start + std::time::Duration::from_secs(1);
    let hard_stop = load_end + std::time::Duration::from_millis(300);
    let recorder = Arc::new(harness::observe::recorder::Recorder::new(start, 5));
    let rec = recorder.clone();
    let retry: retry_policy::RetryConfig = serde_saphyr::from_str(
        "{ max_attempts: 1000, honour_retry_after: true, backoff: { fixed: { delay: 30ms } } }",
    )
    .unwrap();
    let stop = Arc::new(StopSignal::default());
    let plan = harness::load::LoadPlan {
        base_url: base.clone(),
        documents: docs,
        start,
        load_end,
        max_in_flight: 1000,
        stop,
        journeys: harness::load::JourneySettings {
            recorder: rec.clone(),
            clients: harness::experiment::ClientBehaviour::synchronous(
                retry.clone(),
                std::time::Duration::from_millis(200),
            ),
            hard_stop,
            page: sut::config::PageConfig {
                words: 64,
                rounds: 2,
            },
            seed: 1,
            http: None,
        },
    };
    let outcome = harness::load::drive(plan).await.unwrap();
    let after_return = hits.load(Ordering::SeqCst);
    assert!(tokio::time::Instant::now() >= hard_stop);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        after_return,
        "a request arrived after the load returned"
    );
    assert!(after_return > 20, "retries were sent: {after_return}");
    // Every attempt the system saw was counted by goose; goose's excess are
    // attempts cut off at the hard stop, which may not have arrived yet.
    let cut = recorder.attempts_cut_off();
    assert!(
        outcome.goose_requests >= after_return && outcome.goose_requests <= after_return + cut,
        "goose saw every attempt: goose {} vs system {after_return}, cut off {cut}",
        outcome.goose_requests
    );
    let i = recorder.integrity();
    assert!(i.accounted(), "{i:?}");
    assert!(
        i.pending > 0,
        "journeys still retrying at the hard stop are counted as pending"
    );
}

/// The open-loop scheduler holds its rate: 2,000 arrivals/s for 10 s against a
/// trivial loopback handler, counted at the handler (a count, not a latency).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrival_rate_holds_at_2000_per_second() {
    use axum::routing::post;
    let start = tokio::time::Instant::now() + std::time::Duration::from_millis(500);
    let in_window = Arc::new(AtomicU64::new(0));
    let total = Arc::new(AtomicU64::new(0));
    let app = {
        let (in_window, total) = (in_window.clone(), total.clone());
        axum::Router::new().route(
            "/v1/extract",
            post(move || {
                let (in_window, total) = (in_window.clone(), total.clone());
                async move {
                    total.fetch_add(1, Ordering::Relaxed);
                    if tokio::time::Instant::now() < start + std::time::Duration::from_secs(10) {
                        in_window.fetch_add(1, Ordering::Relaxed);
                    }
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy")
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let planned = 20_000u64;
    let docs: Vec<harness::load::workload::Document> = (0..planned)
        .map(|i| harness::load::workload::Document {
            id: i,
            tenant: "t1".into(),
            pages: 1,
            planned: std::time::Duration::from_micros(i * 500),
            class: None,
        })
        .collect();
    let load_end = start + std::time::Duration::from_secs(10);
    let hard_stop = load_end + std::time::Duration::from_secs(2);
    let recorder = Arc::new(harness::observe::recorder::Recorder::new(start, 14));
    let rec = recorder.clone();
    let stop = Arc::new(StopSignal::default());
    let plan = harness::load::LoadPlan {
        base_url: base,
        documents: docs,
        start,
        load_end,
        max_in_flight: 15_000,
        stop,
        journeys: harness::load::JourneySettings {
            recorder: rec.clone(),
            clients: harness::experiment::ClientBehaviour::synchronous(
                retry_policy::RetryConfig::no_retries(),
                std::time::Duration::from_secs(2),
            ),
            hard_stop,
            page: sut::config::PageConfig {
                words: 1,
                rounds: 1,
            },
            seed: 1,
            http: None,
        },
    };
    harness::load::drive(plan).await.unwrap();
    let got = in_window.load(Ordering::Relaxed);
    println!(
        "planned {planned}, received within the 10 s window {got}, in total {}, late arrivals {}",
        total.load(Ordering::Relaxed),
        recorder.late_arrivals()
    );
    assert_eq!(
        total.load(Ordering::Relaxed),
        planned,
        "every arrival was sent once"
    );
    assert!(
        got as f64 >= 0.98 * planned as f64,
        "rate fell behind: {got} of {planned} in the window"
    );
}

/// `environment: external`: the harness drives a service it did not start,
/// faults only through its admin API, and checks first that the target's page
/// function matches the experiment's (else every result would be "incorrect").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_target_through_its_admin_api() {
    let cfg = sut::SystemConfig::from_yaml("pool: { slots: 4, deadline: 300ms }\ngpu: { lanes: 2, page_time: 5ms }\npage: { words: 64, rounds: 2 }\n").unwrap();
    let system = sut::System::start_with_executor(cfg, Arc::new(gpu_executor::CpuExecutor::new()))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(sut::server::run(listener, system, async {
        let _ = rx.await;
    }));
    let text = |page: &str| {
        format!(
            "name: ext\nduration: 3s\nenvironment: external\ntarget: {{ url: \"{url}\", admin_token: local-admin-token }}\n\
             system: {{ page: {page} }}\nanalysis: {{ recovery_window: 1s, warmup: 1s }}\n\
             workload:\n  arrival: {{ constant: {{ rate: 20 }} }}\n  documents: {{ pages: {{ fixed: 2 }}, tenants: 2 }}\n  client: {{ timeout: 1s, retry: {{ max_attempts: 2 }} }}\n\
             timeline:\n  - {{ at: 1s, fault: cache_fill_to_limit, trigger: false }}\n\
             variants:\n  only: {{}}\n"
        )
    };
    let out = std::env::temp_dir().join(format!("harness-ext-{}", std::process::id()));
    let opts = RunOptions {
        out_dir: out.clone(),
        quiet: true,
        variant: None,
        ..RunOptions::default()
    };

    let wrong = parse(&text("{ words: 1024, rounds: 16 }"), "ext.yaml", false).unwrap();
    let err = run::run(&wrong, &opts, Arc::new(StopSignal::default()))
        .await
        .err()
        .expect("page mismatch is refused");
    assert!(format!("{err:#}").contains("page function"), "{err:#}");

    let right = parse(&text("{ words: 64, rounds: 2 }"), "ext.yaml", false).unwrap();
    let o = run::run(&right, &opts, Arc::new(StopSignal::default()))
        .await
        .unwrap();
    let v = &o.run.variants[0];
    assert!(
        v.integrity.accounted() && v.integrity.completed > 0,
        "{:?}",
        v.integrity
    );
    assert_eq!(v.integrity.incorrect_results, 0);
    assert!(
        v.events.iter().all(|e| e.ok),
        "the fault went through the admin API: {:?}",
        v.events
    );
    let _ = tx.send(());
    let _ = std::fs::remove_dir_all(out);
}
