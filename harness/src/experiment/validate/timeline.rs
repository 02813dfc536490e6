//! The timeline: every fault and action checked (its command's values by
//! the system's own `AdminCommand::validate`, its zone, its duration inside
//! the run), and room for the baseline before the first trigger.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use serde_saphyr::Spanned;

/// Every entry of the form's timeline, in time order.
pub(super) fn timeline(
    cx: &Ctx,
    timeline_raw: &[Spanned<RawTimelineEntry>],
    duration: Duration,
    variants: &[Variant],
    environment: &Environment,
    analysis: &AnalysisConfig,
) -> Result<Vec<TimelineEntry>, ExperimentError> {
    let zones: Vec<String> = variants[0].system.zones.clone();
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let mut timeline = Vec::new();
    for (i, e) in timeline_raw.iter().enumerate() {
        let entry = timeline_entry(cx, i, e, duration, &zones, environment)?;
        if let Some(only) = &entry.variants {
            if entry.is_fault {
                return Err(cx.err(&e.referenced, format!("timeline[{i}].variants"), "a fault applies to every variant (same trigger for before and after); only actions can be limited to variants"));
            }
            if let Some(bad) = only.iter().find(|n| !names.contains(n)) {
                return Err(cx.err(
                    &e.referenced,
                    format!("timeline[{i}].variants"),
                    format!("no such variant {bad:?}"),
                ));
            }
        }
        timeline.push(entry);
    }
    baseline_room(cx, &timeline, timeline_raw, analysis)?;
    timeline.sort_by_key(|e| e.at);

    Ok(timeline)
}

/// The first trigger must leave `analysis.min_baseline` seconds after the
/// warm-up: the verdict compares everything with that baseline. `timeline`
/// is still in file order, so its indexes are those of `raw_timeline`.
fn baseline_room(
    cx: &Ctx,
    timeline: &[TimelineEntry],
    raw_timeline: &[Spanned<RawTimelineEntry>],
    analysis: &AnalysisConfig,
) -> Result<(), ExperimentError> {
    let Some((i, first)) = timeline
        .iter()
        .enumerate()
        .filter(|(_, e)| e.trigger)
        .min_by_key(|(_, e)| e.at)
    else {
        return Ok(());
    };
    let room = first.at.as_secs_f64() - f64::from(analysis.warmup_s);
    let need = f64::from(analysis.min_baseline_s.max(1));
    if room >= need {
        return Ok(());
    }
    Err(cx.err(
        &raw_timeline[i].referenced,
        format!("timeline[{i}].at"),
        format!(
            "the first trigger at {}s leaves {:.0}s of baseline after the {}s warm-up; the \
             verdict needs at least analysis.min_baseline = {need:.0}s (move the trigger to {}s or \
             later, or shorten the warm-up)",
            first.at.as_secs_f64(),
            room.max(0.0),
            analysis.warmup_s,
            f64::from(analysis.warmup_s) + need
        ),
    ))
}

