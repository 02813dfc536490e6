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
//!
//! The two are run in [`PAIRS`] alternating pairs, each wrk run right after
//! the harness run it is compared with, and the targets are judged on the
//! median pair. On a shared VM the host's speed drifts within seconds, so a
//! single harness window against a single wrk window, seconds apart, would
//! compare two different machines. Every pair is printed, so the spread is
//! seen, not hidden in the median.

use super::{client, server, wrk, Windows};
use crate::base::interrupt::StopSignal;
use crate::experiment::http_workload::{Body, HttpClass, HttpWorkload, Success, Template};
use crate::load::workload::Document;
use crate::load::{drive, LoadPlan};
use crate::observe::recorder::Recorder;
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

/// Harness and wrk runs, alternated; the targets are judged on the median.
pub const PAIRS: usize = 3;

/// One harness run and the wrk run right after it.
pub struct Pair {
    /// Completed attempts per second of the harness over the window.
    pub harness_rps: f64,
    /// CPU of the load runtime's threads per attempt (µs), over the whole run.
    pub cpu_per_attempt_us: f64,
    /// The share of that CPU spent in the kernel (0-1).
    pub kernel_share: f64,
    /// Connections the harness opened in this run (handed to wrk).
    pub connections: u64,
    /// Arrivals that waited for the in-flight cap.
    pub late: u64,
    /// Requests the endpoint answered during the harness run (cross-check).
    pub endpoint_requests: u64,
    /// wrk's run, or why it was skipped.
    pub wrk: Result<wrk::Driven, super::NotMeasured>,
}

impl Pair {
    /// Harness attempts/s over wrk's requests/s; `None` without wrk.
    pub fn ratio(&self) -> Option<f64> {
        self.wrk
            .as_ref()
            .ok()
            .map(|w| self.harness_rps / w.requests_per_sec)
    }
}

pub struct Ceiling {
    /// In the order run.
    pub pairs: Vec<Pair>,
    /// A plain reqwest closed loop with MAX_IN_FLIGHT tasks: the HTTP client
    /// the load path used before (diagnostic).
    pub reqwest_rps: f64,
}

