//! Experiment files: parse strictly, then validate into an `Experiment`.
//!
//! Two stages, as ripgrep does with its flags: [`raw`] is the file as written
//! (serde, unknown keys rejected with line and column), and [`validate`]
//! turns it into the checked [`Experiment`] the runner uses: durations
//! parsed, rates positive, timeline inside the run, variant overrides merged
//! and re-validated, expectations naming known metrics. Every error names the
//! file, line, column and field, and nothing runs before all of it passed.

pub(crate) mod components;
pub mod faults;
pub mod http_workload;
pub mod images;
pub mod processes;
pub mod programs;
pub mod raw;
pub(crate) mod sampling;
pub mod schema;
mod schema_defaults;
pub mod target_series;
pub(crate) mod tree;
mod validate;

pub use raw::PageDistribution;
pub use validate::{
    check_virtual_clock, load, load_forms, parse, parse_forms, parse_seeds, seed_at_index,
    ExperimentError, MAX_RATE,
};
pub(crate) use validate::{loopback_host, proxy_binary, which};

use gpu_executor::ExecutorChoice;
use retry_policy::RetryConfig;
use run_report::{AnalysisConfig, ExpectationSpec, IncidentFigure};
use serde::Serialize;
use std::time::Duration;
use sut::{AdminCommand, SystemConfig};

/// A validated experiment, ready to run (already in quick form if asked).
#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub duration: Duration,
    pub quick: bool,
    pub environment: Environment,
    pub analysis: AnalysisConfig,
    pub workload: Workload,
    pub timeline: Vec<TimelineEntry>,
    pub variants: Vec<Variant>,
    pub expectations: Vec<ExpectationSpec>,
    pub incident: Vec<IncidentFigure>,
    /// `alerts:` rule files a real Prometheus evaluates on every variant.
    pub alerts: Option<Alerts>,
    /// Why the file's `alerts:` were left out of this run (`--without-alerts`
    /// in virtual time); its alert metrics then read n/a, never 0.
    pub alerts_left_out: Option<String>,
    /// `target_series:` an external target's own series, as PromQL
    /// on the run's Prometheus (empty elsewhere).
    pub target_series: Vec<target_series::TargetSeriesExpr>,
    /// `campaign:` defaults and what must hold over runs.
    pub campaign: run_report::campaign::CampaignSpec,
    /// The file's text, for the report.
    pub source: String,
    /// The images `environment: containers` (or `--environment containers`) runs.
    pub container_images: images::ContainerImages,
    /// Programs a run starts on this machine, looked up when it runs.
    pub programs: Vec<programs::NeededProgram>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Environment {
    /// The system under test in this process, on loopback.
    Embedded,
    /// Any HTTP service at `url`; faults through its admin API, or generic
    /// faults on its named `components` (processes or containers).
    External {
        url: String,
        admin_token: Option<String>,
        components: std::collections::BTreeMap<String, faults::ExternalComponent>,
        /// Its Prometheus metrics URL when not `{url}/metrics`: what the
        /// sampler reads and the run's Prometheus scrapes for
        /// `target_series:` and `alerts:`.
        metrics: Option<String>,
    },
    /// The system under test as containers (gateway, one pool per zone, Redis).
    Containers { images: images::ContainerImages },
    /// The user's own service, started from its commands (`processes.rs`).
    Processes(processes::ProcessesEnv),
}

/// Where the system under test runs.
// As written in a file (`environment:`); the command line's
// `--environment` moves only between the first two ([`EnvironmentSwitch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentKind {
    /// The system under test in this process, on loopback.
    Embedded,
    /// The system under test as containers (gateway, one pool per zone, Redis).
    Containers,
    /// A service you started (`target:`); faults only through its admin API.
    External,
    /// Your own service, started by the harness from `system.processes`.
    Processes,
}

impl EnvironmentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EnvironmentKind::Embedded => "embedded",
            EnvironmentKind::Containers => "containers",
            EnvironmentKind::External => "external",
            EnvironmentKind::Processes => "processes",
        }
    }
}

impl Environment {
    pub fn kind(&self) -> &'static str {
        match self {
            Environment::Embedded => EnvironmentKind::Embedded,
            Environment::External { .. } => EnvironmentKind::External,
            Environment::Containers { .. } => EnvironmentKind::Containers,
            Environment::Processes(_) => EnvironmentKind::Processes,
        }
        .as_str()
    }
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub arrival: Arrival,
    pub pages: PageDistribution,
    pub tenants: u32,
    /// The finite population arrivals draw from; `None`: every document new.
    pub population: Option<Population>,
    pub max_in_flight: u64,
    /// Requests to any HTTP service instead of documents (`workload.http`).
    pub http: Option<std::sync::Arc<http_workload::HttpWorkload>>,
}

