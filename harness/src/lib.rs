//! The harness: turns an experiment file into a measured, compared, reported run.
//!
//! [`experiment`] parses and validates; [`runner`] runs each variant in an
//! [`environment`], driving [`load`] (goose, open loop) whose [`journey`]s
//! retry by the client policy and are verified against the reference page
//! function, while the [`timeline`] injects faults and the sampler ([`scrape`],
//! [`recorder`]) records every second. Analysis and report files come from the
//! `run-report` crate.

pub mod ablate;
pub mod agent;
mod async_client;
pub mod axis;
pub mod bench;
pub mod budget;
pub mod client_metrics;
pub mod client_policies;
pub mod containers;
pub mod cost;
pub mod cpu;
pub mod environment;
pub mod exit;
pub mod experiment;
pub mod http;
pub mod interrupt;
pub mod journey;
mod lanes;
pub mod load;
pub mod progress;
pub mod prometheus;
pub mod recorder;
pub mod render;
pub mod residue;
pub mod run_id;
pub mod runner;
pub mod scrape;
pub mod spike;
pub mod stdout_to_log;
pub mod sweep;
pub mod threshold;
pub mod timeline;
pub mod tree;
pub mod workload;
