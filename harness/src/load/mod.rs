//! Open-loop load through goose. The only module that knows goose exists.
//!
//! goose 0.19 is closed-loop (a user waits for each response) and its
//! throttle would cap retries too, so it cannot produce an open-loop arrival
//! rate by itself. Here one goose user hands the plan to the load's lanes
//! (`lanes.rs`: a single-threaded runtime per core, each with its shard of
//! the arrivals and its own connections), which spawn each document's
//! journey at its planned time on the load path's own HTTP/1.1 client
//! (`http.rs`; goose's reqwest client is not used for attempts, it cost five
//! times more per request). The goose user records every attempt with goose
//! (`record_custom_request_duration`, in batches: `journey::Reports`) while
//! the harness's own recorder keeps the per-second series. If a lane's share
//! of the in-flight cap is reached the arrival waits, and the lateness is
//! counted, never dropped silently.
//!
//! goose's run time is not a hard limit and spawned tasks would outlive it,
//! so the lanes stop arrivals at the load's end themselves and wait for
//! every journey (each bounded by `hard_stop`) before the goose user
//! returns: no request of this variant reaches the system after `drive`
//! returns.
//!
//! On the virtual clock (`clock.rs`) goose cannot run (its user, scheduler
//! and metrics run on the wall clock): [`drive_in_process`] runs the same
//! arrivals, journeys and client as one lane on the run's one runtime, and
//! counts the attempts' reports itself.

pub(crate) mod client_policies;
pub(crate) mod journey;
mod lanes;
pub(crate) mod spike;
pub mod workload;

use crate::base::interrupt::StopSignal;
use crate::experiment::{Experiment, TimelineOp};
use crate::load::client_policies::ClientPolicies;
use crate::load::journey::{AttemptReport, JourneyContext, Reports};
use crate::load::lanes::{deal, share, LanePlan, Lanes};
use crate::load::workload::Document;
use goose::config::GooseConfiguration;
use goose::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Why the load could not be driven: its lanes or clients could not be set
/// up, or goose refused to start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Lanes(#[from] crate::load::lanes::LanesError),
    #[error(transparent)]
    Url(#[from] crate::net::http::UrlError),
    /// goose's own error, as its `Debug` shows it.
    #[error("goose: {0}")]
    Goose(String),
    /// The load's own runtime could not start.
    #[error("starting the load's runtime: {0}")]
    Runtime(std::io::Error),
    /// The task driving the load panicked or was cancelled.
    #[error("the load task: {0}")]
    Task(tokio::task::JoinError),
}

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
    pub recorder: Arc<crate::observe::recorder::Recorder>,
    /// How the clients behave: retries, timeouts, submission mode, how many
    /// there are and which tenants' clients differ.
    pub clients: crate::experiment::ClientBehaviour,
    /// No journey lives past this.
    pub hard_stop: Instant,
    /// The page function's parameters, for the reference computation.
    pub page: sut::config::PageConfig,
    pub seed: u64,
    /// Requests to any HTTP service instead of documents (`workload.http`).
    pub http: Option<Arc<crate::experiment::http_workload::HttpWorkload>>,
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
        recorder: Arc<crate::observe::recorder::Recorder>,
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
                http: exp.workload.http.clone(),
            },
        }
    }
}

/// What goose counted, as a cross-check of the harness's own recorder.
#[derive(Debug, Clone, Default)]
pub struct LoadOutcome {
    /// Attempts reported (by goose, or by the load path in virtual time).
    pub goose_requests: u64,
    pub goose_failures: u64,
    /// Who counted `goose_requests` and `goose_failures`.
    pub counted_by: CountedBy,
    pub journeys: u64,
    /// Connections the load path's HTTP client opened (at most `max_in_flight`).
    pub connections: u64,
}

/// Who counted a load's attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CountedBy {
    /// goose, from every attempt's report (real time).
    #[default]
    Goose,
    /// The load path itself, from the same reports (virtual time: goose's
    /// user, scheduler and metrics run on the wall clock and cannot run on
    /// a paused one).
    LoadPath,
}

/// Drives the plan to its end on this runtime, against a system served in
/// it (virtual time): one lane (`lanes::arrivals`, the same open-loop
/// arrivals, journeys and client as in real time) with the whole in-flight
/// cap, over in-process connections. goose is left out (see
/// [`CountedBy::LoadPath`]); the attempts' reports it would record are
/// counted here instead.
pub(crate) async fn drive_in_process(
    plan: LoadPlan,
    system: crate::net::in_process::InProcess,
) -> Result<LoadOutcome, LoadError> {
    let reports = Arc::new(Reports::default());
    let http = crate::net::http::HttpClient::in_process(system, plan.max_in_flight as usize);
    let ctx = JourneyContext::new(http, &plan.journeys, reports.clone(), plan.stop.clone())
        .sharing_clients(ClientPolicies::default())
        .verifying(gpu_executor::Compute::Inline);
    let lane = LanePlan {
        documents: plan.documents,
        max_in_flight: plan.max_in_flight.max(1),
        start: plan.start,
        load_end: plan.load_end,
        stop: plan.stop,
        ctx: Arc::new(ctx),
    };
    let done = crate::load::lanes::arrivals(lane).await;
    let mut batch = Vec::new();
    reports.take(&mut batch);
    Ok(LoadOutcome {
        goose_requests: batch.len() as u64,
        goose_failures: batch.iter().filter(|r| !r.success).count() as u64,
        counted_by: CountedBy::LoadPath,
        journeys: done.spawned,
        connections: done.connections,
    })
}

