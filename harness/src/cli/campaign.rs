//! `harness campaign`: many runs of one experiment, and the campaign tools
//! (merge recorded runs, compare two sets, print a recorded table).

use crate::base::clock::ClockKind;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CampaignArgs {
    #[command(subcommand)]
    pub command: Option<CampaignCommand>,
    /// The experiment file.
    pub experiment: Option<PathBuf>,
    /// Seeds: `1..10` (inclusive) or `1,4,7` (default: the file's
    /// `campaign.seeds`, else 1..5).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Runs of each seed (a repeat runs the same seed again: what differs
    /// is the scheduling, which a chaotic system amplifies).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Runs at once (default: in real time three a core, at most 8, and
    /// with --until-settled the first batch all at once, up to 8 a core;
    /// on the virtual clock one a core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Option<u32>,
    /// Only these variants (repeatable; default: all).
    #[arg(long)]
    pub variant: Vec<String>,
    /// The experiment's quick form.
    #[arg(long)]
    pub quick: bool,
    /// Split each run's load over N load agents (as `harness FILE --agents
    /// N`); `campaign compare` then tells whether N agents measure what one
    /// does.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub agents: Option<u32>,
    /// Every run on this clock (as `harness FILE --clock virtual`).
    #[arg(long, value_enum, default_value = "real")]
    pub clock: ClockKind,
    /// Every run leaves the file's `alerts:` out, which --clock virtual does
    /// by itself (as `harness FILE --clock virtual`). Refused with --clock real.
    #[arg(long)]
    pub without_alerts: bool,
    /// Refuse plans estimated to take longer than this.
    #[arg(long, default_value = "60m")]
    pub budget: humantime::Duration,
    /// Run even when the estimate exceeds the budget.
    #[arg(long)]
    pub force: bool,
    /// Report folder root; the campaign goes to <OUT>/<experiment>-campaign/<id>/.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Continue the campaign in DIR (its plan.json): judged runs are kept;
    /// interrupted, errored and missing ones run.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run seeds 1, 2, ... in batches as wide as --parallel until every
    /// claim is settled: each share of `campaign.expect` (stated with its
    /// error rates) by Wald's SPRT, and each compared pair's headline by the
    /// paired test on runs with a wave. A decided claim's variant is not
    /// run again.
    #[arg(long, conflicts_with_all = ["resume", "seeds", "repeat"])]
    pub until_settled: bool,
    /// With --clock virtual: then run the campaign's first N seeds in real
    /// time, one at a time, and say on the page whether the clocks agree
    /// for this experiment at this commit (a disagreement fails it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub check_real: Option<u32>,
    /// With --until-settled: stop at this many seeds, "not settled".
    #[arg(long, value_name = "N", default_value_t = 20, requires = "until_settled",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_seeds: u32,
}

#[derive(clap::Subcommand)]
pub enum CampaignCommand {
    /// Builds a campaign from recorded runs (other machines, the nightly,
    /// a Kubernetes Indexed Job): every summary.json under the folders.
    Merge(MergeArgs),
    /// Whether two sets of runs of one experiment agree (e.g. sequential
    /// against parallel): Fisher's and Mann–Whitney's tests per variant,
    /// Holm-corrected; exits 1 when they differ.
    Compare(CompareArgs),
    /// Prints a recorded campaign's figures (a `context.json`, or a
    /// committed `experiments/campaigns/NAME.json`) as a Markdown table with
    /// its date and commit, for the documents.
    Table(TableArgs),
}

#[derive(clap::Args)]
pub struct TableArgs {
    /// Campaign contexts (`context.json` files).
    #[arg(required = true)]
    pub contexts: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Folders holding run reports (searched 10 folders deep: a campaign's
    /// folder, or several).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Judge against this experiment file's `campaign:` (expectations over
    /// runs, compared pairs); without it, before-fix against after-fix.
    #[arg(long, value_name = "FILE")]
    pub with: Option<PathBuf>,
    /// Where the campaign's files go.
    #[arg(long, default_value = "reports/merged-campaign")]
    pub out: PathBuf,
}

/// `harness campaign compare A B`: do two sets of runs of one experiment
/// (sequential and parallel, real and virtual time) agree?
#[derive(clap::Args)]
pub struct CompareArgs {
    /// Folders of the first set (e.g. a sequential campaign).
    pub a: PathBuf,
    /// Folders of the second set.
    pub b: PathBuf,
}