/// A finite population of documents, fixed by the seed (ids, pages, tenants).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Population {
    pub size: u64,
    pub popularity: Popularity,
}

/// A finite population to draw from, fixed by the seed:
/// `population: { size: 2000, popularity: uniform | { zipf: { s: 1.1 } } }`.
// As written (documents' population, a generic workload's keys); here,
// not in `raw.rs`, because both raw sections use it.
#[derive(Debug, serde::Deserialize, Clone, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPopulation {
    /// Members in all (1 to 10,000,000), fixed by the seed.
    pub size: u64,
    /// How often each member is drawn: `uniform` or `{ zipf: { s: 1.1 } }`.
    #[serde(default)]
    #[schemars(default = "schema_defaults::popularity")]
    pub popularity: Popularity,
}

/// How often each member of a population is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Popularity {
    /// Every member equally often.
    #[default]
    Uniform,
    /// Member k (from 1) with probability proportional to k^-s: a few hot
    /// documents and a long tail.
    Zipf {
        /// The exponent, in (0, 10]: larger is more skewed.
        s: f64,
    },
}

/// Documents per second over time; `Capacity` shares are resolved after calibration.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrival {
    Constant(Rate),
    Ramp { from: Rate, to: Rate },
    Steps(Vec<(Duration, Rate)>),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Rate {
    PerSec(f64),
    /// Share of the calibrated capacity of one pool.
    Capacity(f64),
}

impl Rate {
    pub fn resolve(self, capacity_docs_per_sec: f64) -> f64 {
        match self {
            Rate::PerSec(r) => r,
            Rate::Capacity(c) => c * capacity_docs_per_sec,
        }
    }
}

impl Arrival {
    /// Rate (documents/s) at time `t` since the start.
    pub fn rate_at(&self, t: Duration, total: Duration, capacity: f64) -> f64 {
        match self {
            Arrival::Constant(r) => r.resolve(capacity),
            Arrival::Ramp { from, to } => {
                let f = (t.as_secs_f64() / total.as_secs_f64().max(1e-9)).clamp(0.0, 1.0);
                from.resolve(capacity) + f * (to.resolve(capacity) - from.resolve(capacity))
            }
            Arrival::Steps(steps) => steps
                .iter()
                .rev()
                .find(|(at, _)| *at <= t)
                .map(|(_, r)| r.resolve(capacity))
                .unwrap_or(0.0),
        }
    }

    /// The highest rate over `[from, to)`: a ramp's is at an end, a step
    /// profile's at `from` or at a step inside.
    pub fn max_rate_in(&self, from: Duration, to: Duration, total: Duration, capacity: f64) -> f64 {
        let at = |t| self.rate_at(t, total, capacity);
        match self {
            Arrival::Constant(r) => r.resolve(capacity),
            Arrival::Ramp { .. } => at(from).max(at(to)),
            Arrival::Steps(steps) => steps
                .iter()
                .filter(|(t, _)| *t > from && *t < to)
                .fold(at(from), |m, (t, _)| m.max(at(*t))),
        }
    }
}

/// How a simulated client behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientBehaviour {
    pub retry: RetryConfig,
    pub timeout: Duration,
    pub submission: Submission,
    /// Clients per tenant (at least 1): a document belongs to one of its
    /// tenant's clients, and each client keeps its own retry state.
    pub clients_per_tenant: u32,
    /// Tenants whose clients retry or time out differently.
    pub tenants: std::collections::BTreeMap<String, TenantClient>,
}

/// Where one tenant's clients differ from the variant's clients (applied on
/// top of the variant's, so a variant that changes the retry policy changes
/// it for every tenant that does not set its own).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TenantClient {
    pub retry: Option<RetryConfig>,
    pub timeout: Option<Duration>,
}

impl ClientBehaviour {
    /// Synchronous clients, one per tenant, all alike.
    pub fn synchronous(retry: RetryConfig, timeout: Duration) -> Self {
        ClientBehaviour {
            retry,
            timeout,
            submission: Submission::Sync,
            clients_per_tenant: 1,
            tenants: Default::default(),
        }
    }

    /// The longest timeout and the most attempts of any tenant's clients:
    /// what the drain after the load must wait for.
    pub fn slowest(&self) -> (Duration, u32) {
        self.tenants
            .keys()
            .fold((self.timeout, self.retry.max_attempts), |(t, a), name| {
                let (r, to) = self.for_tenant(name);
                (t.max(to), a.max(r.max_attempts))
            })
    }

    /// The retry policy and timeout of `tenant`'s clients.
    pub fn for_tenant(&self, tenant: &str) -> (&RetryConfig, Duration) {
        let t = self.tenants.get(tenant);
        (
            t.and_then(|t| t.retry.as_ref()).unwrap_or(&self.retry),
            t.and_then(|t| t.timeout).unwrap_or(self.timeout),
        )
    }
}

