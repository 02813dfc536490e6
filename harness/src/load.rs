//! Open-loop load through goose. The only module that knows goose exists.
//!
//! goose 0.19 is closed-loop (a user waits for each response) and its
//! throttle would cap retries too, so it cannot produce an open-loop arrival
//! rate by itself. Here one goose user runs an arrival scheduler: at each
//! planned arrival it spawns the document's journey on the load path's own
//! HTTP/1.1 client (`http.rs`; goose's reqwest client is not used for
//! attempts, it cost five times more per request), and reports every attempt back to goose
//! (`record_custom_request_duration`, in batches: `journey::Reports`) while
//! the harness's own recorder keeps the per-second series. If the in-flight
//! cap is reached the arrival waits, and the lateness is counted, never
//! dropped silently.
//!
//! goose's run time is not a hard limit and spawned tasks would outlive it,
//! so the scheduler stops arrivals at the load's end itself and waits for
//! every journey (each bounded by `hard_stop`) before returning: no request
//! of this variant reaches the system after `drive` returns.

use crate::interrupt::StopSignal;
use crate::journey::{self, AttemptReport, JourneyContext, Reports};
use crate::workload::Document;
use goose::config::GooseConfiguration;
use goose::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What to drive.
pub struct LoadPlan {
    pub base_url: String,
    /// Sorted by planned time.
    pub documents: Vec<Document>,
    pub start: Instant,
    /// Arrivals stop here.
    pub load_end: Instant,
    pub max_in_flight: u64,
    /// Set when the run must stop early (Ctrl-C, dead system under test).
    pub stop: Arc<StopSignal>,
    /// What every journey shares.
    pub journeys: JourneySettings,
}

/// The settings of every journey of a plan.
#[derive(Clone)]
pub struct JourneySettings {
    pub recorder: Arc<crate::recorder::Recorder>,
    /// How the clients behave: retries, timeouts, submission mode, how many
    /// there are and which tenants' clients differ.
    pub clients: crate::experiment::ClientBehaviour,
    /// No journey lives past this.
    pub hard_stop: Instant,
    /// The page function's parameters, for the reference computation.
    pub page: sut::config::PageConfig,
    pub seed: u64,
}

/// When a variant's load runs: its clock and its limits.
pub struct LoadWindow {
    pub start: Instant,
    /// Arrivals stop here.
    pub load_end: Instant,
    /// No journey lives past this.
    pub hard_stop: Instant,
}

impl LoadPlan {
    /// The plan of `variant` of `exp`: the one place that says which of the
    /// experiment's settings the load path uses, for runs and benches alike.
    pub fn for_variant(
        exp: &crate::experiment::Experiment,
        variant: &crate::experiment::Variant,
        base_url: String,
        documents: Vec<Document>,
        window: LoadWindow,
        recorder: Arc<crate::recorder::Recorder>,
        stop: Arc<StopSignal>,
    ) -> LoadPlan {
        LoadPlan {
            base_url,
            documents,
            start: window.start,
            load_end: window.load_end,
            max_in_flight: exp.workload.max_in_flight,
            stop,
            journeys: JourneySettings {
                recorder,
                clients: variant.client.clone(),
                hard_stop: window.hard_stop,
                page: variant.system.page,
                seed: exp.seed,
            },
        }
    }
}

/// What goose counted, as a cross-check of the harness's own recorder.
#[derive(Debug, Clone, Default)]
pub struct LoadOutcome {
    pub goose_requests: u64,
    pub goose_failures: u64,
    pub journeys: u64,
    /// Connections the load path's HTTP client opened (at most `max_in_flight`).
    pub connections: u64,
}

/// Drives the plan to its end with goose, and returns goose's counts.
pub async fn drive(plan: LoadPlan) -> anyhow::Result<LoadOutcome> {
    let base_url = plan.base_url.clone();
    // One connection per journey in flight at most (each has one attempt out).
    let http = crate::http::HttpClient::new(&base_url, plan.max_in_flight as usize)?;
    let plan = Arc::new(Mutex::new(Some((plan, http))));
    let journeys = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let connections = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let transaction = {
        let plan = plan.clone();
        let journeys = journeys.clone();
        let connections = connections.clone();
        Transaction::new(Arc::new(move |user: &mut GooseUser| {
            let plan = plan.lock().expect("plan lock").take();
            let journeys = journeys.clone();
            let connections = connections.clone();
            Box::pin(async move {
                if let Some((plan, http)) = plan {
                    let (n, c) = scheduler(user, plan, http).await?;
                    journeys.store(n, Ordering::Relaxed);
                    connections.store(c, Ordering::Relaxed);
                }
                Ok(())
            })
        }))
        .set_name("arrivals")
    };
    let mut config = GooseConfiguration::default();
    config.host = Some(base_url);
    config.users = Some(1);
    config.increase_rate = Some("1".into());
    config.iterations = Some(1);
    config.quiet = 1;
    config.no_print_metrics = true;
    config.no_error_summary = true;
    config.no_telnet = true;
    let quiet = crate::stdout_to_log::StdoutToLog::begin();
    let metrics = GooseAttack::initialize_with_config(config)
        .map_err(|e| anyhow::anyhow!("goose: {e:?}"))?
        .register_scenario(scenario!("Documents").register_transaction(transaction))
        .execute()
        .await
        .map_err(|e| anyhow::anyhow!("goose: {e:?}"))?;
    drop(quiet);
    let mut out = LoadOutcome {
        journeys: journeys.load(Ordering::Relaxed),
        connections: connections.load(Ordering::Relaxed),
        ..Default::default()
    };
    for agg in metrics.requests.values() {
        out.goose_requests += agg.success_count as u64 + agg.fail_count as u64;
        out.goose_failures += agg.fail_count as u64;
    }
    Ok(out)
}

