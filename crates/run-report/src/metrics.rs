//! The metric catalogue: every number an experiment's `expect` section (or an
//! incident figure) can name, and how each is computed for one variant.
//!
//! Names are a contract with the harness (its validator checks experiment
//! files against [`METRICS`], [`WINDOWED_METRICS`] and [`ZONE_METRICS`]); the
//! table of definitions is on [`METRICS`].

use crate::analysis::amplification as amp;
use crate::analysis::{VariantAnalysis, Verdict};
use crate::model::{AnalysisConfig, ExpectationSpec, Second, VariantRun};
use crate::series::{self, sum};
use std::collections::BTreeMap;
use std::fmt;

/// Every metric name an experiment's `expect` section may use.
///
/// "Failure ratio" of a second is (rejected + timeouts + errors) / (ok + rejected +
/// timeouts + errors) of the client attempts completed in it; only seconds with at
/// least 5 completed attempts count (5 requests for zone ratios). **W**: accepts a
/// window `[from, to)` of seconds, e.g. `failure_ratio_mean[40s..70s]` (without
/// one, the whole run). **Z**: needs a zone, e.g. `zone_failure_ratio_peak{az2}`.
///
/// | metric | W | Z | definition |
/// |---|---|---|---|
/// | `waves` | | | number of failure waves (see [`crate::wave_rule_text`]) |
/// | `peak_failure_ratio` | | | largest per-second failure ratio of the run |
/// | `failure_ratio_peak` | W | | largest per-second failure ratio in the window |
/// | `failure_ratio_mean` | W | | mean of the per-second failure ratios in the window |
/// | `failure_ratio_between_waves` | W | | mean per-second failure ratio of the seconds outside every wave, from the first trigger to the end of the load (or in the window) |
/// | `amplification_peak` | W | | largest per-second attempts / max(distinct documents, 1), seconds with >= 5 attempts sent |
/// | `amplification_mean` | W | | whole run: attempts / arrivals; windowed: attempts / distinct documents, summed over the window |
/// | `gateway_amplification` | W | | gateway attempts to pools / client attempts |
/// | `duplicate_compute_share` | W | | pages recomputed / pages computed |
/// | `cache_hit_ratio` | W | | result cache reads that hit / all reads, summed over the window |
/// | `gpu_pages_per_s` | W | | pages the GPU computed per second, mean over the window's seconds (the load the cache did not absorb; bounded by the host's speed where the GPU is emulated) |
/// | `gpu_queue_pages_mean` | W | | pages waiting in the GPU's page queue, mean over the window's seconds (near `gpu.page_queue`: the GPU is saturated, whatever the host's speed) |
/// | `repeat_submissions` | W | | submissions of a document submitted before in the variant (a population's repeats, sum) |
/// | `cache_writes_lost` | W | | cache writes acknowledged but lost (sum) |
/// | `cache_write_errors` | W | | cache writes that failed loudly (sum) |
/// | `slots_held_by_waiters_peak` | W | | most worker slots held by requests waiting on a duplicate |
/// | `rejected_early` | W | | requests rejected early as duplicates (sum) |
/// | `lost_documents` | | | documents given up + documents still pending at the end |
/// | `documents_given_up` | | | documents whose client gave up |
/// | `documents_pending` | | | documents still in flight when the variant ended |
/// | `documents_submitted` | | | documents submitted |
/// | `documents_completed` | | | documents completed with a verified result |
/// | `incorrect_results` | | | results that did not match the reference (must be 0) |
/// | `unaccounted_documents` | | | submitted - completed - given up - pending (can be negative) |
/// | `p50_ms` | | | median latency of all attempts over the run (ms) |
/// | `p99_ms` | | | p99 latency of all attempts over the run (ms) |
/// | `p99_ms_peak` | W | | largest per-second p99 (ms), seconds with >= 5 completed attempts |
/// | `other_tenants_p99_ms` | | | largest end-to-end p99 of tenants without oversized documents (0 if none) |
/// | `oversized_tenant_p99_ms` | | | largest end-to-end p99 of the tenants with oversized documents |
/// | `verdict` | | | the verdict's class, not a number: `verdict: metastable` or `verdict: stable\|recovered` (see [`crate::Verdict`]) |
/// | `metastable` | | | 1 when the verdict is metastable; 0 when stable, recovered or overloaded; undefined when inconclusive, never healthy or without trigger |
/// | `time_to_recover_s` | | | seconds from the residue's end to recovery (0 when stable; a slow recovery's full time; for a metastable variant ended by an operator's action, to the recovery after it; otherwise undefined) |
/// | `late_arrivals` | | | arrivals not sent on time (client in-flight cap reached) |
/// | `zone_failure_ratio_peak` | W | Z | largest per-second failed / requests of the zone, seconds with >= 5 requests |
/// | `zone_failure_ratio_mean` | W | Z | mean of the zone's per-second failure ratios |
/// | `zone_zombie_work` | W | Z | work the zone did for callers that had already given up (sum) |
/// | `alerts_fired` | | | alert rules of `alerts:` that fired at least once (count; undefined without `alerts:`) |
/// | `alert_fired` | | A | 1 when the rule fired at least once, else 0 |
/// | `alert_lead_s` | | A | first customer-visible failure minus the rule's first firing, seconds (positive: before customers; undefined when it never fired or customers saw no failure; see [`crate::analysis::detection`]) |
/// | `alert_wave_lead_s` | | A | the first wave's first second minus the rule's first firing, seconds (positive: before the wave; undefined when it never fired or there was no wave) |
///
/// **A**: needs an alert rule's name, e.g. `alert_lead_s{RetryDuplication}`.
pub const METRICS: &[&str] = &[
    "waves",
    "peak_failure_ratio",
    "failure_ratio_peak",
    "failure_ratio_mean",
    "failure_ratio_between_waves",
    "amplification_peak",
    "amplification_mean",
    "gateway_amplification",
    "duplicate_compute_share",
    "cache_hit_ratio",
    "gpu_pages_per_s",
    "gpu_queue_pages_mean",
    "repeat_submissions",
    "cache_writes_lost",
    "cache_write_errors",
    "slots_held_by_waiters_peak",
    "rejected_early",
    "lost_documents",
    "documents_given_up",
    "documents_pending",
    "documents_submitted",
    "documents_completed",
    "incorrect_results",
    "unaccounted_documents",
    "p50_ms",
    "p99_ms",
    "p99_ms_peak",
    "other_tenants_p99_ms",
    "oversized_tenant_p99_ms",
    "verdict",
    "metastable",
    "time_to_recover_s",
    "late_arrivals",
    "zone_failure_ratio_peak",
    "zone_failure_ratio_mean",
    "zone_zombie_work",
    "alerts_fired",
    "alert_fired",
    "alert_lead_s",
    "alert_wave_lead_s",
];

