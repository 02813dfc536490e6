//! The timeline: every fault and action checked (its command's values by
//! the system's own `AdminCommand::validate`, its zone, its duration inside
//! the run), the load spikes the arrival steps imply added, and room for
//! the baseline before the first trigger.

use super::super::raw::*;
use super::super::*;
use super::spike::Implied;
use super::{Ctx, ExperimentError};
use serde_saphyr::{Location, Spanned};

/// Every entry of the form's timeline, in time order.
pub(super) fn timeline(
    cx: &Ctx,
    timeline_raw: &[Spanned<RawTimelineEntry>],
    implied: Vec<Implied>,
    duration: Duration,
    variants: &[Variant],
    environment: &Environment,
    analysis: &AnalysisConfig,
) -> Result<Vec<TimelineEntry>, ExperimentError> {
    let zones: Vec<String> = variants[0].system.zones.clone();
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let mut timeline: Vec<Implied> = Vec::new();
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
        timeline.push((entry, e.referenced, format!("timeline[{i}].at")));
    }
    timeline.extend(implied);
    baseline_room(cx, &timeline, analysis)?;
    let mut timeline: Vec<TimelineEntry> = timeline.into_iter().map(|(e, _, _)| e).collect();
    timeline.sort_by_key(|e| e.at);

    Ok(timeline)
}

