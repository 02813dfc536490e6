//! Which clock a run runs on: real time (the default), or virtual time
//! (`--clock virtual`), tokio's paused clock.
//!
//! A run mostly waits on modeled time: page times, deadlines, client
//! timeouts, backoffs and the arrivals' schedule. On a paused clock that
//! advances to the next timer whenever every task is idle, the same code
//! costs only its CPU, and a seed replays exactly. For that, everything runs
//! on one current-thread runtime: the system under test (no runtime of its
//! own), the load path (one lane, no goose: `load::drive_in_process`), the
//! timeline, the residue watcher and the sampler; the load and the control
//! plane reach the system in process (`in_process.rs`), never through a
//! socket; the GPU's batches, and the harness's check of each result, are
//! computed in line by the CPU reference (`gpu_executor::Compute::Inline`),
//! so nothing waits on another thread while the clock advances; and the system's random draws come from the
//! seed (`sut::StartOptions::deterministic`).
//!
//! What cannot run there is refused before anything runs
//! (`experiment::check_virtual_clock`, and [`refuse_flags`] for the
//! command line's options).

/// The clock of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ClockKind {
    /// Wall-clock time: the system on its own runtime, load over loopback TCP.
    #[default]
    Real,
    /// tokio's paused clock: deterministic, as fast as the CPU allows.
    Virtual,
}

impl ClockKind {
    /// `real` or `virtual`, as the command line, run.json and the reports say it.
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Real => "real",
            ClockKind::Virtual => "virtual",
        }
    }

    pub fn is_virtual(self) -> bool {
        self == ClockKind::Virtual
    }

    /// As run.json and the campaign's plan record it.
    pub fn recorded(self) -> run_report::RunClock {
        match self {
            ClockKind::Real => run_report::RunClock::Real,
            ClockKind::Virtual => run_report::RunClock::Virtual,
        }
    }

    /// The wall time of work that takes `real` in real time, for the
    /// estimates stated before anything runs: a fiftieth on the virtual
    /// clock (the slowest build, debug, ran full retry-storm at 84x,
    /// release at 430-500x: BENCHMARKS.md), so a budget is not spent on
    /// an estimate ten times too large.
    pub fn wall_estimate(self, real: std::time::Duration) -> std::time::Duration {
        match self {
            ClockKind::Real => real,
            ClockKind::Virtual => real / 50,
        }
    }

    /// The runtime a run on this clock needs: multi-threaded in real time;
    /// in virtual time one thread whose clock starts paused.
    pub fn runtime(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            ClockKind::Real => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build(),
            ClockKind::Virtual => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build(),
        }
    }
}

/// The command line's options that virtual time cannot honour, by name;
/// `None` when there is none.
pub fn refuse_flags(agents: bool, deployed: bool, containers: bool) -> Option<String> {
    let why = if agents {
        "--agents: load agents are other processes, on the wall clock"
    } else if deployed {
        "--deployed: a deployed system runs on the wall clock"
    } else if containers {
        "--environment containers: containers run on the wall clock"
    } else {
        return None;
    };
    Some(format!(
        "--clock virtual cannot run with {why}; only the embedded environment runs in virtual time"
    ))
}

/// Why a virtual run has no alert metrics: said on the terminal when it
/// starts and recorded as why its alert metrics read n/a; its expectations
/// on them are reported as not evaluated, neither passed nor failed.
pub const WITHOUT_ALERTS: &str = "alerts: left out on the virtual clock (a real Prometheus, which evaluates the alert rules, cannot run on it): the alert metrics read n/a and the expectations on them are NOT EVALUATED; run with --clock real to evaluate them";

/// What a run took on the wall clock and on its own clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    wall: std::time::Instant,
    clock: tokio::time::Instant,
}

impl Span {
    pub(crate) fn start() -> Span {
        Span {
            wall: std::time::Instant::now(),
            clock: tokio::time::Instant::now(),
        }
    }

    /// `(wall seconds, seconds on the run's clock)` since the start.
    pub(crate) fn elapsed(&self) -> (f64, f64) {
        (
            self.wall.elapsed().as_secs_f64(),
            self.clock.elapsed().as_secs_f64(),
        )
    }
}
