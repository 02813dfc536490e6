//! The experiment file as written: strict serde structs, nothing interpreted.
//!
//! Every struct denies unknown fields, so a misspelt switch is an error with
//! its line and column rather than a fix that silently never ran. Values that
//! need checks beyond their type are `Spanned`, so the validator can point at
//! the exact place in the file.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::schema_defaults as sd;

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
    /// Absent: the file has no short form, and `--quick` is refused.
    #[serde(default)]
    pub quick: Option<RawQuick>,
    /// Where the system under test runs: `embedded` (default), `containers`, `external` or `processes`.
    /// `--environment` overrides it.
    #[serde(default)]
    #[schemars(with = "Option<super::EnvironmentKind>", default = "sd::environment")]
    pub environment: Option<Spanned<super::EnvironmentKind>>,
    /// The running service an `external` environment drives, or the process
    /// of `environment: processes` the load goes to. Absent: none (required
    /// by `environment: external`).
    #[serde(default)]
    pub target: Option<RawTarget>,
    /// Image names for the `containers` environment. Absent: the images
    /// `ci/images.sh` builds (or `HARNESS_SUT_IMAGE`, `HARNESS_REDIS_IMAGE`).
    #[serde(default)]
    pub containers: Option<RawContainers>,
    /// The thresholds the verdict and the wave detection use (never the rule
    /// itself). Absent: every threshold at its default.
    #[serde(default)]
    #[schemars(default = "sd::empty_map")]
    pub analysis: RawAnalysis,
    /// The system under test's configuration, shared by every variant
    /// (with `environment: processes`, only `processes`: your own service).
    #[serde(default)]
    pub system: super::processes::RawSystem,
    /// The traffic: arrivals, documents, tenants and the clients' retry behaviour.
    pub workload: RawWorkload,
    /// The incident's faults and operators' actions, at times from the start
    /// of the load. Absent: none (triggers may still come from
    /// `workload.arrival.steps`).
    #[serde(default)]
    #[schemars(with = "Vec<RawTimelineEntry>", default = "sd::empty_list")]
    pub timeline: Vec<Spanned<RawTimelineEntry>>,
    /// The configurations compared under the same load and timeline, e.g. `before-fix` and `after-fix`.
    #[schemars(with = "IndexMap<String, RawVariant>")]
    pub variants: IndexMap<String, Spanned<RawVariant>>,
    /// Per variant, what must hold in a run: `verdict` and metric
    /// expectations, e.g. `before-fix: { verdict: metastable, "waves": ">= 2" }`.
    /// Absent: nothing is expected (the run reports, and passes).
    #[serde(default)]
    #[schemars(
        with = "IndexMap<String, IndexMap<String, ExpectValue>>",
        default = "sd::empty_map"
    )]
    pub expect: RawExpect,
    /// The incident's own figures, shown beside the measured ones (the fidelity panel).
    #[serde(default)]
    #[schemars(with = "Vec<RawIncidentFigure>", default = "sd::empty_list")]
    pub incident: Vec<Spanned<RawIncidentFigure>>,
    /// Alert rules evaluated on a real Prometheus during each variant.
    /// Absent: no alerts (and no alert expectations).
    #[serde(default)]
    #[schemars(with = "Option<RawAlerts>")]
    pub alerts: Option<Spanned<RawAlerts>>,
    /// What `harness campaign` runs by default and what must hold over runs.
    /// Absent: seeds 1..5, the default comparison, no campaign claims.
    #[serde(default)]
    #[schemars(with = "Option<RawCampaign>")]
    pub campaign: Option<Spanned<RawCampaign>>,
    /// An external target's own series: PromQL expressions over
    /// `target.metrics`, evaluated on the run's Prometheus and reported per
    /// variant (external targets only). Absent: none.
    #[serde(default)]
    #[schemars(with = "Vec<RawTargetSeries>", default = "sd::empty_list")]
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
/// must hold over its runs.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCampaign {
    /// The seeds a campaign runs when `--seeds` is not given, e.g. `1..10`
    /// or `1, 4, 7` (at most 10,000). Absent: `1..5` (a sequential campaign,
    /// `--until-settled`: from 1 up to `--max-seeds`).
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::campaign_seeds")]
    pub seeds: Option<Spanned<String>>,
    /// The variants compared, as pairs `[baseline, candidate]`, e.g.
    /// `[[before-fix, after-fix]]`. Absent: `before-fix` against `after-fix`
    /// when both exist, else the first variant against each of the others.
    #[serde(default)]
    #[schemars(with = "Option<Vec<Vec<String>>>")]
    pub compare: Option<Spanned<Vec<Vec<String>>>>,
    /// Per variant: `"runs with waves >= 1": ">= 90% (alpha 0.05, beta 0.1)"`
    /// (a share with the error rates it is proven at, optionally `delta`),
    /// `"median waves": ">= 4"`. Absent: no campaign claims.
    #[serde(default)]
    #[schemars(
        with = "IndexMap<String, IndexMap<String, ExpectValue>>",
        default = "sd::empty_map"
    )]
    pub expect: RawExpect,
}