/// The first trigger must leave `analysis.min_baseline` seconds after the
/// warm-up: the verdict compares everything with that baseline. Each entry
/// comes with where it was written and the field to name.
fn baseline_room(
    cx: &Ctx,
    timeline: &[Implied],
    analysis: &AnalysisConfig,
) -> Result<(), ExperimentError> {
    let Some((first, loc, field)) = timeline
        .iter()
        .filter(|(e, _, _)| e.trigger)
        .min_by_key(|(e, _, _)| e.at)
    else {
        return Ok(());
    };
    let room = first.at.as_secs_f64() - f64::from(analysis.warmup_s);
    let need = f64::from(analysis.min_baseline_s.max(1));
    if room >= need {
        return Ok(());
    }
    Err(cx.err(
        loc,
        field,
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
        no_admin_api(cx, at_loc, &format!("{field}.oversized_documents"), env)?;
        oversized(cx, at_loc, &field, o, at, duration)?
    } else if let Some(o) = value.get("requests") {
        super::http_workload::requests(cx, at_loc, &format!("{field}.requests"), o, at, duration)?
    } else if let Some(o) = value.get("load_spike") {
        let spike_field = format!("{field}.load_spike");
        TimelineOp::LoadSpike(super::spike::load_spike(
            cx,
            at_loc,
            &spike_field,
            o,
            is_fault,
        )?)
    } else if crate::experiment::faults::GenericFault::kinds()
        .iter()
        .any(|k| value.get(k).is_some())
    {
        TimelineOp::Generic(generic(cx, at_loc, &field, value, zones, env)?)
    } else {
        no_admin_api(cx, at_loc, &field, env)?;
        TimelineOp::Admin(admin(cx, at_loc, &field, value, zones, env)?)
    };
    entry_duration(cx, at_loc, &f, &op, at, dur, duration)?;
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

/// `oversized_documents` (in `field`), checked.
fn oversized(
    cx: &Ctx,
    at_loc: &Location,
    field: &str,
    o: &serde_json::Value,
    at: Duration,
    duration: Duration,
) -> Result<TimelineOp, ExperimentError> {
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
    Ok(TimelineOp::OversizedDocuments(od))
}

/// A generic fault (in `field`): its values possible, its component one
/// the variant runs, an environment that can act on it.
fn generic(
    cx: &Ctx,
    at_loc: &Location,
    field: &str,
    value: &serde_json::Value,
    zones: &[String],
    env: &Environment,
) -> Result<crate::experiment::faults::GenericFault, ExperimentError> {
    let f: crate::experiment::faults::GenericFault = serde_json::from_value(value.clone())
        .map_err(|e| {
            let examples = crate::experiment::faults::GenericFault::EXAMPLES.join("`, `");
            cx.err(at_loc, field, format!("{e}; e.g. `{examples}`"))
        })?;
    let inner = format!("{field}.{}", f.kind());
    f.check()
        .map_err(|(k, why)| cx.err(at_loc, format!("{inner}.{k}"), why))?;
    let names = match env {
        Environment::External { components, .. } => components.keys().cloned().collect(),
        Environment::Processes(p) => p.names(),
        Environment::Embedded | Environment::Containers { .. } => {
            crate::experiment::components::component_names(zones)
        }
    };
    if !names.iter().any(|n| n == f.component()) {
        return Err(cx.err(
            at_loc,
            format!("{inner}.component"),
            format!(
                "unknown component {:?}; components are {names:?}",
                f.component()
            ),
        ));
    }
    match env {
        Environment::Embedded | Environment::Processes(_) => Ok(f),
        Environment::Containers { .. } => match f.in_containers() {
            Ok(()) => Ok(f),
            Err(why) => Err(cx.err(at_loc, field, why)),
        },
        Environment::External { components, .. } => {
            let c = &components[f.component()];
            match c.takes(&f) {
                Ok(()) => Ok(f),
                Err(why) => Err(cx.err(at_loc, field, why)),
            }
        }
    }
}

/// Your own service (`environment: processes`) has no admin API: an entry
/// that needs one (an admin command, oversized documents, whose residue is
/// asked of it) is refused.
fn no_admin_api(
    cx: &Ctx,
    at_loc: &Location,
    field: &str,
    env: &Environment,
) -> Result<(), ExperimentError> {
    match env {
        Environment::Processes(_) => Err(cx.err(at_loc, field, format!("environment processes has no admin API (your own service), so this entry cannot run; use a generic fault ({}) or a load_spike", crate::experiment::faults::GenericFault::kinds().join(", ")))),
        _ => Ok(()),
    }
}

/// An admin command (in `field`), checked by the system's own rules, its
/// zone known, and a target that can take it.
fn admin(
    cx: &Ctx,
    at_loc: &Location,
    field: &str,
    value: &serde_json::Value,
    zones: &[String],
    env: &Environment,
) -> Result<sut::AdminCommand, ExperimentError> {
    let cmd: sut::AdminCommand = serde_json::from_value(value.clone()).map_err(|e| {
        let names: Vec<&str> = sut::AdminCommand::every()
            .iter()
            .map(|c| c.name())
            .collect();
        cx.err(
            at_loc,
            field,
            format!(
                "{e}; expected one of {}, oversized_documents, requests, load_spike",
                names.join(", ")
            ),
        )
    })?;
    cmd.validate().map_err(|e| match e {
        sut::AdminError::Field { field: f, why } => {
            cx.err(at_loc, format!("{field}.{}.{f}", cmd.name()), why)
        }
        other => cx.err(at_loc, field, other.to_string()),
    })?;
    if let Some(z) = cmd.row().zone.named() {
        if !zones.iter().any(|x| x == z) {
            return Err(cx.err(
                at_loc,
                field,
                format!("unknown zone {z:?}; zones are {zones:?}"),
            ));
        }
    }
    if let Environment::External {
        admin_token: None, ..
    } = env
    {
        return Err(cx.err(at_loc, field, "this target has no admin API (`target.admin_token` not set), so this entry cannot run; remove it or give the token"));
    }
    Ok(cmd)
}

/// Whether an entry of this kind takes a `duration`.
#[derive(PartialEq)]
enum Lasting {
    /// A load spike: its extra arrivals last for it.
    Required,
    /// A fault that is undone at its end.
    Allowed,
    Refused,
}

fn lasting(op: &TimelineOp) -> Lasting {
    match op {
        TimelineOp::LoadSpike(_) => Lasting::Required,
        TimelineOp::Generic(_) => Lasting::Allowed,
        TimelineOp::Admin(_) if op.revert().is_some() => Lasting::Allowed,
        TimelineOp::Admin(_) | TimelineOp::OversizedDocuments(_) => Lasting::Refused,
    }
}

/// The entry's `duration` (`dur`, from `at`): given where it must be,
/// absent where nothing could undo it, longer than 0s and inside the run.
fn entry_duration(
    cx: &Ctx,
    at_loc: &Location,
    f: &str,
    op: &TimelineOp,
    at: Duration,
    dur: Option<Duration>,
    duration: Duration,
) -> Result<(), ExperimentError> {
    let field = format!("{f}.duration");
    let Some(d) = dur else {
        if lasting(op) == Lasting::Required {
            return Err(cx.err(at_loc, field, "a load spike needs a duration: how long its extra arrivals last (e.g. `duration: 4s`)"));
        }
        return Ok(());
    };
    if d.is_zero() {
        let why = match lasting(op) {
            Lasting::Required => "must be longer than 0s: how long the extra arrivals last",
            Lasting::Allowed | Lasting::Refused => {
                "must be longer than 0s (leave it out for a fault that lasts)"
            }
        };
        return Err(cx.err(at_loc, field, why));
    }
    if lasting(op) == Lasting::Refused {
        return Err(cx.err(at_loc, field, format!("only {} (undone at its end; a kill by a restart) and load_spike (its extra arrivals last for it) can have a duration", undoable().join(", "))));
    }
    if at + d > duration {
        return Err(cx.err(at_loc, field, "ends after the run"));
    }
    Ok(())
}

/// The faults and actions that can have a `duration` (undone at its end),
/// as their rows say: the commands with an undo, then every generic fault.
fn undoable() -> Vec<&'static str> {
    let commands = sut::AdminCommand::every();
    let commands = commands.iter().filter(|c| c.row().undo.is_some());
    commands
        .map(|c| c.name())
        .chain(crate::experiment::faults::GenericFault::kinds())
        .collect()
}

fn default_label(op: &TimelineOp) -> String {
    match op {
        TimelineOp::OversizedDocuments(o) => match &o.class {
            Some(class) => format!("{} x{} {class} requests", o.tenant, o.count),
            None => format!(
                "{} x{} ({}-{} pages)",
                o.tenant, o.count, o.min_pages, o.max_pages
            ),
        },
        TimelineOp::LoadSpike(s) => super::spike::label(s),
        TimelineOp::Generic(f) => f.label(),
        TimelineOp::Admin(c) => c.row().label,
    }
}
