//! Runs an experiment: every variant against a fresh system, same seed, same
//! traffic, same timeline; then analysis and the report.
//!
//! Per variant: start the environment → plan the traffic from the seed →
//! start the timeline and the once-a-second sampler → drive the load (goose)
//! → wait for every journey → final scrape → stop the environment. An
//! interrupted or broken variant still yields what was measured.
//!
//! `variant.rs` runs one variant in phases, `sampler.rs` reads its seconds,
//! `agents.rs` starts and drives its load agents.

use crate::base::causes::Causes;
use crate::base::clock::ClockKind;
use crate::base::interrupt::StopSignal;
use crate::env::{self};
use crate::experiment::{Experiment, Variant};
use crate::load::Capacity;
use gpu_executor::PageExecutor;
use run_report::{EnvironmentFacts, RunData, VariantRun};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub mod agent;
pub(crate) mod cost;
pub(crate) mod residue;
mod sampler;
mod variant;
use variant::drive_variant;

/// Options from the command line.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub out_dir: PathBuf,
    pub quiet: bool,
    /// Run only this variant.
    pub variant: Option<String>,
    /// Split the load over this many load agents (`agent/`); `None`: the
    /// load runs in this process.
    pub agents: Option<AgentOptions>,
    /// The variant's system is already running at this URL (deployed from
    /// this file's variant, e.g. by `harness render k8s`): drive it, with
    /// faults through its admin API and the variant's admin token.
    pub deployed: Option<String>,
    /// The experiment's last recorded campaign, to place the run in.
    pub context: Option<run_report::campaign::context::CampaignContext>,
    /// Real or virtual time (`clock.rs`); the caller runs [`run`] on the
    /// runtime [`ClockKind::runtime`] builds.
    pub clock: ClockKind,
}

/// How the load agents of every variant come to be.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub count: u32,
    pub source: crate::run::agent::coordinator::AgentSource,
    /// Where the coordinator listens for them (loopback port 0 for children).
    pub listen: std::net::SocketAddr,
    /// How long to wait for every agent's handshake.
    pub join_timeout: Duration,
}