/// `alerts:` Prometheus rule files evaluated on every variant.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAlerts {
    /// Prometheus rule files (at least one, each with an `alert:` rule;
    /// alert names unique), relative to the experiment file.
    #[schemars(with = "Vec<String>")]
    pub rules: Spanned<Vec<String>>,
    /// How often the run's Prometheus scrapes the system and the harness
    /// (a duration, 1ms to 1m).
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::one_second")]
    pub scrape_interval: Option<Spanned<String>>,
    /// How often it evaluates the rules (a duration, 1ms to 1m).
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::one_second")]
    pub evaluation_interval: Option<Spanned<String>>,
}

fn default_seed() -> u64 {
    42
}

/// The short form for CI: its own duration, and optionally its own timeline and expectations.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawQuick {
    /// How long each variant's load runs in the short form, e.g. `20s` (2s to 1h).
    #[schemars(with = "String")]
    pub duration: Spanned<String>,
    /// The short form's own timeline. Absent: the full form's `timeline`.
    #[serde(default)]
    #[schemars(with = "Option<Vec<RawTimelineEntry>>")]
    pub timeline: Option<Vec<Spanned<RawTimelineEntry>>>,
    /// The short form's own expectations. Absent: the full form's `expect`.
    #[serde(default)]
    #[schemars(with = "Option<IndexMap<String, IndexMap<String, ExpectValue>>>")]
    pub expect: Option<RawExpect>,
    /// The short form's own thresholds (replacing `analysis` as a whole).
    /// Absent: the full form's `analysis`.
    #[serde(default)]
    pub analysis: Option<RawAnalysis>,
    /// What a campaign of the short form (`harness campaign --quick`) runs
    /// and claims. Absent: the full form's `campaign`.
    #[serde(default)]
    #[schemars(with = "Option<RawCampaign>")]
    pub campaign: Option<Spanned<RawCampaign>>,
}

/// For `environment: external`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTarget {
    /// The external target's URL (`environment: external`, where it is
    /// required), e.g. `http://127.0.0.1:8080`; loopback unless `allow_remote`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub url: Option<Spanned<String>>,
    /// `environment: processes`: the process the load goes to (default: the only one).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub process: Option<Spanned<String>>,
    /// The bearer token of the target's admin API (this project's `sut`
    /// only). Absent: the target has no admin API, and timeline entries
    /// that need one are refused.
    #[serde(default)]
    pub admin_token: Option<String>,
    /// Its parts that generic faults may act on, by name (none by default).
    #[serde(default)]
    pub components:
        std::collections::BTreeMap<String, crate::experiment::faults::ExternalComponent>,
    /// The target's Prometheus metrics URL when not `{url}/metrics` (e.g.
    /// `http://127.0.0.1:9100/metrics`): read by the harness's sampler and
    /// scraped by the run's Prometheus for `target_series:` and `alerts:`;
    /// loopback unless `allow_remote`. Absent: `{url}/metrics` for an
    /// external target; no metrics for `environment: processes`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub metrics: Option<Spanned<String>>,
    /// Allow `url` and `metrics` to be other than loopback: load tests send
    /// traffic to this machine only unless this is set.
    #[serde(default)]
    pub allow_remote: bool,
}

/// For `environment: containers`: which images to run (defaults: the ones
/// `ci/images.sh` builds).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawContainers {
    /// The system under test's image (gateway and pools). Absent:
    /// `HARNESS_SUT_IMAGE`, else the local image `ci/images.sh` builds.
    #[serde(default)]
    #[schemars(default = "sd::sut_image")]
    pub sut_image: Option<String>,
    /// Redis's image (a Redis result cache). Absent: `HARNESS_REDIS_IMAGE`,
    /// else the local image `ci/images.sh` builds.
    #[serde(default)]
    #[schemars(default = "sd::redis_image")]
    pub redis_image: Option<String>,
}

