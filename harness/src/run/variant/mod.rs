//! One variant's run against its started target, in phases ([`VariantDrive`]).

mod agents;

use super::sampler::Sampler;
use super::RunOptions;
use crate::base::interrupt::StopSignal;
use crate::base::progress::Progress;
use crate::env::timeline::{self, AdminApi};
use crate::env::Target;
use crate::experiment::{Experiment, TimelineEntry, Variant};
use crate::load::workload::{self, Document};
use crate::load::{self, LoadPlan, LoadWindow};
use crate::load::{plan_documents, Capacity};
use crate::observe::recorder::Recorder;
use crate::observe::scrape::Scrape;
use crate::run::agent::coordinator::Coordinator;
use crate::run::RunError;
use agents::{drive_agents, join_agents};
use run_report::{Second, TimelineEvent, TriggerSpan, VariantRun};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub(super) async fn drive_variant(
    exp: &Experiment,
    v: &Variant,
    target: &Target,
    capacity: Capacity,
    stop: Arc<StopSignal>,
    opts: &RunOptions,
) -> Result<VariantRun, RunError> {
    VariantDrive::connect(exp, v, target, capacity, stop, opts)
        .await?
        .run(opts.quiet)
        .await
}

/// One variant's run against its started target, phase by phase:
/// [`connect`](Self::connect) (HTTP client, load agents, Prometheus monitor),
/// [`set_up_timeline`](Self::set_up_timeline) (the initial actions, before
/// the clock), [`start_watchers`](Self::start_watchers) (timeline, residue
/// watcher, [`Sampler`]), [`drive`](Self::drive) (the load and its cost),
/// [`teardown`](Self::teardown) (watchers stopped; seconds, residues and
/// alerts collected) and [`assemble`](Self::assemble) (the [`VariantRun`]).
struct VariantDrive<'a> {
    exp: &'a Experiment,
    v: &'a Variant,
    target: &'a Target,
    capacity: Capacity,
    stop: Arc<StopSignal>,
    /// Client for the target's Prometheus monitor (alerts).
    http: reqwest::Client,
    /// The target's /metrics and admin API (HTTP, or in process).
    system: crate::net::system_client::SystemClient,
    /// The target's base URL.
    base: String,
    /// The seeded documents, planned before the clock starts; taken by the load.
    docs: Vec<Document>,
    /// The load agents (`--agents`), every one joined; `None`: the load
    /// runs in this process.
    coordinator: Option<Coordinator>,
    /// The experiment's Prometheus, for its alert rules (`alerts:`) and
    /// an external target's `target_series:` expressions.
    monitor: Option<crate::observe::prometheus::Monitor>,
    /// What the timeline did, in order.
    events: Arc<Mutex<Vec<TimelineEvent>>>,
}

/// When a variant's load starts and ends.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    start: Instant,
    /// `start` on the wall clock (Prometheus's alert history is read by it).
    wall_start: SystemTime,
    load_end: Instant,
    /// The load's end plus the slowest client's drain: every journey is over.
    pub(super) hard_stop: Instant,
    /// Seconds recorded: load and drain, and two more.
    pub(super) total_secs: usize,
}

/// What every phase from the clock's start on records into.
struct Running {
    clock: Clock,
    recorder: Arc<Recorder>,
    progress: Progress,
}

/// The tasks that watch the variant while its load runs.
struct Watchers {
    /// Tells the residue watcher and the sampler that the load is over.
    done: watch::Sender<bool>,
    timeline: JoinHandle<()>,
    residues: JoinHandle<Vec<TriggerSpan>>,
    sampler: JoinHandle<(Vec<Second>, Scrape)>,
}

/// What the load phase gave.
struct Driven {
    load: Result<load::LoadOutcome, load::LoadError>,
    agents: Vec<run_report::AgentRecord>,
    /// `None` in virtual time: the wall clock's CPU is not the run's.
    cost: Option<run_report::HarnessCost>,
}

