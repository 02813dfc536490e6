//! Step 5, open-loop honesty: a constant arrival rate above the load path's
//! ceiling, to show what the harness does when it cannot keep its schedule.
//!
//! An open-loop generator that falls behind must not quietly turn into a
//! closed loop: arrivals it sends late are still sent and counted (late for
//! the in-flight cap, behind schedule by their lag), none is dropped, and a
//! first attempt's latency runs from its *planned* time, so the lag shows up
//! in the latencies instead of vanishing (no coordinated omission). The
//! step also builds the run's `HarnessCost` exactly as an experiment's report
//! does, and prints its warnings: this is the deliberately overloaded run.
//!
//! wrk2's `-R` (constant-rate wrk, latency from the planned time) would be
//! the reference; it is not packaged in Debian, so the step says it was not
//! run.

use super::ceiling::{busy_reply, run_load, LoadRun};
use super::{server, Windows};
use run_report::{CostRole, HarnessCost};

/// The offered rate as a multiple of the measured ceiling.
pub const OVER_CEILING: f64 = 1.5;
/// Offered when no ceiling was measured in this run (`--only openloop`).
pub const FALLBACK_RATE: f64 = 60_000.0;
/// In-flight cap of the step.
pub const MAX_IN_FLIGHT: u64 = 512;

pub const WRK2: &str = "wrk2 (-R, constant rate): not run: it is not packaged in Debian (apt has wrk 4 only) and nothing outside the package registries can be installed here";

pub struct OpenLoop {
    pub rate: f64,
    pub run: LoadRun,
    pub cost: HarnessCost,
}

impl OpenLoop {
    /// Every planned arrival sent (late ones included), the lateness
    /// reported, and latency carrying the lag.
    pub fn honest(&self) -> Vec<(String, bool)> {
        let r = &self.run;
        let lag99 = r.lag.p99_ms.unwrap_or(0.0);
        vec![
            (
                format!(
                    "every planned arrival was sent: {} of {} (none dropped)",
                    r.spawned, r.planned
                ),
                r.spawned == r.planned && r.lag.sent == r.planned,
            ),
            (
                format!(
                    "lateness counted: {} waited for the cap, {} sent > {} ms late",
                    r.late,
                    r.lag.behind,
                    run_report::LAG_P99_LIMIT_MS
                ),
                r.late + r.lag.behind > 0,
            ),
            (
                format!(
                    "latency from the planned time: attempt p99 {:.1} ms >= lag p99 {lag99:.1} ms",
                    r.latency.p99_ms
                ),
                r.latency.p99_ms >= lag99 * 0.95,
            ),
            (
                "the harness-cost warning fires".to_string(),
                !self.cost.warnings().is_empty(),
            ),
        ]
    }
}

/// Offers `rate` (or [`FALLBACK_RATE`]) arrivals/s of no-retry journeys to
/// the fixed-503 endpoint for the window, and lets every one be sent.
pub fn run(w: &Windows, ceiling_rps: Option<f64>) -> Result<OpenLoop, super::BenchError> {
    let rate = ceiling_rps.map_or(FALLBACK_RATE, |c| (c * OVER_CEILING).max(1000.0));
    let server_rt = super::runtime("bench-server")?;
    let client_rt = crate::base::cpu::named_runtime(crate::base::cpu::LOAD_THREADS)?;
    let srv = server_rt.block_on(server::start(busy_reply()))?;
    let before = crate::base::cpu::Snapshot::now()?;
    let run = client_rt.block_on(run_load(
        &srv.url(""),
        (rate, MAX_IN_FLIGHT),
        w,
        false,
        None,
    ))?;
    let after = crate::base::cpu::Snapshot::now()?;
    let cpu = after.since(&before, |t| {
        if t.starts_with(crate::base::cpu::LOAD_THREADS) {
            ("harness-load threads", CostRole::LoadPath)
        } else if t.starts_with("bench-server") {
            (
                "endpoint threads (the system under test here)",
                CostRole::SystemUnderTest,
            )
        } else {
            ("other threads", CostRole::Harness)
        }
    });
    let cost = HarnessCost {
        wall_s: run.wall_s,
        cpus: crate::base::cpu::cores(),
        method: "this process per thread from /proc/self/task/*/stat, grouped by thread name"
            .into(),
        cpu,
        not_measured: Vec::new(),
        arrivals_sent: run.lag.sent,
        late_arrivals: run.late,
        behind_schedule: run.lag.behind,
        lag_p50_ms: run.lag.p50_ms,
        lag_p99_ms: run.lag.p99_ms,
        lag_max_ms: run.lag.max_ms,
    };
    Ok(OpenLoop { rate, run, cost })
}
