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

/// Arrivals offered per second: well above what the load path can send here.
pub const OFFERED_RATE: f64 = 50_000.0;
/// The in-flight cap of the measured run (a high one, like the experiments').
pub const MAX_IN_FLIGHT: u64 = 512;

/// The JSON body of every request in the benchmarks.
pub const BODY: &str = r#"{"tenant":"t1","document":1,"pages":1}"#;

pub struct Ceiling {
    /// Completed attempts per second of the harness over the window.
    pub harness_rps: f64,
    /// Connections the harness opened (handed to wrk).
    pub connections: u64,
    /// Arrivals that waited for the in-flight cap.
    pub late: u64,
    /// Requests the endpoint answered during the harness run (whole run, cross-check).
    pub endpoint_requests: u64,
    /// wrk's requests/s, or why it was skipped.
    pub wrk_rps: Result<f64, String>,
    /// A plain reqwest closed loop with MAX_IN_FLIGHT tasks: the HTTP client's
    /// own ceiling, without goose, journeys or recorder (diagnostic).
    pub reqwest_rps: f64,
}

/// Runs the harness, then wrk, against one fixed-503 endpoint.
pub fn run(w: &Windows) -> anyhow::Result<Ceiling> {
    let server_rt = super::runtime("bench-server")?;
    let client_rt = super::runtime("bench-load")?;
    let reply = server::response(
        "503 Service Unavailable",
        &[("retry-after-ms", "1"), ("retry-after", "1")],
        "text/plain",
        b"busy",
    );
    let srv = server_rt.block_on(server::start(reply))?;
    let (harness_rps, late) = client_rt.block_on(harness_ceiling(&srv.url(""), w))?;
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
    let wrk_rps = match wrk::find() {
        None => Err(wrk::MISSING.to_string()),
        Some(bin) => wrk::run(
            &bin,
            &srv.url("/v1/extract"),
            connections.max(1),
            w.measure,
            Some(BODY),
        )
        .map(|d| d.requests_per_sec)
        .map_err(|e| format!("wrk failed: {e:#}")),
    };
    Ok(Ceiling {
        harness_rps,
        connections,
        late,
        endpoint_requests,
        wrk_rps,
        reqwest_rps,
    })
}

/// The harness's load path at an offered rate it cannot keep: attempts/s done
/// in the window after the warm-up, and the late arrivals.
async fn harness_ceiling(base: &str, w: &Windows) -> anyhow::Result<(f64, u64)> {
    let start = Instant::now() + Duration::from_millis(300);
    let total = w.warmup + w.measure;
    let n = (OFFERED_RATE * total.as_secs_f64()) as u64;
    let documents: Vec<Document> = (0..n)
        .map(|i| Document {
            id: i,
            tenant: "t1".into(),
            pages: 1,
            planned: Duration::from_secs_f64(i as f64 / OFFERED_RATE),
        })
        .collect();
    let load_end = start + total;
    let hard_stop = load_end + Duration::from_secs(2);
    let seconds = total.as_secs() as usize + 4;
    let recorder = Arc::new(Recorder::new(start, seconds));
    let stop = Arc::new(StopSignal::default());
    // The arrivals planned exceed what can be sent: end the run at the window's end.
    let stopper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(load_end).await;
            stop.trigger("measurement window over");
        })
    };
    let rec = recorder.clone();
    let plan = LoadPlan {
        base_url: base.to_string(),
        documents,
        start,
        load_end,
        max_in_flight: MAX_IN_FLIGHT,
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
    drive(plan).await?;
    stopper.abort();
    let first = w.warmup.as_secs() as usize;
    let last = total.as_secs() as usize;
    let done: u64 = (first..last)
        .map(|t| {
            let s = recorder.second(t);
            s.ok + s.rejected + s.timeouts + s.errors
        })
        .sum();
    Ok((
        done as f64 / (last - first) as f64,
        recorder.late_arrivals(),
    ))
}
