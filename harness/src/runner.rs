//! Runs an experiment: every variant against a fresh system, same seed, same
//! traffic, same timeline; then analysis and the report.
//!
//! Per variant: start the environment → plan the traffic from the seed →
//! start the timeline and the once-a-second sampler → drive the load (goose)
//! → wait for every journey → final scrape → stop the environment. An
//! interrupted or broken variant still yields what was measured.

use crate::environment::{self, Target};
use crate::experiment::{Experiment, TimelineOp, Variant};
use crate::interrupt::StopSignal;
use crate::load::{self, LoadPlan, LoadWindow};
use crate::progress::Progress;
use crate::recorder::Recorder;
use crate::timeline::{self, AdminApi};
use crate::workload::{self, Document};
use anyhow::Context;
use gpu_executor::PageExecutor;
use run_report::{EnvironmentFacts, RunData, VariantRun};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

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
}

/// How the load agents of every variant come to be.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub count: u32,
    pub source: crate::agent::coordinator::AgentSource,
    /// Where the coordinator listens for them (loopback port 0 for children).
    pub listen: std::net::SocketAddr,
    /// How long to wait for every agent's handshake.
    pub join_timeout: Duration,
}

/// A finished run.
pub struct RunOutcome {
    pub run: RunData,
    pub analysis: run_report::Analysis,
    pub report_dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub interrupted: bool,
}

/// Capacity of one pool, measured on this machine.
#[derive(Debug, Clone, Copy)]
pub struct Capacity {
    pub pages_per_sec: f64,
    pub docs_per_sec: f64,
}

pub async fn run(
    exp: &Experiment,
    opts: &RunOptions,
    stop: Arc<StopSignal>,
) -> anyhow::Result<RunOutcome> {
    let started_at = chrono::Utc::now();
    // Before anything runs: the rules must load, and Prometheus be installed.
    if let Some(a) = &exp.alerts {
        crate::prometheus::check_rules(a)?;
    }
    let executor = environment::executor(exp)?;
    let capacity = environment::calibrate(exp, executor.as_deref())?;
    let info = executor.as_ref().map(|e| e.info().clone());
    let facts = EnvironmentFacts {
        kind: exp.environment.kind().into(),
        gpu_adapter: info
            .as_ref()
            .map(|i| i.adapter.clone())
            .unwrap_or_else(|| "external target (unknown)".into()),
        gpu_fallback: info.as_ref().is_some_and(|i| i.fallback),
        gpu_fallback_reason: info.as_ref().and_then(|i| i.fallback_reason.clone()),
        calibrated_pages_per_sec: capacity.pages_per_sec,
        calibrated_docs_per_sec: capacity.docs_per_sec,
        harness_version: env!("CARGO_PKG_VERSION").into(),
        hostname: std::fs::read_to_string("/etc/hostname")
            .unwrap_or_default()
            .trim()
            .to_string(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        extra: Default::default(),
    };
    if !opts.quiet {
        eprintln!(
            "harness: {} ({}), seed {}, {} per variant; executor: {}; capacity {:.0} pages/s = {:.1} documents/s per pool",
            exp.name,
            if exp.quick { "quick" } else { "full" },
            exp.seed,
            humantime::format_duration(exp.duration),
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
        anyhow::bail!(
            "no variant named {:?}",
            opts.variant.as_deref().unwrap_or("")
        );
    }
    let mut runs = Vec::new();
    for v in variants {
        if stop.is_set() {
            break;
        }
        let r = run_variant(exp, v, executor.clone(), capacity, stop.clone(), opts)
            .await
            .with_context(|| format!("variant {}", v.name))?;
        runs.push(r);
    }

    let run_id = crate::run_id::run_id(started_at, exp.seed);
    let run = RunData {
        schema: run_report::RUN_SCHEMA,
        experiment: exp.name.clone(),
        description: exp.description.clone(),
        run_id: run_id.clone(),
        started_at: started_at.to_rfc3339(),
        seed: exp.seed,
        quick: exp.quick,
        experiment_yaml: exp.source.clone(),
        environment: facts,
        analysis: exp.analysis.clone(),
        expectations: exp
            .expectations
            .iter()
            .filter(|e| runs.iter().any(|r: &VariantRun| r.name == e.variant))
            .cloned()
            .collect(),
        variants: runs,
        incident_figures: exp.incident.clone(),
    };
    let analysis = run_report::analyse(&run);
    let report_dir = opts.out_dir.join(&exp.name).join(&run_id);
    let files = run_report::write_report(&report_dir, &run, &analysis)
        .with_context(|| format!("writing the report to {}", report_dir.display()))?;
    crate::run_id::link_latest(&opts.out_dir.join(&exp.name), &run_id);
    Ok(RunOutcome {
        interrupted: stop.is_set(),
        run,
        analysis,
        report_dir,
        files,
    })
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
                docs.extend(crate::spike::documents(exp, i, capacity.docs_per_sec))
            }
            TimelineOp::Admin(_) => {}
        }
    }
    docs.sort_by_key(|d| d.planned);
    docs
}

