//! The journey context's unit tests: shared and per-tenant client state,
//! and the variant's end cutting an attempt off.

use super::*;
use crate::load::client_policies::tests::{behaviour, doc};

fn context(clients_per_tenant: u32) -> JourneyContext {
    let clients = behaviour(clients_per_tenant);
    let settings = crate::load::JourneySettings {
        recorder: Arc::new(Recorder::new(Instant::now(), 2)),
        clients,
        hard_stop: Instant::now(),
        page: PageConfig {
            words: 1,
            rounds: 1,
        },
        seed: 1,
        http: None,
    };
    JourneyContext::new(
        HttpClient::new("http://127.0.0.1:9", 4).unwrap(),
        &settings,
        Arc::default(),
        Arc::new(crate::base::interrupt::StopSignal::default()),
    )
}

/// Two lanes' contexts (`lanes.rs`) send documents of the same client:
/// its retry state and budget must be one, whichever lane sends.
#[test]
fn lanes_sharing_their_clients_share_each_clients_retry_state() {
    let policies = ClientPolicies::default();
    let lane_0 = context(3).sharing_clients(policies.clone());
    let lane_1 = context(3).sharing_clients(policies);
    // Documents 3 and 6: client 0 of t1, dealt to different lanes.
    let a = lane_0.policy(&doc(3, "t1"));
    assert!(Arc::ptr_eq(&a, &lane_1.policy(&doc(6, "t1"))));
    assert!(!Arc::ptr_eq(&a, &lane_1.policy(&doc(4, "t1"))));
    // Contexts that do not share keep clients of their own.
    assert!(!Arc::ptr_eq(&a, &context(3).policy(&doc(6, "t1"))));
}

#[test]
fn a_tenant_override_configures_its_clients_only() {
    let ctx = context(2);
    assert_eq!(ctx.policy(&doc(1, "t7")).config().max_attempts, 10);
    assert_eq!(ctx.policy(&doc(1, "t1")).config().max_attempts, 1);
    assert_eq!(ctx.timeout_for(&doc(1, "t7")), Duration::from_secs(5));
    assert_eq!(ctx.timeout_for(&doc(1, "t1")), Duration::from_secs(1));
}

/// An attempt in flight when the variant ends is cut off by the one
/// end watch: reported to goose as a failure, counted as cut off, and
/// its journey as pending.
#[tokio::test]
async fn the_variants_end_cuts_an_attempt_in_flight_off() {
    let url = crate::net::http::tests::silent_server().await;
    let settings = crate::load::JourneySettings {
        recorder: Arc::new(Recorder::new(Instant::now(), 60)),
        clients: crate::experiment::ClientBehaviour::synchronous(
            retry_policy::RetryConfig::no_retries(),
            Duration::from_secs(30),
        ),
        hard_stop: Instant::now() + Duration::from_secs(30),
        page: PageConfig {
            words: 1,
            rounds: 1,
        },
        seed: 1,
        http: None,
    };
    let reports = Arc::new(Reports::default());
    let stop = Arc::new(crate::base::interrupt::StopSignal::default());
    let ctx = Arc::new(JourneyContext::new(
        HttpClient::new(&url, 4).unwrap(),
        &settings,
        reports.clone(),
        stop.clone(),
    ));
    let end = tokio::spawn({
        let ctx = ctx.clone();
        async move { ctx.watch_end().await }
    });
    let journey = tokio::spawn(run(ctx.clone(), doc(1, "t1"), Instant::now()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!journey.is_finished());
    stop.trigger("test");
    tokio::time::timeout(Duration::from_secs(5), journey)
        .await
        .expect("cut off at once")
        .unwrap();
    end.await.unwrap();
    let mut got = Vec::new();
    reports.take(&mut got);
    assert_eq!(got.len(), 1);
    assert!(!got[0].success && got[0].status.is_none());
    assert!(got[0].latency >= Duration::from_millis(200));
    assert_eq!(ctx.recorder.attempts_cut_off(), 1);
    let integrity = ctx.recorder.integrity();
    assert_eq!((integrity.submitted, integrity.pending), (1, 1));
}
