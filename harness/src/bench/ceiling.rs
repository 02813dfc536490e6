//! Step 1, the load ceiling: how many requests/s the harness's own load path
//! can send, next to wrk against the same trivial endpoint.
//!
//! A harness slower than the system it tests would hide the overload it is
//! meant to show. The load path measured is the real one — `load::drive`
//! (goose user + open-loop scheduler), journeys with their retry policy and
//! the `Recorder` — offered far more arrivals than it can send, so what it
//! completes per second is its ceiling. The endpoint answers every request
//! with a fixed 503 + `retry-after-ms` (no retries are configured, and a 503
//! skips the reference-page check). wrk then gets the same endpoint and as
//! many connections as the harness opened. A plain reqwest closed loop is
//! measured too, to split the gap into "the HTTP client" and "the harness".

use super::{client, server, wrk, Windows};
use crate::interrupt::StopSignal;
use crate::load::JourneySettings;
use crate::load::{drive, LoadPlan};
use crate::recorder::Recorder;
use crate::workload::Document;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Arrivals offered per second: well above what the load path can send here
/// (80,000 was, until the lanes sent 80,000 on a fast host and the offered
/// rate became the ceiling measured).
pub const OFFERED_RATE: f64 = 250_000.0;
/// The in-flight cap of the measured run (a high one, like the experiments').
pub const MAX_IN_FLIGHT: u64 = 512;

/// The JSON body of every request in the benchmarks.
pub const BODY: &str = r#"{"tenant":"t1","document":1,"pages":1}"#;

pub struct Ceiling {
    /// Completed attempts per second of the harness over the window.
    pub harness_rps: f64,
    /// CPU of the load runtime's threads per attempt (µs), over the whole run.
    pub cpu_per_attempt_us: f64,
    /// Connections the harness opened (handed to wrk).
    pub connections: u64,
    /// Arrivals that waited for the in-flight cap.
    pub late: u64,
    /// Requests the endpoint answered during the harness run (whole run, cross-check).
    pub endpoint_requests: u64,
    /// wrk's run, or why it was skipped.
    pub wrk: Result<wrk::Driven, String>,
    /// A plain reqwest closed loop with MAX_IN_FLIGHT tasks: the HTTP client
    /// the load path used before (diagnostic).
    pub reqwest_rps: f64,
}

/// What one run of the real load path measured.
pub struct LoadRun {
    /// Attempts done per second in the window after the warm-up.
    pub done_per_s: f64,
    /// Attempts done over the whole run.
    pub attempts: u64,
    /// CPU seconds of the load runtime's threads over the whole run.
    pub cpu_s: f64,
    /// Wall time of the whole run.
    pub wall_s: f64,
    pub late: u64,
    /// Arrivals planned before the run's end, and journeys started.
    pub planned: u64,
    pub spawned: u64,
    pub lag: crate::recorder::ScheduleLag,
    /// Attempt latency, first attempts measured from their planned time.
    pub latency: run_report::LatencySummary,
}

/// Runs the harness, then wrk, against one fixed-503 endpoint.
pub fn run(w: &Windows) -> anyhow::Result<Ceiling> {
    let server_rt = super::runtime("bench-server")?;
    let client_rt = crate::cpu::named_runtime(crate::cpu::LOAD_THREADS)?;
    let srv = server_rt.block_on(server::start(busy_reply()))?;
    let load = client_rt.block_on(run_load(&srv.url(""), OFFERED_RATE, MAX_IN_FLIGHT, w, true))?;
    let connections = srv.connections();
    let endpoint_requests = srv.requests();
    let reqwest_rps = client_rt
        .block_on(client::closed_loop(
            &srv.url("/v1/extract"),
            Some(BODY),
            MAX_IN_FLIGHT,
            w.measure,
        ))?
        .requests_per_sec;
    drop(client_rt);
    let wrk = match wrk::find() {
        None => Err(wrk::MISSING.to_string()),
        Some(bin) => wrk::run(
            &bin,
            &srv.url("/v1/extract"),
            connections.max(1),
            w.measure,
            Some(BODY),
        )
        .map_err(|e| format!("wrk failed: {e:#}")),
    };
    Ok(Ceiling {
        harness_rps: load.done_per_s,
        cpu_per_attempt_us: load.cpu_s * 1e6 / load.attempts.max(1) as f64,
        connections,
        late: load.late,
        endpoint_requests,
        wrk,
        reqwest_rps,
    })
}

