//! `harness FILE`: one run of an experiment's variants, from the command
//! line's options (seed, clock, environment, agents) to the summary printed
//! on stderr. `report` and `ablate` share its loading and summary.

use crate::base::clock::ClockKind;
use crate::base::exit::{CliError, Finished};
use crate::cli::RunArgs;
use crate::experiment::{self, Experiment};
use crate::run::{self, RunOptions};
use run_report::Metric;
use std::path::{Path, PathBuf};

pub fn cli(path: PathBuf, args: RunArgs) -> Result<Finished, CliError> {
    let mut exp = load(&path, args.quick, chosen_seed(&args)?)?;
    if args.clock.is_virtual() {
        let containers = args.environment == Some(experiment::EnvironmentSwitch::Containers);
        let flags = (args.agents.is_some(), args.deployed.is_some(), containers);
        if let Some(why) = crate::base::clock::refuse_flags(flags.0, flags.1, flags.2) {
            return Err(CliError::new(why));
        }
    }
    apply_clock(&path, &mut exp, args.clock, args.without_alerts)?;
    if let Some(env) = &args.environment {
        exp.set_environment(*env).map_err(CliError::new)?;
    }
    let (rt, stop) = crate::base::interrupt::clock_runtime(args.clock)?;
    let agents = agent_options(&path, &exp, &args).map_err(CliError::new)?;
    let opts = RunOptions {
        out_dir: args.out.clone(),
        quiet: args.quiet,
        variant: args.variant.clone(),
        agents,
        deployed: args.deployed.clone(),
        context: crate::commands::campaign::recorded_context(&path, &exp),
        clock: args.clock,
    };
    let outcome = rt
        .block_on(run::run(&exp, &opts, stop.clone()))
        .map_err(CliError::new)?;
    print_summary(&outcome, args.quiet);
    if args.json {
        println!(
            "{}",
            run_report::summary_json(&outcome.run, &outcome.analysis)
        );
    }
    if outcome.interrupted {
        eprintln!(
            "interrupted: {}; the report holds what was measured",
            stop.reason().unwrap_or_default()
        );
        return Ok(Finished::Interrupted);
    }
    Ok(Finished::passed_if(outcome.analysis.all_passed))
}

/// `--seed`, or the `--seed-index`-th (else `$JOB_COMPLETION_INDEX`-th) of `--seeds`.
fn chosen_seed(args: &RunArgs) -> Result<Option<u64>, CliError> {
    let Some(spec) = &args.seeds else {
        return Ok(args.seed);
    };
    let index = match &args.seed_index {
        Some(i) => i.clone(),
        None => std::env::var("JOB_COMPLETION_INDEX")
            .map_err(|_| CliError::new("--seeds needs --seed-index or $JOB_COMPLETION_INDEX"))?,
    };
    experiment::seed_at_index(spec, &index)
        .map(Some)
        .map_err(|e| CliError::new(format_args!("--seeds: {e}")))
}

/// `--clock` and `--without-alerts` on `exp` (from `path`): what virtual
/// time cannot run in the file refused at its line and column, before
/// anything runs; on the virtual clock `alerts:` left out, loudly
/// (`--without-alerts` says so in advance, and is refused on the real one).
pub(crate) fn apply_clock(
    path: &Path,
    exp: &mut Experiment,
    clock: ClockKind,
    without_alerts: bool,
) -> Result<(), CliError> {
    if without_alerts && !clock.is_virtual() {
        return Err(CliError::new(
            "--without-alerts is for --clock virtual only",
        ));
    }
    if clock.is_virtual() {
        experiment::check_virtual_clock(&exp.source, &path.display().to_string())
            .map_err(CliError::new)?;
        if exp.leave_out_alerts(crate::base::clock::WITHOUT_ALERTS) {
            eprintln!("WARNING: {}", crate::base::clock::WITHOUT_ALERTS);
        }
    }
    Ok(())
}

/// Why `--agents`, `--agent-listen` or `--deployed` cannot be used as given.
#[derive(Debug, thiserror::Error)]
enum OptionError {
    #[error("--deployed {url}: {error}")]
    DeployedUrl { url: String, error: url::ParseError },
    #[error("--deployed {0} is not a loopback address; load goes to this machine only unless --allow-remote")]
    DeployedRemote(String),
    #[error("--deployed drives one variant's system: name it with --variant")]
    DeployedVariants,
    #[error("--agents must be between 1 and 1000, not {0}")]
    AgentCount(u32),
    #[error("--agents with an external target is not supported: the agents drive a system this run starts or --deployed names")]
    AgentsExternal,
    #[error("--agent-listen {0} is not a loopback address; agents elsewhere need --allow-remote")]
    ListenRemote(std::net::SocketAddr),
}

