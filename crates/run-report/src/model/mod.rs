//! The recorded run: what the harness measured, second by second, for each
//! variant of one experiment. This is the contract between the harness (which
//! fills it) and the analysis and report code (which only reads it), so the
//! analysis can be tested on synthetic series without running any load.

mod campaign_context;
mod second;

pub use campaign_context::{CampaignContext, VariantContext};
pub use second::{Second, ZoneSecond};

use crate::metrics::{Metric, MetricRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of [`RunData`] this crate writes. A run recorded with an
/// older one is judged again with the current rule (what it lacks, such as
/// per-second latency counts, is then not judged, and the report says so);
/// a newer one is refused ([`crate::read_run`]).
///
/// - 0: before versioning (up to 2026-12-04);
/// - 1: load spikes' extra arrivals in the triggers' residues, a GPU that
///   keeps its modeled pace; a fault's undoing is `EventKind::FaultUndone`
///   (0 recorded it as an `Action` labelled "end: ...", and is read so).
pub const RUN_SCHEMA: u32 = 1;

/// One experiment run: every variant, plus what is needed to explain it.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RunData {
    /// [`RUN_SCHEMA`] when it was recorded (0: before versioning).
    #[serde(default)]
    pub schema: u32,
    pub experiment: String,
    pub description: String,
    /// Unique per run, e.g. `20261130T051500Z-seed42`.
    pub run_id: String,
    /// RFC 3339 start time.
    pub started_at: String,
    pub seed: u64,
    pub quick: bool,
    /// The experiment file exactly as read, shown in the report.
    pub experiment_yaml: String,
    pub environment: EnvironmentFacts,
    pub analysis: AnalysisConfig,
    pub expectations: Vec<ExpectationSpec>,
    pub variants: Vec<VariantRun>,
    /// The incident's own figures, if the experiment carries them (fidelity panel).
    #[serde(default)]
    pub incident_figures: Vec<IncidentFigure>,
    /// The windowed metrics (`name{label}[from..to]`) the experiment's
    /// campaign expectations name: a campaign reads each run back from its
    /// summary, which carries only whole-run values unless told these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub campaign_metrics: Vec<MetricRef>,
    /// The experiment's last recorded campaign, to place this run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign_context: Option<CampaignContext>,
    /// The clock the run ran on (`--clock`); absent in run.json: real.
    #[serde(default, skip_serializing_if = "RunClock::is_real")]
    pub clock: RunClock,
    /// How long the run took on the wall clock and on its own. Never in
    /// run.json: a virtual run must replay byte for byte, and the wall time
    /// differs each time; the live run's summary and page show it.
    #[serde(skip)]
    pub timing: Option<RunTiming>,
}

/// The clock a run ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunClock {
    /// Wall-clock time.
    #[default]
    Real,
    /// tokio's paused clock, advanced to the next timer whenever every task
    /// is idle: deterministic, as fast as the CPU allows.
    Virtual,
}

impl RunData {
    /// How the report names the run: `run 20261130T051500Z-seed42` on the
    /// real clock; on the virtual one, whose record starts at the epoch so
    /// a seed replays byte for byte, `virtual-clock run` (its id and start
    /// time are the epoch's, not when it ran).
    pub fn label(&self) -> String {
        match self.clock {
            RunClock::Real => format!("run {}", self.run_id),
            RunClock::Virtual => "virtual-clock run".to_string(),
        }
    }
}

impl RunClock {
    pub fn is_real(&self) -> bool {
        *self == RunClock::Real
    }

    pub fn name(self) -> &'static str {
        match self {
            RunClock::Real => "real",
            RunClock::Virtual => "virtual",
        }
    }
}

/// A run's duration on the wall clock and on the clock it ran on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunTiming {
    pub wall_s: f64,
    pub clock_s: f64,
}

impl RunTiming {
    /// Seconds on the run's clock per wall-clock second (1 in real time).
    pub fn ratio(&self) -> f64 {
        self.clock_s / self.wall_s.max(1e-9)
    }
}