/// `analysis:` the thresholds of the verdict and the wave detection.
/// Durations are rounded to whole seconds.
#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAnalysis {
    /// A second belongs to a wave when its failure ratio is above this, in (0, 1).
    #[serde(default)]
    #[schemars(with = "Option<f64>", default = "sd::wave_threshold")]
    pub wave_threshold: Option<Spanned<f64>>,
    /// Wave seconds separated by a gap shorter than this are one wave.
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::wave_merge_gap")]
    pub wave_merge_gap: Option<Spanned<String>>,
    /// Runs of wave seconds shorter than this are not waves.
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::wave_min_duration")]
    pub wave_min_duration: Option<Spanned<String>>,
    /// Recovered: failure ratio and p99 latency back within this factor of
    /// the baseline (>= 1) ...
    #[serde(default)]
    #[schemars(with = "Option<f64>", default = "sd::recovery_factor")]
    pub recovery_factor: Option<Spanned<f64>>,
    /// ... and staying there this long: the recovery window W (at least 1s).
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::recovery_window")]
    pub recovery_window: Option<Spanned<String>>,
    /// Time at the start ignored as warm-up; the baseline is measured after
    /// it, before the first trigger.
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::warmup")]
    pub warmup: Option<Spanned<String>>,
    /// Healthy time needed between warm-up and the first trigger (at least
    /// 1s): the validator refuses a timeline that leaves less.
    #[serde(default)]
    #[schemars(with = "Option<String>", default = "sd::min_baseline")]
    pub min_baseline: Option<Spanned<String>>,
    /// Failure ratio of a second that makes it customer-visible, in (0, 1):
    /// the first such second is the reference of the alerts' lead time.
    #[serde(default)]
    #[schemars(with = "Option<f64>", default = "sd::customer_failure_threshold")]
    pub customer_failure_threshold: Option<Spanned<f64>>,
}

/// `workload:` the open-loop arrivals, what arrives, and the clients.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// The arrival rate over time: `constant`, `ramp` or `steps`.
    #[schemars(with = "RawArrival")]
    pub arrival: Spanned<RawArrival>,
    /// This project's documents (its system under test's API). Exactly one
    /// of `documents` and `http` is required.
    #[serde(default)]
    pub documents: Option<RawDocuments>,
    /// Requests to any HTTP service, instead of `documents`.
    #[serde(default)]
    pub http: Option<super::http_workload::raw::RawHttpWorkload>,
    /// The clients: their retry policy, timeout and submission mode.
    pub client: RawClient,
    /// Journeys in flight at most (1 to 15,000); arrivals beyond it are
    /// late (counted, never dropped silently).
    #[serde(default)]
    #[schemars(with = "Option<u64>", default = "sd::max_in_flight")]
    pub max_in_flight: Option<Spanned<u64>>,
}

/// Open-loop arrival profile. Rates are documents per second, or with
/// `capacity` a share of the calibrated capacity of one pool.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawArrival {
    /// The same rate throughout: `constant: { capacity: 0.6 }`.
    Constant(RawRate),
    /// From one rate to another, linearly over the run's duration.
    Ramp {
        /// The rate at the start.
        from: RawRate,
        /// The rate at the end.
        to: RawRate,
    },
    /// Levels from given times: `steps: [{ at: 0s, rate: 40 }, { at: 20s, capacity: 1.5, trigger: true }]`.
    Steps(#[schemars(with = "Vec<RawStep>")] Vec<Spanned<RawStep>>),
}

/// A rate: exactly one of `rate` and `capacity`.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRate {
    /// Documents (or requests) per second, > 0 and at most 100,000.
    #[serde(default)]
    pub rate: Option<f64>,
    /// A share of one pool's calibrated capacity, in (0, 10].
    #[serde(default)]
    pub capacity: Option<f64>,
}

/// One level of `steps`: from `at`, exactly one of `rate` and `capacity`.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// When the level starts, from the start of the load (a duration).
    pub at: String,
    /// Documents (or requests) per second, > 0 and at most 100,000.
    #[serde(default)]
    pub rate: Option<f64>,
    /// A share of one pool's calibrated capacity, in (0, 10].
    #[serde(default)]
    pub capacity: Option<f64>,
    /// The rise from the step before is a load spike: a trigger with a
    /// residue, lasting until the next step (lowered in validation to the
    /// previous level plus an implied `load_spike` entry). Absent: not a trigger.
    #[serde(default)]
    pub trigger: Option<bool>,
    /// The trigger's label (with `trigger: true`). Absent: one made from the rise.
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
    /// The arrival rate times this (> 1) while it lasts.
    #[serde(default)]
    pub factor: Option<f64>,
    /// Documents per second on top of the arrivals (at most 100,000).
    #[serde(default)]
    pub extra_rate: Option<f64>,
    /// A share of one pool's calibrated capacity on top, in (0, 10].
    #[serde(default)]
    pub extra_capacity: Option<f64>,
}

