//! The gateway and the pools as separate processes' worth of servers, over
//! loopback HTTP: results, merged metrics, forwarded admin commands, the
//! admin token, and what a dead or silent zone looks like to the gateway.

use gpu_executor::{reference_document, CpuExecutor};
use std::sync::Arc;
use std::time::Duration;
use sut::{Role, StartOptions, System, SystemConfig};

const TOKEN: &str = "split-roles-token";

fn config() -> SystemConfig {
    let mut c: SystemConfig = SystemConfig::from_yaml(
        "zones: [az1, az2]\n\
         pool: { slots: 4, queue: 4, deadline: 300ms }\n\
         gpu: { lanes: 2, page_time: 1ms }\n\
         page: { words: 16, rounds: 2 }\n\
         gateway: { retry: { max_attempts: 1 } }\n",
    )
    .unwrap();
    c.admin_token = TOKEN.into();
    c
}

/// Serves `role` on a fresh loopback port; returns its base URL.
async fn serve(role: Role) -> String {
    let opts = StartOptions {
        role,
        admin_from_any_peer: false,
        deterministic: None,
    };
    let sys = System::start_with(config(), opts, Some(Arc::new(CpuExecutor::new())))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(sut::server::run(listener, sys, std::future::pending()));
    url
}

async fn split() -> (String, String, String) {
    let az1 = serve(Role::Pool { zone: "az1".into() }).await;
    let az2 = serve(Role::Pool { zone: "az2".into() }).await;
    let gw = serve(Role::Gateway {
        pools: vec![("az1".into(), az1.clone()), ("az2".into(), az2.clone())],
    })
    .await;
    (gw, az1, az2)
}

async fn extract(http: &reqwest::Client, base: &str, doc: u64) -> reqwest::Response {
    http.post(format!("{base}/v1/extract"))
        .json(&serde_json::json!({ "tenant": "t1", "document": doc, "pages": 3 }))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .unwrap()
}

