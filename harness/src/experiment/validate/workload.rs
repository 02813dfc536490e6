//! `workload:` checked and located: the open-loop arrivals (rates,
//! steps, ramps), and what arrives: this project's documents (pages,
//! tenants, a population) or a generic HTTP workload's requests
//! (`http_workload.rs`).

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use serde_saphyr::Location;

fn rate(
    cx: &Ctx,
    at: &Location,
    field: &str,
    r: Option<f64>,
    c: Option<f64>,
) -> Result<Rate, ExperimentError> {
    match (r, c) {
        (Some(r), None) if r > 0.0 && r.is_finite() && r <= super::MAX_RATE => Ok(Rate::PerSec(r)),
        (Some(r), None) => Err(cx.err(
            at,
            format!("{field}.rate"),
            format!(
                "{r} is not a usable rate: must be > 0 and <= {} documents/s",
                super::MAX_RATE
            ),
        )),
        (None, Some(c)) if c > 0.0 && c.is_finite() && c <= 10.0 => Ok(Rate::Capacity(c)),
        (None, Some(c)) => Err(cx.err(
            at,
            format!("{field}.capacity"),
            format!("{c} is not a usable share of capacity: must be in (0, 10]"),
        )),
        _ => Err(cx.err(
            at,
            field,
            "give exactly one of `rate` (documents/s) or `capacity` (share of calibrated capacity)",
        )),
    }
}

/// The arrival profile, and the load spikes its trigger steps imply (see `spike.rs`).
fn arrival(
    cx: &Ctx,
    w: &RawWorkload,
    duration: Duration,
) -> Result<(Arrival, Vec<super::spike::Implied>), ExperimentError> {
    let at = &w.arrival.referenced;
    let mut implied = Vec::new();
    let arrival = match &w.arrival.value {
        RawArrival::Constant(r) => Arrival::Constant(rate(
            cx,
            at,
            "workload.arrival.constant",
            r.rate,
            r.capacity,
        )?),
        RawArrival::Ramp { from, to } => Arrival::Ramp {
            from: rate(
                cx,
                at,
                "workload.arrival.ramp.from",
                from.rate,
                from.capacity,
            )?,
            to: rate(cx, at, "workload.arrival.ramp.to", to.rate, to.capacity)?,
        },
        RawArrival::Steps(steps) => {
            if steps.is_empty() {
                return Err(cx.err(at, "workload.arrival.steps", "needs at least one step"));
            }
            let mut checked = Vec::new();
            for (i, s) in steps.iter().enumerate() {
                let (loc, s) = (&s.referenced, &s.value);
                let f = format!("workload.arrival.steps[{i}]");
                let t = cx.duration(loc, &format!("{f}.at"), &s.at)?;
                if t >= duration {
                    return Err(cx.err(loc, format!("{f}.at"), "is after the end of the run"));
                }
                checked.push(super::spike::Step {
                    at: t,
                    rate: rate(cx, loc, &f, s.rate, s.capacity)?,
                    trigger: s.trigger.unwrap_or(false),
                    label: s.label.clone(),
                    loc: *loc,
                    index: i,
                });
            }
            let (profile, spikes) = super::spike::lower_steps(cx, checked, duration)?;
            implied = spikes;
            Arrival::Steps(profile)
        }
    };
    Ok((arrival, implied))
}

/// The workload, and the load spikes its trigger steps imply (see `spike.rs`).
pub(super) fn workload(
    cx: &Ctx,
    w: &RawWorkload,
    duration: Duration,
) -> Result<(Workload, Vec<super::spike::Implied>), ExperimentError> {
    let (arrival, implied) = arrival(cx, w, duration)?;
    let (pages, tenants, population, http) = match (&w.documents, &w.http) {
        (Some(d), None) => {
            let (pages, tenants, population) = documents(cx, d)?;
            (pages, tenants, population, None)
        }
        // A request is one page to the load path: its class, key and body
        // are drawn when it is sent (`load/journey/http.rs`).
        (None, Some(h)) => {
            let (http, tenants) = super::http_workload::http_workload(cx, h)?;
            let one = PageDistribution::Fixed(1);
            (one, tenants, None, Some(std::sync::Arc::new(http)))
        }
        (Some(_), Some(h)) => {
            return Err(cx.err(
                &h.classes.referenced,
                "workload.http",
                "give `documents` (this project's system under test) or `http` (any HTTP service), not both",
            ))
        }
        (None, None) => {
            return Err(cx.err(
                &w.arrival.referenced,
                "workload",
                "needs `documents` (this project's system under test) or `http` (requests to any HTTP service)",
            ))
        }
    };
    let max_in_flight = match &w.max_in_flight {
        Some(m) if m.value == 0 || m.value > 15_000 => {
            return Err(cx.err(
                &m.referenced,
                "workload.max_in_flight",
                "must be in 1..=15000 (each in-flight journey may hold a socket)",
            ))
        }
        Some(m) => m.value,
        None => 5_000,
    };
    let workload = Workload {
        arrival,
        pages,
        tenants,
        population,
        max_in_flight,
        http,
    };
    Ok((workload, implied))
}

/// `workload.documents`: pages, tenants and the population.
fn documents(
    cx: &Ctx,
    d: &RawDocuments,
) -> Result<(PageDistribution, u32, Option<Population>), ExperimentError> {
    let pages = d.pages.value;
    let pat = &d.pages.referenced;
    match pages {
        PageDistribution::Fixed(0) => {
            return Err(cx.err(pat, "workload.documents.pages.fixed", "must be >= 1"))
        }
        PageDistribution::Uniform { min, max } if min == 0 || min > max => {
            return Err(cx.err(
                pat,
                "workload.documents.pages.uniform",
                "needs 1 <= min <= max",
            ))
        }
        PageDistribution::Lognormal { median, sigma, max }
            if !(median >= 1.0 && (0.0..5.0).contains(&sigma) && max >= 1) =>
        {
            return Err(cx.err(
                pat,
                "workload.documents.pages.lognormal",
                "needs median >= 1, 0 <= sigma < 5, max >= 1",
            ))
        }
        _ => {}
    }
    if d.tenants.value == 0 || d.tenants.value > 1000 {
        return Err(cx.err(
            &d.tenants.referenced,
            "workload.documents.tenants",
            "must be in 1..=1000",
        ));
    }
    let population = match &d.population {
        None => None,
        Some(p) => Some(super::population(
            cx,
            &p.referenced,
            "workload.documents.population",
            &p.value,
        )?),
    };
    Ok((pages, d.tenants.value, population))
}

/// The tenants as written: the documents' or the requests' (default 1).
pub(super) fn raw_tenants(w: &RawWorkload) -> u32 {
    match (&w.documents, &w.http) {
        (Some(d), _) => d.tenants.value.max(1),
        (None, Some(h)) => h.tenants.as_ref().map_or(1, |t| t.value.max(1)),
        (None, None) => 1,
    }
}
