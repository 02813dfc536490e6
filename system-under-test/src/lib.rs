//! The system under test: the document-extraction service of the incident
//! reports, with every defect and its fix behind a configuration switch.
//!
//! Layers, one module each, in the order a request meets them: `gateway`
//! (internal retries) → `router` (zones) → `pool`, which stacks
//! `failure_cache`, `cache`, `inflight` (de-duplication), `admission`,
//! `heap` (memory in flight and its collector, off unless configured) and the
//! shared GPU (`gpu_executor::GpuScheduler`). [`server`] is the HTTP face,
//! [`AdminCommand`] the fault and operator commands, [`metric_names`] the
//! contract of its counters. A [`Role`] splits the service into a gateway
//! process and pool processes (`remote_pool`, `zone_pool`) for the
//! containers environment. The layers are private: clients see the public
//! surface re-exported here.

// The layers and their plumbing: the crate's own business.
mod admin;
pub(crate) mod admission;
mod api;
pub(crate) mod cache;
pub mod config;
mod entropy;
mod exposition;
pub(crate) mod failure_cache;
pub(crate) mod gateway;
pub mod heap;
pub(crate) mod inflight;
pub(crate) mod jobs;
pub mod metric_names;
pub(crate) mod metrics;
pub(crate) mod pool;
pub(crate) mod redis_cache;
mod redis_server;
pub(crate) mod remote_pool;
mod retry_after;
mod role;
pub(crate) mod router;
pub mod serve;
pub mod server;
mod system;
pub(crate) mod zone_pool;

// What the harness (or any client) builds on: the service, its
// configuration, its wire types, its admin commands and queries, its metric
// contract, and the Redis server it can start for an embedded run.
pub use admin::{
    command_row, AdminCommand, AdminError, DocumentRef, WorkInProgress, WorkQuery, WORK_PATH,
};
pub use api::{
    ErrorBody, ExtractRequest, ExtractResponse, JobAccepted, JobPending, RejectReason, Reply,
    ResultSource, EXTRACT_PATH, JOBS_PATH,
};
pub use config::SystemConfig;
// The text exposition writer, also used by the harness's own client-side /metrics.
pub use metrics::Exposition;
pub use redis_server::{cache_server_args, RedisServer, RedisStartError};
pub use retry_after::RETRY_AFTER_MS;
pub use role::{Role, RoleError};
pub use system::{StartError, StartOptions, System};
