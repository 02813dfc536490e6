//! `harness FILE`: one run of an experiment's variants.

use crate::base::clock::ClockKind;
use crate::experiment::EnvironmentSwitch;
use std::path::PathBuf;

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// The experiment file (YAML).
    pub experiment: Option<PathBuf>,
    /// Report folder root; the run goes to <OUT>/<experiment>/<run-id>/.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// The experiment's short form (its `quick:` section), for CI.
    #[arg(long)]
    pub quick: bool,
    /// Override the experiment's seed.
    #[arg(long, conflicts_with = "seeds")]
    pub seed: Option<u64>,
    /// Run one seed of this list (`1..20` or `1,4,7`): the one at
    /// --seed-index, else at $JOB_COMPLETION_INDEX (a pod of the Indexed
    /// Job of `render k8s --seeds`).
    #[arg(long, value_name = "SPEC")]
    pub seeds: Option<String>,
    /// With --seeds: which of them (from 0).
    #[arg(long, value_name = "I", requires = "seeds")]
    pub seed_index: Option<String>,
    /// Run only this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// No progress bar, one summary line per variant.
    #[arg(long)]
    pub quiet: bool,
    /// Print the summary JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run this project's system in this environment instead of the file's:
    /// embedded or containers (containers needs the images of
    /// `ci/images.sh`). An external target or your own processes are set in
    /// the file (`environment:` with `target:` or `system.processes`).
    #[arg(long, value_parser = SwitchParser)]
    pub environment: Option<EnvironmentSwitch>,
    /// Split each variant's load over N load agents, child processes that
    /// each drive shard k mod N of the seeded schedule and report to this run.
    #[arg(long, value_name = "N")]
    pub agents: Option<u32>,
    /// Wait for the agents on this address instead of starting them (they
    /// run `harness agent` elsewhere, e.g. the Indexed Job of `render k8s`).
    #[arg(long, value_name = "ADDR", requires = "agents")]
    pub agent_listen: Option<std::net::SocketAddr>,
    /// Drive the variant's system already running at URL (deployed from this
    /// file, e.g. by `harness render k8s`) instead of starting one; needs
    /// --variant when the file has more than one.
    #[arg(long, value_name = "URL")]
    pub deployed: Option<String>,
    /// Allow --deployed and --agent-listen beyond loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// Real time (the default), or virtual time: tokio's paused clock, one
    /// thread, the system reached in process; deterministic from the seed
    /// and as fast as the CPU allows (embedded environment only).
    #[arg(long, value_enum, default_value = "real")]
    pub clock: ClockKind,
    /// Leave the file's `alerts:` out, which --clock virtual does by itself
    /// (a real Prometheus cannot run on the virtual clock), saying so; the
    /// alert metrics read n/a and the expectations on them are not
    /// evaluated. Refused with --clock real.
    #[arg(long)]
    pub without_alerts: bool,
}

/// `--environment`: embedded or containers; `external` and `processes`,
/// which are the file's kinds, are refused saying where they are set.
#[derive(Clone)]
struct SwitchParser;

impl clap::builder::TypedValueParser for SwitchParser {
    type Value = EnvironmentSwitch;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<EnvironmentSwitch, clap::Error> {
        let why = match value.to_str() {
            Some("external") => "an external target is set in the experiment file (`environment: external` with `target: { url: ... }`), not on the command line",
            Some("processes") => "your own processes are set in the experiment file (`environment: processes` with `system.processes`), not on the command line",
            _ => return clap::builder::EnumValueParser::<EnvironmentSwitch>::new().parse_ref(cmd, arg, value),
        };
        Err(clap::Error::raw(
            clap::error::ErrorKind::InvalidValue,
            format!(
                "--environment {}: {why}; --environment takes embedded or containers\n",
                value.to_string_lossy()
            ),
        )
        .with_cmd(cmd))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        use clap::ValueEnum;
        Some(Box::new(
            EnvironmentSwitch::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value()),
        ))
    }
}
