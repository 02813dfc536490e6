//! `harness bench`: can the harness out-drive the system it tests?
//!
//! A chaos harness that cannot send more than the service can take hides the
//! overload it is meant to show. Four measurements, in one run, each with its
//! target printed PASS / MISS beside it (see BENCHMARKS.md for method and
//! latest numbers):
//!
//! 1. [`ceiling`]: the harness's load path vs wrk on a trivial endpoint (>= 0.6),
//!    its CPU per attempt (<= 25 µs) and the connections it opened
//!    (<= max_in_flight + 5 %).
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
mod hotpath;
mod instructions;
mod memory;
mod openloop;
mod pages;
mod server;
mod wrk;

use crate::exit::{CliError, Finished};
use std::time::Duration;

/// One step of the benchmark (`--only`); `storm` is also how the memory step
/// runs itself in a fresh process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Step {
    Storm,
    Ceiling,
    Openloop,
    Hotpath,
    Pages,
    Instructions,
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
pub fn cli(quick: bool, only: Option<Step>, agents: Option<u32>) -> Result<Finished, CliError> {
    // goose would install its own Ctrl-C handler, which only stops goose users;
    // here Ctrl-C should just end the benchmark.
    let _ = ctrlc::set_handler(|| std::process::exit(130));
    let w = Windows::new(quick);
    if only == Some(Step::Storm) {
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
    only: Option<Step>,
    agents: Option<u32>,
    verdicts: Vec<Verdict>,
    ceiling_rps: Option<f64>,
}

impl Bench {
    /// Is this step part of the run (`--only` names it, or names none)?
    fn want(&self, s: Step) -> bool {
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
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        );
    }

    /// Step 4: peak RSS through a retry storm, in a child process.
    fn storm(&mut self) {
        if !self.want(Step::Storm) {
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

    /// Step 1: the load path's ceiling against wrk; remembers the harness's rate.
    fn ceiling(&mut self) {
        if !self.want(Step::Ceiling) {
            return;
        }
        section(&format!(
            "1. load ceiling: harness load path (goose + journeys + recorder) vs wrk, fixed-503 endpoint, {} s window",
            self.w.measure.as_secs()
        ));
        self.verdicts.push(match ceiling::run(&self.w) {
            Ok(c) => {
                self.ceiling_rps = Some(c.harness_rps());
                print_ceiling(&c)
            }
            Err(e) => error(e),
        });
    }

    /// Step 5: a constant rate above the ceiling; then (`--agents N`) the ceiling
    /// through load agents, informational unless it fails to run.
    fn openloop(&mut self) {
        if !self.want(Step::Openloop) {
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

    /// Step 2: a cache hit through the system under test against a bare endpoint.
    fn hotpath(&mut self) {
        if !self.want(Step::Hotpath) {
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

    /// Step 3: page executor throughput (no target).
    fn pages(&self) {
        if !self.want(Step::Pages) {
            return;
        }
        section(&format!(
            "3. page executor: pages/s, batches of {} pages, ~{} ms per size",
            pages::BATCH,
            self.w.pages_each.as_millis()
        ));
        print_pages(&pages::run(self.w.pages_each));
    }

    /// Step 6: instructions per attempt under callgrind: minutes, so the full run
    /// (or `--only instructions`) only.
    fn instructions(&mut self) {
        if !(self.want(Step::Instructions)
            && (!self.quick || self.only == Some(Step::Instructions)))
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

fn error(e: anyhow::Error) -> Verdict {
    println!("   ERROR: {e:#}");
    Verdict::Error
}

/// A multi-threaded runtime with two workers (this machine's cores), one per
/// side of a measurement so client and server do not share worker threads.
fn runtime(name: &str) -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(name)
        .enable_all()
        .build()
        .with_context(|| format!("starting the {name} runtime"))
}

/// Attempts done (answered, rejected, timed out or failed) in the run's
/// seconds `seconds`.
fn attempts_done(recorder: &crate::recorder::Recorder, seconds: std::ops::Range<usize>) -> u64 {
    seconds
        .map(|t| {
            let s = recorder.second(t);
            s.ok + s.rejected + s.timeouts + s.errors
        })
        .sum()
}

/// Attempts done per second over the measurement window (the whole seconds
/// after the warm-up).
fn done_per_s(recorder: &crate::recorder::Recorder, w: &Windows) -> f64 {
    let first = w.warmup.as_secs() as usize;
    let last = (w.warmup + w.measure).as_secs() as usize;
    attempts_done(recorder, first..last) as f64 / (last - first) as f64
}

/// Stops the run when its load window ends: the arrivals planned exceed what
/// can be sent, and those left over are not part of the measurement.
fn stop_at(
    load_end: tokio::time::Instant,
    stop: &std::sync::Arc<crate::interrupt::StopSignal>,
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
    recorder: std::sync::Arc<crate::recorder::Recorder>,
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
    }
}

fn rate(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn storm_line(s: &memory::Storm, w: &Windows) -> (String, Verdict) {
    let mb = s.peak_rss_kb as f64 / 1024.0;
    let enough = s.attempts >= w.storm_attempts;
    let v = if enough {
        Verdict::of(mb < PEAK_RSS_TARGET_MB)
    } else {
        Verdict::Miss
    };
    let mut line = format!(
        "   peak RSS {mb:.1} MB (baseline {:.1} MB) through {} attempts of {} documents in {:.1} s ({}/s; goose saw {})\n   target < {PEAK_RSS_TARGET_MB:.0} MB  {}",
        s.baseline_rss_kb as f64 / 1024.0,
        rate(s.attempts as f64),
        s.documents,
        s.seconds,
        rate(s.attempts as f64 / s.seconds.max(1e-9)),
        rate(s.goose_requests as f64),
        v.label()
    );
    if !enough {
        line.push_str(&format!(
            " (only {} of the {} attempts required were made)",
            s.attempts, w.storm_attempts
        ));
    }
    if w.storm_attempts < STORM_ATTEMPTS {
        line.push_str(&format!(
            " (quick: {} attempts; the target is defined for {STORM_ATTEMPTS})",
            w.storm_attempts
        ));
    }
    if s.endpoint_in_process {
        line.push_str(" (the endpoint ran in the same process and is counted in the peak)");
    }
    (line, v)
}

/// Informational (no target): agents add hosts, not speed on one host.
fn print_agents(a: &agents::AgentCeilings) {
    let single = a.runs.first().map_or(f64::NAN, |r| r.1);
    for (n, rps, lost) in &a.runs {
        println!(
            "   {n} agent(s) {:>9} req/s combined  ({:.2}x one agent{})",
            rate(*rps),
            rps / single,
            if *lost > 0 {
                format!(", {lost} LOST")
            } else {
                String::new()
            }
        );
    }
    println!(
        "   {} CPU(s) here: the agents share them, so no speed-up is expected on one host",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
}

/// "48 % in the kernel": the share of a client's CPU spent in system calls.
/// The harness and wrk make the same two per request (BENCHMARKS.md), so
/// where both shares are high the host's kernel, not the load path's own
/// code, is what the absolute CPU target measures.
fn in_kernel(share: f64) -> String {
    format!("{:.0} % in the kernel", share * 100.0)
}

/// One harness run and the wrk run after it, on one line.
fn print_pair(i: usize, p: &ceiling::Pair) {
    let wrk = match &p.wrk {
        Ok(w) => {
            let cpu = w
                .cpu_s
                .map(|s| {
                    format!(
                        ", {:.1} us CPU per request ({})",
                        s * 1e6 / (w.requests_per_sec * w.seconds).max(1.0),
                        in_kernel(w.system_s.unwrap_or(0.0) / s.max(1e-9))
                    )
                })
                .unwrap_or_default();
            format!(
                "wrk {:>9} req/s{cpu}; ratio {:.2}",
                rate(w.requests_per_sec),
                p.ratio().unwrap_or(f64::NAN)
            )
        }
        Err(_) => "wrk n/a".to_string(),
    };
    println!(
        "   pair {}: harness {:>9} req/s, {:.1} us CPU per attempt ({}; {} connections opened, {} arrivals waited for the cap, endpoint answered {}); {wrk}",
        i + 1,
        rate(p.harness_rps),
        p.cpu_per_attempt_us,
        in_kernel(p.kernel_share),
        p.connections,
        rate(p.late as f64),
        rate(p.endpoint_requests as f64),
    );
}

/// Step 1's lines: every pair, the medians against their targets, the
/// reqwest diagnostic and the ratio to wrk; the step's verdict.
fn print_ceiling(c: &ceiling::Ceiling) -> Verdict {
    let mut verdicts = Vec::new();
    for (i, p) in c.pairs.iter().enumerate() {
        print_pair(i, p);
    }
    println!(
        "   harness  {:>9} req/s  (median of {} runs, each offered {}/s with max_in_flight {})",
        rate(c.harness_rps()),
        c.pairs.len(),
        rate(ceiling::OFFERED_RATE),
        ceiling::MAX_IN_FLIGHT,
    );
    let cpu = c.cpu_per_attempt_us();
    let v = Verdict::of(cpu <= CPU_PER_ATTEMPT_TARGET_US);
    println!(
        "   CPU per attempt {cpu:.1} us  (median; load runtime threads, warm-up included)   target <= {CPU_PER_ATTEMPT_TARGET_US} us  {}",
        v.label()
    );
    verdicts.push(v);
    let limit = ceiling::MAX_IN_FLIGHT as f64 * (1.0 + CONNECTIONS_SLACK);
    let v = Verdict::of(c.connections() as f64 <= limit);
    println!(
        "   connections opened {} (most in one run)   target <= max_in_flight + {:.0}% = {limit:.0}  {}",
        c.connections(),
        CONNECTIONS_SLACK * 100.0,
        v.label()
    );
    verdicts.push(v);
    println!(
        "   reqwest  {:>9} req/s  (diagnostic: plain reqwest closed loop, {} tasks, the client the load path used before; harness/reqwest {:.2})",
        rate(c.reqwest_rps),
        ceiling::MAX_IN_FLIGHT,
        c.harness_rps() / c.reqwest_rps
    );
    match (c.ratio(), c.pairs.iter().find_map(|p| p.wrk.as_ref().err())) {
        (Some(ratio), _) => {
            let v = Verdict::of(ratio >= CEILING_TARGET);
            println!(
                "   ratio harness/wrk {ratio:.2}  (median of {} pairs, each wrk run right after its harness run, same endpoint and connections)   target >= {CEILING_TARGET}  {}",
                c.pairs.len(),
                v.label()
            );
            verdicts.push(v);
        }
        (None, why) => {
            println!("   wrk: {}", why.map_or("not run", String::as_str));
            println!("   ratio harness/wrk: n/a  {}", Verdict::Skipped.label());
        }
    }
    worst(&verdicts)
}

/// The step's verdict from its targets': a miss wins over a pass.
fn worst(v: &[Verdict]) -> Verdict {
    [Verdict::Error, Verdict::Miss, Verdict::Pass]
        .into_iter()
        .find(|w| v.contains(w))
        .unwrap_or(Verdict::Skipped)
}

fn print_openloop(o: &openloop::OpenLoop) -> Verdict {
    let r = &o.run;
    let ms = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.1}"));
    println!(
        "   offered {}/s for {} planned arrivals; the load path sent them at {:.0}/s ({:.1} s); arrival-schedule lag p50 {} ms, p99 {} ms, max {} ms",
        rate(o.rate),
        rate(r.planned as f64),
        r.spawned as f64 / r.wall_s.max(1e-9),
        r.wall_s,
        ms(r.lag.p50_ms),
        ms(r.lag.p99_ms),
        ms(r.lag.max_ms)
    );
    println!(
        "   attempt latency from the planned time: p50 {:.1} ms, p99 {:.1} ms (the endpoint answers at once)",
        r.latency.p50_ms, r.latency.p99_ms
    );
    if let Some(share) = o.cost.machine_share() {
        println!(
            "   harness share of the machine {:.0}% ({:.1} CPU-s of the load path, {:.1} of the endpoint)",
            share * 100.0,
            o.cost.cpu_of(run_report::CostRole::LoadPath),
            o.cost.cpu_of(run_report::CostRole::SystemUnderTest)
        );
    }
    for w in o.cost.warnings() {
        println!("   !!! HARNESS COST: {w}");
    }
    let mut all = true;
    for (what, ok) in o.honest() {
        all &= ok;
        println!("   {} {what}", if ok { "ok  " } else { "MISS" });
    }
    println!("   {}", openloop::WRK2);
    let v = Verdict::of(all);
    println!("   open loop kept honest under overload  {}", v.label());
    v
}

fn print_instructions(i: &instructions::Instructions) {
    let shapes = [
        (
            "storm",
            &i.runs,
            i.per_attempt,
            "storm: 1,000 journeys retrying; difference of the two runs",
        ),
        (
            "arrivals",
            &i.arrivals_runs,
            i.arrivals_per_attempt,
            "arrivals: a journey per attempt, as in step 1",
        ),
    ];
    for (child, runs, per_attempt, what) in shapes {
        for (a, n) in runs {
            println!(
                "   {child} child: {} attempts, {} instructions",
                rate(*a as f64),
                rate(*n as f64)
            );
        }
        println!(
            "   load path: {} instructions per attempt ({what})",
            rate(per_attempt)
        );
    }
    match &i.wrk_per_request {
        Ok(w) => println!(
            "   wrk:       {} instructions per request (1 thread, 64 connections; ratio load path/wrk {:.1})",
            rate(*w),
            i.per_attempt / w
        ),
        Err(e) => println!("   wrk: not measured ({e})"),
    }
}

fn print_hotpath(h: &hotpath::HotPath) -> Verdict {
    let ratio = h.sut_rps / h.healthz_rps;
    let strict = h.sut_rps / h.bare_rps;
    let v = Verdict::of(ratio >= HOTPATH_TARGET);
    println!("   client: {}", h.client);
    println!(
        "   system under test, cache hit      {:>9} req/s  (POST /v1/extract)",
        rate(h.sut_rps)
    );
    println!(
        "   axum floor, service GET /healthz  {:>9} req/s  (same axum router and layers, trivial handler)",
        rate(h.healthz_rps)
    );
    println!(
        "   bare responder, same JSON body    {:>9} req/s  (no framework at all)",
        rate(h.bare_rps)
    );
    println!(
        "   ratio service/axum floor {ratio:.2}   target >= {HOTPATH_TARGET}  {}   (stricter: service/bare responder {strict:.2})",
        v.label()
    );
    v
}

fn print_pages(p: &pages::Pages) {
    match &p.adapter {
        Ok(a) => println!("   wgpu adapter: {a}"),
        Err(e) => println!("   NO GPU ADAPTER ({e}): CPU reference only"),
    }
    println!(
        "   {:>6} {:>6} {:>12} {:>12} {:>9}",
        "words", "rounds", "cpu pages/s", "wgpu pages/s", "wgpu/cpu"
    );
    for r in &p.rows {
        let (gpu, ratio) = match &r.gpu_pps {
            None => ("-".to_string(), "-".to_string()),
            Some(Ok(g)) => (rate(*g), format!("{:.2}", g / r.cpu_pps)),
            Some(Err(e)) => (format!("ERROR: {e}"), "-".to_string()),
        };
        println!(
            "   {:>6} {:>6} {:>12} {:>12} {:>9}",
            r.words,
            r.rounds,
            rate(r.cpu_pps),
            gpu,
            ratio
        );
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
