//! The recorder's ledger, kept under its one lock: a bucket of counts per
//! second of the run, and the run's totals, histograms and document sets.

use super::ids::{IdMap, IdSet};
use super::JourneyEnd;
use hdrhistogram::Histogram;
use run_report::Integrity;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Default)]
pub(super) struct Bucket {
    pub(super) arrivals: u64,
    pub(super) repeats: u64,
    pub(super) attempts: u64,
    pub(super) distinct: IdSet,
    pub(super) distinct_count: Option<u64>,
    pub(super) ok: u64,
    pub(super) rejected: u64,
    pub(super) timeouts: u64,
    pub(super) errors: u64,
    pub(super) completed: u64,
    pub(super) pages_delivered: u64,
    pub(super) given_up: u64,
    /// Attempt outcomes and give-ups of documents a trigger injected (watched).
    pub(super) injected_done: u64,
    pub(super) injected_failed: u64,
    pub(super) injected_given_up: u64,
    pub(super) latency: Option<Histogram<u64>>,
}

/// A watched journey: its document's planned time, and once it ended, how
/// and when (since the start).
pub(super) type WatchedJourney = (Duration, Option<(JourneyEnd, Duration)>);

pub(super) struct State {
    pub(super) buckets: Vec<Bucket>,
    pub(super) overall: Histogram<u64>,
    pub(super) tenants: BTreeMap<String, Histogram<u64>>,
    pub(super) integrity: Integrity,
    /// Of `integrity.pending`: documents of a lost load agent.
    pub(super) agent_lost: u64,
    pub(super) in_flight: u64,
    pub(super) late: u64,
    pub(super) cut_off: u64,
    /// Actual minus planned first send of every journey (µs), and how many
    /// were later than the report's lag limit.
    pub(super) lag: Histogram<u64>,
    pub(super) behind: u64,
    /// Every document id submitted so far, to tell a repeat from a first submission.
    pub(super) seen: IdSet,
    /// Submissions and attempts per tenant.
    pub(super) traffic: BTreeMap<String, run_report::TenantTraffic>,
    /// Watched documents: per id, each watched journey's planned time and
    /// how and when (since the start) it ended. A population's member may
    /// also be drawn by the regular traffic; the planned time tells the
    /// journeys apart.
    pub(super) watched: IdMap<Vec<WatchedJourney>>,
}

impl State {
    /// The tenant's traffic counters (allocating its name only once).
    pub(super) fn traffic_of(&mut self, tenant: &str) -> &mut run_report::TenantTraffic {
        if !self.traffic.contains_key(tenant) {
            self.traffic.insert(tenant.to_string(), Default::default());
        }
        self.traffic.get_mut(tenant).expect("inserted above")
    }

    pub(super) fn first_sent(&mut self, lag_us: u64) {
        let _ = self.lag.record(lag_us);
        if lag_us as f64 / 1000.0 > run_report::LAG_P99_LIMIT_MS {
            self.behind += 1;
        }
    }

    pub(super) fn attempt_sent(&mut self, b: &mut Bucket, doc: u64, tenant: &str) {
        self.traffic_of(tenant).attempts += 1;
        b.attempts += 1;
        b.distinct.insert(doc);
    }
}