async fn run_variant(
    exp: &Experiment,
    v: &Variant,
    executor: Option<Arc<dyn PageExecutor>>,
    capacity: Capacity,
    stop: Arc<StopSignal>,
    opts: &RunOptions,
) -> anyhow::Result<VariantRun> {
    let target = match &opts.deployed {
        Some(url) => environment::deployed(url, &v.system).await?,
        None => environment::start(exp, v, executor).await?,
    };
    let result = drive_variant(exp, v, &target, capacity, stop, opts).await;
    target.stop().await;
    result
}

async fn drive_variant(
    exp: &Experiment,
    v: &Variant,
    target: &Target,
    capacity: Capacity,
    stop: Arc<StopSignal>,
    opts: &RunOptions,
) -> anyhow::Result<VariantRun> {
    let quiet = opts.quiet;
    let http = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .context("building the HTTP client")?;
    let base = target.base_url.clone();
    let docs = plan_documents(exp, capacity);
    let drain = {
        let (timeout, attempts) = v.client.slowest();
        load::drain_time(timeout, attempts)
    };
    // The agents first: the clock starts once every one of them is there.
    let mut coordinator = match &opts.agents {
        Some(a) => {
            let expected = crate::agent::coordinator::Expected {
                experiment_hash: crate::agent::protocol::experiment_hash(&exp.source, exp.quick),
                seed: exp.seed,
                of: a.count,
            };
            let (listen, source) = agent_source(exp, a, target).await?;
            let mut c =
                crate::agent::coordinator::Coordinator::start(listen, expected, &source).await?;
            c.wait_for_agents(a.join_timeout).await?;
            Some(c)
        }
        None => None,
    };
    let monitor = match &exp.alerts {
        Some(a) => Some(crate::prometheus::Monitor::start(a, &base, &v.name).await?),
        None => None,
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let admin = target.admin_token.as_ref().map(|token| AdminApi {
        client: http.clone(),
        base_url: base.clone(),
        token: token.clone(),
        containers: target.zone_containers(),
    });
    let mut entries: Vec<_> = exp
        .timeline
        .iter()
        .filter(|e| e.applies_to(&v.name))
        .cloned()
        .collect();
    timeline::set_up(&mut entries, admin.as_ref(), &events).await;
    // Agents need the plan delivered and their schedule computed first.
    let lead = Duration::from_millis(if coordinator.is_some() { 1500 } else { 300 });
    let start = Instant::now() + lead;
    let wall_start = std::time::SystemTime::now() + lead;
    let load_end = start + exp.duration;
    let hard_stop = load_end + drain;
    let total_secs = (exp.duration + drain).as_secs() as usize + 2;
    let recorder = Arc::new(Recorder::new(start, total_secs));
    if let Some(m) = &monitor {
        m.attach(recorder.clone());
    }
    let progress = Progress::new(&v.name, exp.duration, quiet);

    let baseline = crate::scrape::scrape(&http, &base).await.map_err(|e| {
        anyhow::anyhow!("the system under test at {base} does not answer /metrics: {e}")
    })?;
    let unmeasured = unmeasured(&crate::scrape::missing(&baseline), &v.name);

    let (done_tx, mut done_rx) = tokio::sync::watch::channel(false);
    let timeline_task = tokio::spawn(timeline::run(entries, start, admin.clone(), events.clone()));
    let residues = {
        let mut done = done_rx.clone();
        tokio::spawn(crate::residue::watch(
            crate::residue::plan(exp, &v.name, capacity.docs_per_sec),
            start,
            recorder.clone(),
            admin,
            async move {
                let _ = done.wait_for(|d| *d).await;
            },
        ))
    };

    // Sampler: one row per second until the load (and its drain) is over.
    let sampler = {
        let http = http.clone();
        let base = base.clone();
        let recorder = recorder.clone();
        let stop = stop.clone();
        let progress = progress.clone();
        let offered = crate::spike::Offered::new(exp, capacity.docs_per_sec);
        let duration = exp.duration;
        let agents = coordinator.is_some();
        tokio::spawn(async move {
            let mut prev = baseline;
            let mut rows = Vec::new();
            let mut failures = 0;
            for t in 0..total_secs {
                let at = start + Duration::from_secs(t as u64 + 1);
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {},
                    _ = done_rx.wait_for(|d| *d) => {},
                }
                // With agents a second's events may still be on their way:
                // read without folding now, exactly once every agent is done.
                let mut row = if agents {
                    recorder.peek(t)
                } else {
                    recorder.second(t)
                };
                let mid = Duration::from_millis(t as u64 * 1000 + 500);
                if mid < duration {
                    row.offered_rate = offered.rate_at(mid);
                }
                match crate::scrape::scrape(&http, &base).await {
                    Ok(now) => {
                        failures = 0;
                        crate::scrape::fill_second(&mut row, &now, &prev);
                        prev = now;
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::warn!("scrape at {t}s failed: {e}");
                        if failures >= 3 {
                            stop.trigger(&format!(
                                "the system under test stopped answering /metrics: {e}"
                            ));
                        }
                    }
                }
                progress.second(&row);
                rows.push(row);
                if *done_rx.borrow() {
                    break;
                }
            }
            (rows, prev)
        })
    };

    let plan = LoadPlan::for_variant(
        exp,
        v,
        base.clone(),
        docs,
        LoadWindow {
            start,
            load_end,
            hard_stop,
        },
        recorder.clone(),
        stop.clone(),
    );
    let meter = crate::cost::CostMeter::start(target);
    let (load_result, agents, harness_cost) = match coordinator.as_mut() {
        None => {
            let (result, cost) = drive_on_own_runtime(plan, meter).await;
            (result, Vec::new(), cost)
        }
        Some(c) => {
            let (outcome, agents) =
                drive_agents(c, exp, v, plan, capacity, total_secs, hard_stop).await;
            let mut cost = meter.finish(&recorder);
            crate::cost::add_agents(&mut cost, &agents, c.on_this_machine());
            (Ok(outcome), agents, cost)
        }
    };
    crate::cost::warn(&v.name, &harness_cost);
    drop(coordinator);
    let _ = done_tx.send(true);
    timeline_task.abort();
    let (mut seconds, last) = sampler.await.context("sampler task")?;
    if !agents.is_empty() {
        for row in &mut seconds {
            recorder.refresh(row);
        }
    }
    let mut triggers = residues.await.context("residue watcher task")?;
    crate::residue::cache_residues(
        exp,
        &v.name,
        &mut triggers,
        &seconds,
        Duration::from_secs(u64::from(exp.analysis.recovery_window_s)),
    );
    progress.finish();
    let mut unmeasured = unmeasured;
    let alerts = match monitor {
        Some(m) => m.finish(&http, wall_start).await.unwrap_or_else(|e| {
            eprintln!("WARNING ({}): {e}; the alert metrics read n/a", v.name);
            for name in run_report::ALERT_METRICS.iter().chain(&["alerts_fired"]) {
                unmeasured.insert(name.to_string(), e.to_string());
            }
            Vec::new()
        }),
        None => Vec::new(),
    };
    let load = load_result.context("driving the load with goose")?;

    let oversized_tenants = workload::oversized_tenants(&exp.timeline);
    let mut totals = crate::scrape::totals(&last);
    totals.insert("goose_requests".into(), load.goose_requests as f64);
    totals.insert("goose_failures".into(), load.goose_failures as f64);
    totals.insert("journeys".into(), load.journeys as f64);
    totals.insert(
        "attempts_cut_off".into(),
        recorder.attempts_cut_off() as f64,
    );
    let gpu_pacing = crate::scrape::gpu_pacing(&totals);
    if let Some(w) = gpu_pacing.warning() {
        eprintln!("!!! GPU MODEL ({}): {w}", v.name);
    }
    let integrity = recorder.integrity();
    let events = events.lock().expect("timeline log").clone();
    Ok(VariantRun {
        name: v.name.clone(),
        seconds,
        events,
        latency: recorder.latency(),
        tenant_latency: recorder.tenant_latency(),
        tenant_traffic: recorder.tenant_traffic(),
        oversized_tenants,
        integrity,
        triggers,
        load_end_s: Some(exp.duration.as_secs_f64()),
        interrupted: stop.is_set(),
        interrupted_reason: stop.reason(),
        late_arrivals: recorder.late_arrivals(),
        system_totals: totals,
        unmeasured,
        alerts,
        agents,
        harness_cost: Some(harness_cost),
        gpu_pacing: Some(gpu_pacing),
    })
}