/// Metrics that accept a time window `[from, to)`, e.g. `failure_ratio_mean[40s..70s]`.
pub const WINDOWED_METRICS: &[&str] = &[
    "failure_ratio_peak",
    "failure_ratio_mean",
    "failure_ratio_between_waves",
    "amplification_peak",
    "amplification_mean",
    "gateway_amplification",
    "duplicate_compute_share",
    "cache_hit_ratio",
    "gpu_pages_per_s",
    "gpu_queue_pages_mean",
    "repeat_submissions",
    "cache_writes_lost",
    "cache_write_errors",
    "slots_held_by_waiters_peak",
    "rejected_early",
    "p99_ms_peak",
    "zone_failure_ratio_peak",
    "zone_failure_ratio_mean",
    "zone_zombie_work",
];

/// Metrics that need a zone, e.g. `zone_failure_ratio_peak{az2}`.
pub const ZONE_METRICS: &[&str] = &[
    "zone_failure_ratio_peak",
    "zone_failure_ratio_mean",
    "zone_zombie_work",
];

/// Metrics that need an alert rule's name in the zone's place, e.g. `alert_fired{RetryDuplication}`.
pub const ALERT_METRICS: &[&str] = &["alert_fired", "alert_lead_s", "alert_wave_lead_s"];

/// A metric with its optional zone and window, written `name{zone}[from s..to s]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRef {
    pub name: String,
    pub zone: Option<String>,
    pub window: Option<(f64, f64)>,
}

