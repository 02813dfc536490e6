//! Load agents: the load of one variant split over several processes (or
//! pods), for a service that needs more load than one host can offer.
//!
//! `harness agent FILE --coordinator URL --shard I --of N` loads and
//! validates the same experiment file as the coordinator, says hello
//! (`protocol.rs`: refused on a different experiment hash, seed or harness
//! version), receives the plan and the run's clock, computes the whole
//! seeded schedule from the coordinator's calibration and drives its shard
//! (`shard.rs`: document k to shard k mod N) through the same goose load and
//! journeys as a single-process run. Its recorder streams every event to
//! the coordinator (`coordinator.rs`), which replays them into the variant's
//! one recorder, so analysis, report and integrity check are unchanged.
//!
//! An agent stops (its journeys cut off as pending, reported) on Ctrl-C, when
//! the coordinator says the run stopped, and when the coordinator has not
//! answered for 5 s: it never outlives its run.

pub mod coordinator;
mod launch;
pub mod protocol;
pub mod shard;

use crate::base::causes::Causes;
use crate::base::interrupt::StopSignal;
use crate::cli::AgentArgs;
use crate::load::Capacity;
use crate::load::{LoadPlan, LoadWindow};
use crate::observe::recorder::{Event, Recorder};
use protocol::{Finished, Hello, Plan, Report};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// How long an agent waits for a coordinator that is not up yet (a pod
/// started before the coordinator's Service answers).
const CONNECT_FOR: Duration = Duration::from_secs(120);
/// The coordinator unanswered this long: the agent stops.
const COORDINATOR_GONE: Duration = Duration::from_secs(5);

/// Why a load agent could not join its coordinator or drive its shard, or
/// why the coordinator could not start or join its agents.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no --shard and no JOB_COMPLETION_INDEX: {0}")]
    NoShard(std::env::VarError),
    #[error("JOB_COMPLETION_INDEX is not a number: {0}")]
    ShardNotNumber(std::num::ParseIntError),
    #[error("shard {shard} of {of}: the shard must be below --of")]
    ShardRange { shard: u32, of: u32 },
    #[error("reading the coordinator's plan: {}", Causes(.0))]
    Plan(reqwest::Error),
    #[error("refused by the coordinator ({status}): {text}")]
    Refused {
        status: reqwest::StatusCode,
        text: String,
    },
    #[error("no answer from the coordinator at {url}: {error}")]
    NoAnswer { url: String, error: reqwest::Error },
    #[error("{0}")]
    Experiment(crate::experiment::ExperimentError),
    #[error("building the HTTP client: {}", Causes(.0))]
    Client(reqwest::Error),
    #[error("the plan names variant {0:?}, not in the file")]
    NoVariant(String),
    #[error("the reporter task: {}", Causes(.0))]
    Reporter(tokio::task::JoinError),
    #[error(transparent)]
    Load(#[from] crate::load::LoadError),
    #[error("this agent computed a different shard {shard} ({mine} documents) than the coordinator ({theirs}): same file, seed and version, so the calibration did not cross intact")]
    OtherShard {
        shard: u32,
        mine: usize,
        theirs: u64,
    },
    #[error("the coordinator declared agent {0} lost")]
    Lost(u32),
    /// The last answer (or its absence), as its `Debug` shows it.
    #[error("the coordinator stopped answering: {0}")]
    Gone(String),
    #[error("an agent was refused at the handshake: {0}")]
    RefusedAgent(String),
    #[error("load agent {shard} exited before its handshake ({status})")]
    Exited {
        shard: usize,
        status: std::process::ExitStatus,
    },
    #[error("no handshake from agent(s) {missing} within {timeout:?} on {url}")]
    NoHandshake {
        missing: String,
        timeout: Duration,
        url: String,
    },
    #[error("binding the agents' address {listen}: {}", Causes(.error))]
    Bind {
        listen: std::net::SocketAddr,
        error: std::io::Error,
    },
    /// The coordinator's socket address.
    #[error("{}", Causes(.0))]
    Io(std::io::Error),
    #[error("finding the harness executable: {}", Causes(.0))]
    Exe(std::io::Error),
    #[error("starting a load agent: {}", Causes(.0))]
    Spawn(std::io::Error),
    #[error(transparent)]
    Container(Box<crate::env::containers::ContainerError>),
}