/// In the containers environment the agents are containers on the
/// variant's network, and the coordinator listens on that network's gateway.
async fn agent_source(
    exp: &Experiment,
    a: &AgentOptions,
    target: &Target,
) -> anyhow::Result<(std::net::SocketAddr, crate::agent::coordinator::AgentSource)> {
    use crate::agent::coordinator::AgentSource;
    match (&a.source, target.network(), &exp.environment) {
        (
            AgentSource::Children {
                quick,
                seed,
                experiment,
            },
            Some(network),
            crate::experiment::Environment::Containers { images },
        ) => {
            let gateway = crate::containers::network_gateway(network).await?;
            // The alert rules beside the file, at the same relative paths.
            let mut files = Vec::new();
            if let Some(alerts) = &exp.alerts {
                let dir = experiment
                    .parent()
                    .unwrap_or(std::path::Path::new("."))
                    .canonicalize()
                    .context("the experiment's folder")?;
                let inside = std::path::Path::new(crate::containers::AGENT_EXPERIMENT)
                    .parent()
                    .expect("an absolute path");
                for rule in &alerts.rules {
                    let abs = rule
                        .canonicalize()
                        .with_context(|| format!("{}", rule.display()))?;
                    let rel = abs.strip_prefix(&dir).map_err(|_| {
                        anyhow::anyhow!(
                            "the rule file {} is outside the experiment's folder: the agent containers could not find it at the same relative path",
                            rule.display()
                        )
                    })?;
                    let bytes = std::fs::read(&abs)
                        .with_context(|| format!("reading {}", abs.display()))?;
                    files.push((inside.join(rel).to_string_lossy().into_owned(), bytes));
                }
            }
            Ok((
                std::net::SocketAddr::new(gateway, 0),
                AgentSource::Containers {
                    image: images.sut.clone(),
                    network: network.to_string(),
                    experiment_text: exp.source.clone(),
                    files,
                    quick: *quick,
                    seed: *seed,
                },
            ))
        }
        _ => Ok((a.listen, a.source.clone())),
    }
}