/// What ran and where.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct EnvironmentFacts {
    /// `embedded`, `containers` or `external`.
    pub kind: String,
    /// e.g. "llvmpipe (LLVM 15.0.6), Vulkan, Cpu".
    pub gpu_adapter: String,
    /// True when no GPU adapter was found and the CPU page function ran instead.
    pub gpu_fallback: bool,
    /// Why it fell back, when it did.
    pub gpu_fallback_reason: Option<String>,
    /// Calibrated capacity of one pool, in pages per second.
    pub calibrated_pages_per_sec: f64,
    /// Calibrated capacity in documents per second (pages/s over mean pages per document).
    pub calibrated_docs_per_sec: f64,
    pub harness_version: String,
    pub hostname: String,
    pub cpus: usize,
    /// Free-form facts (rustc version, OS, ...).
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}

/// Thresholds of the analysis, set in the experiment (defaults documented in the report).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// A second belongs to a wave when its failure ratio is above this.
    pub wave_threshold: f64,
    /// Runs of wave seconds separated by a gap shorter than this (seconds) are merged.
    pub wave_merge_gap_s: u32,
    /// Runs shorter than this (seconds) are not waves.
    pub wave_min_duration_s: u32,
    /// Recovery: failure ratio and p99 back within `recovery_factor` x baseline ...
    pub recovery_factor: f64,
    /// ... and staying there for this many seconds.
    pub recovery_window_s: u32,
    /// Seconds at the start ignored as warm-up (baseline is measured after them, before the first trigger).
    pub warmup_s: u32,
    /// The baseline needs at least this many seconds between warm-up and the
    /// first trigger (the validator rejects a timeline that leaves fewer).
    #[serde(default = "default_min_baseline_s")]
    pub min_baseline_s: u32,
    /// The first second whose client-visible failure ratio passes this (or in
    /// which a document is given up) is the first customer-visible failure,
    /// the reference of the alerts' lead time.
    #[serde(default = "default_customer_failure_threshold")]
    pub customer_failure_threshold: f64,
}

fn default_min_baseline_s() -> u32 {
    5
}

fn default_customer_failure_threshold() -> f64 {
    0.05
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            wave_threshold: 0.5,
            wave_merge_gap_s: 2,
            wave_min_duration_s: 2,
            recovery_factor: 1.1,
            recovery_window_s: 30,
            warmup_s: 3,
            min_baseline_s: default_min_baseline_s(),
            customer_failure_threshold: default_customer_failure_threshold(),
        }
    }
}

/// `variant: metric op value`, e.g. `before-fix: waves >= 3`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExpectationSpec {
    pub variant: String,
    /// The metric, parsed from the experiment file once.
    pub metric: Metric,
    /// For per-zone metrics: which zone.
    #[serde(default)]
    pub zone: Option<String>,
    /// For series metrics: only seconds in `[from, to)` count (already scaled for `--quick`).
    #[serde(default)]
    pub window: Option<(f64, f64)>,
    pub op: CompareOp,
    pub value: f64,
    /// The text as written in the experiment file, e.g. `">= 3"`.
    pub source: String,
    /// For `verdict` only: the classes that pass (`op` and `value` unused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<String>,
}

