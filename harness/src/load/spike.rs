//! Load spikes: a trigger that raises the arrival rate for a while.
//!
//! OSDI'22 (Huang et al., "Metastable Failures in the Wild") names two kinds
//! of trigger: capacity drops and load spikes. A `load_spike` timeline entry
//! (or an arrival step marked `trigger: true`, lowered to one when the file
//! is validated) adds a second Poisson stream over `[at, at + duration)` on
//! top of the workload's. Superposed independent Poisson streams are a
//! Poisson stream of the summed rate, so the traffic offered is exactly the
//! base rate plus the spike's extra, and the extra documents are known in
//! advance, like oversized documents: planned from the seed
//! ([`documents`], `runner::plan_documents`) and watched until every one
//! of them has left the system (`residue.rs`). They are drawn like the
//! regular traffic (pages, tenants; with a population, members drawn by the
//! same law); without a population their ids come from a stream of their
//! own, so they never collide with anyone else's.
//!
//! [`Offered`] is the plan's rate, spikes included: what the sampler
//! records as each second's offered load, so the verdict's baseline
//! (measured before the first trigger) leaves the spike out and the load
//! after it is compared with the baseline's.

use crate::experiment::sampling::document_id;
use crate::experiment::{Arrival, Experiment, LoadSpike, TimelineOp, Workload};
use crate::load::workload::{Document, Traffic};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// The first spike id stream: far above the regular traffic's (0), a
/// population's (3) and oversized documents' (1 + entry).
const SPIKE_STREAM: u64 = 1 << 40;

/// The id stream of the spike at timeline entry `entry`.
fn stream(entry: usize) -> u64 {
    SPIKE_STREAM + entry as u64
}

/// The extra documents of the load spike at `exp.timeline[entry]` (none if
/// that entry is not a load spike), in planned order.
pub fn documents(exp: &Experiment, entry: usize, capacity_docs_per_sec: f64) -> Vec<Document> {
    let e = &exp.timeline[entry];
    let spike = match &e.op {
        TimelineOp::LoadSpike(s) => s,
        TimelineOp::Admin(_) | TimelineOp::OversizedDocuments(_) | TimelineOp::Generic(_) => {
            return Vec::new()
        }
    };
    let window = (e.at, e.at + e.duration.unwrap_or_default());
    extra_stream(
        exp.seed,
        entry,
        spike,
        window,
        &exp.workload,
        exp.duration,
        capacity_docs_per_sec,
    )
}

/// The spike's own Poisson stream over `window`, by thinning: candidates at
/// the highest extra rate of the window, each kept with the ratio of the
/// extra rate at its time to that bound (exact for any base profile).
fn extra_stream(
    seed: u64,
    entry: usize,
    spike: &LoadSpike,
    (from, to): (Duration, Duration),
    w: &Workload,
    total: Duration,
    cap: f64,
) -> Vec<Document> {
    let bound = spike.max_extra_rate(&w.arrival, (from, to), total, cap);
    if !(bound > 0.0 && bound.is_finite()) {
        return Vec::new();
    }
    let traffic = Traffic::new(
        seed,
        stream(entry),
        &w.pages,
        w.tenants,
        w.population.as_ref(),
    );
    let mut rng = StdRng::seed_from_u64(document_id(seed, stream(entry), u64::MAX));
    let (mut t, end) = (from.as_secs_f64(), to.as_secs_f64());
    let mut out = Vec::new();
    loop {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        t += -u.ln() / bound;
        if t >= end {
            break;
        }
        let at = Duration::from_secs_f64(t);
        let keep: f64 = rng.random();
        if keep * bound >= spike.extra_rate_at(&w.arrival, at, total, cap) {
            continue;
        }
        out.push(traffic.document(&mut rng, out.len() as u64, at));
    }
    out
}

/// The arrival plan's rate (documents/s) at any time: the workload's, plus
/// the extra of every load spike while it lasts.
#[derive(Debug, Clone)]
pub struct Offered {
    arrival: Arrival,
    /// Each spike's start, end and size.
    spikes: Vec<(Duration, Duration, LoadSpike)>,
    total: Duration,
    capacity: f64,
}

impl Offered {
    pub fn new(exp: &Experiment, capacity_docs_per_sec: f64) -> Self {
        let spikes = exp
            .timeline
            .iter()
            .filter_map(|e| match &e.op {
                TimelineOp::LoadSpike(s) => Some((e.at, e.at + e.duration.unwrap_or_default(), *s)),
                TimelineOp::Admin(_)
                | TimelineOp::OversizedDocuments(_)
                | TimelineOp::Generic(_) => None,
            })
            .collect();
        Offered {
            arrival: exp.workload.arrival.clone(),
            spikes,
            total: exp.duration,
            capacity: capacity_docs_per_sec,
        }
    }

    pub fn rate_at(&self, t: Duration) -> f64 {
        let base = self.arrival.rate_at(t, self.total, self.capacity);
        self.spikes
            .iter()
            .filter(|(from, to, _)| *from <= t && t < *to)
            .map(|(_, _, s)| s.extra_rate_at(&self.arrival, t, self.total, self.capacity))
            .fold(base, |sum, extra| sum + extra)
    }
}

#[cfg(test)]
mod tests;
