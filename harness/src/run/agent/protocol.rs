//! The wire format between the coordinator (the `harness` run) and its
//! load agents (`harness agent`): JSON over HTTP, defined once here and
//! used by both sides.
//!
//! ```text
//! agent                                   coordinator
//!  POST /agent/hello  Hello ───────────▶  checks version, experiment hash, seed, shard;
//!                                         holds the answer until every agent said hello
//!        ◀─────────── 200 Plan            (variant, target, capacity, the run's clock)
//!                     409 text            (refused: a different experiment, seed, version)
//!  POST /agent/report Report ──────────▶  every 250 ms: the recorder's events since the
//!        ◀─────────── 200 | 410 (lost)    last one; `done` with goose's counts at the end
//! ```
//!
//! The clock: `Plan::start_unix_ms` is the run's t = 0 on the wall clock;
//! an agent turns it into its own monotonic instant once. Events carry
//! their offset from that start, so the coordinator counts each in the
//! second it happened in.

use crate::observe::recorder::Event;
use serde::{Deserialize, Serialize};

pub const HELLO_PATH: &str = "/agent/hello";
pub const REPORT_PATH: &str = "/agent/report";
/// How often an agent reports (an empty report is its heartbeat).
pub const REPORT_EVERY_MS: u64 = 250;
/// An agent silent this long is lost.
pub const SILENCE_LIMIT_MS: u64 = 3000;

/// The harness version both sides must share.
pub fn harness_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The experiment as a hash: its file's text and which form runs.
pub fn experiment_hash(source: &str, quick: bool) -> String {
    // FNV-1a 64: stable across builds and platforms (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in source.bytes().chain([u8::from(quick)]) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub harness_version: String,
    pub experiment_hash: String,
    pub seed: u64,
    pub shard: u32,
    pub of: u32,
    /// Where it runs (pid, host), for the report.
    pub whereabouts: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub variant: String,
    /// The system under test the agent drives.
    pub base_url: String,
    /// The coordinator's calibration: the schedule depends on it.
    pub capacity_docs_per_sec: f64,
    pub capacity_pages_per_sec: f64,
    /// The run's t = 0, milliseconds since the Unix epoch.
    pub start_unix_ms: u64,
    /// Arrivals stop here and journeys end by the hard stop (since the start).
    pub load_end_ms: u64,
    pub hard_stop_ms: u64,
    /// This agent's share of the in-flight cap.
    pub max_in_flight: u64,
    /// Seconds of the run's recorder (duration + drain + 2).
    pub seconds: usize,
    /// Digest of the shard's document ids and planned times, as the
    /// coordinator computed it: the agent checks it computed the same shard.
    pub shard_digest: u64,
    pub shard_documents: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub shard: u32,
    /// 0, 1, 2, ...: a report that arrives twice is counted once.
    pub seq: u64,
    /// (offset from the start in µs, event).
    pub events: Vec<(u64, Event)>,
    /// The last report: the shard's load is over and every journey ended.
    pub done: Option<Finished>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Finished {
    pub goose_requests: u64,
    pub goose_failures: u64,
    pub journeys: u64,
    /// CPU seconds the agent's process used while it drove its shard (its
    /// load path and its reports): the harness's cost, which the
    /// coordinator cannot read from another process or host. `None`: its
    /// `/proc` could not be read.
    #[serde(default)]
    pub cpu_s: Option<f64>,
}
