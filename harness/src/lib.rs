//! The harness: turns an experiment file into a measured, compared, reported run.
//!
//! The folders are its layers, each using only those listed before it
//! (`ci/import_cycles.py` checks it):
//!
//! - [`base`]: what every layer stands on: which clock, the stop signal,
//!   CPU threads and runtimes, exit codes, report folders;
//! - [`experiment`]: the experiment file, parsed and validated into the model;
//! - [`net`]: the transports to the system (HTTP, in process on the virtual clock);
//! - [`observe`]: what is measured: the recorder, scrapes, Prometheus, a
//!   target's own series;
//! - [`load`]: the seeded schedule and the open-loop load with its clients' retries;
//! - [`env`]: where the system runs (embedded, containers, external), its
//!   components, proxies and faults, and the timeline that injects them;
//! - [`run`]: one run of every variant, its residues, sampler and load agents;
//! - [`commands`]: what is built on runs: campaign, sweep, threshold,
//!   ablate, bench, render;
//! - [`cli`]: every command's arguments.
//!
//! Analysis and report files come from the `run-report` crate.
//!
//! Visibility: a module is `pub` only when the binary (`main.rs`, a crate of
//! its own) or an integration test under `tests/` uses it; the rest are
//! `pub(crate)`, so what they export is the crate's business alone.

pub mod base;
pub mod cli;
pub mod commands;
pub mod env;
pub mod experiment;
pub mod load;
pub mod net;
pub mod observe;
pub mod run;