fn shard_of(args: &AgentArgs) -> Result<u32, AgentError> {
    let shard = match args.shard {
        Some(s) => s,
        None => std::env::var("JOB_COMPLETION_INDEX")
            .map_err(AgentError::NoShard)?
            .trim()
            .parse()
            .map_err(AgentError::ShardNotNumber)?,
    };
    if args.of == 0 || shard >= args.of {
        return Err(AgentError::ShardRange { shard, of: args.of });
    }
    Ok(shard)
}

/// Says hello and waits for the plan (retrying while the coordinator is not up).
pub async fn handshake(
    http: &reqwest::Client,
    url: &str,
    hello: &Hello,
) -> Result<Plan, AgentError> {
    let give_up = Instant::now() + CONNECT_FOR;
    loop {
        match http
            .post(format!("{url}{}", protocol::HELLO_PATH))
            .json(hello)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => return r.json().await.map_err(AgentError::Plan),
            Ok(r) => {
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                return Err(AgentError::Refused { status, text });
            }
            Err(e) if e.is_connect() && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => {
                return Err(AgentError::NoAnswer {
                    url: url.to_string(),
                    error,
                })
            }
        }
    }
}

/// The run's t = 0 as this process's instant.
fn start_instant(start_unix_ms: u64) -> Instant {
    let start = UNIX_EPOCH + Duration::from_millis(start_unix_ms);
    let now = Instant::now();
    match start.duration_since(SystemTime::now()) {
        Ok(ahead) => now + ahead,
        Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
    }
}

/// `harness agent`: drives one shard to its end.
pub async fn run(args: AgentArgs, stop: Arc<StopSignal>) -> Result<(), AgentError> {
    let shard = shard_of(&args)?;
    let mut exp =
        crate::experiment::load(&args.experiment, args.quick).map_err(AgentError::Experiment)?;
    if let Some(s) = args.seed {
        exp.seed = s;
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(AgentError::Client)?;
    let plan = handshake(&http, &args.coordinator, &hello(&exp, shard, args.of)).await?;
    let v = exp
        .variants
        .iter()
        .find(|v| v.name == plan.variant)
        .ok_or_else(|| AgentError::NoVariant(plan.variant.clone()))?
        .clone();
    let start = start_instant(plan.start_unix_ms);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder::with_tap(start, plan.seconds, tx));
    let (finish_tx, finish_rx) = tokio::sync::oneshot::channel();
    let reporter = tokio::spawn(report_loop(
        http.clone(),
        format!("{}{}", args.coordinator, protocol::REPORT_PATH),
        shard,
        rx,
        finish_rx,
        stop.clone(),
    ));
    // After the reporter started: its heartbeats keep this agent from being
    // taken for lost while a large schedule is computed.
    let mine = my_shard(&exp, &plan, shard, args.of)?;
    let mut load_plan = LoadPlan::for_variant(
        &exp,
        &v,
        plan.base_url.clone(),
        mine,
        LoadWindow {
            start,
            load_end: start + Duration::from_millis(plan.load_end_ms),
            hard_stop: start + Duration::from_millis(plan.hard_stop_ms),
        },
        recorder.clone(),
        stop.clone(),
    );
    // The coordinator split the run's in-flight cap between the agents.
    load_plan.max_in_flight = plan.max_in_flight;
    let (load, finished) = drive(load_plan).await;
    drop(recorder);
    let _ = finish_tx.send(finished);
    reporter.await.map_err(AgentError::Reporter)??;
    Ok(load.map(|_| ())?)
}

/// What this agent tells the coordinator at the handshake: who it is and
/// what it loaded, for the coordinator to refuse a mismatch.
fn hello(exp: &crate::experiment::Experiment, shard: u32, of: u32) -> Hello {
    Hello {
        harness_version: protocol::harness_version().into(),
        experiment_hash: protocol::experiment_hash(&exp.source, exp.quick),
        seed: exp.seed,
        shard,
        of,
        whereabouts: format!(
            "pid {} on {}",
            std::process::id(),
            std::fs::read_to_string("/etc/hostname")
                .unwrap_or_default()
                .trim()
        ),
    }
}