impl MetricRef {
    /// The metric an expectation names.
    pub fn of(spec: &ExpectationSpec) -> MetricRef {
        MetricRef {
            name: spec.metric.clone(),
            zone: spec.zone.clone(),
            window: spec.window,
        }
    }

    /// Parse `name`, `name{zone}`, `name[40s..70s]` or `name{zone}[40..70]` (the `s` is optional);
    /// names and zones are letters, digits, `_`, `-` and `.`.
    pub fn parse(text: &str) -> Option<MetricRef> {
        let text = text.trim();
        let (head, window) = match text.strip_suffix(']') {
            Some(rest) => {
                let (head, w) = rest.split_once('[')?;
                let (from, to) = w.split_once("..")?;
                let num = |s: &str| s.trim().trim_end_matches('s').trim().parse::<f64>().ok();
                (head, Some((num(from)?, num(to)?)))
            }
            None => (text, None),
        };
        let (name, zone) = match head.strip_suffix('}') {
            Some(rest) => {
                let (name, zone) = rest.split_once('{')?;
                (name, Some(zone.trim().to_string()))
            }
            None => (head, None),
        };
        let name = name.trim();
        let word =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || "_-.".contains(c));
        (word(name) && zone.as_deref().is_none_or(word)).then(|| MetricRef {
            name: name.to_string(),
            zone,
            window,
        })
    }
}

impl fmt::Display for MetricRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(z) = &self.zone {
            write!(f, "{{{z}}}")?;
        }
        if let Some((from, to)) = self.window {
            write!(f, "[{from}s..{to}s]")?;
        }
        Ok(())
    }
}

/// Value of one metric (with optional zone/window) for one variant; `None` if not
/// defined (unknown name or zone, empty window, zero denominator, not recovered...).
pub fn metric_value(
    v: &VariantRun,
    a: &VariantAnalysis,
    spec: &ExpectationSpec,
    cfg: &AnalysisConfig,
) -> Option<f64> {
    metric_value_explained(v, a, &MetricRef::of(spec), cfg).ok()
}

/// Like [`metric_value`], but says why a value is undefined.
pub fn metric_value_explained(
    v: &VariantRun,
    a: &VariantAnalysis,
    m: &MetricRef,
    _cfg: &AnalysisConfig,
) -> Result<f64, String> {
    let name = m.name.as_str();
    if !METRICS.contains(&name) {
        return Err(format!("unknown metric `{name}`"));
    }
    let zone_metric = ZONE_METRICS.contains(&name);
    match (&m.zone, zone_metric) {
        // Alert metrics carry a rule's name in the zone's place.
        _ if ALERT_METRICS.contains(&name) => {}
        (None, true) => return Err(format!("`{name}` needs a zone, e.g. `{name}{{az1}}`")),
        (Some(_), false) => return Err(format!("`{name}` is not a per-zone metric")),
        _ => {}
    }
    if m.window.is_some() && !WINDOWED_METRICS.contains(&name) {
        return Err(format!("`{name}` does not accept a time window"));
    }
    if let Some(why) = v.unmeasured.get(name) {
        return Err(format!("not measured: {why}"));
    }
    if name == "alerts_fired" || ALERT_METRICS.contains(&name) {
        return crate::analysis::detection::alert_metric(v, _cfg, name, m.zone.as_deref());
    }
    let seconds = window_seconds(&v.seconds, m.window)?;
    let value = if let Some(zone) = &m.zone {
        zone_metric_value(&v.seconds, &seconds, name, zone)?
    } else {
        run_metric_value(v, a, &seconds, name, m.window.is_some())?
    };
    if value.is_nan() {
        return Err("not a number".to_string());
    }
    Ok(value)
}

fn window_seconds(all: &[Second], window: Option<(f64, f64)>) -> Result<Vec<&Second>, String> {
    if let Some((from, to)) = window {
        if from.is_nan() || to.is_nan() || from >= to {
            return Err(format!("empty window [{from}s..{to}s)"));
        }
        let inside = series::select(all, window);
        if inside.is_empty() {
            return Err(format!("no second of this run lies in [{from}s..{to}s)"));
        }
        return Ok(inside);
    }
    Ok(all.iter().collect())
}