/// Drives the plan to its end with goose, and returns goose's counts.
pub async fn drive(plan: LoadPlan) -> Result<LoadOutcome, LoadError> {
    let base_url = plan.base_url.clone();
    let lanes = Lanes::get()?;
    let n = lanes.count(plan.max_in_flight);
    // One connection per journey in flight at most (each has one attempt
    // out), the cap shared out between the lanes.
    let clients = (0..n)
        .map(|i| {
            let cap = share(plan.max_in_flight, i, n);
            crate::net::http::HttpClient::new(&base_url, cap as usize).map(|http| (http, cap))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let plan = Arc::new(Mutex::new(Some((plan, clients))));
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
                if let Some((plan, clients)) = plan {
                    let (n, c) = scheduler(user, lanes, plan, clients).await?;
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
    let quiet = crate::base::stdout_to_log::StdoutToLog::begin();
    let metrics = GooseAttack::initialize_with_config(config)
        .map_err(|e| LoadError::Goose(format!("{e:?}")))?
        .register_scenario(scenario!("Documents").register_transaction(transaction))
        .execute()
        .await
        .map_err(|e| LoadError::Goose(format!("{e:?}")))?;
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

/// Inside goose's single user: hands each lane (`lanes.rs`) its shard of
/// the arrivals, its connection pool and its share of the in-flight cap
/// (`clients`, one per lane), records the attempts' reports with goose while
/// they run, and returns the journeys spawned and connections opened.
async fn scheduler(
    user: &mut GooseUser,
    lanes: Lanes,
    plan: LoadPlan,
    clients: Vec<(crate::net::http::HttpClient, u64)>,
) -> Result<(u64, u64), Box<TransactionError>> {
    let reports = Arc::new(Reports::default());
    // One set of clients, whichever lane sends their documents.
    let policies = ClientPolicies::default();
    let n = clients.len();
    let mut running = Vec::with_capacity(n);
    let LoadPlan {
        documents,
        start,
        load_end,
        stop,
        journeys,
        ..
    } = plan;
    for (i, ((http, cap), documents)) in clients.into_iter().zip(deal(documents, n)).enumerate() {
        let ctx = JourneyContext::new(http, &journeys, reports.clone(), stop.clone())
            .sharing_clients(policies.clone());
        let lane = LanePlan {
            documents,
            max_in_flight: cap,
            start,
            load_end,
            stop: stop.clone(),
            ctx: Arc::new(ctx),
        };
        running.push(lanes.spawn(i, lane));
    }
    let mut batch = Vec::new();
    // Records goose's reports while the lanes run: when a batch is full,
    // and at least every `Reports::FLUSH`.
    let mut flush = tokio::time::interval(Reports::FLUSH);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut spawned, mut connections) = (0, 0);
    for lane in running {
        tokio::pin!(lane);
        let outcome = loop {
            tokio::select! {
                o = &mut lane => break o,
                _ = reports.ready() => record(user, &reports, &mut batch).await,
                _ = flush.tick() => record(user, &reports, &mut batch).await,
            }
        };
        // A lane's arrivals loop holds no lock and calls nothing that
        // panics by design; if it did, the panic is the bug to see.
        let outcome = outcome.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        spawned += outcome.spawned;
        connections += outcome.connections;
    }
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

/// Capacity of one pool, measured on this machine.
#[derive(Debug, Clone, Copy)]
pub struct Capacity {
    pub pages_per_sec: f64,
    pub docs_per_sec: f64,
}

/// The variant's traffic: the regular arrivals plus the documents the
/// timeline injects (oversized documents, load spikes' extra arrivals).
pub fn plan_documents(exp: &Experiment, capacity: Capacity) -> Vec<Document> {
    let w = &exp.workload;
    let mut docs = workload::schedule(
        exp.seed,
        &w.arrival,
        &w.pages,
        w.tenants,
        w.population.as_ref(),
        exp.duration,
        capacity.docs_per_sec,
    );
    for (i, e) in exp.timeline.iter().enumerate() {
        match &e.op {
            TimelineOp::OversizedDocuments(o) => {
                docs.extend(workload::oversized(exp.seed, i, e.at, o))
            }
            TimelineOp::LoadSpike(_) => {
                docs.extend(spike::documents(exp, i, capacity.docs_per_sec))
            }
            TimelineOp::Admin(_) | TimelineOp::Generic(_) => {}
        }
    }
    docs.sort_by_key(|d| d.planned);
    docs
}