/// What teardown collected for [`VariantDrive::assemble`].
struct Collected {
    seconds: Vec<Second>,
    /// The last scrape: the system's totals.
    last: Scrape,
    triggers: Vec<TriggerSpan>,
    alerts: Vec<run_report::AlertHistory>,
    /// An external target's `target_series:` series.
    target_series: Vec<run_report::TargetSeries>,
    load: load::LoadOutcome,
    agents: Vec<run_report::AgentRecord>,
    cost: Option<run_report::HarnessCost>,
    unmeasured: BTreeMap<run_report::Metric, String>,
}

impl<'a> VariantDrive<'a> {
    /// Plans the traffic, then joins the agents (the clock starts once every
    /// one of them is there) and starts the monitor.
    async fn connect(
        exp: &'a Experiment,
        v: &'a Variant,
        target: &'a Target,
        capacity: Capacity,
        stop: Arc<StopSignal>,
        opts: &RunOptions,
    ) -> Result<VariantDrive<'a>, RunError> {
        let http = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .map_err(RunError::Client)?;
        let base = target.base_url.clone();
        let system = target.control(&http);
        let docs = plan_documents(exp, capacity);
        let coordinator = match &opts.agents {
            Some(a) => Some(join_agents(exp, a, target).await?),
            None => None,
        };
        let monitor = crate::observe::target_series::monitor(exp, &base, &v.name).await?;
        Ok(VariantDrive {
            exp,
            v,
            target,
            capacity,
            stop,
            http,
            system,
            base,
            docs,
            coordinator,
            monitor,
            events: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// The phases in order; an error in one still drops (stops) what the
    /// earlier ones started.
    async fn run(mut self, quiet: bool) -> Result<VariantRun, RunError> {
        let (entries, admin) = self.set_up_timeline().await;
        let clock = self.clock();
        let running = Running {
            clock,
            recorder: Arc::new(Recorder::new(clock.start, clock.total_secs)),
            progress: Progress::new(&self.v.name, self.exp.duration, quiet),
        };
        if let Some(m) = &self.monitor {
            m.attach(running.recorder.clone());
        }
        let (baseline, scraped) = self.baseline_scrape().await?;
        let missing = crate::observe::scrape::missing(&baseline);
        let unmeasured = if self.exp.workload.http.is_some() {
            blanked(&missing, "not applicable to a generic HTTP service (figures of this project's system: its pages, de-duplication, GPU, cache and gateway)")
        } else if !scraped {
            blanked(
                &missing,
                "the service has no metrics (`target.metrics` not set)",
            )
        } else {
            unmeasured(&missing, &self.v.name)
        };
        let watchers = self.start_watchers(entries, admin, &running, (baseline, scraped));
        let driven = self.drive(&running).await;
        let collected = self
            .teardown(watchers, driven, &running, unmeasured)
            .await?;
        Ok(self.assemble(collected, &running.recorder))
    }

    /// The system's counters before the load, and whether the sampler
    /// reads them. A service of the user's own (`workload.http`) is read
    /// only at its `target.metrics`, if given: its `/metrics` may be any
    /// page of its own, and the verdict stands on what its clients saw.
    async fn baseline_scrape(&self) -> Result<(Scrape, bool), RunError> {
        let generic = self.exp.workload.http.is_some();
        // A user's processes without `target.metrics`: their environment
        // said so once when it started them.
        if !self.target.has_metrics() {
            return Ok((Scrape::default(), false));
        }
        if generic && self.target.metrics_url().is_none() {
            eprintln!(
                "NOTE ({}): no target.metrics: the service's own metrics are not read; the verdict stands on what the clients saw",
                self.v.name
            );
            return Ok((Scrape::default(), false));
        }
        match crate::observe::scrape::scrape(&self.system).await {
            Ok(s) => Ok((s, true)),
            Err(error) if generic => {
                eprintln!(
                    "NOTE ({}): the service's metrics gave no Prometheus text ({error}); the verdict stands on what the clients saw",
                    self.v.name
                );
                Ok((Scrape::default(), false))
            }
            Err(error) => Err(RunError::NoMetrics {
                base: self.base.clone(),
                error,
            }),
        }
    }

    /// The variant's timeline entries after the initial actions (at 0 s,
    /// no trigger, no duration) were applied, and its admin API.
    async fn set_up_timeline(&self) -> (Vec<TimelineEntry>, Option<AdminApi>) {
        let admin = self.target.admin_token.as_ref().map(|token| AdminApi {
            system: self.system.clone(),
            token: token.clone(),
            containers: self.target.zone_containers(),
        });
        let mut entries: Vec<_> = self
            .exp
            .timeline
            .iter()
            .filter(|e| e.applies_to(&self.v.name))
            .cloned()
            .collect();
        timeline::set_up(&mut entries, admin.as_ref(), &self.events).await;
        (entries, admin)
    }

    /// The clock, started now plus the lead the load needs.
    fn clock(&self) -> Clock {
        let drain = {
            let (timeout, attempts) = self.v.client.slowest();
            load::drain_time(timeout, attempts)
        };
        // Agents need the plan delivered and their schedule computed first.
        let lead = Duration::from_millis(if self.coordinator.is_some() {
            1500
        } else {
            300
        });
        let start = Instant::now() + lead;
        let load_end = start + self.exp.duration;
        Clock {
            start,
            wall_start: SystemTime::now() + lead,
            load_end,
            hard_stop: load_end + drain,
            total_secs: (self.exp.duration + drain).as_secs() as usize + 2,
        }
    }

    /// Starts the timeline, the residue watcher and the sampler.
    fn start_watchers(
        &self,
        entries: Vec<TimelineEntry>,
        admin: Option<AdminApi>,
        r: &Running,
        (baseline, scraped): (Scrape, bool),
    ) -> Watchers {
        let (done, done_rx) = watch::channel(false);
        let start = r.clock.start;
        let timeline = tokio::spawn(timeline::run(
            entries,
            start,
            admin.clone(),
            self.target.faults(),
            self.events.clone(),
        ));
        let residues = {
            let mut done = done_rx.clone();
            tokio::spawn(crate::run::residue::watch(
                crate::run::residue::plan(self.exp, &self.v.name, self.capacity.docs_per_sec),
                start,
                r.recorder.clone(),
                admin,
                async move {
                    let _ = done.wait_for(|d| *d).await;
                },
            ))
        };
        let sampler = Sampler {
            system: scraped.then(|| self.system.clone()),
            recorder: r.recorder.clone(),
            stop: self.stop.clone(),
            progress: r.progress.clone(),
            offered: crate::load::spike::Offered::new(self.exp, self.capacity.docs_per_sec),
            duration: self.exp.duration,
            agents: self.coordinator.is_some(),
            // A user's service may be too overloaded to answer its metrics;
            // its clients, not its metrics, say whether it is alive.
            stop_on_silence: self.exp.workload.http.is_none(),
            start,
            total_secs: r.clock.total_secs,
        };
        Watchers {
            done,
            timeline,
            residues,
            sampler: tokio::spawn(sampler.run(baseline, done_rx)),
        }
    }

    /// Drives the load, in this process or through the agents, and
    /// measures what it cost.
    async fn drive(&mut self, r: &Running) -> Driven {
        let plan = LoadPlan::for_variant(
            self.exp,
            self.v,
            self.target.load_url(),
            std::mem::take(&mut self.docs),
            LoadWindow {
                start: r.clock.start,
                load_end: r.clock.load_end,
                hard_stop: r.clock.hard_stop,
            },
            r.recorder.clone(),
            self.stop.clone(),
        );
        if let Some(system) = self.target.in_process() {
            // Virtual time: the load on this runtime; what it cost in CPU
            // is the wall clock's business, not the run's.
            return Driven {
                load: load::drive_in_process(plan, system.clone()).await,
                agents: Vec::new(),
                cost: None,
            };
        }
        let meter = crate::run::cost::CostMeter::start(self.target);
        let driven = match self.coordinator.as_mut() {
            None => {
                let (load, cost) = drive_on_own_runtime(plan, meter).await;
                Driven {
                    load,
                    agents: Vec::new(),
                    cost: Some(cost),
                }
            }
            Some(c) => {
                let (outcome, agents) =
                    drive_agents(c, self.exp, self.v, plan, self.capacity, &r.clock).await;
                let mut cost = meter.finish(&r.recorder);
                crate::run::cost::add_agents(&mut cost, &agents, c.on_this_machine());
                Driven {
                    load: Ok(outcome),
                    agents,
                    cost: Some(cost),
                }
            }
        };
        if let Some(cost) = &driven.cost {
            crate::run::cost::warn(&self.v.name, cost);
        }
        driven
    }

    /// Once the load is over: stops the agents and the watchers, collects
    /// the seconds (folded again when agents sent events late), the
    /// triggers' residues and the alerts. A failed load is an error only
    /// after that.
    async fn teardown(
        &mut self,
        w: Watchers,
        driven: Driven,
        r: &Running,
        mut unmeasured: BTreeMap<run_report::Metric, String>,
    ) -> Result<Collected, RunError> {
        drop(self.coordinator.take());
        let _ = w.done.send(true);
        w.timeline.abort();
        let (mut seconds, last) = w.sampler.await.map_err(RunError::Sampler)?;
        if !driven.agents.is_empty() {
            for row in &mut seconds {
                r.recorder.refresh(row);
            }
        }
        let mut triggers = w.residues.await.map_err(RunError::Residues)?;
        crate::run::residue::cache_residues(
            self.exp,
            &self.v.name,
            &mut triggers,
            &seconds,
            Duration::from_secs(u64::from(self.exp.analysis.recovery_window_s)),
        );
        r.progress.finish();
        let target_series = self.target_series(r.clock.wall_start, seconds.len()).await;
        let alerts = self.alerts(r.clock.wall_start, &mut unmeasured).await;
        Ok(Collected {
            seconds,
            last,
            triggers,
            alerts,
            target_series,
            load: driven.load.map_err(RunError::Load)?,
            agents: driven.agents,
            cost: driven.cost,
            unmeasured,
        })
    }

    /// An external target's `target_series:` series over the variant's `secs`
    /// seconds from `wall_start`, read from the monitor's Prometheus.
    async fn target_series(
        &self,
        wall_start: SystemTime,
        secs: usize,
    ) -> Vec<run_report::TargetSeries> {
        let Some(m) = &self.monitor else {
            return Vec::new();
        };
        let url = m.url();
        let window = (wall_start, secs);
        crate::observe::target_series::evaluate(
            &self.http,
            &url,
            &self.exp.target_series,
            window,
            &self.v.name,
        )
        .await
    }

    /// The alert rules' history from the monitor; when it cannot be read,
    /// the alert metrics are unmeasured (n/a), not zero.
    async fn alerts(
        &mut self,
        wall_start: SystemTime,
        unmeasured: &mut BTreeMap<run_report::Metric, String>,
    ) -> Vec<run_report::AlertHistory> {
        let Some(m) = self.monitor.take() else {
            if let Some(why) = &self.exp.alerts_left_out {
                for metric in run_report::Metric::ALL.iter().filter(|m| m.needs_alerts()) {
                    unmeasured.insert(*metric, why.clone());
                }
            }
            return Vec::new();
        };
        m.finish(&self.http, wall_start).await.unwrap_or_else(|e| {
            eprintln!("WARNING ({}): {e}; the alert metrics read n/a", self.v.name);
            for metric in run_report::Metric::ALL.iter().filter(|m| m.needs_alerts()) {
                unmeasured.insert(*metric, e.to_string());
            }
            Vec::new()
        })
    }

    /// The recorded variant.
    fn assemble(&self, c: Collected, recorder: &Recorder) -> VariantRun {
        let mut totals = crate::observe::scrape::totals(&c.last);
        // goose's own count, as a cross-check; in virtual time goose does
        // not run and the load path's reports are counted instead.
        let (requests, failures) = match c.load.counted_by {
            load::CountedBy::Goose => ("goose_requests", "goose_failures"),
            load::CountedBy::LoadPath => ("reported_attempts", "reported_failures"),
        };
        totals.insert(requests.into(), c.load.goose_requests as f64);
        totals.insert(failures.into(), c.load.goose_failures as f64);
        totals.insert("journeys".into(), c.load.journeys as f64);
        totals.insert(
            "attempts_cut_off".into(),
            recorder.attempts_cut_off() as f64,
        );
        let held_up = self.exp.held_up_pool_zones(&self.v.name);
        let gpu_pacing = crate::observe::scrape::gpu_pacing(&c.last, &held_up);
        if let Some(w) = gpu_pacing.warning() {
            eprintln!("!!! GPU MODEL ({}): {w}", self.v.name);
        }
        VariantRun {
            name: self.v.name.clone(),
            seconds: c.seconds,
            events: self.events.lock().expect("timeline log").clone(),
            latency: recorder.latency(),
            tenant_latency: recorder.tenant_latency(),
            tenant_traffic: recorder.tenant_traffic(),
            oversized_tenants: workload::oversized_tenants(&self.exp.timeline),
            integrity: run_report::Integrity {
                processes_exited: self.target.exited_processes(),
                ..recorder.integrity()
            },
            triggers: c.triggers,
            load_end_s: Some(self.exp.duration.as_secs_f64()),
            interrupted: self.stop.is_set(),
            interrupted_reason: self.stop.reason(),
            late_arrivals: recorder.late_arrivals(),
            system_totals: totals,
            unmeasured: c.unmeasured,
            alerts: c.alerts,
            agents: c.agents,
            harness_cost: c.cost,
            gpu_pacing: Some(gpu_pacing),
            target_series: c.target_series,
        }
    }
}

/// Drives the load on a runtime of its own, whose threads are named
/// (`cpu::LOAD_THREADS`) so the harness-cost panel can tell the load path's
/// CPU from the rest of the harness and from an embedded system under test.
/// The cost is read before that runtime stops, while its threads still exist.
async fn drive_on_own_runtime(
    plan: LoadPlan,
    meter: crate::run::cost::CostMeter,
) -> (
    Result<load::LoadOutcome, load::LoadError>,
    run_report::HarnessCost,
) {
    let recorder = plan.journeys.recorder.clone();
    let rt = match crate::base::cpu::named_runtime(crate::base::cpu::LOAD_THREADS) {
        Ok(rt) => rt,
        Err(e) => {
            let cost = meter.finish(&recorder);
            return (Err(load::LoadError::Runtime(e)), cost);
        }
    };
    let result = rt.spawn(load::drive(plan)).await;
    let cost = meter.finish(&recorder);
    // Every journey ended inside `drive`; nothing is left to wait for.
    rt.shutdown_background();
    let result = match result {
        Ok(r) => r,
        Err(e) => Err(load::LoadError::Task(e)),
    };
    (result, cost)
}

/// The report figures a target's missing series would feed, each with
/// `why` (said in the report once, not warned series by series): a user's
/// service without metrics, or a generic HTTP workload, whose service has
/// no pages, de-duplication or GPU.
fn blanked(
    missing: &[(&'static str, &'static [run_report::Metric])],
    why: &str,
) -> BTreeMap<run_report::Metric, String> {
    missing
        .iter()
        .flat_map(|(_, feeds)| feeds.iter())
        .map(|f| (*f, why.to_string()))
        .collect()
}

/// Says loudly which series the target lacks and which report figures they
/// blank; returns those figures with why (they read "n/a", never 0).
fn unmeasured(
    missing: &[(&'static str, &'static [run_report::Metric])],
    variant: &str,
) -> BTreeMap<run_report::Metric, String> {
    let mut out = BTreeMap::new();
    for (series, feeds) in missing {
        let blanks = if feeds.is_empty() {
            "the charts".to_string()
        } else {
            let names: Vec<&str> = feeds.iter().map(|m| m.name()).collect();
            names.join(", ")
        };
        eprintln!(
            "WARNING ({variant}): the target's /metrics has no {series}; these report figures read n/a: {blanks}"
        );
        for f in *feeds {
            out.entry(*f)
                .or_insert_with(|| format!("the target does not export {series}"));
        }
    }
    out
}