/// How a client submits a document (seed 000's advice to customers: "use
/// asynchronous submission where available" and "honour the Retry-After
/// header").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Submission {
    /// One request per attempt, held open until the answer or the timeout.
    Sync,
    /// `POST /v1/jobs`, then `GET` the job until it has an answer: every
    /// `poll_interval`, or when the answer's Retry-After says if honoured.
    Async {
        poll_interval: Duration,
        honour_retry_after: bool,
    },
}

/// One variant: the base configuration with its overrides applied.
#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub description: String,
    pub system: SystemConfig,
    pub client: ClientBehaviour,
}

/// The experiment's alert rules and how often Prometheus scrapes and evaluates them.
#[derive(Debug, Clone, PartialEq)]
pub struct Alerts {
    /// Rule files, resolved against the experiment file's folder (absolute).
    pub rules: Vec<std::path::PathBuf>,
    /// Every `alert:` name of the files, for `alert_fired{NAME}` expectations.
    pub rule_names: Vec<String>,
    pub scrape_interval: Duration,
    pub evaluation_interval: Duration,
}

/// A fault or action at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    pub at: Duration,
    pub duration: Option<Duration>,
    pub op: TimelineOp,
    pub is_fault: bool,
    pub trigger: bool,
    pub label: String,
    /// Actions only: the variants it applies to (None: all).
    pub variants: Option<Vec<String>>,
}

impl TimelineEntry {
    pub fn applies_to(&self, variant: &str) -> bool {
        self.variants
            .as_ref()
            .is_none_or(|v| v.iter().any(|n| n == variant))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum TimelineOp {
    /// Sent to the system's admin API.
    Admin(AdminCommand),
    /// Large documents arrive from one tenant (submitted by the harness as client traffic).
    OversizedDocuments(OversizedDocuments),
    /// More arrivals for the entry's duration: an extra Poisson stream of
    /// ordinary documents on top of the workload's (`spike.rs`).
    LoadSpike(LoadSpike),
    /// Done to a component's process from the outside (`faults/`): a CPU
    /// quota, a pause, a kill; needs no admin API.
    Generic(faults::GenericFault),
}

/// What undoes a fault at the end of its duration.
#[derive(Debug, Clone, PartialEq)]
pub enum Revert {
    /// A command to the admin API.
    Admin(AdminCommand),
    /// The generic fault itself, undone (`faults::Injector::undo`).
    Generic(faults::GenericFault),
}

/// How much a `load_spike` adds: `{ factor: 2.5 }` (the arrival rate times
/// 2.5, so the extra stream carries 1.5 times the base rate),
/// `{ extra_rate: 120 }` (documents/s on top) or `{ extra_capacity: 0.8 }`
/// (a share of the calibrated capacity on top). An arrival step marked
/// `trigger: true` becomes an `Extra` spike of its rise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadSpike {
    /// The base rate times this factor (> 1) while the spike lasts.
    Factor(f64),
    /// This rate on top of the base rate.
    Extra(Rate),
}

impl LoadSpike {
    /// Documents/s the spike adds at `t` (while it lasts) to `arrival`.
    pub fn extra_rate_at(&self, arrival: &Arrival, t: Duration, total: Duration, cap: f64) -> f64 {
        match self {
            LoadSpike::Factor(f) => arrival.rate_at(t, total, cap) * (f - 1.0),
            LoadSpike::Extra(r) => r.resolve(cap),
        }
    }

    /// The highest extra rate over `[from, to)`, the bound the stream thins from.
    pub fn max_extra_rate(
        &self,
        arrival: &Arrival,
        (from, to): (Duration, Duration),
        total: Duration,
        cap: f64,
    ) -> f64 {
        match self {
            LoadSpike::Factor(f) => arrival.max_rate_in(from, to, total, cap) * (f - 1.0),
            LoadSpike::Extra(r) => r.resolve(cap),
        }
    }
}

/// Very large documents from one tenant, sent on top of the arrivals.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OversizedDocuments {
    /// Whose clients send them (`t1` to `tN`).
    pub tenant: String,
    /// How many documents (1 to 10,000).
    pub count: u32,
    /// Pages of each (1 <= min_pages <= max_pages <= 100,000), drawn uniformly from `[min_pages, max_pages]`.
    pub min_pages: u32,
    /// The largest a document may be, in pages.
    pub max_pages: u32,
    /// Arrivals spread over this time (default: all at once).
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub spread: Option<Duration>,
    /// A generic HTTP workload's burst (`requests:`): the class every one
    /// of them is, instead of a class drawn by share.
    #[serde(skip)]
    #[schemars(skip)]
    pub class: Option<String>,
}

