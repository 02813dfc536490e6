//! The typed metric catalogue: one row per metric an experiment may name,
//! with its scope, unit, whether it takes a window, and its definition.
//!
//! Everything else is derived from this table: the validator's known names,
//! the keys of `summary.json`, the HTML and the rustdoc of [`Metric`]. An
//! experiment's string is parsed into a [`Metric`] once (`Metric::from_str`);
//! after that a metric is a value the compiler checks, so renaming or
//! removing one breaks the build wherever it is used.
//!
//! "Failure ratio" of a second is (rejected + timeouts + errors) / (ok +
//! rejected + timeouts + errors) of the client attempts completed in it;
//! only seconds with at least 5 completed attempts count (5 requests for
//! zone ratios).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What a metric is measured over, and what its `{label}` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The whole variant; takes no label.
    Run,
    /// One zone: `name{az2}`.
    Zone,
    /// One alert rule of `alerts:`: `name{RuleName}`.
    Alert,
}

/// The unit a metric's number is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A number of things (waves, documents, writes).
    Count,
    /// A share between 0 and 1.
    Ratio,
    /// A multiplier (attempts per document).
    Factor,
    Milliseconds,
    Seconds,
    /// Pages per second, or pages.
    Pages,
    /// 0 or 1.
    Flag,
    /// Not a number: the verdict's class.
    Class,
}

macro_rules! catalogue {
    ($( $(#[$attr:meta])* $variant:ident = $name:literal, $scope:ident, $unit:ident,
        windowed: $windowed:literal, $doc:literal; )*) => {
        /// Every metric an experiment's `expect` and `incident` sections may name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Metric {
            $( #[doc = $doc] $(#[$attr])* $variant, )*
        }

        impl Metric {
            /// Every metric, in the catalogue's order.
            pub const ALL: &'static [Metric] = &[$(Metric::$variant),*];

            /// The name an experiment file writes.
            pub const fn name(self) -> &'static str {
                match self { $(Metric::$variant => $name,)* }
            }

            /// Over what the metric is measured.
            pub const fn scope(self) -> Scope {
                match self { $(Metric::$variant => Scope::$scope,)* }
            }

            /// The unit of its number.
            pub const fn unit(self) -> Unit {
                match self { $(Metric::$variant => Unit::$unit,)* }
            }

            /// Whether it accepts a window `[FROMs..TOs]`.
            pub const fn windowed(self) -> bool {
                match self { $(Metric::$variant => $windowed,)* }
            }

            /// Its definition, one sentence.
            pub const fn doc(self) -> &'static str {
                match self { $(Metric::$variant => $doc,)* }
            }
        }
    };
}