/// `documents:` what arrives at this project's system under test.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDocuments {
    /// Pages per document: `fixed`, `uniform` or `lognormal`.
    #[schemars(with = "PageDistribution")]
    pub pages: Spanned<PageDistribution>,
    /// Tenants the documents are spread over, named `t1` to `tN` (at least 1).
    #[schemars(with = "u32")]
    pub tenants: Spanned<u32>,
    /// A finite population the arrivals draw from (repeats hit the cache);
    /// without it every document is new.
    #[serde(default)]
    #[schemars(with = "Option<RawPopulation>")]
    pub population: Option<Spanned<RawPopulation>>,
}

pub use super::RawPopulation;

mod client;
pub use client::{ClientMode, RawClient, RawClientOverride, RawPoll, RawTenantClient};

/// Pages per document (as a request body's `bytes`: its size in bytes).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PageDistribution {
    /// Always this many (>= 1).
    Fixed(u32),
    /// Drawn uniformly from `[min, max]`.
    Uniform {
        /// The smallest (>= 1).
        min: u32,
        /// The largest (>= `min`).
        max: u32,
    },
    /// Drawn from a lognormal law (a long tail of large ones), capped.
    Lognormal {
        /// The median (>= 1).
        median: f64,
        /// The standard deviation of the logarithm, in [0, 5).
        sigma: f64,
        /// The cap (>= 1): larger draws are cut to it.
        max: u32,
    },
}

/// One timeline entry: a fault or an operator's action, at a time.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTimelineEntry {
    /// When it happens, from the start of the load (a duration before the
    /// end; a trigger's leaves `analysis.min_baseline` after the warm-up).
    pub at: String,
    /// How long it lasts: it is undone at its end (a `kill` by a restart).
    /// Only for the entries that can be undone, and required by
    /// `load_spike`. Absent: a fault stays until the end of the run.
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
    /// Its name in the report and charts. Absent: one made from the entry
    /// (e.g. `z3 failing 100%`).
    #[serde(default)]
    pub label: Option<String>,
    /// Only for actions: the variants in which operators took it (a reaction
    /// to the incident). Faults always apply to every variant. Absent: every variant.
    #[serde(default)]
    pub variants: Option<Vec<String>>,
}

/// One configuration compared: the base system and clients with its changes.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    /// What this variant is, in a sentence (shown in the report).
    #[serde(default)]
    pub description: String,
    /// Overrides of the base system configuration (merged key by key;
    /// `processes.NAME.command`, `env`, `cwd`, `config` with `environment: processes`).
    /// Absent: the base `system` as it is.
    #[serde(default)]
    pub system: Option<super::processes::RawSystem>,
    /// Overrides of the client behaviour. Absent: `workload.client` as it is.
    #[serde(default)]
    pub client: Option<RawClientOverride>,
}

/// `waves: 0` or `waves: ">= 3"`.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ExpectValue {
    /// Equal to this number (`waves: 0`).
    Number(f64),
    /// A comparison (`">= 3"`, `"< 0.05"`) or, for `verdict`, a verdict's name.
    Text(String),
}

/// One figure from the incident report, shown beside the run's own.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIncidentFigure {
    /// The metric it compares with, as an expectation names it (with a
    /// window or zone where it takes one), e.g. `failure_ratio_mean[32s..46s]`.
    pub metric: String,
    /// The variant whose measured value it stands beside.
    pub variant: String,
    /// The incident's value, in the metric's unit.
    pub value: f64,
    /// What the figure is in the incident's words, shown beside it.
    pub label: String,
}

/// `expect:` as written: variant -> metric (with window/zone) -> comparison.
pub type RawExpect = IndexMap<String, IndexMap<String, Spanned<ExpectValue>>>;

/// What a timeline entry does: a trigger the harness makes itself, a
/// generic fault on a component, or one of the system's admin commands.
// Schema only: `validate/timeline.rs` parses the value itself to locate its errors.
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
