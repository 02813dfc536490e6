//! The experiment file as written: strict serde structs, nothing interpreted.
//!
//! Every struct denies unknown fields, so a misspelt switch is an error with
//! its line and column rather than a fix that silently never ran. Values that
//! need checks beyond their type are `Spanned`, so the validator can point at
//! the exact place in the file.

use indexmap::IndexMap;
use retry_policy::RetryConfig;
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    /// The experiment's name: its reports go to `reports/<name>/`.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// What it reproduces, in a sentence or two (shown in the report).
    #[serde(default)]
    pub description: String,
    /// The seed of the documents and their arrival times (`--seed` overrides it).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// How long each variant's load runs, e.g. `75s`.
    #[schemars(with = "String")]
    pub duration: Spanned<String>,
    /// The short form `--quick` runs: a shorter duration with its own timeline and expectations.
    #[serde(default)]
    pub quick: Option<RawQuick>,
    /// Where the system under test runs: `embedded` (default), `containers`, `external` or `processes`.
    #[serde(default)]
    #[schemars(with = "Option<super::EnvironmentKind>")]
    pub environment: Option<Spanned<super::EnvironmentKind>>,
    /// The running service an `external` environment drives, or the process
    /// of `environment: processes` the load goes to.
    #[serde(default)]
    pub target: Option<RawTarget>,
    /// Image names for the `containers` environment.
    #[serde(default)]
    pub containers: Option<RawContainers>,
    /// The thresholds the verdict and the wave detection use (never the rule itself).
    #[serde(default)]
    pub analysis: RawAnalysis,
    /// The system under test's configuration, shared by every variant
    /// (with `environment: processes`, only `processes`: your own service).
    #[serde(default)]
    pub system: super::processes::RawSystem,
    /// The traffic: arrivals, documents, tenants and the clients' retry behaviour.
    pub workload: RawWorkload,
    /// The incident's faults and operators' actions, at times from the start.
    #[serde(default)]
    #[schemars(with = "Vec<RawTimelineEntry>")]
    pub timeline: Vec<Spanned<RawTimelineEntry>>,
    /// The configurations compared under the same load and timeline, e.g. `before-fix` and `after-fix`.
    #[schemars(with = "IndexMap<String, RawVariant>")]
    pub variants: IndexMap<String, Spanned<RawVariant>>,
    /// Per variant, what must hold in a run: `verdict` and metric expectations.
    #[serde(default)]
    #[schemars(with = "IndexMap<String, IndexMap<String, ExpectValue>>")]
    pub expect: RawExpect,
    /// The incident's own figures, shown beside the measured ones (the fidelity panel).
    #[serde(default)]
    #[schemars(with = "Vec<RawIncidentFigure>")]
    pub incident: Vec<Spanned<RawIncidentFigure>>,
    /// Alert rules evaluated on a real Prometheus during each variant.
    #[serde(default)]
    #[schemars(with = "Option<RawAlerts>")]
    pub alerts: Option<Spanned<RawAlerts>>,
    /// What `harness campaign` runs by default and what must hold over runs.
    #[serde(default)]
    #[schemars(with = "Option<RawCampaign>")]
    pub campaign: Option<Spanned<RawCampaign>>,
    /// An external target's own series: PromQL expressions over
    /// `target.metrics`, evaluated on the run's Prometheus and reported per
    /// variant (external targets only).
    #[serde(default)]
    #[schemars(with = "Vec<RawTargetSeries>")]
    pub target_series: Vec<Spanned<RawTargetSeries>>,
}

/// One `target_series:` entry: a name (unique; the report's column
/// `target_<name>`) and a PromQL expression that gives one series.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTargetSeries {
    /// Letters, digits, `_` or `-`, unique in the file.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// PromQL giving one series, e.g. `sum(rate(sut_pages_recomputed_total[5s]))`.
    #[schemars(with = "String")]
    pub expr: Spanned<String>,
}

/// `campaign:` what a campaign of this experiment runs by default and what
/// must hold over its runs (see `validate/campaign.rs`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCampaign {
    /// Seeds, e.g. `1..10` or `1, 4, 7`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub seeds: Option<Spanned<String>>,
    /// Pairs `[baseline, candidate]`.
    #[serde(default)]
    #[schemars(with = "Option<Vec<Vec<String>>>")]
    pub compare: Option<Spanned<Vec<Vec<String>>>>,
    /// Per variant: `"runs with waves >= 1": ">= 90% (alpha 0.05, beta 0.1)"`
    /// (a share with the error rates it is proven at, optionally `delta`),
    /// `"median waves": ">= 4"`.
    #[serde(default)]
    #[schemars(with = "IndexMap<String, IndexMap<String, ExpectValue>>")]
    pub expect: RawExpect,
}