catalogue! {
    Waves = "waves", Run, Count, windowed: false,
        "Number of failure waves (see `wave_rule_text`).";
    PeakFailureRatio = "peak_failure_ratio", Run, Ratio, windowed: false,
        "Largest per-second failure ratio of the run.";
    FailureRatioPeak = "failure_ratio_peak", Run, Ratio, windowed: true,
        "Largest per-second failure ratio in the window.";
    FailureRatioMean = "failure_ratio_mean", Run, Ratio, windowed: true,
        "Mean of the per-second failure ratios in the window.";
    FailureRatioBetweenWaves = "failure_ratio_between_waves", Run, Ratio, windowed: true,
        "Mean per-second failure ratio of the seconds outside every wave, from the first trigger to the end of the load (or in the window).";
    AmplificationPeak = "amplification_peak", Run, Factor, windowed: true,
        "Largest amplification of one second: its attempts / max(distinct documents attempted in it, 1), seconds with >= 5 attempts sent. A document retried over several seconds counts once in each, so this can be below `attempts_per_document`.";
    AmplificationMean = "amplification_mean", Run, Factor, windowed: true,
        "Amplification over a window (it needs one): attempts / distinct documents attempted, each summed over the window's seconds (a document counts once in each second). The whole run's attempts per document is `attempts_per_document`.";
    AttemptsPerDocument = "attempts_per_document", Run, Factor, windowed: false,
        "Client attempts / documents submitted, over the whole run: each document once, however many seconds its retries spread over (what `amplification_mean` without a window was before it was named).";
    GatewayAmplification = "gateway_amplification", Run, Factor, windowed: true,
        "Gateway attempts to pools / client attempts.";
    DuplicateComputeShare = "duplicate_compute_share", Run, Ratio, windowed: true,
        "Pages recomputed / pages computed.";
    CacheHitRatio = "cache_hit_ratio", Run, Ratio, windowed: true,
        "Result cache reads that hit / all reads, summed over the window.";
    GpuPagesPerS = "gpu_pages_per_s", Run, Pages, windowed: true,
        "Pages the GPU computed per second, mean over the window's seconds (the load the cache did not absorb; bounded by the host's speed where the GPU is emulated).";
    GpuQueuePagesMean = "gpu_queue_pages_mean", Run, Pages, windowed: true,
        "Pages waiting in the GPU's page queue, mean over the window's seconds (near `gpu.page_queue`: the GPU is saturated, whatever the host's speed).";
    CollectorShareMean = "collector_share_mean", Run, Ratio, windowed: true,
        "The garbage collector's share of the CPU (`pool.heap`; the pool where it is highest), mean over the window's seconds; undefined for a system without a heap.";
    RepeatSubmissions = "repeat_submissions", Run, Count, windowed: true,
        "Submissions of a document submitted before in the variant (a population's repeats, sum).";
    CacheWritesLost = "cache_writes_lost", Run, Count, windowed: true,
        "Cache writes acknowledged but lost (sum).";
    CacheWriteErrors = "cache_write_errors", Run, Count, windowed: true,
        "Cache writes that failed loudly (sum).";
    SlotsHeldByWaitersPeak = "slots_held_by_waiters_peak", Run, Count, windowed: true,
        "Most worker slots held by requests waiting on a duplicate.";
    RejectedEarly = "rejected_early", Run, Count, windowed: true,
        "Requests rejected early as duplicates (sum).";
    LostDocuments = "lost_documents", Run, Count, windowed: false,
        "Documents given up + documents still pending at the end.";
    DocumentsGivenUp = "documents_given_up", Run, Count, windowed: false,
        "Documents whose client gave up.";
    DocumentsPending = "documents_pending", Run, Count, windowed: false,
        "Documents still in flight when the variant ended.";
    DocumentsSubmitted = "documents_submitted", Run, Count, windowed: false,
        "Documents submitted.";
    DocumentsCompleted = "documents_completed", Run, Count, windowed: false,
        "Documents completed with a verified result.";
    IncorrectResults = "incorrect_results", Run, Count, windowed: false,
        "Results that did not match the reference (must be 0).";
    UnaccountedDocuments = "unaccounted_documents", Run, Count, windowed: false,
        "Submitted - completed - given up - pending (can be negative).";
    P50Ms = "p50_ms", Run, Milliseconds, windowed: false,
        "Median latency of all attempts over the run (ms).";
    P99Ms = "p99_ms", Run, Milliseconds, windowed: false,
        "p99 latency of all attempts over the run (ms).";
    P99MsPeak = "p99_ms_peak", Run, Milliseconds, windowed: true,
        "Largest per-second p99 (ms), seconds with >= 5 completed attempts.";
    OtherTenantsP99Ms = "other_tenants_p99_ms", Run, Milliseconds, windowed: false,
        "Largest end-to-end p99 of tenants without oversized documents (0 if none).";
    OversizedTenantP99Ms = "oversized_tenant_p99_ms", Run, Milliseconds, windowed: false,
        "Largest end-to-end p99 of the tenants with oversized documents.";
    Verdict = "verdict", Run, Class, windowed: false,
        "The verdict's class, not a number: `verdict: metastable` or `verdict: stable|recovered`.";
    Metastable = "metastable", Run, Flag, windowed: false,
        "1 when the verdict is metastable; 0 when stable, recovered or overloaded; undefined when inconclusive, never healthy or without trigger.";
    TimeToRecoverS = "time_to_recover_s", Run, Seconds, windowed: false,
        "Seconds from the residue's end to recovery (0 when stable; a slow recovery's full time; for a metastable variant ended by an operator's action, to the recovery after it; otherwise undefined).";
    DegradedS = "degraded_s", Run, Seconds, windowed: false,
        "Seconds degraded against the baseline, from the warm-up to the end of the load (undefined without a baseline: no trigger, never healthy).";
    LateArrivals = "late_arrivals", Run, Count, windowed: false,
        "Arrivals not sent on time (client in-flight cap reached).";
    ZoneFailureRatioPeak = "zone_failure_ratio_peak", Zone, Ratio, windowed: true,
        "Largest per-second failed / requests of the zone, seconds with >= 5 requests.";
    ZoneFailureRatioMean = "zone_failure_ratio_mean", Zone, Ratio, windowed: true,
        "Mean of the zone's per-second failure ratios.";
    ZoneFailedFromS = "zone_failed_from_s", Zone, Seconds, windowed: true,
        "When the zone failed: the first second of its first run of failed seconds (>= 5 requests, failure ratio at the wave threshold) as long as the shortest wave (undefined: it did not fail).";
    ZoneRecoveredFromS = "zone_recovered_from_s", Zone, Seconds, windowed: true,
        "When the zone came back: the first second after its last such failure with >= 5 requests below the threshold (undefined: it never failed, or had not come back).";
    ZoneZombieWork = "zone_zombie_work", Zone, Count, windowed: true,
        "Work the zone did for callers that had already given up (sum).";
    AlertsFired = "alerts_fired", Run, Count, windowed: false,
        "Alert rules of `alerts:` that fired at least once (count; undefined without `alerts:`).";
    AlertFired = "alert_fired", Alert, Flag, windowed: false,
        "1 when the rule fired at least once, else 0.";
    AlertLeadS = "alert_lead_s", Alert, Seconds, windowed: false,
        "First customer-visible failure minus the rule's first firing, seconds (positive: before customers; undefined when it never fired or customers saw no failure).";
    AlertWaveLeadS = "alert_wave_lead_s", Alert, Seconds, windowed: false,
        "The first wave's first second minus the rule's first firing, seconds (positive: before the wave; undefined when it never fired or there was no wave).";
}

