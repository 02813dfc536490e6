//! Step 4, memory: the harness's peak resident memory through a retry storm of
//! at least 200,000 attempts.
//!
//! A storm is exactly when a harness's own bookkeeping (per-attempt reports to
//! goose, the recorder's buckets, in-flight journeys) could grow without
//! bound. The peak (VmHWM in /proc/self/status) is per process and never goes
//! down, so the storm runs in a fresh process: `harness bench` re-executes
//! itself as `harness bench --only storm` and reads one `BENCH-STORM {json}`
//! line back. The always-503 endpoint (`retry-after-ms: 1`) lives in the
//! parent and its address is passed in `HARNESS_BENCH_STORM_TARGET`, so the
//! child's peak is the harness alone (run directly, the child starts its own).

use super::error::during;
use super::BenchError;
use super::{server, Windows};
use crate::base::interrupt::StopSignal;
use crate::load::workload::Document;
use crate::load::{drive, LoadPlan};
use crate::observe::recorder::Recorder;
use serde::{Deserialize, Serialize};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Environment variable carrying the storm endpoint's address to the child.
pub const TARGET_ENV: &str = "HARNESS_BENCH_STORM_TARGET";
/// Prefix of the child's result line on stdout.
pub const LINE_PREFIX: &str = "BENCH-STORM ";
/// Overrides the attempts the storm runs to (the instructions step runs it
/// under callgrind at two counts).
pub const ATTEMPTS_ENV: &str = "HARNESS_BENCH_STORM_ATTEMPTS";
/// Documents retrying at once (each a journey that never succeeds).
pub const DOCUMENTS: u64 = 1000;
/// Set to `arrivals` (the instructions step does), the child runs the load
/// ceiling's shape instead of the storm: one document per attempt, no
/// retries, arrivals far faster than they can be sent, at most
/// `ceiling::MAX_IN_FLIGHT` in flight; the attempt count is then the number
/// of documents, and every one is sent.
pub const MODE_ENV: &str = "HARNESS_BENCH_STORM_MODE";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Storm {
    /// Attempts the harness completed (its recorder's count).
    pub attempts: u64,
    /// Attempts goose was told about (cross-check).
    pub goose_requests: u64,
    pub documents: u64,
    pub seconds: f64,
    /// Resident memory before the load started, kB.
    pub baseline_rss_kb: u64,
    /// VmHWM at the end, kB.
    pub peak_rss_kb: u64,
    /// True when the endpoint ran in the same process (counted in the peak).
    pub endpoint_in_process: bool,
}

/// Starts the endpoint here and runs the storm in a fresh copy of this program.
pub fn run_in_child(quick: bool) -> Result<Storm, BenchError> {
    let server_rt = super::runtime("bench-storm-endpoint")?;
    let srv = server_rt.block_on(server::start(storm_reply()))?;
    let exe = std::env::current_exe().map_err(during("locating this program to re-run it"))?;
    let mut cmd = Command::new(&exe);
    cmd.args(["bench", "--only", "storm"]);
    if quick {
        cmd.arg("--quick");
    }
    let out = cmd
        .env(TARGET_ENV, srv.addr.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(during(format!(
            "running {} bench --only storm",
            exe.display()
        )))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Invalid(format!(
            "the storm process exited with {}: {stdout}",
            out.status
        )));
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(LINE_PREFIX))
        .ok_or_else(|| {
            BenchError::Invalid(format!(
                "no {LINE_PREFIX:?} line from the storm process: {stdout}"
            ))
        })?;
    serde_json::from_str(line).map_err(|error| BenchError::Json {
        what: format!("reading the storm result {line}"),
        error,
    })
}

/// The storm itself, in this process; prints the result line for the parent.
pub fn run_here(w: &Windows) -> Result<Storm, BenchError> {
    let baseline_rss_kb = status_kb("VmRSS").unwrap_or(0);
    let target = std::env::var(TARGET_ENV).ok();
    let server_rt = super::runtime("bench-storm-endpoint")?;
    let (addr, _local) = match &target {
        Some(a) => {
            let addr: std::net::SocketAddr = a
                .parse()
                .map_err(|e| BenchError::Invalid(format!("{TARGET_ENV}={a}: {e}")))?;
            if !addr.ip().is_loopback() {
                return Err(BenchError::Invalid(format!(
                    "{TARGET_ENV}={a}: 127.0.0.1 only"
                )));
            }
            (addr, None)
        }
        None => {
            let srv = server_rt.block_on(server::start(storm_reply()))?;
            (srv.addr, Some(srv))
        }
    };
    let client_rt = super::runtime("bench-storm")?;
    let base = format!("http://{addr}");
    let attempts = match std::env::var(ATTEMPTS_ENV) {
        Ok(a) => a
            .parse()
            .map_err(|e| BenchError::Invalid(format!("{ATTEMPTS_ENV}={a}: not a count: {e}")))?,
        Err(_) => w.storm_attempts,
    };
    let mut storm = if std::env::var(MODE_ENV).is_ok_and(|m| m == "arrivals") {
        client_rt.block_on(arrivals(&base, attempts))?
    } else {
        client_rt.block_on(storm(&base, attempts, w.storm_limit))?
    };
    storm.baseline_rss_kb = baseline_rss_kb;
    storm.endpoint_in_process = target.is_none();
    storm.peak_rss_kb = status_kb("VmHWM")
        .ok_or_else(|| BenchError::Invalid("reading VmHWM from /proc/self/status".into()))?;
    let line = serde_json::to_string(&storm).map_err(|error| BenchError::Json {
        what: "writing the storm result".into(),
        error,
    })?;
    println!("{LINE_PREFIX}{line}");
    Ok(storm)
}