async fn metrics(http: &reqwest::Client, base: &str) -> String {
    http.get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn admin(http: &reqwest::Client, base: &str, cmd: serde_json::Value) -> reqwest::Response {
    http.post(format!("{base}/admin/command"))
        .bearer_auth(TOKEN)
        .json(&cmd)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_reaches_remote_pools_and_merges_their_metrics() {
    let (gw, az1, _az2) = split().await;
    let http = reqwest::Client::new();
    let mut zones = std::collections::BTreeSet::new();
    for doc in 1..=12u64 {
        let r = extract(&http, &gw, doc).await;
        assert_eq!(r.status(), 200);
        let body: sut::ExtractResponse = r.json().await.unwrap();
        assert_eq!(body.digest, reference_document(doc, 3, 16, 2), "doc {doc}");
        zones.insert(body.zone);
    }
    assert_eq!(zones.len(), 2, "both zones served: {zones:?}");

    let m = metrics(&http, &gw).await;
    assert!(m.contains("sut_gateway_requests_total 12\n"), "{m}");
    assert!(m.contains("sut_remote_pool_up{zone=\"az1\"} 1\n"), "{m}");
    for z in ["az1", "az2"] {
        assert!(
            m.contains(&format!("sut_pool_slots{{zone=\"{z}\"}} 4\n")),
            "{m}"
        );
        assert!(
            m.contains(&format!("sut_cache_writes_acked_total{{process=\"{z}\"}}")),
            "{m}"
        );
    }
    // Each family once, however many processes contributed to it.
    assert_eq!(m.matches("# TYPE sut_pool_slots ").count(), 1, "{m}");
    // The pools' own idle gateways are left out of the merge.
    assert_eq!(m.matches("sut_gateway_requests_total").count(), 3, "{m}");

    // A pool process does not serve the gateway's hop on a non-pool role.
    let r = http
        .post(format!("{gw}/v1/pool/extract"))
        .json(&serde_json::json!({ "tenant": "t1", "document": 1, "pages": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // And a pool answers its reply as JSON.
    let r = http
        .post(format!("{az1}/v1/pool/extract"))
        .json(&serde_json::json!({ "tenant": "t1", "document": 99, "pages": 2 }))
        .send()
        .await
        .unwrap();
    let reply: sut::Reply = r.json().await.unwrap();
    assert!(
        matches!(reply, sut::Reply::Ok { digest, .. } if digest == reference_document(99, 2, 16, 2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_are_forwarded_and_need_the_token() {
    let (gw, az1, _) = split().await;
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{gw}/admin/command"))
        .json(&serde_json::json!({ "set_slots": { "zone": "az1", "slots": 9 } }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "no token, no command");

    let r = admin(
        &http,
        &gw,
        serde_json::json!({ "set_slots": { "zone": "az1", "slots": 9 } }),
    )
    .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let pool_metrics = metrics(&http, &az1).await;
    assert!(
        pool_metrics.contains("sut_pool_slots{zone=\"az1\"} 9\n"),
        "the pool process applied it: {pool_metrics}"
    );
    // Every zone when none is named; an unknown zone is an error.
    let r = admin(
        &http,
        &gw,
        serde_json::json!({ "set_gpu_lanes": { "lanes": 3 } }),
    )
    .await;
    assert!(r.text().await.unwrap().contains("in 2 zone(s)"));
    let r = admin(
        &http,
        &gw,
        serde_json::json!({ "zone_recover": { "zone": "az9" } }),
    )
    .await;
    assert_eq!(r.status(), 404);
    // Cache commands go to the pools, which hold the cache.
    let r = admin(&http, &gw, serde_json::json!("cache_fill_to_limit")).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("az2"), "forwarded to both");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_zone_times_out_and_a_dead_one_is_unreachable() {
    let (gw, _, _) = split().await;
    let http = reqwest::Client::new();
    let r = admin(
        &http,
        &gw,
        serde_json::json!({ "zone_outage": { "zone": "az1" } }),
    )
    .await;
    assert_eq!(r.status(), 200);
    let mut timed_out = 0;
    for doc in 300..310u64 {
        let started = std::time::Instant::now();
        let r = extract(&http, &gw, doc).await;
        if r.status() == 504 {
            timed_out += 1;
            // The pool's deadline (300 ms) plus the silence margin.
            assert!(started.elapsed() >= Duration::from_millis(1200));
        } else {
            assert_eq!(r.status(), 200);
        }
    }
    assert!(timed_out > 0, "some documents are homed in the silent zone");
    admin(
        &http,
        &gw,
        serde_json::json!({ "zone_restore": { "zone": "az1" } }),
    )
    .await;

    // A gateway whose pool is not listening answers 503 zone_unreachable.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let lonely = serve(Role::Gateway {
        pools: vec![("az1".into(), closed.clone()), ("az2".into(), closed)],
    })
    .await;
    let r = extract(&http, &lonely, 5).await;
    assert_eq!(r.status(), 503);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["reason"], "zone_unreachable");
    let m = metrics(&http, &lonely).await;
    assert!(m.contains("sut_remote_pool_up{zone=\"az1\"} 0\n"), "{m}");
}

#[test]
fn a_gateway_needs_every_zone() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt
        .block_on(System::start_with(
            config(),
            StartOptions {
                role: Role::Gateway {
                    pools: vec![("az1".into(), "http://127.0.0.1:1".into())],
                },
                admin_from_any_peer: false,
                deterministic: None,
            },
            None,
        ))
        .err()
        .expect("az2 has no pool");
    assert!(err.to_string().contains("az2"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_work_query_reaches_every_pool_and_needs_the_token() {
    let (gw, _az1, _az2) = split().await;
    let http = reqwest::Client::new();
    let ask = |token: &'static str, docs: serde_json::Value| {
        http.post(format!("{gw}{}", sut::WORK_PATH))
            .bearer_auth(token)
            .json(&serde_json::json!({ "documents": docs }))
            .send()
    };
    // A document computed once leaves no work; one never seen leaves none either.
    assert_eq!(extract(&http, &gw, 77).await.status(), 200);
    let w: sut::WorkInProgress = ask(
        TOKEN,
        serde_json::json!([{ "id": 77, "pages": 3 }, { "id": 5, "pages": 9 }]),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(w, sut::WorkInProgress::default());
    assert_eq!(
        ask("wrong", serde_json::json!([])).await.unwrap().status(),
        401
    );
    assert_eq!(
        ask(TOKEN, serde_json::json!([1, 2]))
            .await
            .unwrap()
            .status(),
        400,
        "documents are {{id, pages}}"
    );
}