impl Metric {
    /// Its name in words, for sentences: `degraded_s` is "degraded (s)".
    pub fn words(self) -> String {
        let name = self.name().replace('_', " ");
        for unit in [" ms", " s"] {
            if let Some(stem) = name.strip_suffix(unit) {
                return format!("{stem} ({})", unit.trim());
            }
        }
        name
    }

    /// The values it can take, `(lowest, highest)`, both included (infinite
    /// where unbounded): a share or a flag is in [0, 1], counts, times,
    /// pages and factors are never negative; the signed ones are a
    /// difference (`unaccounted_documents`, the alert leads). `None` for the
    /// verdict, which is a class. The validator refuses an expectation no
    /// value in it can satisfy.
    pub fn range(self) -> Option<(f64, f64)> {
        let unbounded = (f64::NEG_INFINITY, f64::INFINITY);
        match self {
            Metric::UnaccountedDocuments | Metric::AlertLeadS | Metric::AlertWaveLeadS => {
                Some(unbounded)
            }
            _ => match self.unit() {
                Unit::Class => None,
                Unit::Ratio | Unit::Flag => Some((0.0, 1.0)),
                Unit::Count | Unit::Factor | Unit::Milliseconds | Unit::Seconds | Unit::Pages => {
                    Some((0.0, f64::INFINITY))
                }
            },
        }
    }

    /// Whether it is defined only over a window: `amplification_mean`,
    /// whose whole-run figure has a name of its own
    /// (`attempts_per_document`).
    pub fn needs_window(self) -> bool {
        self == Metric::AmplificationMean
    }

    /// The metric an older record (run.json, summary.json) means by `name`
    /// without a window, where that changed: `amplification_mean` was the
    /// whole run's attempts per document submitted.
    pub fn renamed(name: &str) -> Option<Metric> {
        (name.trim() == "amplification_mean").then_some(Metric::AttemptsPerDocument)
    }

    /// Whether its values are whole numbers (counts and flags).
    pub fn integral(self) -> bool {
        matches!(self.unit(), Unit::Count | Unit::Flag)
    }

    /// Whether it needs the alert rules of `alerts:` (the per-rule ones and the count).
    pub fn needs_alerts(self) -> bool {
        self.scope() == Scope::Alert || self == Metric::AlertsFired
    }

    /// The names of the metrics that pass `keep`, joined for an error message.
    pub fn names_where(keep: impl Fn(Metric) -> bool) -> String {
        let names: Vec<&str> = Metric::ALL
            .iter()
            .filter(|m| keep(**m))
            .map(|m| m.name())
            .collect();
        names.join(", ")
    }

    /// The catalogue as a Markdown table, for the user guide.
    pub fn markdown_table() -> String {
        let mut t = String::from(
            "| metric | scope | unit | range | window | definition |\n|---|---|---|---|---|---|\n",
        );
        for m in Metric::ALL {
            t.push_str(&format!(
                "| `{}` | {:?} | {:?} | {} | {} | {} |\n",
                m.name(),
                m.scope(),
                m.unit(),
                m.range_text(),
                match (m.needs_window(), m.windowed()) {
                    (true, _) => "required",
                    (false, true) => "yes",
                    (false, false) => "",
                },
                m.doc()
            ));
        }
        t
    }

    /// Its range in words: `0 to 1`, `>= 0`, `any`, or `—` for the verdict.
    pub fn range_text(self) -> String {
        match self.range() {
            None => "—".into(),
            Some((lo, hi)) if lo.is_infinite() && hi.is_infinite() => "any".into(),
            Some((lo, hi)) if hi.is_infinite() => format!(">= {lo}"),
            Some((lo, hi)) => format!("{lo} to {hi}"),
        }
    }
}

/// A name that is not in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric {name:?}; known metrics: {known}")]
pub struct UnknownMetric {
    pub name: String,
    pub known: String,
}

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(name: &str) -> Result<Metric, UnknownMetric> {
        Metric::ALL
            .iter()
            .copied()
            .find(|m| m.name() == name.trim())
            .ok_or_else(|| UnknownMetric {
                name: name.to_string(),
                known: Metric::names_where(|_| true),
            })
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A metric is recorded (run.json, summary.json) by its name.
impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}
