//! The metric contract: every series the system under test exports, defined
//! once, with its type and help text. The exporter (`exposition.rs`) and
//! the harness's scraper both use these constants, so a renamed series is a
//! compile error on both sides, never a figure that silently reads 0.

/// A Prometheus series the system exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

/// Counter (monotonic; read as deltas between scrapes) or gauge (read as is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

const fn counter(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Counter,
        help,
    }
}

const fn gauge(name: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Gauge,
        help,
    }
}

/// The gateway's own series share this prefix: a pool process's are idle
/// (its gateway serves nobody) and are left out when a gateway merges them.
pub const GATEWAY_PREFIX: &str = "sut_gateway_";

// Gateway (client requests, internal retries).
pub const GATEWAY_REQUESTS_TOTAL: Metric = counter(
    "sut_gateway_requests_total",
    "Client requests received by the gateway.",
);
pub const GATEWAY_OK_TOTAL: Metric =
    counter("sut_gateway_ok_total", "Client requests answered 200.");
pub const GATEWAY_REJECTED_TOTAL: Metric = counter(
    "sut_gateway_rejected_total",
    "Client requests answered 503.",
);
pub const GATEWAY_DEADLINE_TOTAL: Metric = counter(
    "sut_gateway_deadline_total",
    "Client requests answered 504.",
);
pub const GATEWAY_ATTEMPTS_TOTAL: Metric = counter(
    "sut_gateway_attempts_total",
    "Attempts the gateway sent to pools (internal retries included).",
);
pub const GATEWAY_REDIRECTED_TOTAL: Metric = counter(
    "sut_gateway_redirected_total",
    "Attempts redirected to another zone.",
);
pub const GATEWAY_ATTEMPTS_CONFIGURED: Metric = gauge(
    "sut_gateway_attempts_configured",
    "Internal attempts currently configured.",
);
pub const GATEWAY_REMOTE_POOL_TIMEOUTS_TOTAL: Metric = counter(
    "sut_gateway_remote_pool_timeouts_total",
    "Attempts to a remote pool that got no answer in time.",
);
pub const GATEWAY_REMOTE_POOL_UNREACHABLE_TOTAL: Metric = counter(
    "sut_gateway_remote_pool_unreachable_total",
    "Attempts to a remote pool that could not be delivered.",
);

// Result cache.
pub const CACHE_HITS_TOTAL: Metric = counter("sut_cache_hits_total", "Result cache hits.");
pub const CACHE_MISSES_TOTAL: Metric = counter("sut_cache_misses_total", "Result cache misses.");
pub const CACHE_WRITES_ACKED_TOTAL: Metric =
    counter("sut_cache_writes_acked_total", "Cache writes acknowledged.");
pub const CACHE_WRITES_STORED_TOTAL: Metric = counter(
    "sut_cache_writes_stored_total",
    "Acknowledged cache writes really stored.",
);
pub const CACHE_WRITES_LOST_TOTAL: Metric = counter(
    "sut_cache_writes_lost_total",
    "Cache writes acknowledged and then discarded.",
);
pub const CACHE_WRITE_ERRORS_TOTAL: Metric = counter(
    "sut_cache_write_errors_total",
    "Cache writes refused with an explicit error.",
);
pub const CACHE_ENTRIES: Metric = gauge("sut_cache_entries", "Entries in the result cache.");
pub const CACHE_CAPACITY: Metric = gauge(
    "sut_cache_capacity",
    "Storage limit of the result cache, in entries.",
);

// Pools, per zone.
pub const POOL_REQUESTS_TOTAL: Metric =
    counter("sut_pool_requests_total", "Requests that reached the pool.");
pub const POOL_ADMITTED_TOTAL: Metric = counter(
    "sut_pool_admitted_total",
    "Requests admitted to a worker slot.",
);
pub const POOL_ZOMBIE_WORK_TOTAL: Metric = counter(
    "sut_pool_zombie_work_total",
    "Documents computed after their request was answered 504.",
);
pub const POOL_ZOMBIE_PAGES_TOTAL: Metric = counter(
    "sut_pool_zombie_pages_total",
    "Pages of the documents computed after their request was answered 504.",
);
pub const POOL_PAGES_CANCELLED_TOTAL: Metric = counter(
    "sut_pool_pages_cancelled_total",
    "Queued pages dropped because their caller had gone (cancel_queued_on_deadline).",
);
pub const POOL_UNANSWERED_TOTAL: Metric = counter(
    "sut_pool_unanswered_total",
    "Requests left unanswered during a zone outage.",
);
pub const POOL_DOCUMENTS_COMPUTED_TOTAL: Metric =
    counter("sut_pool_documents_computed_total", "Documents computed.");