/// `alerts:` Prometheus rule files evaluated on every variant (see `prometheus.rs`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAlerts {
    /// Rule files, relative to the experiment file.
    #[schemars(with = "Vec<String>")]
    pub rules: Spanned<Vec<String>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub scrape_interval: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub evaluation_interval: Option<Spanned<String>>,
}

fn default_seed() -> u64 {
    42
}

/// The short form for CI: its own duration, and optionally its own timeline and expectations.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawQuick {
    #[schemars(with = "String")]
    pub duration: Spanned<String>,
    #[serde(default)]
    #[schemars(with = "Option<Vec<RawTimelineEntry>>")]
    pub timeline: Option<Vec<Spanned<RawTimelineEntry>>>,
    #[serde(default)]
    #[schemars(with = "Option<IndexMap<String, IndexMap<String, ExpectValue>>>")]
    pub expect: Option<RawExpect>,
    #[serde(default)]
    pub analysis: Option<RawAnalysis>,
    #[serde(default)]
    #[schemars(with = "Option<RawCampaign>")]
    pub campaign: Option<Spanned<RawCampaign>>,
}

/// For `environment: external`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    /// The external target's URL (`environment: external`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub url: Option<Spanned<String>>,
    /// `environment: processes`: the process the load goes to (default: the only one).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub process: Option<Spanned<String>>,
    #[serde(default)]
    pub admin_token: Option<String>,
    /// Its parts that generic faults may act on, by name.
    #[serde(default)]
    pub components:
        std::collections::BTreeMap<String, crate::experiment::faults::ExternalComponent>,
    /// The target's Prometheus metrics URL when not `{url}/metrics` (e.g.
    /// `http://127.0.0.1:9100/metrics`): read by the harness's sampler and
    /// scraped by the run's Prometheus for `target_series:` and `alerts:`;
    /// loopback unless `allow_remote`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub metrics: Option<Spanned<String>>,
    #[serde(default)]
    pub allow_remote: bool,
}

/// For `environment: containers`: which images to run (defaults: the ones
/// `ci/images.sh` builds).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawContainers {
    #[serde(default)]
    pub sut_image: Option<String>,
    #[serde(default)]
    pub redis_image: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAnalysis {
    #[serde(default)]
    #[schemars(with = "Option<f64>")]
    pub wave_threshold: Option<Spanned<f64>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub wave_merge_gap: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub wave_min_duration: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<f64>")]
    pub recovery_factor: Option<Spanned<f64>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub recovery_window: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub warmup: Option<Spanned<String>>,
    /// Healthy seconds needed between warm-up and the first trigger (default 5s).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub min_baseline: Option<Spanned<String>>,
    /// Failure ratio of a second that makes it customer-visible (default 0.05).
    #[serde(default)]
    #[schemars(with = "Option<f64>")]
    pub customer_failure_threshold: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    #[schemars(with = "RawArrival")]
    pub arrival: Spanned<RawArrival>,
    /// This project's documents (its system under test's API).
    #[serde(default)]
    pub documents: Option<RawDocuments>,
    /// Requests to any HTTP service (`experiment/http_workload/`).
    #[serde(default)]
    pub http: Option<super::http_workload::raw::RawHttpWorkload>,
    pub client: RawClient,
    /// Journeys in flight at most; arrivals beyond it are late (counted, never dropped silently).
    #[serde(default)]
    #[schemars(with = "Option<u64>")]
    pub max_in_flight: Option<Spanned<u64>>,
}