/// The endpoint's one answer: 503 with a millisecond Retry-After.
pub fn busy_reply() -> std::sync::Arc<[u8]> {
    server::response(
        "503 Service Unavailable",
        &[("retry-after-ms", "1"), ("retry-after", "1")],
        "text/plain",
        b"busy",
    )
}

/// The harness's load path offered `rate` arrivals/s (no retries) for the
/// warm-up and the window: what it did, and what it cost. With `cut`, the
/// run stops at the window's end (the arrivals not yet sent are not); else
/// every planned arrival is sent, late ones included, within 20 s more.
/// Must run on a runtime named `cpu::LOAD_THREADS`, whose threads are the
/// CPU counted.
pub async fn run_load(
    base: &str,
    rate: f64,
    max_in_flight: u64,
    w: &Windows,
    cut: bool,
) -> anyhow::Result<LoadRun> {
    let start = Instant::now() + Duration::from_millis(300);
    let total = w.warmup + w.measure;
    let n = (rate * total.as_secs_f64()) as u64;
    let documents: Vec<Document> = (0..n)
        .map(|i| Document {
            id: i,
            tenant: "t1".into(),
            pages: 1,
            planned: Duration::from_secs_f64(i as f64 / rate),
        })
        .collect();
    let load_end = start + total;
    let hard_stop = load_end + Duration::from_secs(if cut { 2 } else { 20 });
    let seconds = total.as_secs() as usize + 22;
    let recorder = Arc::new(Recorder::new(start, seconds));
    let stop = Arc::new(StopSignal::default());
    // The arrivals planned may exceed what can be sent: end the run at the window's end.
    let stopper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            if cut {
                tokio::time::sleep_until(load_end).await;
                stop.trigger("measurement window over");
            }
        })
    };
    let rec = recorder.clone();
    let plan = LoadPlan {
        base_url: base.to_string(),
        documents,
        start,
        load_end,
        max_in_flight,
        stop,
        journeys: JourneySettings {
            recorder: rec.clone(),
            clients: crate::experiment::ClientBehaviour::synchronous(
                retry_policy::RetryConfig::no_retries(),
                Duration::from_secs(2),
            ),
            hard_stop,
            page: sut::config::PageConfig {
                words: 1,
                rounds: 1,
            },
            seed: 1,
        },
    };
    let cpu0 = crate::cpu::Snapshot::now()?;
    let t0 = Instant::now();
    let outcome = drive(plan).await?;
    let cpu_s = crate::cpu::Snapshot::now()?.threads_since(&cpu0, crate::cpu::LOAD_THREADS);
    let wall_s = t0.elapsed().as_secs_f64();
    stopper.abort();
    let first = w.warmup.as_secs() as usize;
    let last = total.as_secs() as usize;
    let done: u64 = (first..last)
        .map(|t| {
            let s = recorder.second(t);
            s.ok + s.rejected + s.timeouts + s.errors
        })
        .sum();
    let t = recorder.totals();
    Ok(LoadRun {
        done_per_s: done as f64 / (last - first) as f64,
        attempts: t.ok + t.rejected + t.timeouts + t.errors,
        cpu_s,
        wall_s,
        late: recorder.late_arrivals(),
        planned: n,
        spawned: outcome.journeys,
        lag: recorder.schedule_lag(),
        latency: recorder.latency(),
    })
}
