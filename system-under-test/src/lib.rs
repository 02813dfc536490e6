//! The system under test: the document-extraction service of the incident
//! reports, with every defect and its fix behind a configuration switch.
//!
//! Layers, one module each, in the order a request meets them:
//! [`gateway`] (internal retries) → [`router`] (zones) → [`pool`], which stacks
//! [`failure_cache`], [`cache`], [`inflight`] (de-duplication), [`admission`]
//! and the shared GPU (`gpu_executor::GpuScheduler`). [`server`] is the HTTP
//! face, [`admin`] the fault and operator commands, [`metrics`] the counters.
//! [`role`] splits the service into a gateway process and pool processes
//! ([`remote_pool`], [`zone_pool`]) for the containers environment.

pub mod admin;
pub mod admission;
pub mod api;
pub mod cache;
pub mod config;
mod exposition;
pub mod failure_cache;
pub mod gateway;
pub mod inflight;
pub mod metric_names;
pub mod metrics;
pub mod pool;
pub mod redis_cache;
pub mod redis_server;
pub mod remote_pool;
pub mod retry_after;
pub mod role;
pub mod router;
pub mod server;
pub mod system;
pub mod zone_pool;

pub use admin::{AdminCommand, AdminError, DocumentRef, WorkInProgress, WorkQuery, WORK_PATH};
pub use api::{ExtractRequest, ExtractResponse, RejectReason, Reply, ResultSource};
pub use config::SystemConfig;
pub use role::Role;
pub use system::{StartOptions, System};
