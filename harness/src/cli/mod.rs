//! Every command's arguments, as clap parses them: `harness FILE` (a run)
//! and each subcommand. The commands themselves live in `commands/` and
//! take these types; `main.rs` parses and dispatches.
//!
//! One flag means one thing across commands: `--seeds` is always a list of
//! seeds (`1..10` or `1,4,7`); the runs of a sweep's cell and of a
//! threshold's probe are `--runs-per-cell` and `--runs-per-probe`.
//!
//! It stands just above the model (it names the clock and the environment
//! kinds) and below everything that runs, so every command can take its
//! arguments from here.

mod campaign;
mod plans;
mod run;
mod tools;

pub use campaign::{CampaignArgs, CampaignCommand, CompareArgs, MergeArgs, TableArgs};
pub use plans::{AblateArgs, PlanArgs, SweepArgs, ThresholdArgs, LOAD_PATH};
pub use run::RunArgs;
pub use tools::{AgentArgs, BenchStep, K8sArgs, RenderCommand};

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "harness",
    about = "Reproduces overload incidents (retry storms, metastable failures) on demand and shows the fix holds",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand)]
pub enum Command {
    /// Parse and validate an experiment file, its full form and its quick
    /// form (when it has one); run nothing.
    Validate {
        experiment: PathBuf,
        /// Accepted for compatibility: both forms are always validated.
        #[arg(long, hide = true)]
        quick: bool,
    },
    /// Which defect caused it? Runs before-fix with one fix at a time and
    /// after-fix without one fix at a time, and classifies each defect and fix.
    Ablate(AblateArgs),
    /// Benchmarks the harness itself: load ceiling vs wrk, the service's hot
    /// path, the page executors, and peak memory through a retry storm.
    Bench {
        /// Shorter windows (a smoke test).
        #[arg(long)]
        quick: bool,
        /// Run one step only (`storm` is how the memory step re-runs itself).
        #[arg(long, hide = true, value_enum)]
        only: Option<BenchStep>,
        /// Also measure the load ceiling through 1 and then N load agents.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
        agents: Option<u32>,
    },
    /// Judges a recorded run again (its `run.json`) with this harness's
    /// rules and rewrites its report in place: the same verdicts, waves and
    /// expectations a new run would give on the same measurements.
    Report {
        /// A report directory, e.g. reports/retry-storm/latest.
        dir: PathBuf,
        /// Judge against this experiment file's current expectations,
        /// analysis settings and incident figures instead of the recorded ones.
        #[arg(long, value_name = "FILE")]
        with: Option<PathBuf>,
        #[arg(long)]
        quiet: bool,
    },
    /// Many runs of one experiment (seeds x repeats, several at once),
    /// judged with their confidence: verdict shares with exact intervals,
    /// figures' spreads, the fix's proof with its tests, flaky expectations.
    Campaign(CampaignArgs),
    /// Vulnerability maps: runs the quick form over a grid of loads x trigger
    /// sizes and maps which cells recover and which stay degraded, per variant.
    Sweep(SweepArgs),
    /// The critical trigger: bisects one trigger value (magnitude or
    /// duration) for the smallest that tips each variant into a metastable
    /// failure, with several seeds per probe.
    Threshold(ThresholdArgs),
    /// A load agent of a run with --agents (started by the run, or by Kubernetes).
    #[command(hide = true)]
    Agent(AgentArgs),
    /// Prints the experiment file's JSON Schema (derived from the parser's
    /// types; experiments/experiment.schema.json is its committed copy).
    Schema,
    /// Writes the experiment out for an existing engine to run (Kubernetes).
    #[command(subcommand)]
    Render(RenderCommand),
    /// Runs the system under test, or one of its roles, as this process
    /// (how the harness starts the service's processes; the `sut` binary
    /// is the same command).
    #[command(hide = true)]
    Sut(sut::serve::ServeArgs),
    /// Prints a reference page (Markdown) generated from the code: the
    /// command line, the metrics, or the verdicts and their rule
    /// (`ci/docs_reference.py` writes them to docs/reference/).
    #[command(hide = true)]
    Reference {
        #[arg(value_enum)]
        page: ReferencePage,
    },
}

/// The reference pages `harness reference` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ReferencePage {
    Cli,
    Metrics,
    Verdicts,
}