const FEW: &str = "no second with at least 5 completed attempts";

fn run_metric_value(
    v: &VariantRun,
    a: &VariantAnalysis,
    s: &[&Second],
    name: &str,
    windowed: bool,
) -> Result<f64, String> {
    let need = |x: Option<f64>, why: &str| x.ok_or_else(|| why.to_string());
    let i = &v.integrity;
    Ok(match name {
        "waves" => a.waves.len() as f64,
        "peak_failure_ratio" | "failure_ratio_peak" => need(
            series::max_finite(s.iter().filter_map(|x| series::trusted_failure_ratio(x))),
            FEW,
        )?,
        "failure_ratio_mean" => need(
            series::mean_finite(s.iter().filter_map(|x| series::trusted_failure_ratio(x))),
            FEW,
        )?,
        "failure_ratio_between_waves" => {
            let (from, to) = if windowed {
                (0.0, f64::INFINITY)
            } else {
                let first = crate::analysis::verdict::triggers_of(v)
                    .iter()
                    .map(|t| t.start_s)
                    .filter(|x| x.is_finite())
                    .reduce(f64::min)
                    .ok_or("no trigger: nothing is between waves")?;
                (first.floor(), v.load_end_s.unwrap_or(f64::INFINITY))
            };
            need(
                series::mean_finite(
                    s.iter()
                        .filter(|x| f64::from(x.t) >= from && f64::from(x.t) < to)
                        .filter(|x| !a.waves.iter().any(|w| x.t >= w.start_s && x.t < w.end_s()))
                        .filter_map(|x| series::trusted_failure_ratio(x)),
                ),
                FEW,
            )?
        }
        "amplification_peak" => need(
            amp::amplification_peak(s),
            "no second with at least 5 attempts sent",
        )?,
        "amplification_mean" if windowed => {
            need(amp::amplification_mean_window(s), "no distinct documents")?
        }
        "amplification_mean" => need(amp::amplification_mean_run(s), "no arrivals")?,
        "gateway_amplification" => need(amp::gateway_amplification(s), "no client attempts")?,
        "duplicate_compute_share" => need(amp::duplicate_compute_share(s), "no pages computed")?,
        "cache_hit_ratio" => need(
            crate::series::ratio(
                sum(s, |x| x.cache_hits),
                sum(s, |x| x.cache_hits + x.cache_misses),
            ),
            "no cache read",
        )?,
        "gpu_pages_per_s" => need(
            series::mean_finite(s.iter().map(|x| x.pages_computed as f64)),
            "no second",
        )?,
        "gpu_queue_pages_mean" => need(
            series::mean_finite(s.iter().map(|x| x.gpu_queue_pages)),
            "no second with the queue sampled",
        )?,
        "repeat_submissions" => sum(s, |x| x.repeat_submissions) as f64,
        "cache_writes_lost" => sum(s, |x| x.cache_writes_lost) as f64,
        "cache_write_errors" => sum(s, |x| x.cache_write_errors) as f64,
        "rejected_early" => sum(s, |x| x.rejected_early) as f64,
        "slots_held_by_waiters_peak" => need(
            series::max_finite(s.iter().map(|x| x.slots_held_by_waiters)),
            "no slot measurement",
        )?,
        "lost_documents" => i.given_up.saturating_add(i.pending) as f64,
        "documents_given_up" => i.given_up as f64,
        "documents_pending" => i.pending as f64,
        "documents_submitted" => i.submitted as f64,
        "documents_completed" => i.completed as f64,
        "incorrect_results" => i.incorrect_results as f64,
        "unaccounted_documents" => {
            (i128::from(i.submitted)
                - i128::from(i.completed)
                - i128::from(i.given_up)
                - i128::from(i.pending)) as f64
        }
        "p50_ms" => v.latency.p50_ms,
        "p99_ms" => v.latency.p99_ms,
        "p99_ms_peak" => need(
            series::max_finite(
                s.iter()
                    .filter(|x| series::completed(x) >= series::MIN_ATTEMPTS)
                    .map(|x| x.p99_ms),
            ),
            FEW,
        )?,
        "other_tenants_p99_ms" => series::max_finite(
            v.tenant_latency
                .iter()
                .filter(|(t, _)| !v.oversized_tenants.contains(t))
                .map(|(_, l)| l.p99_ms),
        )
        .unwrap_or(0.0),
        "oversized_tenant_p99_ms" => need(
            series::max_finite(
                v.oversized_tenants
                    .iter()
                    .filter_map(|t| v.tenant_latency.get(t))
                    .map(|l| l.p99_ms),
            ),
            "no latency recorded for an oversized tenant",
        )?,
        "verdict" => {
            return Err(format!(
                "the verdict is a class ({}), not a number",
                a.verdict.class()
            ))
        }
        "metastable" => match &a.verdict {
            Verdict::Metastable { .. } => 1.0,
            Verdict::Stable | Verdict::Recovered { .. } | Verdict::Overloaded { .. } => 0.0,
            other => return Err(format!("not judged: {}", other.explanation())),
        },
        "time_to_recover_s" => match &a.verdict {
            Verdict::Stable => 0.0,
            Verdict::Recovered { after_s, .. } => *after_s,
            Verdict::Metastable {
                residue_end_s,
                recovered_at_s: Some(t),
                ..
            } => (t - residue_end_s).max(0.0),
            other => return Err(format!("not recovered: {}", other.explanation())),
        },
        "late_arrivals" => v.late_arrivals as f64,
        other => return Err(format!("`{other}` is not computed (report bug)")),
    })
}