/// `--deployed`: a loopback URL (unless --allow-remote), for one variant.
fn check_deployed(exp: &Experiment, args: &RunArgs) -> Result<(), OptionError> {
    let Some(url) = &args.deployed else {
        return Ok(());
    };
    let u = reqwest::Url::parse(url).map_err(|error| OptionError::DeployedUrl {
        url: url.clone(),
        error,
    })?;
    if !u.host_str().is_some_and(experiment::loopback_host) && !args.allow_remote {
        return Err(OptionError::DeployedRemote(url.clone()));
    }
    let chosen = exp
        .variants
        .iter()
        .filter(|v| args.variant.as_ref().is_none_or(|n| n == &v.name))
        .count();
    if chosen != 1 {
        return Err(OptionError::DeployedVariants);
    }
    Ok(())
}

/// `--agents`, `--agent-listen`, `--deployed`: checked before anything runs.
fn agent_options(
    path: &Path,
    exp: &Experiment,
    args: &RunArgs,
) -> Result<Option<run::AgentOptions>, OptionError> {
    use crate::run::agent::coordinator::AgentSource;
    check_deployed(exp, args)?;
    let Some(count) = args.agents else {
        return Ok(None);
    };
    if !(1..=1000).contains(&count) {
        return Err(OptionError::AgentCount(count));
    }
    if let experiment::Environment::External { .. } = exp.environment {
        if args.deployed.is_none() {
            return Err(OptionError::AgentsExternal);
        }
    }
    let (listen, source, join) = match args.agent_listen {
        Some(addr) => {
            if !addr.ip().is_loopback() && !args.allow_remote {
                return Err(OptionError::ListenRemote(addr));
            }
            (
                addr,
                AgentSource::Remote,
                std::time::Duration::from_secs(300),
            )
        }
        None => (
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            AgentSource::Children {
                experiment: path.to_path_buf(),
                quick: exp.quick,
                seed: exp.seed,
            },
            std::time::Duration::from_secs(30),
        ),
    };
    Ok(Some(run::AgentOptions {
        count,
        source,
        listen,
        join_timeout: join,
    }))
}

pub(crate) fn print_summary(o: &run::RunOutcome, quiet: bool) {
    let a = &o.analysis;
    for v in &a.variants {
        // A figure the target cannot give (a user's service has no
        // duplicate compute) reads n/a, as in the report.
        let m = |k, scale: f64, digits: usize| match v.metrics.get(k) {
            Some(x) if x.is_finite() => format!("{:.digits$}", x * scale),
            _ => "n/a".to_string(),
        };
        let percent = |k| match m(k, 100.0, 1) {
            na if na == "n/a" => na,
            x => format!("{x}%"),
        };
        eprintln!(
            "{:>12}: {} | waves {} | peak failure {} | amplification peak {} (per second) | attempts per document {} | duplicate compute {} | cache writes lost {} | lost documents {} | incorrect results {}",
            v.name,
            v.verdict.label(),
            m(Metric::Waves, 1.0, 0),
            m(Metric::PeakFailureRatio, 1.0, 2),
            m(Metric::AmplificationPeak, 1.0, 2),
            m(Metric::AttemptsPerDocument, 1.0, 2),
            percent(Metric::DuplicateComputeShare),
            m(Metric::CacheWritesLost, 1.0, 0),
            m(Metric::LostDocuments, 1.0, 0),
            m(Metric::IncorrectResults, 1.0, 0),
        );
        if !quiet || v.verdict.is_bad() {
            eprintln!("{:>12}  {}", "", v.verdict.explanation());
        }
    }
    if let Some(t) = &o.run.timing {
        eprintln!(
            "clock: {}, {:.1} s of it in {:.1} s of wall time ({:.1}x)",
            o.run.clock.name(),
            t.clock_s,
            t.wall_s,
            t.ratio()
        );
    }
    if let Some(ctx) = &o.run.campaign_context {
        for line in ctx.place(a) {
            eprintln!("  in context: {line}");
        }
    }
    for e in &a.expectations {
        if !quiet || !e.passed {
            eprintln!(
                "  [{}] {}: {} {} ({})",
                e.outcome(),
                e.spec.variant,
                run_report::MetricRef::of(&e.spec),
                e.spec.source,
                e.message
            );
        }
    }
    eprintln!("report: {}/index.html", o.report_dir.display());
}
/// Loads and validates an experiment (the located error if it is bad),
/// with the seed overridden when one is given.
pub(crate) fn load(path: &Path, quick: bool, seed: Option<u64>) -> Result<Experiment, CliError> {
    let mut exp = experiment::load(path, quick).map_err(CliError::new)?;
    if let Some(s) = seed {
        exp.seed = s;
    }
    Ok(exp)
}