/// Open-loop arrival profile. Rates are documents per second, or with
/// `capacity` a share of the calibrated capacity of one pool.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawArrival {
    Constant(RawRate),
    Ramp { from: RawRate, to: RawRate },
    Steps(#[schemars(with = "Vec<RawStep>")] Vec<Spanned<RawStep>>),
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRate {
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub capacity: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub at: String,
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub capacity: Option<f64>,
    /// The rise from the step before is a load spike: a trigger with a
    /// residue, lasting until the next step (lowered in validation to the
    /// previous level plus an implied `load_spike` entry).
    #[serde(default)]
    pub trigger: Option<bool>,
    /// The trigger's label (with `trigger: true`).
    #[serde(default)]
    pub label: Option<String>,
}

/// `load_spike:` as written: exactly one of `factor` (the arrival rate
/// times it), `extra_rate` (documents/s on top) or `extra_capacity` (a
/// share of the calibrated capacity on top); the timeline entry's
/// `duration` says how long it lasts.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLoadSpike {
    #[serde(default)]
    pub factor: Option<f64>,
    #[serde(default)]
    pub extra_rate: Option<f64>,
    #[serde(default)]
    pub extra_capacity: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDocuments {
    #[schemars(with = "PageDistribution")]
    pub pages: Spanned<PageDistribution>,
    #[schemars(with = "u32")]
    pub tenants: Spanned<u32>,
    /// A finite population the arrivals draw from (repeats hit the cache);
    /// without it every document is new.
    #[serde(default)]
    #[schemars(with = "Option<RawPopulation>")]
    pub population: Option<Spanned<RawPopulation>>,
}

pub use super::RawPopulation;

/// Pages per document.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PageDistribution {
    Fixed(u32),
    Uniform { min: u32, max: u32 },
    Lognormal { median: f64, sigma: f64, max: u32 },
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClient {
    pub retry: RetryConfig,
    #[schemars(with = "String")]
    pub timeout: Spanned<String>,
    /// `sync` (default): one request per attempt, held until the answer.
    /// `async`: submit a job, then poll for its answer.
    #[serde(default)]
    #[schemars(with = "Option<ClientMode>")]
    pub mode: Option<Spanned<ClientMode>>,
    #[serde(default)]
    #[schemars(with = "Option<RawPoll>")]
    pub poll: Option<Spanned<RawPoll>>,
    /// Clients in all, spread over the tenants (default: one per tenant);
    /// each keeps its own retry state and budget.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub count: Option<Spanned<u32>>,
    /// Per-tenant client behaviour, e.g. `t7: { retry: { max_attempts: 10 } }`.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, RawTenantClient>>")]
    pub tenants: Option<Spanned<BTreeMap<String, RawTenantClient>>>,
}

/// One tenant's clients, where they differ from the others.
#[derive(Debug, Deserialize, Clone, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTenantClient {
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    #[serde(default)]
    pub timeout: Option<String>,
}

/// How a client submits a document.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientMode {
    #[default]
    Sync,
    Async,
}

/// `poll: { interval: 250ms, honour_retry_after: true }`: how an async client
/// asks for its job's answer.
#[derive(Debug, Deserialize, Clone, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPoll {
    pub interval: String,
    #[serde(default = "yes")]
    pub honour_retry_after: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTimelineEntry {
    pub at: String,
    #[serde(default)]
    pub duration: Option<String>,
    /// A fault: what went wrong in the incident. Exactly one of `fault`/`action`.
    #[serde(default)]
    #[schemars(with = "Option<SchemaTimelineOp>")]
    pub fault: Option<serde_json::Value>,
    /// An operator's mitigation.
    #[serde(default)]
    #[schemars(with = "Option<SchemaTimelineOp>")]
    pub action: Option<serde_json::Value>,
    /// Whether the entry counts as a trigger for the metastability verdict
    /// (default: faults do, actions do not; a standing condition such as a
    /// cache left at its limit is not a trigger).
    #[serde(default)]
    pub trigger: Option<bool>,
    #[serde(default)]
    pub label: Option<String>,
    /// Only for actions: the variants in which operators took it (a reaction
    /// to the incident). Faults always apply to every variant.
    #[serde(default)]
    pub variants: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    #[serde(default)]
    pub description: String,
    /// Overrides of the base system configuration (merged key by key;
    /// `processes.NAME.command`, `env`, `cwd`, `config` with `environment: processes`).
    #[serde(default)]
    pub system: Option<super::processes::RawSystem>,
    /// Overrides of the client behaviour.
    #[serde(default)]
    pub client: Option<RawClientOverride>,
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClientOverride {
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub mode: Option<ClientMode>,
    #[serde(default)]
    pub poll: Option<RawPoll>,
}

/// `waves: 0` or `waves: ">= 3"`.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ExpectValue {
    Number(f64),
    Text(String),
}

#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIncidentFigure {
    pub metric: String,
    pub variant: String,
    pub value: f64,
    pub label: String,
}

/// `expect:` as written: variant -> metric (with window/zone) -> comparison.
pub type RawExpect = IndexMap<String, IndexMap<String, Spanned<ExpectValue>>>;

/// A timeline entry's `fault` or `action` as `validate/timeline.rs` reads
/// it: a harness-side trigger, a generic fault on a component (`faults/`),
/// or one of the system's admin commands.
/// Schema only: the validator parses the value itself to locate its errors.
#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "TimelineOp")]
pub(crate) enum SchemaTimelineOp {
    Harness(HarnessOp),
    Generic(crate::experiment::faults::GenericFault),
    Admin(sut::AdminCommand),
}

/// The triggers the harness itself makes (extra documents), not the system.
#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HarnessOp {
    /// Very large documents from one tenant (seed 000's trigger).
    OversizedDocuments(super::OversizedDocuments),
    /// Extra arrivals on top of the workload for the entry's duration.
    LoadSpike(RawLoadSpike),
    /// A burst of one class of a generic HTTP workload's requests.
    Requests(super::http_workload::raw::RawRequests),
}