/// Hands the agents their shards of `plan` and waits for them; returns
/// goose's counts summed over the agents and what became of each.
async fn drive_agents(
    c: &mut crate::agent::coordinator::Coordinator,
    exp: &Experiment,
    v: &Variant,
    plan: LoadPlan,
    capacity: Capacity,
    total_secs: usize,
    hard_stop: Instant,
) -> (load::LoadOutcome, Vec<run_report::AgentRecord>) {
    let shards = crate::agent::coordinator::shard_plans(
        &plan,
        c.count(),
        &v.name,
        capacity,
        exp.duration,
        hard_stop,
        total_secs,
    );
    let recorder = plan.journeys.recorder.clone();
    c.release(shards.plans, recorder.clone());
    c.finish(
        &recorder,
        &shards.planned,
        hard_stop + Duration::from_secs(10),
        &plan.stop,
    )
    .await
}

/// Drives the load on a runtime of its own, whose threads are named
/// (`cpu::LOAD_THREADS`) so the harness-cost panel can tell the load path's
/// CPU from the rest of the harness and from an embedded system under test.
/// The cost is read before that runtime stops, while its threads still exist.
async fn drive_on_own_runtime(
    plan: LoadPlan,
    meter: crate::cost::CostMeter,
) -> (anyhow::Result<load::LoadOutcome>, run_report::HarnessCost) {
    let recorder = plan.journeys.recorder.clone();
    let rt = match crate::cpu::named_runtime(crate::cpu::LOAD_THREADS) {
        Ok(rt) => rt,
        Err(e) => {
            let cost = meter.finish(&recorder);
            return (Err(e).context("starting the load's runtime"), cost);
        }
    };
    let result = rt.spawn(load::drive(plan)).await;
    let cost = meter.finish(&recorder);
    // Every journey ended inside `drive`; nothing is left to wait for.
    rt.shutdown_background();
    let result = match result {
        Ok(r) => r,
        Err(e) => Err(anyhow::anyhow!("the load task: {e}")),
    };
    (result, cost)
}

/// Says loudly which series the target lacks and which report figures they
/// blank; returns those figures with why (they read "n/a", never 0).
fn unmeasured(
    missing: &[(&'static str, &'static [&'static str])],
    variant: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for (series, feeds) in missing {
        let blanks = if feeds.is_empty() {
            "the charts".to_string()
        } else {
            feeds.join(", ")
        };
        eprintln!(
            "WARNING ({variant}): the target's /metrics has no {series}; these report figures read n/a: {blanks}"
        );
        for f in *feeds {
            out.entry(f.to_string())
                .or_insert_with(|| format!("the target does not export {series}"));
        }
    }
    out
}
