//! How each metric of the catalogue is computed for one variant.
//!
//! [`value`] matches every [`Metric`] without a wildcard arm, so a metric
//! added to the catalogue does not compile until it is computed here.

use super::zone_times;
use crate::analysis::amplification as amp;
use crate::analysis::verdict::Verdict;
use crate::analysis::VariantAnalysis;
use crate::metrics::{Metric, MetricRef, Undefined};
use crate::model::{AnalysisConfig, Second, VariantRun, ZoneSecond};
use crate::series::{self, sum};

/// What a metric is computed from: the variant, its analysis, and the
/// seconds of the metric's window (all of them without one).
pub(super) struct Inputs<'a> {
    pub v: &'a VariantRun,
    pub a: &'a VariantAnalysis,
    pub cfg: &'a AnalysisConfig,
    pub seconds: &'a [&'a Second],
}

const FEW: &str = "no second with at least 5 completed attempts";

fn need(x: Option<f64>, why: &str) -> Result<f64, Undefined> {
    x.ok_or_else(|| why.into())
}

/// The metric's value; its label and window are already checked.
pub(super) fn value(i: &Inputs, m: &MetricRef) -> Result<f64, Undefined> {
    use Metric::*;
    let (s, v, a) = (i.seconds, i.v, i.a);
    let windowed = m.window.is_some();
    let label = m.label.as_deref().unwrap_or_default();
    match m.metric {
        Waves => Ok(a.waves.len() as f64),
        PeakFailureRatio | FailureRatioPeak => need(
            series::max_finite(s.iter().filter_map(|x| series::trusted_failure_ratio(x))),
            FEW,
        ),
        FailureRatioMean => need(
            series::mean_finite(s.iter().filter_map(|x| series::trusted_failure_ratio(x))),
            FEW,
        ),
        FailureRatioBetweenWaves => between_waves(i, windowed),
        AmplificationPeak => need(
            amp::amplification_peak(s),
            "no second with at least 5 attempts sent",
        ),
        AmplificationMean if windowed => {
            need(amp::amplification_mean_window(s), "no distinct documents")
        }
        AmplificationMean => Err(
            "amplification_mean needs a window; the whole run's figure is attempts_per_document"
                .into(),
        ),
        AttemptsPerDocument => need(amp::attempts_per_document(s), "no arrivals"),
        GatewayAmplification => need(amp::gateway_amplification(s), "no client attempts"),
        DuplicateComputeShare => need(amp::duplicate_compute_share(s), "no pages computed"),
        CacheHitRatio => need(
            series::ratio(
                sum(s, |x| x.cache_hits),
                sum(s, |x| x.cache_hits + x.cache_misses),
            ),
            "no cache read",
        ),
        GpuPagesPerS => need(
            series::mean_finite(s.iter().map(|x| x.pages_computed as f64)),
            "no second",
        ),
        GpuQueuePagesMean => need(
            series::mean_finite(s.iter().map(|x| x.gpu_queue_pages)),
            "no second with the queue sampled",
        ),
        CollectorShareMean => need(
            series::mean_finite(s.iter().filter_map(|x| x.collector_share)),
            "no heap in the system under test",
        ),
        RepeatSubmissions => Ok(sum(s, |x| x.repeat_submissions) as f64),
        CacheWritesLost => Ok(sum(s, |x| x.cache_writes_lost) as f64),
        CacheWriteErrors => Ok(sum(s, |x| x.cache_write_errors) as f64),
        RejectedEarly => Ok(sum(s, |x| x.rejected_early) as f64),
        SlotsHeldByWaitersPeak => need(
            series::max_finite(s.iter().map(|x| x.slots_held_by_waiters)),
            "no slot measurement",
        ),
        LostDocuments => Ok(v.integrity.given_up.saturating_add(v.integrity.pending) as f64),
        DocumentsGivenUp => Ok(v.integrity.given_up as f64),
        DocumentsPending => Ok(v.integrity.pending as f64),
        DocumentsSubmitted => Ok(v.integrity.submitted as f64),
        DocumentsCompleted => Ok(v.integrity.completed as f64),
        IncorrectResults => Ok(v.integrity.incorrect_results as f64),
        UnaccountedDocuments => Ok(unaccounted(v)),
        P50Ms => Ok(v.latency.p50_ms),
        P99Ms => Ok(v.latency.p99_ms),
        P99MsPeak => need(
            series::max_finite(
                s.iter()
                    .filter(|x| series::completed(x) >= series::MIN_ATTEMPTS)
                    .map(|x| x.p99_ms),
            ),
            FEW,
        ),
        OtherTenantsP99Ms => Ok(other_tenants_p99(v)),
        OversizedTenantP99Ms => need(
            series::max_finite(
                v.oversized_tenants
                    .iter()
                    .filter_map(|t| v.tenant_latency.get(t))
                    .map(|l| l.p99_ms),
            ),
            "no latency recorded for an oversized tenant",
        ),
        Verdict => Err(format!(
            "the verdict is a class ({}), not a number",
            a.verdict.class()
        )
        .into()),
        Metastable => metastable(&a.verdict),
        TimeToRecoverS => time_to_recover(&a.verdict),
        DegradedS => a
            .degraded_s
            .map(f64::from)
            .ok_or_else(|| format!("not judged: {}", a.verdict.explanation()).into()),
        LateArrivals => Ok(v.late_arrivals as f64),
        ZoneFailureRatioPeak => need(
            series::max_finite(zone_ratios(&zone(v, s, label)?)),
            FEW_IN_ZONE,
        ),
        ZoneFailureRatioMean => need(
            series::mean_finite(zone_ratios(&zone(v, s, label)?)),
            FEW_IN_ZONE,
        ),
        ZoneFailedFromS => need(
            zone_times::failed_from(
                &zone_series(v, s, label)?,
                i.cfg.wave_threshold,
                i.cfg.wave_min_duration_s,
            )
            .map(f64::from),
            "the zone did not fail (no run of failed seconds as long as a wave)",
        ),
        ZoneRecoveredFromS => need(
            zone_times::recovered_from(
                &zone_series(v, s, label)?,
                i.cfg.wave_threshold,
                i.cfg.wave_min_duration_s,
            )
            .map(f64::from),
            "the zone never failed, or had not come back",
        ),
        ZoneZombieWork => Ok(zone(v, s, label)?
            .iter()
            .fold(0u64, |acc, z| acc.saturating_add(z.zombie_work))
            as f64),
        AlertsFired | AlertFired | AlertLeadS | AlertWaveLeadS => {
            crate::analysis::detection::alert_metric(v, i.cfg, m.metric, m.label.as_deref())
        }
    }
}

