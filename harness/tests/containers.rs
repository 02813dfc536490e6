//! `environment: containers` end to end: Redis, two pool containers and a
//! gateway container on their own Docker network, a real zone outage (the
//! zone's container paused, then unpaused), and the same integrity ledger as
//! every run. Needs Docker and the images of `ci/images.sh`: without them the
//! test prints why it skipped, unless `HARNESS_REQUIRE_DOCKER=1` (as in
//! `.ci/run`), which makes a missing part a failure.

use harness::base::interrupt::StopSignal;
use harness::env::containers::check_images;
use harness::experiment::images::ContainerImages;
use harness::experiment::parse;
use harness::run::{self, RunOptions};
use std::sync::Arc;

const SMALL: &str = r#"name: containers-smoke
duration: 9s
environment: containers
analysis: { recovery_window: 1s, warmup: 1s, min_baseline: 1s }
system:
  zones: [az1, az2]
  executor: auto
  pool: { slots: 8, queue: 8, deadline: 400ms }
  gpu: { lanes: 4, page_time: 2ms }
  page: { words: 64, rounds: 2 }
  cache: { backend: { redis: { maxmemory_mb: 8, policy: allkeys_random } } }
  gateway: { retry: { max_attempts: 1 } }
  router: { redirect_failure_ratio: 0.5, window: 1s }
workload:
  arrival: { constant: { rate: 25 } }
  documents: { pages: { uniform: { min: 1, max: 3 } }, tenants: 2 }
  client: { timeout: 3s, retry: { max_attempts: 4, backoff: { fixed: { delay: 100ms } } } }
timeline:
  - { at: 2s, fault: { zone_outage: { zone: az1 } }, duration: 3s }
variants:
  only: {}
expect:
  only: { incorrect_results: 0, unaccounted_documents: 0 }
"#;

