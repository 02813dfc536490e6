//! The harness: turns an experiment file into a measured, compared, reported run.
//!
//! [`experiment`] parses and validates; [`runner`] runs each variant in an
//! [`environment`], driving [`load`] (goose, open loop) whose [`journey`]s
//! retry by the client policy and are verified against the reference page
//! function, while the [`timeline`] injects faults and the sampler ([`scrape`],
//! [`recorder`]) records every second. Analysis and report files come from the
//! `run-report` crate.
//!
//! Visibility: a module is `pub` only when the binary (`main.rs`, a crate of
//! its own) or an integration test under `tests/` uses it; the rest are
//! `pub(crate)`, so what they export is the crate's business alone.

pub mod ablate;
pub mod agent;
mod async_client;
pub(crate) mod axis;
pub mod bench;
pub mod budget;
pub mod campaign;
pub(crate) mod client_metrics;
pub(crate) mod client_policies;
pub mod clock;
pub mod components;
pub mod containers;
pub(crate) mod cost;
pub(crate) mod cpu;
pub mod docker;
pub(crate) mod environment;
pub mod exit;
pub mod experiment;
pub mod faults;
pub(crate) mod http;
pub(crate) mod in_process;
pub mod interrupt;
pub(crate) mod journey;
mod lanes;
pub mod load;
pub(crate) mod progress;
pub mod prometheus;
pub(crate) mod proxy_gateway;
pub mod recorder;
pub mod render;
pub(crate) mod residue;
pub(crate) mod run_id;
pub mod runner;
pub mod scrape;
pub(crate) mod spike;
pub(crate) mod stdout_to_log;
pub mod sustaining;
pub mod sweep;
pub(crate) mod system_client;
pub mod threshold;
pub(crate) mod timeline;
pub(crate) mod tree;
pub mod workload;