/// This agent's documents, from the whole schedule planned with the
/// coordinator's calibration; refused unless they are the shard the
/// coordinator planned (same count and digest).
fn my_shard(
    exp: &crate::experiment::Experiment,
    plan: &Plan,
    shard: u32,
    of: u32,
) -> Result<Vec<crate::load::workload::Document>, AgentError> {
    let capacity = Capacity {
        pages_per_sec: plan.capacity_pages_per_sec,
        docs_per_sec: plan.capacity_docs_per_sec,
    };
    let mine = shard::shard(&crate::load::plan_documents(exp, capacity), shard, of);
    if shard::digest(&mine) != plan.shard_digest || mine.len() as u64 != plan.shard_documents {
        return Err(AgentError::OtherShard {
            shard,
            mine: mine.len(),
            theirs: plan.shard_documents,
        });
    }
    Ok(mine)
}

/// Drives the shard's load; returns its outcome and what the last report
/// says of it (the counts, zero when the load failed, and the CPU it took).
async fn drive(
    load_plan: LoadPlan,
) -> (
    Result<crate::load::LoadOutcome, crate::load::LoadError>,
    Finished,
) {
    let cpu_before = crate::base::cpu::process_cpu_s().ok();
    let load = crate::load::drive(load_plan).await;
    let cpu_s = cpu_before
        .zip(crate::base::cpu::process_cpu_s().ok())
        .map(|(a, b)| (b - a).max(0.0));
    let finished = match &load {
        Ok(l) => Finished {
            goose_requests: l.goose_requests,
            goose_failures: l.goose_failures,
            journeys: l.journeys,
            cpu_s,
        },
        Err(_) => Finished {
            cpu_s,
            ..Finished::default()
        },
    };
    (load, finished)
}

/// Posts the recorder's events every 250 ms, then the last report.
async fn report_loop(
    http: reqwest::Client,
    url: String,
    shard: u32,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(Duration, Event)>,
    mut finish: tokio::sync::oneshot::Receiver<Finished>,
    stop: Arc<StopSignal>,
) -> Result<(), AgentError> {
    let mut seq = 0u64;
    let mut last_ok = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(protocol::REPORT_EVERY_MS));
    loop {
        let done = tokio::select! {
            _ = tick.tick() => None,
            f = &mut finish => Some(f.unwrap_or_default()),
        };
        let mut events = Vec::new();
        while let Ok((at, e)) = rx.try_recv() {
            events.push((at.as_micros() as u64, e));
        }
        let report = Report {
            shard,
            seq,
            events,
            done: done.clone(),
        };
        // The same report until it is taken (a retry is recognised by its seq).
        loop {
            match http
                .post(&url)
                .timeout(Duration::from_secs(2))
                .json(&report)
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => {
                    last_ok = Instant::now();
                    let answer: serde_json::Value = r.json().await.unwrap_or_default();
                    if answer["stop"] == true && !stop.is_set() {
                        stop.trigger("the coordinator stopped the run");
                    }
                    break;
                }
                Ok(r) if r.status() == reqwest::StatusCode::GONE => {
                    stop.trigger("the coordinator declared this agent lost");
                    return Err(AgentError::Lost(shard));
                }
                other => {
                    if last_ok.elapsed() >= COORDINATOR_GONE {
                        stop.trigger("the coordinator stopped answering");
                        return Err(AgentError::Gone(format!("{other:?}")));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        seq += 1;
        if done.is_some() {
            return Ok(());
        }
    }
}

/// `harness agent`: one load agent, until its coordinator's run ends.
pub fn cli(
    args: crate::cli::AgentArgs,
) -> Result<crate::base::exit::Finished, crate::base::exit::CliError> {
    let (rt, stop) = crate::base::interrupt::cli_runtime()?;
    rt.block_on(crate::run::agent::run(args, stop))
        .map_err(|e| crate::base::exit::CliError::Line(format!("harness agent: error: {e}")))?;
    Ok(crate::base::exit::Finished::Passed)
}