/// The median of `xs` (the mean of the middle two for an even count).
fn median(xs: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = xs.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Ceiling {
    /// The median harness rate (what the open-loop step offers 1.5x of).
    pub fn harness_rps(&self) -> f64 {
        median(self.pairs.iter().map(|p| p.harness_rps))
    }

    pub fn cpu_per_attempt_us(&self) -> f64 {
        median(self.pairs.iter().map(|p| p.cpu_per_attempt_us))
    }

    /// The median pair's ratio to wrk; `None` when wrk did not run.
    pub fn ratio(&self) -> Option<f64> {
        let ratios: Option<Vec<f64>> = self.pairs.iter().map(Pair::ratio).collect();
        ratios
            .filter(|r| !r.is_empty())
            .map(|r| median(r.into_iter()))
    }

    /// The most connections one harness run opened.
    pub fn connections(&self) -> u64 {
        self.pairs.iter().map(|p| p.connections).max().unwrap_or(0)
    }
}

/// What one run of the real load path measured.
pub struct LoadRun {
    /// Attempts done per second in the window after the warm-up.
    pub done_per_s: f64,
    /// Attempts done over the whole run.
    pub attempts: u64,
    /// CPU seconds of the load runtime's threads over the whole run.
    pub cpu_s: f64,
    /// Of `cpu_s`, the time in the kernel.
    pub system_s: f64,
    /// Wall time of the whole run.
    pub wall_s: f64,
    pub late: u64,
    /// Arrivals planned before the run's end, and journeys started.
    pub planned: u64,
    pub spawned: u64,
    pub lag: crate::observe::recorder::ScheduleLag,
    /// Attempt latency, first attempts measured from their planned time.
    pub latency: run_report::LatencySummary,
}

/// What the harness and wrk both drive in a ceiling run.
pub struct Endpoint {
    /// The endpoint's one answer.
    reply: Arc<[u8]>,
    /// wrk's path, and its POST body (`None`: GET).
    wrk_path: &'static str,
    wrk_body: Option<&'static str>,
    /// The harness's requests: the documents' (`None`), or a generic HTTP
    /// workload's (`workload.http`).
    http: Option<Arc<HttpWorkload>>,
}

impl Endpoint {
    /// Documents POSTed to a fixed-503 endpoint (the documents' load path).
    pub fn documents() -> Endpoint {
        Endpoint {
            reply: busy_reply(),
            wrk_path: "/v1/extract",
            wrk_body: Some(BODY),
            http: None,
        }
    }

    /// A generic HTTP workload's GET of a static page answered 200: the
    /// path that drives a user's own service (`load/journey/http.rs`).
    pub fn generic() -> Endpoint {
        let http = HttpWorkload {
            classes: vec![HttpClass {
                name: "static".into(),
                share: 1.0,
                method: hyper::Method::GET,
                path: Template::parse(STATIC_PATH).expect("a fixed path parses"),
                headers: Vec::new(),
                body: Body::None,
                check: None,
            }],
            keys: None,
            success: Success {
                status: vec![200],
                retry_later: vec![429, 503],
            },
        };
        Endpoint {
            reply: server::response("200 OK", &[], "text/plain", b"static page"),
            wrk_path: STATIC_PATH,
            wrk_body: None,
            http: Some(Arc::new(http)),
        }
    }
}

/// The generic path's static page.
const STATIC_PATH: &str = "/static/index.txt";

/// Runs the harness and wrk in alternating pairs against one fixed-answer
/// endpoint, then the reqwest diagnostic.
pub fn run(w: &Windows, endpoint: &Endpoint) -> Result<Ceiling, super::BenchError> {
    let server_rt = super::runtime("bench-server")?;
    let client_rt = crate::base::cpu::named_runtime(crate::base::cpu::LOAD_THREADS)?;
    let srv = server_rt.block_on(server::start(endpoint.reply.clone()))?;
    let wrk_bin = wrk::find();
    let mut pairs = Vec::with_capacity(PAIRS);
    for _ in 0..PAIRS {
        let (opened, answered) = (srv.connections(), srv.requests());
        let load = client_rt.block_on(run_load(
            &srv.url(""),
            (OFFERED_RATE, MAX_IN_FLIGHT),
            w,
            true,
            endpoint.http.clone(),
        ))?;
        let connections = srv.connections() - opened;
        let endpoint_requests = srv.requests() - answered;
        let wrk = match &wrk_bin {
            None => Err(wrk::MISSING.to_string().into()),
            Some(bin) => wrk::run(
                bin,
                &srv.url(endpoint.wrk_path),
                connections.max(1),
                w.measure,
                endpoint.wrk_body,
            )
            .map_err(|e| format!("wrk failed: {e:#}").into()),
        };
        pairs.push(Pair {
            harness_rps: load.done_per_s,
            cpu_per_attempt_us: load.cpu_s * 1e6 / load.attempts.max(1) as f64,
            kernel_share: load.system_s / load.cpu_s.max(1e-9),
            connections,
            late: load.late,
            endpoint_requests,
            wrk,
        });
    }
    let reqwest_rps = client_rt
        .block_on(client::closed_loop(
            &srv.url(endpoint.wrk_path),
            endpoint.wrk_body,
            MAX_IN_FLIGHT,
            w.measure,
        ))?
        .requests_per_sec;
    Ok(Ceiling { pairs, reqwest_rps })
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
    (rate, max_in_flight): (f64, u64),
    w: &Windows,
    cut: bool,
    http: Option<Arc<HttpWorkload>>,
) -> Result<LoadRun, super::BenchError> {
    let start = Instant::now() + Duration::from_millis(300);
    let total = w.warmup + w.measure;
    let n = (rate * total.as_secs_f64()) as u64;
    let documents = evenly(n, rate);
    let load_end = start + total;
    let hard_stop = load_end + Duration::from_secs(if cut { 2 } else { 20 });
    let seconds = total.as_secs() as usize + 22;
    let recorder = Arc::new(Recorder::new(start, seconds));
    let stop = Arc::new(StopSignal::default());
    // The arrivals planned may exceed what can be sent: end the run at the window's end.
    let stopper = cut.then(|| super::stop_at(load_end, &stop));
    let plan = LoadPlan {
        base_url: base.to_string(),
        documents,
        start,
        load_end,
        max_in_flight,
        stop,
        journeys: crate::load::JourneySettings {
            http,
            ..super::journeys(
                recorder.clone(),
                retry_policy::RetryConfig::no_retries(),
                hard_stop,
            )
        },
    };
    let cpu0 = crate::base::cpu::Snapshot::now()?;
    let t0 = Instant::now();
    let outcome = drive(plan).await?;
    let cpu =
        crate::base::cpu::Snapshot::now()?.threads_since(&cpu0, crate::base::cpu::LOAD_THREADS);
    let wall_s = t0.elapsed().as_secs_f64();
    if let Some(stopper) = stopper {
        stopper.abort();
    }
    let t = recorder.totals();
    Ok(LoadRun {
        done_per_s: super::done_per_s(&recorder, w),
        attempts: t.ok + t.rejected + t.timeouts + t.errors,
        cpu_s: cpu.cpu_s,
        system_s: cpu.system_s,
        wall_s,
        late: recorder.late_arrivals(),
        planned: n,
        spawned: outcome.journeys,
        lag: recorder.schedule_lag(),
        latency: recorder.latency(),
    })
}

/// `n` one-page documents of one tenant arriving evenly at `rate` a second.
pub(super) fn evenly(n: u64, rate: f64) -> Vec<Document> {
    (0..n)
        .map(|i| Document {
            id: i,
            tenant: "t1".into(),
            pages: 1,
            planned: Duration::from_secs_f64(i as f64 / rate),
            class: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(harness_rps: f64, wrk_rps: Option<f64>) -> Pair {
        Pair {
            harness_rps,
            cpu_per_attempt_us: 1e6 / harness_rps,
            kernel_share: 0.5,
            connections: 512,
            late: 0,
            endpoint_requests: 0,
            wrk: wrk_rps
                .map(|r| wrk::Driven {
                    requests_per_sec: r,
                    non_2xx: 0,
                    seconds: 5.0,
                    cpu_s: None,
                    system_s: None,
                })
                .ok_or_else(|| super::super::NotMeasured("no wrk".into())),
        }
    }

    #[test]
    fn the_median_pair_is_judged() {
        let c = Ceiling {
            pairs: vec![
                pair(50.0, Some(100.0)),
                pair(60.0, Some(75.0)),
                pair(40.0, Some(80.0)),
            ],
            reqwest_rps: 0.0,
        };
        assert_eq!(c.ratio(), Some(0.5));
        assert_eq!(c.harness_rps(), 50.0);
        assert_eq!(c.cpu_per_attempt_us(), 1e6 / 50.0);
        assert_eq!(median([1.0, 4.0].into_iter()), 2.5);
    }

    #[test]
    fn without_wrk_in_any_pair_there_is_no_ratio() {
        let c = Ceiling {
            pairs: vec![pair(50.0, Some(100.0)), pair(60.0, None)],
            reqwest_rps: 0.0,
        };
        assert_eq!(c.ratio(), None);
    }
}