/// Why a run could not be done: its checks before anything ran, a
/// variant's system or load agents, its measurements, or its report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Program(crate::experiment::ExperimentError),
    #[error(transparent)]
    Prom(#[from] crate::observe::prometheus::PromError),
    /// A target series that promtool refuses, or no Prometheus: said once.
    #[error(transparent)]
    Check(crate::observe::target_series::CheckError),
    #[error(transparent)]
    Env(#[from] Box<env::EnvError>),
    #[error("no variant named {0:?}")]
    NoVariant(String),
    #[error("variant {name}: {error}")]
    Variant { name: String, error: Box<RunError> },
    #[error("writing the report to {}: {}", .dir.display(), Causes(.error))]
    Report {
        dir: PathBuf,
        error: run_report::ReportError,
    },
    #[error("building the HTTP client: {}", Causes(.0))]
    Client(reqwest::Error),
    #[error(transparent)]
    Agent(#[from] Box<crate::run::agent::AgentError>),
    #[error(transparent)]
    Container(#[from] Box<crate::env::containers::ContainerError>),
    #[error("the experiment's folder: {}", Causes(.0))]
    Folder(std::io::Error),
    #[error("{}: {}", .path.display(), Causes(.error))]
    Rule {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the rule file {} is outside the experiment's folder: the agent containers could not find it at the same relative path", .0.display())]
    RuleOutside(PathBuf),
    #[error("reading {}: {}", .path.display(), Causes(.error))]
    ReadRule {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the system under test at {base} does not answer /metrics: {error}")]
    NoMetrics {
        base: String,
        error: crate::observe::scrape::ScrapeError,
    },
    #[error("sampler task: {}", Causes(.0))]
    Sampler(tokio::task::JoinError),
    #[error("residue watcher task: {}", Causes(.0))]
    Residues(tokio::task::JoinError),
    #[error("driving the load: {0}")]
    Load(crate::load::LoadError),
}

impl From<crate::observe::target_series::CheckError> for RunError {
    fn from(e: crate::observe::target_series::CheckError) -> RunError {
        RunError::Check(e)
    }
}

impl From<env::EnvError> for RunError {
    fn from(e: env::EnvError) -> RunError {
        RunError::Env(Box::new(e))
    }
}

impl From<crate::run::agent::AgentError> for RunError {
    fn from(e: crate::run::agent::AgentError) -> RunError {
        RunError::Agent(Box::new(e))
    }
}

impl From<crate::env::containers::ContainerError> for RunError {
    fn from(e: crate::env::containers::ContainerError) -> RunError {
        RunError::Container(Box::new(e))
    }
}

/// A finished run.
pub struct RunOutcome {
    pub run: RunData,
    pub analysis: run_report::Analysis,
    pub report_dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub interrupted: bool,
}

pub async fn run(
    exp: &Experiment,
    opts: &RunOptions,
    stop: Arc<StopSignal>,
) -> Result<RunOutcome, RunError> {
    let started_at = chrono::Utc::now();
    let span = crate::base::clock::Span::start();
    // Before anything runs: the programs it starts must be installed, the
    // rules must load, and Prometheus be installed.
    crate::experiment::programs::check_installed(&exp.environment, &exp.programs)
        .map_err(RunError::Program)?;
    if let Some(a) = &exp.alerts {
        crate::observe::prometheus::check_rules(a)?;
    }
    crate::observe::target_series::check(exp)?;
    let (executor, capacity) = match opts.clock {
        ClockKind::Real => {
            let executor = env::executor(exp)?;
            let capacity = env::calibrate(exp, executor.as_deref())?;
            (executor, capacity)
        }
        ClockKind::Virtual => (Some(env::virtual_executor()), env::modeled_capacity(exp)),
    };
    let facts = environment_facts(exp, executor.as_deref(), capacity, opts.clock);
    if !opts.quiet {
        eprintln!(
            "harness: {} ({}), seed {}, {} per variant on the {} clock; executor: {}; capacity {:.0} pages/s = {:.1} documents/s per pool",
            exp.name,
            if exp.quick { "quick" } else { "full" },
            exp.seed,
            humantime::format_duration(exp.duration),
            opts.clock.name(),
            facts.gpu_adapter,
            capacity.pages_per_sec,
            capacity.docs_per_sec
        );
    }

    let variants: Vec<&Variant> = exp
        .variants
        .iter()
        .filter(|v| opts.variant.as_ref().is_none_or(|n| n == &v.name))
        .collect();
    if variants.is_empty() {
        return Err(RunError::NoVariant(
            opts.variant.as_deref().unwrap_or("").to_string(),
        ));
    }
    let mut runs = Vec::new();
    for v in variants {
        if stop.is_set() {
            break;
        }
        let r = run_variant(exp, v, executor.clone(), capacity, stop.clone(), opts)
            .await
            .map_err(|e| RunError::Variant {
                name: v.name.clone(),
                error: Box::new(e),
            })?;
        runs.push(r);
    }

    // The report's folder is named by the wall clock's start (unique).
    let run_id = crate::base::run_id::run_id(started_at, exp.seed);
    let run = recorded(exp, opts, started_at, span, facts, runs);
    let analysis = run_report::analyse(&run);
    let report_dir = opts.out_dir.join(&exp.name).join(&run_id);
    let files = run_report::write_report(&report_dir, &run, &analysis).map_err(|error| {
        RunError::Report {
            dir: report_dir.clone(),
            error,
        }
    })?;
    crate::base::run_id::link_latest(&opts.out_dir.join(&exp.name), &run_id);
    Ok(RunOutcome {
        interrupted: stop.is_set(),
        run,
        analysis,
        report_dir,
        files,
    })
}

/// The recorded run, on its clock: a virtual run records its own clock's
/// start (the epoch) and run id, so that a replay gives the same run.json;
/// how long it took on the wall stays out of run.json (`RunData::timing`).
fn recorded(
    exp: &Experiment,
    opts: &RunOptions,
    started_at: chrono::DateTime<chrono::Utc>,
    span: crate::base::clock::Span,
    facts: EnvironmentFacts,
    runs: Vec<VariantRun>,
) -> RunData {
    let start = match opts.clock {
        ClockKind::Real => started_at,
        ClockKind::Virtual => chrono::DateTime::UNIX_EPOCH,
    };
    let run_id = crate::base::run_id::run_id(start, exp.seed);
    let mut run = run_data(exp, &run_id, start, facts, runs, opts.context.clone());
    run.clock = opts.clock.recorded();
    let (wall_s, clock_s) = span.elapsed();
    run.timing = Some(run_report::RunTiming { wall_s, clock_s });
    run
}

/// What the report says about where the run ran.
fn environment_facts(
    exp: &Experiment,
    executor: Option<&dyn PageExecutor>,
    capacity: Capacity,
    clock: ClockKind,
) -> EnvironmentFacts {
    let info = executor.map(|e| e.info().clone());
    // A virtual run ran on one thread, and replays the same on any host.
    let (hostname, cpus) = match clock {
        ClockKind::Virtual => ("(virtual clock: any host)".to_string(), 1),
        ClockKind::Real => (
            std::fs::read_to_string("/etc/hostname")
                .unwrap_or_default()
                .trim()
                .to_string(),
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        ),
    };
    EnvironmentFacts {
        kind: exp.environment.kind().into(),
        gpu_adapter: info.as_ref().map(|i| i.adapter.clone()).unwrap_or_else(|| {
            match exp.environment {
                crate::experiment::Environment::Processes(_) => "your own service (none of ours)",
                _ => "external target (unknown)",
            }
            .into()
        }),
        gpu_fallback: info.as_ref().is_some_and(|i| i.fallback),
        gpu_fallback_reason: info.as_ref().and_then(|i| i.fallback_reason.clone()),
        calibrated_pages_per_sec: capacity.pages_per_sec,
        calibrated_docs_per_sec: capacity.docs_per_sec,
        harness_version: env!("CARGO_PKG_VERSION").into(),
        hostname,
        cpus,
        extra: Default::default(),
    }
}

/// The recorded run: the experiment, where it ran, the variants that ran
/// and the expectations about them.
fn run_data(
    exp: &Experiment,
    run_id: &str,
    started_at: chrono::DateTime<chrono::Utc>,
    environment: EnvironmentFacts,
    runs: Vec<VariantRun>,
    context: Option<run_report::campaign::context::CampaignContext>,
) -> RunData {
    RunData {
        schema: run_report::RUN_SCHEMA,
        experiment: exp.name.clone(),
        description: exp.description.clone(),
        run_id: run_id.to_string(),
        started_at: started_at.to_rfc3339(),
        seed: exp.seed,
        quick: exp.quick,
        experiment_yaml: exp.source.clone(),
        environment,
        analysis: exp.analysis.clone(),
        expectations: exp
            .expectations
            .iter()
            .filter(|e| runs.iter().any(|r: &VariantRun| r.name == e.variant))
            .cloned()
            .collect(),
        variants: runs,
        incident_figures: exp.incident.clone(),
        campaign_metrics: exp.campaign.windowed_metrics(),
        campaign_context: context,
        clock: run_report::RunClock::Real,
        timing: None,
    }
}

async fn run_variant(
    exp: &Experiment,
    v: &Variant,
    executor: Option<Arc<dyn PageExecutor>>,
    capacity: Capacity,
    stop: Arc<StopSignal>,
    opts: &RunOptions,
) -> Result<VariantRun, RunError> {
    let target = match &opts.deployed {
        Some(url) => env::deployed(url, &v.system).await?,
        None => env::start(exp, v, executor, opts.clock).await?,
    };
    let result = drive_variant(exp, v, &target, capacity, stop, opts).await;
    target.stop().await;
    result
}