impl MetricRef {
    /// The metric an expectation names.
    pub fn of(spec: &ExpectationSpec) -> MetricRef {
        MetricRef {
            metric: spec.metric,
            label: spec.zone.clone(),
            window: spec.window,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum CompareOp {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
}

/// One figure from the incident report, for the fidelity panel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IncidentFigure {
    /// The metric (with its label and window) measured in `variant`.
    pub metric: MetricRef,
    pub variant: String,
    pub incident_value: f64,
    /// e.g. "failure ratio before capacity was freed (78%)".
    pub label: String,
}

/// One variant's run.
/// What one tenant's clients sent over the variant.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct TenantTraffic {
    /// Documents submitted (first submissions and repeats).
    pub submissions: u64,
    /// Attempts sent, retries included.
    pub attempts: u64,
}

impl TenantTraffic {
    /// Attempts per submission: the tenant's clients' own amplification.
    pub fn amplification(&self) -> Option<f64> {
        (self.submissions > 0).then(|| self.attempts as f64 / self.submissions as f64)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct VariantRun {
    pub name: String,
    /// One entry per second since the variant's load started; index == `t`.
    pub seconds: Vec<Second>,
    /// Faults and operator actions, as executed.
    pub events: Vec<TimelineEvent>,
    /// Latency of every attempt over the whole run (ms).
    pub latency: LatencySummary,
    /// End-to-end latency of completed documents per tenant (ms), first send to final answer.
    pub tenant_latency: BTreeMap<String, LatencySummary>,
    /// Submissions and attempts per tenant: whose clients amplified the load.
    #[serde(default)]
    pub tenant_traffic: BTreeMap<String, TenantTraffic>,
    /// Tenants that received oversized documents (excluded when judging "other tenants").
    #[serde(default)]
    pub oversized_tenants: Vec<String>,
    pub integrity: Integrity,
    /// Every trigger as it ran, with its residue (the verdict is judged from
    /// the residue's end); empty when the timeline has none.
    #[serde(default)]
    pub triggers: Vec<TriggerSpan>,
    /// When arrivals stopped (seconds): later seconds are the drain, not judged.
    #[serde(default)]
    pub load_end_s: Option<f64>,
    /// True when Ctrl-C or a dead system under test cut the variant short.
    pub interrupted: bool,
    /// Why it was cut short.
    pub interrupted_reason: Option<String>,
    /// Arrivals that could not be sent on time (in-flight cap reached).
    pub late_arrivals: u64,
    /// Totals of the system's own counters at the end (metric name -> value).
    #[serde(default)]
    pub system_totals: BTreeMap<String, f64>,
    /// Report metrics that could not be measured (the target lacks a series
    /// they need) -> why; they read "n/a", never 0.
    #[serde(default)]
    pub unmeasured: BTreeMap<Metric, String>,
    /// The experiment's alert rules as a real Prometheus evaluated them on
    /// this variant (empty without `alerts:`), so a re-judged run reads the
    /// same alert history.
    #[serde(default)]
    pub alerts: Vec<AlertHistory>,
    /// The load agents that drove this variant (empty: the load ran in the
    /// harness's own process). A lost one makes the run degraded.
    #[serde(default)]
    pub agents: Vec<AgentRecord>,
    /// What the harness itself cost over the variant (CPU, late arrivals,
    /// schedule lag); `None` in runs recorded before it was measured.
    #[serde(default)]
    pub harness_cost: Option<crate::cost::HarnessCost>,
    /// How closely the emulated GPU kept to its model (`None` in runs
    /// recorded before it was measured).
    #[serde(default)]
    pub gpu_pacing: Option<crate::gpu_pacing::GpuPacing>,
    /// An external target's own series: each of the experiment's
    /// `target_series:` PromQL expressions as the run's Prometheus evaluated
    /// it; empty without them (and left out of run.json then). Read under
    /// its former name `target_sustaining` too.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "target_sustaining"
    )]
    pub target_series: Vec<TargetSeries>,
}

/// One `target_series:` expression as the run's Prometheus evaluated it on a
/// variant: a target's own PromQL series (its figures: [`crate::target_figures`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetSeries {
    /// The name the experiment gave it (unique in the file).
    pub name: String,
    /// The PromQL expression, as written.
    pub expr: String,
    /// One value per second of the variant (index == `t`); `None` where the
    /// expression gave no sample (or not a number).
    #[serde(default)]
    pub values: Vec<Option<f64>>,
    /// Why it could not be measured (no data, the query failed, more than
    /// one series); `None`: measured.
    #[serde(default)]
    pub unmeasured: Option<String>,
}

/// One load agent of a variant: its shard of the schedule and how it ended.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct AgentRecord {
    /// `agent-<shard>` (and where it ran: a pid, a pod).
    pub name: String,
    pub shard: u32,
    pub of: u32,
    /// Documents of its shard planned before the load's end.
    pub documents: u64,
    /// Why it was lost (died, stopped reporting for 3 s); `None`: it
    /// reported every document's end.
    pub lost: Option<String>,
    /// Its documents counted as pending (agent lost).
    pub pending_agent_lost: u64,
    /// CPU seconds its process reported for driving its shard; `None`
    /// when it did not report them (lost, or recorded before this field).
    #[serde(default)]
    pub cpu_s: Option<f64>,
}