pub(super) fn storm_reply() -> Arc<[u8]> {
    server::response(
        "503 Service Unavailable",
        &[("retry-after-ms", "1"), ("retry-after", "1")],
        "application/json",
        br#"{"error":"Server overloaded","reason":"queue_full","retry_after_ms":1}"#,
    )
}

/// DOCUMENTS journeys retrying every 1 ms until `attempts` are done (or `limit`).
async fn storm(base: &str, attempts: u64, limit: Duration) -> Result<Storm, BenchError> {
    let start = Instant::now() + Duration::from_millis(300);
    let documents: Vec<Document> = (0..DOCUMENTS)
        .map(|i| Document {
            id: i,
            tenant: format!("t{}", i % 4),
            pages: 1,
            planned: Duration::from_micros(i * 500),
            class: None,
        })
        .collect();
    let load_end = start + limit;
    let hard_stop = load_end + Duration::from_secs(2);
    let seconds = limit.as_secs() as usize + 4;
    let recorder = Arc::new(Recorder::new(start, seconds));
    let stop = Arc::new(StopSignal::default());
    let retry: retry_policy::RetryConfig = serde_saphyr::from_str(
        "{ max_attempts: 1000000000, honour_retry_after: true, backoff: { fixed: { delay: 1ms } } }",
    )
    .map_err(|e| BenchError::Invalid(format!("storm retry policy: {e}")))?;
    // The runner's sampler: read each finished second (which also folds its
    // distinct-document set), and stop once enough attempts were made.
    let sampler = {
        let (recorder, stop) = (recorder.clone(), stop.clone());
        tokio::spawn(async move {
            let mut done = 0u64;
            for t in 0..seconds {
                tokio::time::sleep_until(start + Duration::from_secs(t as u64 + 1)).await;
                let s = recorder.second(t);
                done += s.ok + s.rejected + s.timeouts + s.errors;
                if done >= attempts || stop.is_set() {
                    break;
                }
            }
            stop.trigger("storm done");
        })
    };
    let rec = recorder.clone();
    let plan = LoadPlan {
        base_url: base.to_string(),
        documents,
        start,
        load_end,
        max_in_flight: DOCUMENTS * 2,
        stop,
        journeys: super::journeys(rec.clone(), retry.clone(), hard_stop),
    };
    let outcome = drive(plan).await?;
    let seconds_run = start.elapsed().as_secs_f64();
    sampler.abort();
    let done = super::attempts_done(&recorder, 0..seconds);
    Ok(Storm {
        attempts: done,
        goose_requests: outcome.goose_requests,
        documents: DOCUMENTS,
        seconds: seconds_run,
        baseline_rss_kb: 0,
        peak_rss_kb: 0,
        endpoint_in_process: false,
    })
}

/// `n` documents, one attempt each, arriving at the ceiling step's offered
/// rate (so the scheduler is behind, as there): the per-journey costs
/// (spawn, body, retry policy, recorder ledger) that the storm's long
/// journeys spread over many attempts.
async fn arrivals(base: &str, n: u64) -> Result<Storm, BenchError> {
    let start = Instant::now() + Duration::from_millis(300);
    let documents = super::ceiling::evenly(n, super::ceiling::OFFERED_RATE);
    // Every arrival is sent: the load ends long after the last is due.
    let load_end = start + Duration::from_secs(3600);
    let recorder = Arc::new(Recorder::new(start, 600));
    let plan = LoadPlan {
        base_url: base.to_string(),
        documents,
        start,
        load_end,
        max_in_flight: super::ceiling::MAX_IN_FLIGHT,
        stop: Arc::new(StopSignal::default()),
        journeys: super::journeys(
            recorder.clone(),
            retry_policy::RetryConfig::no_retries(),
            load_end,
        ),
    };
    let outcome = drive(plan).await?;
    let t = recorder.totals();
    Ok(Storm {
        attempts: t.ok + t.rejected + t.timeouts + t.errors,
        goose_requests: outcome.goose_requests,
        documents: n,
        seconds: start.elapsed().as_secs_f64(),
        baseline_rss_kb: 0,
        peak_rss_kb: 0,
        endpoint_in_process: false,
    })
}

/// A `kB` field of /proc/self/status (e.g. VmHWM, VmRSS).
pub fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status_kb(&status, field)
}

/// Reads `VmHWM:\t  123456 kB` (or any other field) from /proc/<pid>/status text.
pub(crate) fn parse_status_kb(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k != field {
            return None;
        }
        v.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_peak_and_current_rss() {
        let status =
            "Name:\tharness\nVmPeak:\t  999999 kB\nVmHWM:\t   84312 kB\nVmRSS:\t   80000 kB\n";
        assert_eq!(parse_status_kb(status, "VmHWM"), Some(84312));
        assert_eq!(parse_status_kb(status, "VmRSS"), Some(80000));
        assert_eq!(parse_status_kb(status, "VmSwap"), None);
        assert_eq!(parse_status_kb("VmHWM:\tlots\n", "VmHWM"), None);
    }

    #[test]
    fn this_process_has_a_peak() {
        assert!(status_kb("VmHWM").is_some_and(|kb| kb > 0));
    }
}
