//! One second of a variant, as measured: the client side (attempts,
//! outcomes, latency) and what was scraped from the system under test.
//! Every series the analysis reads is a field here.

use crate::latency_counts::LatencyCounts;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything measured in one second (index `t`, seconds since the variant's load started).
/// Client-side counts are of attempts *completed* in that second unless said otherwise.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Second {
    pub t: u32,
    /// New documents submitted (first attempts sent).
    pub arrivals: u64,
    /// Of those, submissions of a document submitted before in this variant
    /// (a population's member drawn again); the rest are first submissions.
    #[serde(default)]
    pub repeat_submissions: u64,
    /// Client attempts sent (first attempts and retries).
    pub attempts: u64,
    /// Distinct documents with at least one attempt sent in this second.
    pub distinct_documents: u64,
    /// Attempt outcomes.
    pub ok: u64,
    pub rejected: u64,
    pub timeouts: u64,
    pub errors: u64,
    /// Latency percentiles of attempts completed in this second (ms); 0 when none.
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The latencies of those attempts, counted on a fixed grid: the
    /// verdict counts those slower than the baseline's limit (empty in runs
    /// recorded before it existed, whose latency is then not judged).
    #[serde(default, skip_serializing_if = "LatencyCounts::is_empty")]
    pub latency: LatencyCounts,
    /// Document journeys in flight at the end of the second.
    pub in_flight: u64,
    /// Documents that completed (200 with a verified result) in this second.
    pub documents_completed: u64,
    /// Documents whose client gave up in this second.
    pub documents_given_up: u64,
    /// New documents per second the arrival plan offered in this second (0: not recorded).
    #[serde(default)]
    pub offered_rate: f64,
    /// Pages of the documents completed in this second (what the GPU's work delivered).
    #[serde(default)]
    pub pages_delivered: u64,
    /// Of the attempt outcomes above, those of documents a trigger injected
    /// (oversized documents): how many ended and how many of them failed.
    /// They are the trigger itself, so detection counts the first failure
    /// customers saw on the other documents.
    #[serde(default)]
    pub injected_attempts_done: u64,
    #[serde(default)]
    pub injected_attempts_failed: u64,
    /// Of `documents_given_up`, documents a trigger injected.
    #[serde(default)]
    pub injected_given_up: u64,

    // --- Scraped from the system under test's /metrics (gauges at the scrape, counters as deltas). ---
    pub slots_total: f64,
    pub slots_busy: f64,
    /// Slots held by requests waiting for a duplicate's result (seed 000 defect).
    pub slots_held_by_waiters: f64,
    pub queue_depth: f64,
    /// Page tasks queued at the GPU.
    pub gpu_queue_pages: f64,
    /// Gateway attempts to pools in this second.
    pub gateway_attempts: u64,
    /// Requests admitted to a worker slot in this second.
    pub admitted: u64,
    pub cache_writes_acked: u64,
    pub cache_writes_lost: u64,
    /// Cache writes that failed loudly (fix).
    pub cache_write_errors: u64,
    /// Result cache reads that hit and that missed.
    #[serde(default)]
    pub cache_hits: u64,
    #[serde(default)]
    pub cache_misses: u64,
    pub pages_computed: u64,
    /// Pages computed that had been computed before (duplicate compute).
    pub pages_recomputed: u64,
    /// Requests rejected early as duplicates (dedup fix / failure cache).
    pub rejected_early: u64,
    /// GPU pages computed for submissions that had already failed (orphans).
    #[serde(default)]
    pub orphan_pages: u64,
    /// GPU pages of documents computed after their caller was answered 504 (zombie work).
    #[serde(default)]
    pub zombie_pages: u64,
    /// The garbage collector's share of the CPU at the scrape, in the pool
    /// where it is highest; absent when the system has no heap (`pool.heap`)
    /// and in runs recorded before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector_share: Option<f64>,
    /// Per zone, when the system has several.
    #[serde(default)]
    pub zones: BTreeMap<String, ZoneSecond>,
}

/// Per zone, one second (from the system's metrics).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ZoneSecond {
    /// Requests the zone answered in this second.
    pub requests: u64,
    /// Of which failed (503, 504, injected failure).
    pub failures: u64,
    pub slots_busy: f64,
    pub queue_depth: f64,
    /// Work the zone computed for callers that had already given up (zombie work).
    pub zombie_work: u64,
}