impl TimelineOp {
    /// What undoes a fault with a duration, if anything can: a command's
    /// row says (`AdminCommand::row`), a generic fault is undone itself, and
    /// injected traffic (oversized documents, a load spike) simply ends.
    pub fn revert(&self) -> Option<Revert> {
        match self {
            TimelineOp::Admin(c) => c.row().undo.map(Revert::Admin),
            TimelineOp::Generic(f) => Some(Revert::Generic(f.clone())),
            TimelineOp::OversizedDocuments(_) | TimelineOp::LoadSpike(_) => None,
        }
    }
}

/// Where `--environment` can move this project's system: the harness
/// starts it either way. An external target (`target:`) or the user's own
/// processes (`system.processes`) are the file's, never a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EnvironmentSwitch {
    /// The system under test in this process, on loopback.
    Embedded,
    /// The system under test as containers (gateway, one pool per zone, Redis).
    Containers,
}

/// Why `--environment` cannot switch an experiment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// The experiment (named) drives a target of its own.
    #[error("{0} drives an external target; --environment cannot change that")]
    External(String),
    /// The experiment (named) runs its own processes.
    #[error(
        "{0} runs its own processes (environment processes); --environment cannot change that"
    )]
    Processes(String),
    /// A generic fault the containers environment cannot carry out.
    #[error("{0} has a {1} fault that only the embedded environment can apply here (see `harness validate` with `environment: containers` for why)")]
    Generic(String, &'static str),
}

impl Experiment {
    /// `--environment`: runs an embedded experiment as containers or the
    /// other way round (same system configuration, same timeline). An
    /// external experiment names its target and cannot be switched.
    pub fn set_environment(&mut self, to: EnvironmentSwitch) -> Result<(), SwitchError> {
        if let Environment::External { .. } = self.environment {
            return Err(SwitchError::External(self.name.clone()));
        }
        if let Environment::Processes(_) = self.environment {
            return Err(SwitchError::Processes(self.name.clone()));
        }
        if let EnvironmentSwitch::Containers = to {
            if let Some(f) = self.generic_faults().find(|f| f.in_containers().is_err()) {
                return Err(SwitchError::Generic(self.name.clone(), f.kind()));
            }
        }
        self.environment = match to {
            EnvironmentSwitch::Embedded => Environment::Embedded,
            EnvironmentSwitch::Containers => Environment::Containers {
                images: self.container_images.clone(),
            },
        };
        Ok(())
    }

    /// The timeline's generic faults (`cpu_limit`, `pause`, `kill`).
    pub fn generic_faults(&self) -> impl Iterator<Item = &faults::GenericFault> {
        self.timeline.iter().filter_map(|e| match &e.op {
            TimelineOp::Generic(f) => Some(f),
            TimelineOp::Admin(_) | TimelineOp::OversizedDocuments(_) | TimelineOp::LoadSpike(_) => {
                None
            }
        })
    }

    /// The zones whose pool a generic fault of `variant`'s timeline holds
    /// up (`GenericFault::held_up_pool_zone`).
    pub(crate) fn held_up_pool_zones(&self, variant: &str) -> std::collections::BTreeSet<String> {
        self.timeline
            .iter()
            .filter(|e| e.applies_to(variant))
            .filter_map(|e| match &e.op {
                TimelineOp::Generic(f) => f.held_up_pool_zone().map(str::to_string),
                TimelineOp::Admin(_)
                | TimelineOp::OversizedDocuments(_)
                | TimelineOp::LoadSpike(_) => None,
            })
            .collect()
    }

    /// The components a `network` fault names: each gets a fault proxy in
    /// the path into it.
    pub(crate) fn network_faulted(&self) -> std::collections::BTreeSet<String> {
        self.generic_faults()
            .filter(|f| f.row().acts_on == faults::ActsOn::Path)
            .map(|f| f.component().to_string())
            .collect()
    }

    /// Whether each variant runs as component processes (`components.rs`):
    /// when a generic fault needs a process to act on.
    pub fn needs_components(&self) -> bool {
        self.generic_faults().next().is_some()
            || self
                .variants
                .iter()
                .any(|v| v.system.gateway.proxy.is_some())
    }

    /// Leaves the file's `alerts:` out of the run, saying `why`: the alert
    /// metrics read n/a (an expectation on them is not evaluated). Whether
    /// the file had any to leave out.
    pub fn leave_out_alerts(&mut self, why: &str) -> bool {
        let had = self.alerts.take().is_some();
        if had {
            self.alerts_left_out = Some(why.to_string());
        }
        had
    }

    /// Executor preference of the first variant (one device serves every variant).
    pub fn executor_choice(&self) -> ExecutorChoice {
        self.variants
            .first()
            .map(|v| v.system.executor)
            .unwrap_or_default()
    }

    /// Mean pages per document of the population (for capacity in documents/s).
    pub fn mean_pages(&self) -> f64 {
        sampling::mean_pages(&self.workload.pages)
    }
}