fn zone_metric_value(all: &[Second], s: &[&Second], name: &str, zone: &str) -> Result<f64, String> {
    let known = series::zone_names(all);
    if !known.iter().any(|z| z == zone) {
        let list = if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        };
        return Err(format!(
            "zone `{zone}` not seen in this variant (zones: {list})"
        ));
    }
    let zs: Vec<_> = s.iter().filter_map(|x| x.zones.get(zone)).collect();
    let few = "no second with at least 5 requests in the zone";
    match name {
        "zone_failure_ratio_peak" => series::max_finite(
            zs.iter()
                .filter_map(|z| series::zone_trusted_failure_ratio(z)),
        )
        .ok_or_else(|| few.to_string()),
        "zone_failure_ratio_mean" => series::mean_finite(
            zs.iter()
                .filter_map(|z| series::zone_trusted_failure_ratio(z)),
        )
        .ok_or_else(|| few.to_string()),
        "zone_zombie_work" => Ok(zs
            .iter()
            .fold(0u64, |acc, z| acc.saturating_add(z.zombie_work))
            as f64),
        other => Err(format!("`{other}` is not computed (report bug)")),
    }
}

/// Every whole-run metric that is defined for the variant (zone metrics keyed `name{zone}`).
pub fn metrics_map(
    v: &VariantRun,
    a: &VariantAnalysis,
    cfg: &AnalysisConfig,
) -> BTreeMap<String, f64> {
    let mut map = BTreeMap::new();
    for name in METRICS
        .iter()
        .filter(|n| !ZONE_METRICS.contains(n) && !ALERT_METRICS.contains(n))
    {
        let m = MetricRef {
            name: name.to_string(),
            zone: None,
            window: None,
        };
        if let Ok(x) = metric_value_explained(v, a, &m, cfg) {
            map.insert(name.to_string(), x);
        }
    }
    for zone in series::zone_names(&v.seconds) {
        for name in ZONE_METRICS {
            let m = MetricRef {
                name: name.to_string(),
                zone: Some(zone.clone()),
                window: None,
            };
            if let Ok(x) = metric_value_explained(v, a, &m, cfg) {
                map.insert(m.to_string(), x);
            }
        }
    }
    for alert in &v.alerts {
        for name in ALERT_METRICS {
            let m = MetricRef {
                name: name.to_string(),
                zone: Some(alert.name.clone()),
                window: None,
            };
            if let Ok(x) = metric_value_explained(v, a, &m, cfg) {
                map.insert(m.to_string(), x);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests;
