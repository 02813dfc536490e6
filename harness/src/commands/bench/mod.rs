//! `harness bench`: can the harness out-drive the system it tests?
//!
//! A chaos harness that cannot send more than the service can take hides the
//! overload it is meant to show. Four measurements, in one run, each with its
//! target printed PASS / MISS beside it (see BENCHMARKS.md for method and
//! latest numbers):
//!
//! 1. [`ceiling`]: the harness's load path vs wrk on a trivial endpoint (>= 0.6),
//!    its CPU per attempt (<= 25 µs) and the connections it opened
//!    (<= max_in_flight + 5 %); then the same for the generic HTTP path
//!    (`workload.http`, a GET of a static page), the one that drives a
//!    user's own service.
//! 2. [`hotpath`]: a cache-hit `POST /v1/extract` vs the axum floor (>= 0.5).
//! 3. [`pages`]: wgpu vs CPU page executor pages/s (no target; informs capacity).
//! 4. [`memory`]: peak RSS through a 200k-attempt retry storm (< 300 MB), in a
//!    fresh process so earlier steps do not inflate it.
//! 5. [`openloop`]: a constant rate above the ceiling: every arrival still
//!    sent, lateness counted, latency from the planned time, the cost warning.
//! 6. [`instructions`]: instructions per attempt under callgrind (full run only).
//!
//! Traffic goes to 127.0.0.1 only. External tools (wrk) are optional: a
//! missing one is reported and its comparison skipped.

mod agents;
mod ceiling;
mod client;
mod error;
mod hotpath;
mod instructions;
mod memory;
mod openloop;
mod pages;
mod print;

use print::{
    print_agents, print_ceiling, print_hotpath, print_instructions, print_openloop, print_pages,
    rate, storm_line,
};
mod server;
mod wrk;

use crate::base::exit::{CliError, Finished};
use crate::cli::BenchStep;
pub use error::BenchError;
use std::time::Duration;

/// Why a step of the benchmark has no figure (a tool missing or failing,
/// an executor refusing): printed where the figure would be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotMeasured(pub String);

impl From<String> for NotMeasured {
    fn from(why: String) -> NotMeasured {
        NotMeasured(why)
    }
}

/// Targets of the issues ("Benchmarks"; the ceiling, CPU and connection
/// targets are issue 17's).
pub const CEILING_TARGET: f64 = 0.6;
/// CPU of the load path per attempt, µs.
pub const CPU_PER_ATTEMPT_TARGET_US: f64 = 25.0;
/// Connections opened may exceed the in-flight cap by this fraction.
pub const CONNECTIONS_SLACK: f64 = 0.05;
pub const HOTPATH_TARGET: f64 = 0.5;
pub const PEAK_RSS_TARGET_MB: f64 = 300.0;
/// Attempts the full storm must reach for its memory target to count.
pub const STORM_ATTEMPTS: u64 = 200_000;

/// How long each step measures.
#[derive(Clone, Debug)]
pub struct Windows {
    pub warmup: Duration,
    /// Whole seconds (wrk and the recorder count whole seconds).
    pub measure: Duration,
    pub pages_each: Duration,
    pub storm_attempts: u64,
    pub storm_limit: Duration,
}

impl Windows {
    pub fn new(quick: bool) -> Self {
        if quick {
            Windows {
                warmup: Duration::from_secs(1),
                measure: Duration::from_secs(2),
                pages_each: Duration::from_millis(250),
                storm_attempts: 50_000,
                storm_limit: Duration::from_secs(20),
            }
        } else {
            Windows {
                warmup: Duration::from_secs(1),
                measure: Duration::from_secs(5),
                pages_each: Duration::from_secs(1),
                storm_attempts: STORM_ATTEMPTS,
                storm_limit: Duration::from_secs(60),
            }
        }
    }
}

/// The command: runs the steps, prints each result with its verdict.
/// Exit 0 every target met, 1 a target missed, 2 a step failed to run.
pub fn cli(
    quick: bool,
    only: Option<BenchStep>,
    agents: Option<u32>,
) -> Result<Finished, CliError> {
    // goose would install its own Ctrl-C handler, which only stops goose users;
    // here Ctrl-C should just end the benchmark.
    let _ = ctrlc::set_handler(|| std::process::exit(130));
    let w = Windows::new(quick);
    if only == Some(BenchStep::Storm) {
        return storm_here(&w);
    }
    let mut bench = Bench {
        w,
        quick,
        only,
        agents,
        verdicts: Vec::new(),
        ceiling_rps: None,
    };
    bench.header();
    bench.storm();
    bench.ceiling();
    bench.generic();
    bench.openloop();
    bench.hotpath();
    bench.pages();
    bench.instructions();
    bench.finish()
}