fn timeline_entry(
    cx: &Ctx,
    i: usize,
    e: &Spanned<RawTimelineEntry>,
    duration: Duration,
    zones: &[String],
    env: &Environment,
) -> Result<TimelineEntry, ExperimentError> {
    let at_loc = &e.referenced;
    let f = format!("timeline[{i}]");
    let v = &e.value;
    let at = cx.duration(at_loc, &format!("{f}.at"), &v.at)?;
    if at >= duration {
        return Err(cx.err(
            at_loc,
            format!("{f}.at"),
            format!(
                "{} is not inside the run ({})",
                v.at,
                humantime::format_duration(duration)
            ),
        ));
    }
    let dur = match &v.duration {
        Some(d) => Some(cx.duration(at_loc, &format!("{f}.duration"), d)?),
        None => None,
    };
    let (value, is_fault, kind) = match (&v.fault, &v.action) {
        (Some(x), None) => (x, true, "fault"),
        (None, Some(x)) => (x, false, "action"),
        _ => return Err(cx.err(at_loc, &f, "give exactly one of `fault` or `action`")),
    };
    let field = format!("{f}.{kind}");
    let op = if let Some(o) = value.get("oversized_documents") {
        let od: OversizedDocuments = serde_json::from_value(o.clone()).map_err(|e| {
            cx.err(
                at_loc,
                format!("{field}.oversized_documents"),
                e.to_string(),
            )
        })?;
        if od.count == 0
            || od.count > 10_000
            || od.min_pages == 0
            || od.min_pages > od.max_pages
            || od.max_pages > 100_000
        {
            return Err(cx.err(
                at_loc,
                format!("{field}.oversized_documents"),
                "needs 1 <= count <= 10000 and 1 <= min_pages <= max_pages <= 100000",
            ));
        }
        if od.tenant.trim().is_empty() {
            return Err(cx.err(
                at_loc,
                format!("{field}.oversized_documents.tenant"),
                "must name the tenant that submits them",
            ));
        }
        if od.spread.is_some_and(|s| at + s >= duration) {
            return Err(cx.err(
                at_loc,
                format!("{field}.oversized_documents.spread"),
                "the last document would arrive after the run; the spread must end inside it",
            ));
        }
        TimelineOp::OversizedDocuments(od)
    } else {
        let cmd: sut::AdminCommand = serde_json::from_value(value.clone()).map_err(|e| {
            cx.err(at_loc, &field, format!("{e}; expected one of cache_fill, cache_fill_to_limit, cache_on_full, cache_flush, cache_restart, set_slots, set_gpu_lanes, set_gpu_speed, set_gateway_attempts, zone_fail, zone_recover, zone_outage, zone_restore, stop_allocations, resume_allocations, throttle, oversized_documents"))
        })?;
        cmd.validate().map_err(|e| match e {
            sut::AdminError::Field { field: f, why } => {
                cx.err(at_loc, format!("{field}.{}.{f}", cmd.name()), why)
            }
            other => cx.err(at_loc, &field, other.to_string()),
        })?;
        if let Some(z) = command_zone(&cmd) {
            if !zones.iter().any(|x| x == z) {
                return Err(cx.err(
                    at_loc,
                    &field,
                    format!("unknown zone {z:?}; zones are {zones:?}"),
                ));
            }
        }
        if let Environment::External {
            admin_token: None, ..
        } = env
        {
            return Err(cx.err(at_loc, &field, "this target has no admin API (`target.admin_token` not set), so this entry cannot run; remove it or give the token"));
        }
        TimelineOp::Admin(cmd)
    };
    if let Some(d) = dur {
        if d.is_zero() {
            return Err(cx.err(
                at_loc,
                format!("{f}.duration"),
                "must be longer than 0s (leave it out for a fault that lasts)",
            ));
        }
        if op.revert().is_none() {
            return Err(cx.err(at_loc, format!("{f}.duration"), "only zone_fail, zone_outage, set_gpu_speed, stop_allocations and throttle can have a duration (they are undone at its end)"));
        }
        if at + d > duration {
            return Err(cx.err(at_loc, format!("{f}.duration"), "ends after the run"));
        }
    }
    let label = v.label.clone().unwrap_or_else(|| default_label(&op));
    Ok(TimelineEntry {
        at,
        duration: dur,
        variants: v.variants.clone(),
        trigger: v.trigger.unwrap_or(is_fault),
        op,
        is_fault,
        label,
    })
}

fn command_zone(cmd: &sut::AdminCommand) -> Option<&str> {
    use sut::AdminCommand::*;
    match cmd {
        SetSlots { zone, .. } | SetGpuLanes { zone, .. } | SetGpuSpeed { zone, .. } => {
            zone.as_deref()
        }
        ZoneFail { zone, .. }
        | ZoneRecover { zone }
        | ZoneOutage { zone }
        | ZoneRestore { zone }
        | StopAllocations { zone }
        | ResumeAllocations { zone }
        | Throttle { zone, .. } => Some(zone),
        _ => None,
    }
}

fn default_label(op: &TimelineOp) -> String {
    use sut::AdminCommand::*;
    match op {
        TimelineOp::OversizedDocuments(o) => format!(
            "{} x{} ({}-{} pages)",
            o.tenant, o.count, o.min_pages, o.max_pages
        ),
        TimelineOp::Admin(c) => match c {
            CacheFill { entries } => format!("cache fill {entries}"),
            CacheFillToLimit => "cache at limit".into(),
            CacheOnFull { on_full } => format!("cache on_full {on_full:?}"),
            CacheFlush { share } => format!("cache flush {:.0}%", share * 100.0),
            CacheRestart => "cache restart".into(),
            SetSlots { slots, .. } => format!("slots {slots}"),
            SetGpuLanes { lanes, .. } => format!("GPU lanes {lanes}"),
            SetGpuSpeed { factor, .. } => format!("GPU speed x{factor}"),
            SetGatewayAttempts { attempts } => format!("gateway attempts {attempts}"),
            ZoneFail { zone, ratio } => format!("{zone} failing {:.0}%", ratio * 100.0),
            ZoneRecover { zone } => format!("{zone} recovers"),
            ZoneOutage { zone } => format!("{zone} out"),
            ZoneRestore { zone } => format!("{zone} back"),
            StopAllocations { zone } => format!("stop {zone}"),
            ResumeAllocations { zone } => format!("resume {zone}"),
            Throttle { zone, per_sec } => match per_sec {
                Some(r) => format!("throttle {zone} {r}/s"),
                None => format!("unthrottle {zone}"),
            },
        },
    }
}