impl VariantRun {
    /// The agents lost during this variant.
    pub fn lost_agents(&self) -> impl Iterator<Item = &AgentRecord> {
        self.agents.iter().filter(|a| a.lost.is_some())
    }
}

/// One alerting rule's history over a variant, read back from Prometheus
/// (`ALERTS` at the evaluation step). Every rule of the rule files has one,
/// also a rule that never became active.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct AlertHistory {
    /// The rule's `alert:` name.
    pub name: String,
    /// Intervals `[from, to)` in seconds since the variant's load started
    /// in which the alert was pending (its expression true, `for:` not yet met).
    #[serde(default)]
    pub pending: Vec<(f64, f64)>,
    /// Intervals in which it was firing.
    #[serde(default)]
    pub firing: Vec<(f64, f64)>,
    /// The history covers `[0, observed_until_s)`: an interval that ends
    /// there was still open when the variant ended.
    #[serde(default)]
    pub observed_until_s: Option<f64>,
}

/// One trigger as it ran. A trigger is over when its fault is undone *and*
/// the work it injected has left the system: the verdict judges recovery
/// from `residue_end_s`, not from `end_s`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TriggerSpan {
    /// e.g. "oversized t7 x4".
    pub label: String,
    pub start_s: f64,
    /// The fault was undone (its duration ended); for injected documents, the
    /// last one was submitted. `None`: never undone within the run.
    pub end_s: Option<f64>,
    /// The trigger's work had left the system (documents completed, given up
    /// or cancelled and no page of theirs left on the GPU; capacity restored;
    /// zone back). `None`: still present when the run ended.
    pub residue_end_s: Option<f64>,
    /// What the residue was and how it ended, in words.
    pub residue: String,
}

impl TriggerSpan {
    /// A trigger without a residue of its own: over when its fault is undone.
    pub fn undone_at(label: &str, start_s: f64, end_s: Option<f64>) -> TriggerSpan {
        TriggerSpan {
            label: label.to_string(),
            start_s,
            end_s,
            residue_end_s: end_s,
            residue: match end_s {
                Some(e) => format!("none beyond the fault itself (undone at {e:.1} s)"),
                None => "the fault was not undone before the run ended".into(),
            },
        }
    }
}

/// A fault or operator action, as executed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimelineEvent {
    /// Seconds since the variant's load started, when it actually ran.
    pub at_s: f64,
    /// When its effect ends, for entries with a duration.
    pub end_s: Option<f64>,
    pub kind: EventKind,
    /// Short label for charts, e.g. "oversized t7 x3".
    pub label: String,
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A fault that triggers trouble (counts for the metastability verdict).
    Fault,
    /// An operator's mitigation.
    Action,
    /// A fault undone by the harness at the end of its duration: part of the
    /// trigger, not an intervention (a recovery after it is the system's own).
    FaultUndone,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// (percentile 0..100, latency ms) for a percentile-distribution chart.
    #[serde(default)]
    pub distribution: Vec<(f64, f64)>,
}

/// Every document submitted, accounted for.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Integrity {
    pub submitted: u64,
    pub completed: u64,
    pub given_up: u64,
    /// Still in flight when the variant ended (aborted at the deadline).
    pub pending: u64,
    /// Results checked against the reference page function.
    pub results_checked: u64,
    /// Results that did not match (must be 0).
    pub incorrect_results: u64,
    /// Up to 10 examples of incorrect results, for the report.
    #[serde(default)]
    pub incorrect_examples: Vec<String>,
    /// Of `pending`: documents of a load agent that was lost before it
    /// reported their end (must be 0; see `VariantRun::agents`).
    #[serde(default)]
    pub pending_agent_lost: u64,
    /// Order-independent digest of the submitted document ids (a wrapping
    /// sum of their mixed values): two runs that submitted the same ids the
    /// same number of times have the same digest, however the load was split.
    #[serde(default)]
    pub submitted_digest: u64,
    /// Processes of the system under test that exited by themselves while
    /// the variant ran (`environment: processes`), one line each: its name,
    /// exit status and last log lines. Must be empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes_exited: Vec<String>,
}

impl Integrity {
    /// Every submitted document ended in exactly one of the three states.
    pub fn accounted(&self) -> bool {
        self.submitted == self.completed + self.given_up + self.pending
    }
}