/// `--only storm`: the memory step in this process (how the full bench runs
/// it in a fresh one).
fn storm_here(w: &Windows) -> Result<Finished, CliError> {
    let s = memory::run_here(w).map_err(|e| CliError::new(format_args!("{e:#}")))?;
    // Run by `harness bench`, the parent prints it; run directly, say it here.
    if std::env::var_os(memory::TARGET_ENV).is_none() {
        eprintln!("{}", storm_line(&s, w).0);
    }
    Ok(Finished::Passed)
}

/// One bench run: the steps asked for, in their fixed order, each printing
/// its section and adding its verdict; the ceiling step hands its rate to
/// the open-loop step, which drives above it.
struct Bench {
    w: Windows,
    quick: bool,
    only: Option<BenchStep>,
    agents: Option<u32>,
    verdicts: Vec<Verdict>,
    ceiling_rps: Option<f64>,
}

impl Bench {
    /// Is this step part of the run (`--only` names it, or names none)?
    fn want(&self, s: BenchStep) -> bool {
        self.only.is_none_or(|o| o == s)
    }

    /// What the numbers are worth: build profile and CPUs.
    fn header(&self) {
        println!(
            "harness bench{}: {} build, {} CPU(s); traffic to 127.0.0.1 only",
            if self.quick { " --quick" } else { "" },
            if cfg!(debug_assertions) {
                "DEBUG (numbers understate a release build)"
            } else {
                "release"
            },
            crate::base::cpu::cores(),
        );
    }

    /// BenchStep 4: peak RSS through a retry storm, in a child process.
    fn storm(&mut self) {
        if !self.want(BenchStep::Storm) {
            return;
        }
        section(&format!(
            "4. memory: peak RSS through a retry storm of >= {} attempts (fresh process)",
            self.w.storm_attempts
        ));
        self.verdicts.push(match memory::run_in_child(self.quick) {
            Ok(s) => {
                let (line, v) = storm_line(&s, &self.w);
                println!("{line}");
                v
            }
            Err(e) => error(e),
        });
    }

    /// BenchStep 1: the load path's ceiling against wrk; remembers the harness's rate.
    fn ceiling(&mut self) {
        if !self.want(BenchStep::Ceiling) {
            return;
        }
        section(&format!(
            "1. load ceiling: harness load path (goose + journeys + recorder) vs wrk, fixed-503 endpoint, {} s window",
            self.w.measure.as_secs()
        ));
        self.verdicts.push(
            match ceiling::run(&self.w, &ceiling::Endpoint::documents()) {
                Ok(c) => {
                    self.ceiling_rps = Some(c.harness_rps());
                    print_ceiling(&c)
                }
                Err(e) => error(e),
            },
        );
    }

    /// BenchStep 1c: the generic HTTP path (a user's own service's) against
    /// wrk, both GETting one static page.
    fn generic(&mut self) {
        if !self.want(BenchStep::Generic) {
            return;
        }
        section(&format!(
            "1c. generic HTTP path (workload.http: GET of a static page, answered 200) vs wrk, same endpoint and connections, {} s window",
            self.w.measure.as_secs()
        ));
        self.verdicts
            .push(match ceiling::run(&self.w, &ceiling::Endpoint::generic()) {
                Ok(c) => print_ceiling(&c),
                Err(e) => error(e),
            });
    }

    /// BenchStep 5: a constant rate above the ceiling; then (`--agents N`) the ceiling
    /// through load agents, informational unless it fails to run.
    fn openloop(&mut self) {
        if !self.want(BenchStep::Openloop) {
            return;
        }
        let w = &self.w;
        section(&format!(
            "5. open-loop honesty: a constant rate {}x the ceiling (or {}/s alone), every arrival sent, {} s window",
            openloop::OVER_CEILING,
            rate(openloop::FALLBACK_RATE),
            (w.warmup + w.measure).as_secs()
        ));
        self.verdicts
            .push(match openloop::run(w, self.ceiling_rps) {
                Ok(o) => print_openloop(&o),
                Err(e) => error(e),
            });
        if let Some(n) = self.agents {
            section(&format!(
                "1b. load ceiling through load agents: 1 agent, then {n} (child processes, events streamed to the coordinator), fixed-503 endpoint, {} s window",
                self.w.measure.as_secs()
            ));
            match agents::run(&self.w, n) {
                Ok(a) => print_agents(&a),
                Err(e) => {
                    self.verdicts.push(error(e));
                }
            }
        }
    }

    /// BenchStep 2: a cache hit through the system under test against a bare endpoint.
    fn hotpath(&mut self) {
        if !self.want(BenchStep::Hotpath) {
            return;
        }
        section(&format!(
            "2. hot path: cache-hit POST /v1/extract on the system under test vs a bare endpoint, {} s each",
            self.w.measure.as_secs()
        ));
        self.verdicts.push(match hotpath::run(&self.w) {
            Ok(h) => print_hotpath(&h),
            Err(e) => error(e),
        });
    }

