//! The wire types of `POST /v1/extract` and the replies of each layer.
//!
//! A document is identified by a 64-bit id that is also the seed its page
//! content is derived from, so the harness can recompute every result with the
//! reference page function and check what the service returned.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A client's extraction request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractRequest {
    pub tenant: String,
    /// Document id; also the seed of its content.
    pub document: u64,
    /// Number of pages (each one GPU page task).
    pub pages: u32,
}

/// A successful extraction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractResponse {
    pub document: u64,
    pub pages: u32,
    /// `gpu_executor::reference_document` of the document.
    pub digest: u64,
    /// Where the result came from.
    pub source: ResultSource,
    pub zone: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    Computed,
    Cache,
    /// Handed over from the in-flight work of a duplicate.
    Duplicate,
}

/// Body of a 503 / 504 answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    pub reason: RejectReason,
    pub retry_after_ms: Option<u64>,
}

/// Why a request was not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// All slots busy and the admission queue full.
    QueueFull,
    /// The GPU page queue was full while splitting the document (seed 002).
    PageQueueFull,
    /// A duplicate of work in progress, rejected before admission (dedup fix).
    DuplicateInProgress,
    /// Failed recently; remembered by the failure cache (seed 002 fix).
    RecentlyFailed,
    /// Too many documents in flight.
    RegistryFull,
    /// The zone is failing (injected zone fault).
    ZoneFailure,
    /// The zone's pool process could not be reached (split roles only).
    ZoneUnreachable,
    /// New allocations to the zone are stopped (operator action).
    AllocationsStopped,
    /// The router throttled the request (operator action or load shedding).
    Throttled,
    /// The processing deadline passed.
    Deadline,
    /// The job table of asynchronous submission is full (`POST /v1/jobs`).
    JobTableFull,
    /// The pool's heap could not take the request's memory: full (out of
    /// memory), or over the memory-bounded admission's share (`pool.heap`).
    Memory,
}

impl RejectReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            RejectReason::QueueFull => "queue_full",
            RejectReason::PageQueueFull => "page_queue_full",
            RejectReason::DuplicateInProgress => "duplicate_in_progress",
            RejectReason::RecentlyFailed => "recently_failed",
            RejectReason::RegistryFull => "registry_full",
            RejectReason::ZoneFailure => "zone_failure",
            RejectReason::ZoneUnreachable => "zone_unreachable",
            RejectReason::AllocationsStopped => "allocations_stopped",
            RejectReason::Throttled => "throttled",
            RejectReason::Deadline => "deadline",
            RejectReason::JobTableFull => "job_table_full",
            RejectReason::Memory => "memory",
        }
    }

    /// Every reason, for metrics.
    pub const ALL: [RejectReason; 12] = [
        RejectReason::QueueFull,
        RejectReason::PageQueueFull,
        RejectReason::DuplicateInProgress,
        RejectReason::RecentlyFailed,
        RejectReason::RegistryFull,
        RejectReason::ZoneFailure,
        RejectReason::ZoneUnreachable,
        RejectReason::AllocationsStopped,
        RejectReason::Throttled,
        RejectReason::Deadline,
        RejectReason::JobTableFull,
        RejectReason::Memory,
    ];
}

/// What a pool (or the gateway, on behalf of pools) answers. Also the body
/// of `POST /v1/pool/extract`, the hop from a gateway to a remote pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Ok {
        digest: u64,
        source: ResultSource,
    },
    /// 503 with advice on when to come back.
    Overloaded {
        retry_after: Duration,
        reason: RejectReason,
    },
    /// 504: the deadline passed (work may go on).
    Deadline,
}

impl Reply {
    pub fn is_ok(&self) -> bool {
        matches!(self, Reply::Ok { .. })
    }
}

/// `POST /v1/jobs` answers this (202), with `Location: /v1/jobs/{job}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobAccepted {
    pub job: u64,
}

/// `GET /v1/jobs/{id}` answers this (202) while the job is pending, with
/// `Retry-After` / `Retry-After-Ms` saying when to ask again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobPending {
    pub job: u64,
    pub status: String,
}

/// Where synchronous submission lives: `POST` an [`ExtractRequest`] here.
pub const EXTRACT_PATH: &str = "/v1/extract";

/// Where asynchronous submission lives: `POST` here, `GET` here + `/{id}`.
pub const JOBS_PATH: &str = "/v1/jobs";