pub const POOL_COMPUTE_FAILURES_TOTAL: Metric = counter(
    "sut_pool_compute_failures_total",
    "Compute tasks that failed.",
);
pub const POOL_SLOTS: Metric = gauge("sut_pool_slots", "Worker slots configured.");
pub const POOL_SLOTS_BUSY: Metric = gauge("sut_pool_slots_busy", "Worker slots held.");
pub const POOL_WAITERS_HOLDING_SLOT: Metric = gauge(
    "sut_pool_waiters_holding_slot",
    "Requests waiting for a duplicate's result while holding a slot.",
);
pub const POOL_WAITERS_WITHOUT_SLOT: Metric = gauge(
    "sut_pool_waiters_without_slot",
    "Duplicates waiting without a slot.",
);
pub const POOL_QUEUE_DEPTH: Metric = gauge("sut_pool_queue_depth", "Requests waiting for a slot.");
pub const POOL_INFLIGHT_DOCUMENTS: Metric =
    gauge("sut_pool_inflight_documents", "Documents being computed.");
pub const POOL_HEAP_CAPACITY_MB: Metric = gauge(
    "sut_pool_heap_capacity_mb",
    "Size of the pool's heap, in MB (0: the pool has no heap).",
);
pub const POOL_HEAP_LIVE_MB: Metric = gauge(
    "sut_pool_heap_live_mb",
    "Memory held by requests in flight, in MB.",
);
pub const POOL_HEAP_COLLECTOR_SHARE: Metric = gauge(
    "sut_pool_heap_collector_share",
    "The garbage collector's share of the pool's CPU at the live memory now.",
);
pub const POOL_OK_TOTAL: Metric = counter("sut_pool_ok_total", "Requests answered 200, by source.");
pub const POOL_REJECTED_TOTAL: Metric =
    counter("sut_pool_rejected_total", "Requests not served, by reason.");

// Zones.
pub const ZONE_FAIL_RATIO: Metric =
    gauge("sut_zone_fail_ratio", "Injected failure ratio of the zone.");

// The shared GPU, per zone.
pub const GPU_PAGES_COMPUTED_TOTAL: Metric =
    counter("sut_gpu_pages_computed_total", "Pages computed on the GPU.");
pub const GPU_PAGES_RECOMPUTED_TOTAL: Metric = counter(
    "sut_gpu_pages_recomputed_total",
    "Pages computed that had been computed before.",
);
pub const GPU_ORPHAN_PAGES_TOTAL: Metric = counter(
    "sut_gpu_orphan_pages_total",
    "Pages computed for submissions that had already failed.",
);
pub const GPU_COMPUTE_ERRORS_TOTAL: Metric =
    counter("sut_gpu_compute_errors_total", "Executor errors.");
pub const GPU_QUEUED_PAGES: Metric = gauge("sut_gpu_queued_pages", "Pages queued at the GPU.");
pub const GPU_LANES: Metric = gauge("sut_gpu_lanes", "GPU lanes.");
pub const GPU_REAL_COMPUTE_SECONDS: Metric = gauge(
    "sut_gpu_real_compute_seconds",
    "Time spent computing pages for real.",
);
pub const GPU_TENANT_PAGES_TOTAL: Metric =
    counter("sut_gpu_tenant_pages_total", "Pages computed per tenant.");
pub const GPU_PACED_SECONDS_TOTAL: Metric = counter(
    "sut_gpu_paced_seconds_total",
    "Back-to-back batches: seconds from one batch's start to the next's, as the GPU loop kept its schedule.",
);
pub const GPU_PACED_TARGET_SECONDS_TOTAL: Metric = counter(
    "sut_gpu_paced_target_seconds_total",
    "The same intervals as the GPU model gives them (page_time / speed).",
);