    /// BenchStep 3: page executor throughput (no target).
    fn pages(&self) {
        if !self.want(BenchStep::Pages) {
            return;
        }
        section(&format!(
            "3. page executor: pages/s, batches of {} pages, ~{} ms per size",
            pages::BATCH,
            self.w.pages_each.as_millis()
        ));
        print_pages(&pages::run(self.w.pages_each));
    }

    /// BenchStep 6: instructions per attempt under callgrind: minutes, so the full run
    /// (or `--only instructions`) only.
    fn instructions(&mut self) {
        if !(self.want(BenchStep::Instructions)
            && (!self.quick || self.only == Some(BenchStep::Instructions)))
        {
            return;
        }
        section(
            "6. instructions per attempt (callgrind; hardware counters are not available here)",
        );
        match instructions::run() {
            Ok(Some(i)) => print_instructions(&i),
            Ok(None) => {
                println!("   valgrind is not installed: SKIPPED (sudo apt-get install -y valgrind)")
            }
            Err(e) => {
                self.verdicts.push(error(e));
            }
        }
    }

    /// The run's outcome: a step that failed to run outweighs a missed
    /// target, which outweighs passes.
    fn finish(self) -> Result<Finished, CliError> {
        println!();
        if self.verdicts.contains(&Verdict::Error) {
            println!("bench: a step failed to run (see above)");
            Err(CliError::Reported)
        } else if self.verdicts.contains(&Verdict::Miss) {
            println!("bench: a target was MISSED");
            Ok(Finished::Failed)
        } else {
            println!("bench: every measured target PASSED");
            Ok(Finished::Passed)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    Miss,
    Skipped,
    Error,
}

impl Verdict {
    fn of(ok: bool) -> Self {
        if ok {
            Verdict::Pass
        } else {
            Verdict::Miss
        }
    }

    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Miss => "MISS",
            Verdict::Skipped => "SKIPPED",
            Verdict::Error => "ERROR",
        }
    }
}

fn section(title: &str) {
    println!("\n{title}");
}

fn error(e: BenchError) -> Verdict {
    println!("   ERROR: {e}");
    Verdict::Error
}

/// A multi-threaded runtime with two workers (this machine's cores), one per
/// side of a measurement so client and server do not share worker threads.
fn runtime(name: &str) -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(error::during(format!("starting the {name} runtime")))
}

/// Attempts done (answered, rejected, timed out or failed) in the run's
/// seconds `seconds`.
fn attempts_done(
    recorder: &crate::observe::recorder::Recorder,
    seconds: std::ops::Range<usize>,
) -> u64 {
    seconds
        .map(|t| {
            let s = recorder.second(t);
            s.ok + s.rejected + s.timeouts + s.errors
        })
        .sum()
}

/// Attempts done per second over the measurement window (the whole seconds
/// after the warm-up).
fn done_per_s(recorder: &crate::observe::recorder::Recorder, w: &Windows) -> f64 {
    let first = w.warmup.as_secs() as usize;
    let last = (w.warmup + w.measure).as_secs() as usize;
    attempts_done(recorder, first..last) as f64 / (last - first) as f64
}

/// Stops the run when its load window ends: the arrivals planned exceed what
/// can be sent, and those left over are not part of the measurement.
fn stop_at(
    load_end: tokio::time::Instant,
    stop: &std::sync::Arc<crate::base::interrupt::StopSignal>,
) -> tokio::task::JoinHandle<()> {
    let stop = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(load_end).await;
        stop.trigger("measurement window over");
    })
}

/// The journeys of a bench run: `retry`, a 2 s client timeout, one-word
/// one-round pages, seed 1, all recorded in `recorder`.
fn journeys(
    recorder: std::sync::Arc<crate::observe::recorder::Recorder>,
    retry: retry_policy::RetryConfig,
    hard_stop: tokio::time::Instant,
) -> crate::load::JourneySettings {
    crate::load::JourneySettings {
        recorder,
        clients: crate::experiment::ClientBehaviour::synchronous(retry, Duration::from_secs(2)),
        hard_stop,
        page: sut::config::PageConfig {
            words: 1,
            rounds: 1,
        },
        seed: 1,
        http: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_grouped_by_thousands() {
        assert_eq!(rate(0.4), "0");
        assert_eq!(rate(999.0), "999");
        assert_eq!(rate(12_345.6), "12,346");
        assert_eq!(rate(1_234_567.0), "1,234,567");
    }

    #[test]
    fn windows_are_whole_seconds() {
        for q in [false, true] {
            let w = Windows::new(q);
            assert_eq!(w.measure.subsec_nanos(), 0);
            assert_eq!(w.warmup.subsec_nanos(), 0);
        }
    }
}
