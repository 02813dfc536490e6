//! The commands that plan many runs of one experiment: `sweep`,
//! `threshold` and `ablate`, with the budget arguments they share.

use crate::base::clock::ClockKind;
use std::path::PathBuf;

/// Where `--load` goes in the experiment tree.
pub const LOAD_PATH: &str = "workload.arrival.constant.capacity";

/// The arguments every plan of many runs shares (`sweep`, `threshold`).
#[derive(clap::Args, Debug, Clone)]
pub struct PlanArgs {
    /// Refuse plans estimated to take longer than this (e.g. 30m).
    #[arg(long, default_value = "30m")]
    pub budget: humantime::Duration,
    /// Run even when the estimate exceeds the budget.
    #[arg(long)]
    pub force: bool,
    /// Report folder root; the plan goes to <OUT>/<experiment>-<command>/<run-id>/.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Base seed (default: the experiment's): the plan's runs use base, base + 1, ...
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Command-line arguments of `harness sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// The experiment file (YAML); its quick form is run in every cell.
    pub experiment: PathBuf,
    /// Loads (share of capacity): `FROM..TO:STEPS`, e.g. 0.3..0.9:7.
    #[arg(long, default_value = "0.3..0.9:7")]
    pub load: String,
    /// Where the load goes in the YAML tree (a dotted path, as for
    /// `--trigger`): for an experiment whose arrivals step up, e.g.
    /// `workload.arrival.steps.1.capacity`.
    #[arg(long, default_value = LOAD_PATH)]
    pub load_path: String,
    /// The trigger axis: `PATH[,PATH..]=FROM..TO:STEPS`, a dotted path in the
    /// YAML tree (numeric segments index lists), e.g.
    /// `quick.timeline.1.fault.oversized_documents.count=1..8:5`. Several
    /// comma-separated paths all get the same value.
    #[arg(long)]
    pub trigger: String,
    /// Fixed changes applied to every cell before the grid values:
    /// `PATH=VALUE` (VALUE is YAML: `4s`, `30`, `true`), repeatable, e.g.
    /// `--set quick.timeline.2.at=4s`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Map only this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// Cells run at once (each starts its own system on its own port; in
    /// virtual time each on its own thread).
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// Runs per cell, each with its own seed (base, base + 1, ...): the map
    /// shows the side most of a cell's runs took and how many came back.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs_per_cell: u32,
    /// Every cell's runs on this clock (`--clock virtual`: maps of
    /// thousands of runs in minutes).
    #[arg(long, value_enum, default_value = "real")]
    pub clock: ClockKind,
    /// Leave the file's `alerts:` out, which --clock virtual does by itself,
    /// as for a run. Refused with --clock real.
    #[arg(long)]
    pub without_alerts: bool,
    #[command(flatten)]
    pub plan: PlanArgs,
}

/// Command-line arguments of `harness threshold`.
#[derive(clap::Args, Debug, Clone)]
pub struct ThresholdArgs {
    /// The experiment file (YAML).
    pub experiment: PathBuf,
    /// The trigger value to search: `PATH[,PATH..]=LO..HI`, a dotted path of
    /// the YAML tree (numeric segments index lists), e.g.
    /// `quick.timeline.0.duration=0.5s..8s`. Both ends may carry a duration
    /// unit (ms, s, m); integer ends search whole numbers. The second end is
    /// the severe one: written high to low (`timeline.0.fault.cpu_limit.cpus=1..0.1`)
    /// the search looks for the largest value that tips, for a trigger that
    /// grows as its value falls (a CPU quota, a speed factor).
    #[arg(long)]
    pub trigger: String,
    /// Runs per probe, each with its own seed (called by majority).
    #[arg(long, default_value_t = 3)]
    pub runs_per_probe: u32,
    /// Search only this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// Stop when the bracket is at most this share of HI - LO.
    #[arg(long, default_value_t = 0.1)]
    pub resolution: f64,
    /// Fixed changes applied before the trigger value: `PATH=VALUE` (YAML), repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Run the full form instead of the quick form.
    #[arg(long)]
    pub full: bool,
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Every probe's runs on this clock (`--clock virtual`: many seeds per
    /// probe for the price of a few).
    #[arg(long, value_enum, default_value = "real")]
    pub clock: ClockKind,
    /// Leave the file's `alerts:` out, which --clock virtual does by itself,
    /// as for a run. Refused with --clock real.
    #[arg(long)]
    pub without_alerts: bool,
}

#[derive(clap::Args)]
pub struct AblateArgs {
    pub experiment: PathBuf,
    /// Use the experiment's quick form for every run.
    #[arg(long)]
    pub quick: bool,
    #[arg(long, default_value = "before-fix")]
    pub before: String,
    #[arg(long, default_value = "after-fix")]
    pub after: String,
    /// Refuse plans estimated to take longer than this (e.g. 10m).
    #[arg(long, default_value = "10m")]
    pub budget: humantime::Duration,
    /// Run even when the estimate exceeds the budget.
    #[arg(long)]
    pub force: bool,
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Real time (the default) or virtual time, as for a run.
    #[arg(long, value_enum, default_value = "real")]
    pub clock: ClockKind,
    /// Leave the file's `alerts:` out, which --clock virtual does by itself,
    /// as for a run. Refused with --clock real.
    #[arg(long)]
    pub without_alerts: bool,
}