// Process-wide.
pub const DISTINCT_DOCUMENTS_TOTAL: Metric = counter(
    "sut_distinct_documents_total",
    "Distinct documents seen by the gateway.",
);
pub const REMOTE_POOL_UP: Metric = gauge(
    "sut_remote_pool_up",
    "1 when the zone's pool process answered its last metrics read.",
);
pub const EXECUTOR_INFO: Metric = gauge(
    "sut_executor_info",
    "The page executor; fallback=\"true\" means no GPU adapter was found.",
);

// Asynchronous submission.
pub const JOBS_SUBMITTED_TOTAL: Metric = counter(
    "sut_jobs_submitted_total",
    "Jobs accepted by POST /v1/jobs.",
);
pub const JOBS_REJECTED_TOTAL: Metric = counter(
    "sut_jobs_rejected_total",
    "Jobs refused because the job table was full.",
);
pub const JOBS_HELD: Metric = gauge(
    "sut_jobs_held",
    "Jobs in the table, pending or finished and not yet expired.",
);

/// Every series, in the order they are exported.
pub const ALL: &[Metric] = &[
    JOBS_SUBMITTED_TOTAL,
    JOBS_REJECTED_TOTAL,
    JOBS_HELD,
    GATEWAY_REQUESTS_TOTAL,
    GATEWAY_OK_TOTAL,
    GATEWAY_REJECTED_TOTAL,
    GATEWAY_DEADLINE_TOTAL,
    GATEWAY_ATTEMPTS_TOTAL,
    GATEWAY_REDIRECTED_TOTAL,
    GATEWAY_ATTEMPTS_CONFIGURED,
    GATEWAY_REMOTE_POOL_TIMEOUTS_TOTAL,
    GATEWAY_REMOTE_POOL_UNREACHABLE_TOTAL,
    CACHE_HITS_TOTAL,
    CACHE_MISSES_TOTAL,
    CACHE_WRITES_ACKED_TOTAL,
    CACHE_WRITES_STORED_TOTAL,
    CACHE_WRITES_LOST_TOTAL,
    CACHE_WRITE_ERRORS_TOTAL,
    CACHE_ENTRIES,
    CACHE_CAPACITY,
    POOL_REQUESTS_TOTAL,
    POOL_ADMITTED_TOTAL,
    POOL_ZOMBIE_WORK_TOTAL,
    POOL_ZOMBIE_PAGES_TOTAL,
    POOL_PAGES_CANCELLED_TOTAL,
    POOL_UNANSWERED_TOTAL,
    POOL_DOCUMENTS_COMPUTED_TOTAL,
    POOL_COMPUTE_FAILURES_TOTAL,
    POOL_SLOTS,
    POOL_SLOTS_BUSY,
    POOL_WAITERS_HOLDING_SLOT,
    POOL_WAITERS_WITHOUT_SLOT,
    POOL_QUEUE_DEPTH,
    POOL_INFLIGHT_DOCUMENTS,
    POOL_HEAP_CAPACITY_MB,
    POOL_HEAP_LIVE_MB,
    POOL_HEAP_COLLECTOR_SHARE,
    POOL_OK_TOTAL,
    POOL_REJECTED_TOTAL,
    ZONE_FAIL_RATIO,
    GPU_PAGES_COMPUTED_TOTAL,
    GPU_PAGES_RECOMPUTED_TOTAL,
    GPU_ORPHAN_PAGES_TOTAL,
    GPU_COMPUTE_ERRORS_TOTAL,
    GPU_QUEUED_PAGES,
    GPU_LANES,
    GPU_REAL_COMPUTE_SECONDS,
    GPU_TENANT_PAGES_TOTAL,
    GPU_PACED_SECONDS_TOTAL,
    GPU_PACED_TARGET_SECONDS_TOTAL,
    DISTINCT_DOCUMENTS_TOTAL,
    REMOTE_POOL_UP,
    EXECUTOR_INFO,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_prefixed_and_counters_say_so() {
        let mut names: Vec<&str> = ALL.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for m in ALL {
            assert!(m.name.starts_with("sut_"), "{}", m.name);
            assert!(!m.help.is_empty(), "{}", m.name);
            if m.name.ends_with("_total") {
                assert_eq!(m.kind, Kind::Counter, "{}", m.name);
            }
        }
    }
}