/// Mean failure ratio outside every wave, from the first trigger to the end
/// of the load (or in the window).
fn between_waves(i: &Inputs, windowed: bool) -> Result<f64, Undefined> {
    let (v, a) = (i.v, i.a);
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
            i.seconds
                .iter()
                .filter(|x| f64::from(x.t) >= from && f64::from(x.t) < to)
                .filter(|x| !a.waves.iter().any(|w| x.t >= w.start_s && x.t < w.end_s()))
                .filter_map(|x| series::trusted_failure_ratio(x)),
        ),
        FEW,
    )
}

/// Submitted - completed - given up - pending (negative when more ended than began).
fn unaccounted(v: &VariantRun) -> f64 {
    let i = &v.integrity;
    (i128::from(i.submitted)
        - i128::from(i.completed)
        - i128::from(i.given_up)
        - i128::from(i.pending)) as f64
}

fn other_tenants_p99(v: &VariantRun) -> f64 {
    series::max_finite(
        v.tenant_latency
            .iter()
            .filter(|(t, _)| !v.oversized_tenants.contains(t))
            .map(|(_, l)| l.p99_ms),
    )
    .unwrap_or(0.0)
}

fn metastable(verdict: &Verdict) -> Result<f64, Undefined> {
    match verdict {
        Verdict::Metastable { .. } => Ok(1.0),
        Verdict::Stable | Verdict::Recovered { .. } | Verdict::Overloaded { .. } => Ok(0.0),
        other => Err(format!("not judged: {}", other.explanation()).into()),
    }
}

fn time_to_recover(verdict: &Verdict) -> Result<f64, Undefined> {
    match verdict {
        Verdict::Stable => Ok(0.0),
        Verdict::Recovered { after_s, .. } => Ok(*after_s),
        Verdict::Metastable {
            residue_end_s,
            recovered_at_s: Some(t),
            ..
        } => Ok((t - residue_end_s).max(0.0)),
        other => Err(format!("not recovered: {}", other.explanation()).into()),
    }
}

const FEW_IN_ZONE: &str = "no second with at least 5 requests in the zone";

/// The zone's seconds in the window; an error names the zones seen.
fn zone<'a>(
    v: &VariantRun,
    s: &[&'a Second],
    zone: &str,
) -> Result<Vec<&'a ZoneSecond>, Undefined> {
    let known = series::zone_names(&v.seconds);
    if !known.iter().any(|z| z == zone) {
        let list = if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        };
        return Err(format!("zone `{zone}` not seen in this variant (zones: {list})").into());
    }
    Ok(s.iter().filter_map(|x| x.zones.get(zone)).collect())
}

/// The zone's `(t, failure ratio)` over the window.
fn zone_series(
    v: &VariantRun,
    s: &[&Second],
    label: &str,
) -> Result<Vec<(u32, Option<f64>)>, Undefined> {
    zone(v, s, label)?;
    Ok(s.iter()
        .map(|x| {
            let r = x
                .zones
                .get(label)
                .and_then(series::zone_trusted_failure_ratio);
            (x.t, r)
        })
        .collect())
}

fn zone_ratios<'a>(zs: &'a [&'a ZoneSecond]) -> impl Iterator<Item = f64> + 'a {
    zs.iter()
        .filter_map(|z| series::zone_trusted_failure_ratio(z))
}
