//! Load spikes as written: `load_spike` timeline entries, and arrival steps
//! marked `trigger: true`.
//!
//! A trigger step is lowered here, before anything runs: the base profile
//! keeps the level it had (the last step not marked) until the next step,
//! and an implied `load_spike` entry carries the rise as an extra stream
//! with a residue, exactly as if the file had written one (`spike.rs`).

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use serde_saphyr::Location;

/// A timeline entry the file implies, with where (and which field) to
/// blame it on.
pub(super) type Implied = (TimelineEntry, Location, String);

/// The arrival steps as the base profile runs them.
type Profile = Vec<(Duration, Rate)>;

/// `timeline[i].fault.load_spike` (in `field`), checked.
pub(super) fn load_spike(
    cx: &Ctx,
    at: &Location,
    field: &str,
    value: &serde_json::Value,
    is_fault: bool,
) -> Result<LoadSpike, ExperimentError> {
    if !is_fault {
        return Err(cx.err(
            at,
            field,
            "a load spike is a fault (traffic no operator sends): write it under `fault:`",
        ));
    }
    let raw: RawLoadSpike =
        serde_json::from_value(value.clone()).map_err(|e| cx.err(at, field, e.to_string()))?;
    match (raw.factor, raw.extra_rate, raw.extra_capacity) {
        (Some(f), None, None) if f > 1.0 && f <= 100.0 => Ok(LoadSpike::Factor(f)),
        (Some(f), None, None) => Err(cx.err(
            at,
            format!("{field}.factor"),
            format!("{f} is not a spike: the arrival rate is multiplied by it, so it must be > 1 (and <= 100)"),
        )),
        (None, Some(r), None) if r > 0.0 && r <= super::MAX_RATE => {
            Ok(LoadSpike::Extra(Rate::PerSec(r)))
        }
        (None, Some(r), None) => Err(cx.err(
            at,
            format!("{field}.extra_rate"),
            format!(
                "{r} is not a usable extra rate: must be > 0 and <= {} documents/s",
                super::MAX_RATE
            ),
        )),
        (None, None, Some(c)) if c > 0.0 && c <= 10.0 => Ok(LoadSpike::Extra(Rate::Capacity(c))),
        (None, None, Some(c)) => Err(cx.err(
            at,
            format!("{field}.extra_capacity"),
            format!("{c} is not a usable extra share of capacity: must be in (0, 10]"),
        )),
        _ => Err(cx.err(
            at,
            field,
            "give exactly one of `factor` (the arrival rate times it, > 1), `extra_rate` \
             (documents/s on top) or `extra_capacity` (a share of the calibrated capacity on top)",
        )),
    }
}

/// One arrival step, its rate checked, with where it was written.
pub(super) struct Step {
    pub at: Duration,
    pub rate: Rate,
    pub trigger: bool,
    pub label: Option<String>,
    pub loc: Location,
    /// Its index in the file, for errors.
    pub index: usize,
}

/// The steps as the base profile runs them, and a `load_spike` entry for
/// each trigger step: its rise above the last step not marked, from its
/// time to the next step's (or the run's end).
pub(super) fn lower_steps(
    cx: &Ctx,
    mut steps: Vec<Step>,
    duration: Duration,
) -> Result<(Profile, Vec<Implied>), ExperimentError> {
    steps.sort_by_key(|s| s.at);
    let mut base: Option<Rate> = None;
    let mut profile = Vec::new();
    let mut implied = Vec::new();
    for (k, s) in steps.iter().enumerate() {
        let level = match (s.trigger, base) {
            (false, _) => {
                base = Some(s.rate);
                profile.push((s.at, s.rate));
                continue;
            }
            (true, None) => {
                return Err(cx.err(
                    &s.loc,
                    format!("workload.arrival.steps[{}].trigger", s.index),
                    "the first step cannot be a trigger: a load spike rises above a level the \
                     run carried before it (start with the base rate, then the trigger step)",
                ))
            }
            (true, Some(level)) => level,
        };
        let extra = rise(cx, s, steps[k - 1].rate, level)?;
        let until = steps.get(k + 1).map_or(duration, |n| n.at);
        if until <= s.at {
            return Err(cx.err(
                &s.loc,
                format!("workload.arrival.steps[{}].at", s.index),
                "the next step starts at the same time, so the spike would last 0s",
            ));
        }
        profile.push((s.at, level));
        let entry = TimelineEntry {
            at: s.at,
            duration: Some(until - s.at),
            op: TimelineOp::LoadSpike(LoadSpike::Extra(extra)),
            is_fault: true,
            trigger: true,
            label: s.label.clone().unwrap_or_else(|| step_label(s.rate)),
            variants: None,
        };
        let field = format!("workload.arrival.steps[{}]", s.index);
        implied.push((entry, s.loc, field));
    }
    Ok((profile, implied))
}

/// How much trigger step `s` adds to the base `level`; it must rise above
/// the step before it (`previous`), in the same unit.
fn rise(cx: &Ctx, s: &Step, previous: Rate, level: Rate) -> Result<Rate, ExperimentError> {
    let f = format!("workload.arrival.steps[{}]", s.index);
    let (to, prev, base, unit) =
        match (s.rate, previous, level) {
            (Rate::PerSec(t), Rate::PerSec(p), Rate::PerSec(b)) => (t, p, b, "rate"),
            (Rate::Capacity(t), Rate::Capacity(p), Rate::Capacity(b)) => (t, p, b, "capacity"),
            _ => return Err(cx.err(
                &s.loc,
                f,
                "a trigger step must give its level in the same unit (`rate` or `capacity`) as \
                 the steps before it, so that its rise is known before calibration",
            )),
        };
    if to <= prev {
        return Err(cx.err(
            &s.loc,
            format!("{f}.{unit}"),
            format!(
                "{to} does not raise the {unit} above the step before it ({prev}); a trigger \
                 step is a load spike"
            ),
        ));
    }
    Ok(match s.rate {
        Rate::PerSec(_) => Rate::PerSec(to - base),
        Rate::Capacity(_) => Rate::Capacity(to - base),
    })
}

fn step_label(level: Rate) -> String {
    match level {
        Rate::PerSec(r) => format!("arrivals step to {r}/s"),
        Rate::Capacity(c) => format!("arrivals step to {c} x capacity"),
    }
}

/// The default label of a `load_spike` entry.
pub(super) fn label(s: &LoadSpike) -> String {
    match s {
        LoadSpike::Factor(f) => format!("load spike x{f}"),
        LoadSpike::Extra(Rate::PerSec(r)) => format!("load spike +{r}/s"),
        LoadSpike::Extra(Rate::Capacity(c)) => format!("load spike +{c} x capacity"),
    }
}

#[cfg(test)]
mod tests;
