//! Asynchronous submission over HTTP: a job is accepted at once, pending with
//! when to ask again, then the same result the synchronous path gives; the
//! table is bounded; unknown ids are 404 and malformed ones 400.

use gpu_executor::{reference_document, CpuExecutor};
use std::sync::Arc;
use std::time::Duration;
use sut::{JobAccepted, System, SystemConfig, JOBS_PATH};

async fn serve(yaml: &str) -> String {
    let cfg = SystemConfig::from_yaml(yaml).unwrap();
    let sys = System::start_with_executor(cfg, Arc::new(CpuExecutor::new()))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(sut::server::run(listener, sys, std::future::pending()));
    url
}

fn body(doc: u64, pages: u32) -> serde_json::Value {
    serde_json::json!({ "tenant": "t1", "document": doc, "pages": pages })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_is_pending_then_gives_the_synchronous_result() {
    // 40 pages at 10 ms on one lane: about 400 ms of GPU, so the first read is pending.
    let base = serve(
        "zones: [z1]\npool: { slots: 4, deadline: 2s }\ngpu: { lanes: 1, page_time: 10ms }\npage: { words: 16, rounds: 2 }\n",
    )
    .await;
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}{JOBS_PATH}"))
        .json(&body(42, 40))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    let job: JobAccepted = r.json().await.unwrap();
    assert_eq!(location, format!("{JOBS_PATH}/{}", job.job));
    let first = http.get(format!("{base}{location}")).send().await.unwrap();
    assert_eq!(first.status(), 202, "still computing");
    let after_ms: u64 = first.headers()["retry-after-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((10..=1000).contains(&after_ms), "{after_ms}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let done = loop {
        tokio::time::sleep(Duration::from_millis(after_ms)).await;
        let r = http.get(format!("{base}{location}")).send().await.unwrap();
        if r.status() != 202 {
            break r;
        }
        assert!(std::time::Instant::now() < deadline, "never finished");
    };
    assert_eq!(done.status(), 200);
    let v: sut::ExtractResponse = done.json().await.unwrap();
    assert_eq!(v.document, 42);
    assert_eq!(v.digest, reference_document(42, 40, 16, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_is_bounded_and_bad_ids_are_refused() {
    let base = serve(
        "zones: [z1]\npool: { slots: 4, deadline: 2s }\ngpu: { lanes: 1, page_time: 50ms }\npage: { words: 16, rounds: 2 }\njobs: { capacity: 2, ttl: 30s }\n",
    )
    .await;
    let http = reqwest::Client::new();
    let post = |doc| {
        http.post(format!("{base}{JOBS_PATH}"))
            .json(&body(doc, 20))
            .send()
    };
    assert_eq!(post(1).await.unwrap().status(), 202);
    assert_eq!(post(2).await.unwrap().status(), 202);
    let full = post(3).await.unwrap();
    assert_eq!(full.status(), 503);
    let e: sut::ErrorBody = full.json().await.unwrap();
    assert_eq!(e.reason, sut::RejectReason::JobTableFull);
    let get = |path: String| http.get(format!("{base}{JOBS_PATH}/{path}")).send();
    assert_eq!(get("999".into()).await.unwrap().status(), 404);
    assert_eq!(get("abc".into()).await.unwrap().status(), 400);
    assert_eq!(get("-1".into()).await.unwrap().status(), 400);
}