fn required() -> bool {
    std::env::var("HARNESS_REQUIRE_DOCKER").is_ok_and(|v| v == "1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_experiment_in_containers_with_a_paused_zone() {
    let images = ContainerImages::resolve(None, None);
    if let Err(why) = check_images(&images, true).await {
        if required() {
            panic!("HARNESS_REQUIRE_DOCKER=1 but: {why}");
        }
        println!("SKIPPED: containers environment not available: {why}");
        return;
    }
    let exp = parse(SMALL, "containers-smoke.yaml", false).unwrap();
    let out = std::env::temp_dir().join(format!("harness-containers-{}", std::process::id()));
    let opts = RunOptions {
        out_dir: out.clone(),
        quiet: true,
        variant: None,
        ..RunOptions::default()
    };
    let o = run::run(&exp, &opts, Arc::new(StopSignal::default()))
        .await
        .unwrap();
    let v = &o.run.variants[0];
    let i = &v.integrity;
    assert!(i.accounted(), "{i:?}");
    assert!(i.submitted >= 150, "{i:?}");
    assert!(
        i.completed > i.submitted / 2,
        "most documents completed: {i:?}"
    );
    assert_eq!(i.incorrect_results, 0);
    assert_eq!(i.results_checked, i.completed);

    // The outage was real: the container was paused and unpaused.
    assert!(v.events.iter().all(|e| e.ok), "{:?}", v.events);
    let details: Vec<&str> = v.events.iter().map(|e| e.detail.as_str()).collect();
    assert!(
        details.iter().any(|d| d.contains("az1 paused")),
        "{details:?}"
    );
    assert!(
        details.iter().any(|d| d.contains("az1 unpaused")),
        "{details:?}"
    );
    // While paused, az1 answered nothing; after, it served again.
    let az1 = |t: usize| {
        v.seconds
            .get(t)
            .and_then(|s| s.zones.get("az1"))
            .map(|z| z.requests)
    };
    let series: Vec<_> = (0..v.seconds.len()).map(az1).collect();
    println!("az1 requests per second: {series:?}");
    // Row t is read at t+1 s: row 3 covers 3 s..4 s, inside the 2 s..5 s
    // pause even if pausing took most of a second.
    let during = az1(3).expect("a row for second 3 with az1 in it");
    let after: u64 = (6..9).filter_map(az1).sum();
    assert_eq!(during, 0, "az1 served while paused");
    assert!(after > 0, "az1 serves again after the unpause");
    // Results went through the Redis container.
    assert!(
        v.system_totals["sut_cache_writes_acked_total"] > 0.0,
        "{:?}",
        v.system_totals
    );
    assert!(o.analysis.all_passed, "{:?}", o.analysis.expectations);
    let _ = std::fs::remove_dir_all(out);
}

/// `--agents 2` in containers: the agents are containers of the sut image
/// on the variant's network; together they submit the single-process run's
/// documents (same count, same id digest) and every one is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_as_containers_submit_the_single_process_run_s_documents() {
    let images = ContainerImages::resolve(None, None);
    if let Err(why) = check_images(&images, true).await {
        if required() {
            panic!("HARNESS_REQUIRE_DOCKER=1 but: {why}");
        }
        println!("SKIPPED: containers environment not available: {why}");
        return;
    }
    let dir =
        std::env::temp_dir().join(format!("harness-containers-agents-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("containers-smoke.yaml");
    std::fs::write(&file, SMALL).unwrap();
    let exp = parse(SMALL, "containers-smoke.yaml", false).unwrap();
    let mut integrity = Vec::new();
    for agents in [None, Some(2)] {
        let opts = RunOptions {
            out_dir: dir.join("reports"),
            quiet: true,
            agents: agents.map(|count| run::AgentOptions {
                count,
                source: harness::run::agent::coordinator::AgentSource::Children {
                    experiment: file.clone(),
                    quick: false,
                    seed: exp.seed,
                },
                listen: ([127, 0, 0, 1], 0).into(),
                join_timeout: std::time::Duration::from_secs(60),
            }),
            ..RunOptions::default()
        };
        let o = run::run(&exp, &opts, Arc::new(StopSignal::default()))
            .await
            .unwrap_or_else(|e| panic!("agents {agents:?}: {e:#} (an image from before the agents lacks harness: rebuild with ci/images.sh)"));
        let v = &o.run.variants[0];
        assert_eq!(v.agents.len(), agents.unwrap_or(0) as usize);
        assert!(v.lost_agents().next().is_none(), "{:?}", v.agents);
        integrity.push(v.integrity.clone());
    }
    let (single, split) = (&integrity[0], &integrity[1]);
    assert!(split.accounted(), "{split:?}");
    assert_eq!(split.incorrect_results, 0);
    assert_eq!(single.submitted, split.submitted);
    assert_eq!(single.submitted_digest, split.submitted_digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Generic faults on containers: a CPU limit, a pause and a kill with its
/// restart, each applied and undone; at the end no container of the run is
/// left, paused or not, and the fault ledger is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_faults_on_containers_are_applied_and_undone() {
    let images = ContainerImages::resolve(None, None);
    if let Err(why) = check_images(&images, true).await {
        if required() {
            panic!("HARNESS_REQUIRE_DOCKER=1 but: {why}");
        }
        println!("SKIPPED: containers environment not available: {why}");
        return;
    }
    let text = SMALL.replace(
        "  - { at: 2s, fault: { zone_outage: { zone: az1 } }, duration: 3s }",
        "  - { at: 2s, duration: 3s, fault: { cpu_limit: { component: pool-az1, cpus: 0.2 } } }\n  - { at: 3s, duration: 2s, fault: { pause: { component: pool-az2 } } }\n  - { at: 6s, duration: 2s, fault: { kill: { component: pool-az1 } } }",
    );
    let exp = parse(&text, "containers-faults.yaml", false).unwrap();
    let out =
        std::env::temp_dir().join(format!("harness-containers-faults-{}", std::process::id()));
    let opts = RunOptions {
        out_dir: out.clone(),
        quiet: true,
        ..RunOptions::default()
    };
    let o = run::run(&exp, &opts, Arc::new(StopSignal::default()))
        .await
        .unwrap();
    let events = &o.run.variants[0].events;
    assert_eq!(events.len(), 6, "{events:?}");
    assert!(events.iter().all(|e| e.ok), "{events:?}");
    assert!(events
        .iter()
        .any(|e| e.detail.contains("docker update --cpus 0.2")));
    assert!(events.iter().any(|e| e.detail.contains("started again")));
    // Nothing of the run is left (testcontainers removes them on drop).
    let paused = harness::env::docker::paused_names().unwrap();
    assert!(
        !paused.iter().any(|n| n.contains("overload-only")),
        "paused containers left: {paused:?}"
    );
    let _ = std::fs::remove_dir_all(out);
}