/// The arrival scheduler, inside goose's single user: journeys spawned and
/// connections opened.
async fn scheduler(
    user: &mut GooseUser,
    plan: LoadPlan,
    http: crate::http::HttpClient,
) -> Result<(u64, u64), Box<TransactionError>> {
    let reports = Arc::new(Reports::default());
    let ctx = Arc::new(JourneyContext::new(
        http,
        &plan.journeys,
        reports.clone(),
        plan.stop.clone(),
    ));
    // One task cuts every journey off at the variant's end.
    let end = tokio::spawn({
        let ctx = ctx.clone();
        async move { ctx.watch_end().await }
    });
    let mut batch = Vec::new();
    // Records goose's reports while the scheduler would otherwise sleep.
    let mut flush = tokio::time::interval(Reports::FLUSH);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tasks = JoinSet::new();
    let mut spawned = 0u64;
    for doc in plan.documents {
        let due = plan.start + doc.planned;
        if due >= plan.load_end || plan.stop.is_set() {
            break;
        }
        // Wait for the planned time, recording goose reports meanwhile. An
        // arrival already due (the scheduler is behind) takes no timer.
        if due > Instant::now() {
            let sleep = tokio::time::sleep_until(due);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    biased;
                    _ = &mut sleep => break,
                    _ = reports.ready() => record(user, &reports, &mut batch).await,
                    _ = flush.tick() => record(user, &reports, &mut batch).await,
                }
            }
        }
        // Open loop with a safety cap: if too many journeys are in flight the
        // arrival waits, and is counted as late.
        if ctx.recorder.in_flight() >= plan.max_in_flight {
            ctx.recorder.late();
            while ctx.recorder.in_flight() >= plan.max_in_flight && !plan.stop.is_set() {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(5)) => {},
                    _ = reports.ready() => record(user, &reports, &mut batch).await,
                }
            }
        }
        while tasks.try_join_next().is_some() {}
        // Boxed: the journey's future is a few KB (its attempt's HTTP
        // request inside); tokio copies a task's future into its cell when
        // spawned and its stage again when it finishes and is joined. A box
        // is copied once and those moves copy a pointer.
        tasks.spawn(Box::pin(journey::run(ctx.clone(), doc, due)));
        spawned += 1;
        // Behind schedule nothing above waits: give the worker back now and
        // then, as the timer did, so the journeys spawned here get to run.
        tokio::task::consume_budget().await;
        // Behind schedule the loop may never wait: record what has gathered
        // here too, so goose's reports do not pile up until the arrivals end.
        if spawned.is_multiple_of(Reports::BATCH as u64) {
            record(user, &reports, &mut batch).await;
        }
    }
    // Drain: every journey ends by hard_stop on its own.
    loop {
        tokio::select! {
            j = tasks.join_next() => if j.is_none() { break },
            _ = reports.ready() => record(user, &reports, &mut batch).await,
            _ = flush.tick() => record(user, &reports, &mut batch).await,
        }
    }
    end.abort();
    let connections = ctx.http.connections_opened();
    drop(ctx);
    // The last journeys' reports.
    record(user, &reports, &mut batch).await;
    Ok((spawned, connections))
}

/// Records every report gathered so far with goose.
async fn record(user: &mut GooseUser, reports: &Reports, batch: &mut Vec<AttemptReport>) {
    reports.take(batch);
    for r in batch.drain(..) {
        let error = (!r.success).then_some("not served");
        let _ = user
            .record_custom_request_duration(
                "POST",
                "/v1/extract",
                r.latency,
                r.success,
                r.status,
                error,
            )
            .await;
    }
}

/// Time to wait after the load ends for journeys still retrying.
pub fn drain_time(client_timeout: Duration, max_attempts: u32) -> Duration {
    let worst = client_timeout * max_attempts.min(4);
    worst.clamp(Duration::from_secs(2), Duration::from_secs(15))
}
