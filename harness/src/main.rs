//! `harness`: run an overload experiment, or validate one.
//!
//! Exit codes: 0 every expectation met; 1 an expectation failed; 2 bad input
//! or a setup error; 130 interrupted (the report of what was measured is
//! still written).

use clap::{Parser, Subcommand};
use harness::base::exit::{self, CliError, Finished};
use harness::base::interrupt::cli_runtime;
use harness::experiment;
use harness::run::{self, RunOptions};
use run_report::Metric;
use std::path::PathBuf;
use std::process::ExitCode;

// mimalloc instead of glibc's malloc: the load path allocates and frees a
// few small buffers per attempt (hyper's request and answer, the journey's
// task), and glibc's malloc and free were about a tenth of the lanes' CPU
// samples (7 % of the machine's; measured when the load path moved to lanes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "harness",
    about = "Reproduces overload incidents (retry storms, metastable failures) on demand and shows the fix holds",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// The experiment file (YAML).
    experiment: Option<PathBuf>,
    /// Report folder root; the run goes to <OUT>/<experiment>/<run-id>/.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// The experiment's short form (its `quick:` section), for CI.
    #[arg(long)]
    quick: bool,
    /// Override the experiment's seed.
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Run one seed of this list (`1..20` or `1,4,7`): the one at
    /// --seed-index, else at $JOB_COMPLETION_INDEX (a pod of the Indexed
    /// Job of `render k8s --seeds`).
    #[arg(long, value_name = "SPEC")]
    seeds: Option<String>,
    /// With --seeds: which of them (from 0).
    #[arg(long, value_name = "I", requires = "seeds")]
    seed_index: Option<String>,
    /// Run only this variant.
    #[arg(long)]
    variant: Option<String>,
    /// No progress bar, one summary line per variant.
    #[arg(long)]
    quiet: bool,
    /// Print the summary JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Run in this environment instead of the file's: embedded or containers
    /// (containers needs the images of `ci/images.sh`).
    #[arg(long, value_enum)]
    environment: Option<experiment::EnvironmentKind>,
    /// Split each variant's load over N load agents, child processes that
    /// each drive shard k mod N of the seeded schedule and report to this run.
    #[arg(long, value_name = "N")]
    agents: Option<u32>,
    /// Wait for the agents on this address instead of starting them (they
    /// run `harness agent` elsewhere, e.g. the Indexed Job of `render k8s`).
    #[arg(long, value_name = "ADDR", requires = "agents")]
    agent_listen: Option<std::net::SocketAddr>,
    /// Drive the variant's system already running at URL (deployed from this
    /// file, e.g. by `harness render k8s`) instead of starting one; needs
    /// --variant when the file has more than one.
    #[arg(long, value_name = "URL")]
    deployed: Option<String>,
    /// Allow --deployed and --agent-listen beyond loopback.
    #[arg(long)]
    allow_remote: bool,
    /// Real time (the default), or virtual time: tokio's paused clock, one
    /// thread, the system reached in process; deterministic from the seed
    /// and as fast as the CPU allows (embedded environment only).
    #[arg(long, value_enum, default_value = "real")]
    clock: harness::base::clock::ClockKind,
    /// With --clock virtual: leave the file's `alerts:` out (a real
    /// Prometheus cannot run on the virtual clock); the alert metrics read
    /// n/a, and an expectation on them fails as not measured.
    #[arg(long)]
    without_alerts: bool,
}

#[derive(Subcommand)]
enum Command {
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
        only: Option<harness::commands::bench::Step>,
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
    Campaign(harness::commands::campaign::CampaignArgs),
    /// Vulnerability maps: runs the quick form over a grid of loads x trigger
    /// sizes and maps which cells recover and which stay degraded, per variant.
    Sweep(harness::commands::sweep::SweepArgs),
    /// The critical trigger: bisects one trigger value (magnitude or
    /// duration) for the smallest that tips each variant into a metastable
    /// failure, with several seeds per probe.
    Threshold(harness::commands::threshold::ThresholdArgs),
    /// A load agent of a run with --agents (started by the run, or by Kubernetes).
    #[command(hide = true)]
    Agent(harness::run::agent::AgentArgs),
    /// Prints the experiment file's JSON Schema (derived from the parser's
    /// types; experiments/experiment.schema.json is its committed copy).
    Schema,
    /// Writes the experiment out for an existing engine to run (Kubernetes).
    #[command(subcommand)]
    Render(harness::commands::render::RenderCommand),
}

#[derive(clap::Args)]
struct AblateArgs {
    experiment: PathBuf,
    /// Use the experiment's quick form for every run.
    #[arg(long)]
    quick: bool,
    #[arg(long, default_value = "before-fix")]
    before: String,
    #[arg(long, default_value = "after-fix")]
    after: String,
    /// Refuse plans estimated to take longer than this (e.g. 10m).
    #[arg(long, default_value = "10m")]
    budget: humantime::Duration,
    /// Run even when the estimate exceeds the budget.
    #[arg(long)]
    force: bool,
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    #[arg(long)]
    seed: Option<u64>,
    /// Real time (the default) or virtual time, as for a run.
    #[arg(long, value_enum, default_value = "real")]
    clock: harness::base::clock::ClockKind,
    /// With --clock virtual: leave the file's `alerts:` out, as for a run.
    #[arg(long)]
    without_alerts: bool,
}

fn main() -> ExitCode {
    // Before any thread: the Vulkan loader's spurious "error:" line otherwise.
    gpu_executor::ensure_runtime_dir();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,goose=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // Faults a harness killed earlier (SIGKILL) left in force are undone at
    // every start, and said; agents apply none and leave them to their run.
    if !matches!(cli.command, Some(Command::Agent(_))) {
        for line in harness::env::faults::ledger::recover() {
            eprintln!("harness: undone, left by an earlier harness: {line}");
        }
        harness::env::components::sweep_leftover_dirs();
    }
    exit::code(command(cli))
}

/// Runs the command line's command; [`exit::code`] turns its result into
/// the exit code.
fn command(cli: Cli) -> Result<Finished, CliError> {
    match cli.command {
        Some(Command::Validate { experiment, .. }) => validate(&experiment),
        Some(Command::Ablate(args)) => ablate(args),
        Some(Command::Bench {
            quick,
            only,
            agents,
        }) => harness::commands::bench::cli(quick, only, agents),
        Some(Command::Report { dir, with, quiet }) => report(&dir, with.as_deref(), quiet),
        Some(Command::Campaign(args)) => harness::commands::campaign::cli(args),
        Some(Command::Sweep(args)) => harness::commands::sweep::cli(args),
        Some(Command::Threshold(args)) => harness::commands::threshold::cli(args),
        Some(Command::Agent(args)) => agent(args),
        Some(Command::Schema) => {
            print!("{}", experiment::schema::json());
            Ok(Finished::Passed)
        }
        Some(Command::Render(harness::commands::render::RenderCommand::K8s(args))) => {
            let files = harness::commands::render::k8s_to_dir(&args).map_err(CliError::new)?;
            for f in files {
                println!("{}", f.display());
            }
            Ok(Finished::Passed)
        }
        None => match cli.run.experiment.clone() {
            Some(path) => run(path, cli.run),
            None => Err(CliError::Line(
                "usage: harness <EXPERIMENT.yaml> [--quick] [--out DIR] | harness validate <EXPERIMENT.yaml>".into(),
            )),
        },
    }
}

fn validate(path: &std::path::Path) -> Result<Finished, CliError> {
    let (full, quick) = experiment::load_forms(path).map_err(CliError::new)?;
    // The rule files are the same in both forms: promtool judges them once.
    if let Some(a) = &full.alerts {
        harness::observe::prometheus::check_rules(a)
            .map_err(|e| CliError::new(format_args!("{}: alerts.rules: {e}", path.display())))?;
    }
    harness::observe::target_series::check(&full).map_err(CliError::new)?;
    for e in std::iter::once(&full).chain(quick.as_ref()) {
        println!(
            "{}: ok{} — {} variant(s), {} timeline entries, {} expectations, {} over runs, {} per variant",
            path.display(),
            if e.quick { " (quick form)" } else { "" },
            e.variants.len(),
            e.timeline.len(),
            e.expectations.len(),
            e.campaign.expectations.len(),
            humantime::format_duration(e.duration)
        );
    }
    Ok(Finished::Passed)
}

/// Loads and validates an experiment (the located error if it is bad),
/// with the seed overridden when one is given.
fn load(
    path: &std::path::Path,
    quick: bool,
    seed: Option<u64>,
) -> Result<experiment::Experiment, CliError> {
    let mut exp = experiment::load(path, quick).map_err(CliError::new)?;
    if let Some(s) = seed {
        exp.seed = s;
    }
    Ok(exp)
}

fn run(path: PathBuf, args: RunArgs) -> Result<Finished, CliError> {
    let mut exp = load(&path, args.quick, chosen_seed(&args)?)?;
    if args.clock.is_virtual() {
        let containers = args.environment == Some(experiment::EnvironmentKind::Containers);
        let flags = (args.agents.is_some(), args.deployed.is_some(), containers);
        if let Some(why) = harness::base::clock::refuse_flags(flags.0, flags.1, flags.2) {
            return Err(CliError::new(why));
        }
    }
    apply_clock(&path, &mut exp, args.clock, args.without_alerts)?;
    if let Some(env) = &args.environment {
        exp.set_environment(*env).map_err(CliError::new)?;
    }
    let (rt, stop) = harness::base::interrupt::clock_runtime(args.clock)?;
    let agents = agent_options(&path, &exp, &args).map_err(CliError::new)?;
    let opts = RunOptions {
        out_dir: args.out.clone(),
        quiet: args.quiet,
        variant: args.variant.clone(),
        agents,
        deployed: args.deployed.clone(),
        context: harness::commands::campaign::recorded_context(&path, &exp),
        clock: args.clock,
    };
    let outcome = rt
        .block_on(run::run(&exp, &opts, stop.clone()))
        .map_err(|e| CliError::new(format_args!("{e:#}")))?;
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
/// anything runs; `alerts:` left out when asked.
fn apply_clock(
    path: &std::path::Path,
    exp: &mut experiment::Experiment,
    clock: harness::base::clock::ClockKind,
    without_alerts: bool,
) -> Result<(), CliError> {
    if without_alerts && !clock.is_virtual() {
        return Err(CliError::new(
            "--without-alerts is for --clock virtual only",
        ));
    }
    if clock.is_virtual() {
        experiment::check_virtual_clock(&exp.source, &path.display().to_string(), without_alerts)
            .map_err(CliError::new)?;
    }
    if without_alerts {
        exp.leave_out_alerts(harness::base::clock::WITHOUT_ALERTS);
    }
    Ok(())
}

/// `--agents`, `--agent-listen`, `--deployed`: checked before anything runs.
fn agent_options(
    path: &std::path::Path,
    exp: &experiment::Experiment,
    args: &RunArgs,
) -> Result<Option<run::AgentOptions>, String> {
    use harness::run::agent::coordinator::AgentSource;
    let loopback = |host: Option<&str>| {
        host.is_some_and(|h| {
            h == "localhost"
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
    };
    if let Some(url) = &args.deployed {
        let u = reqwest::Url::parse(url).map_err(|e| format!("--deployed {url}: {e}"))?;
        if !loopback(u.host_str()) && !args.allow_remote {
            return Err(format!("--deployed {url} is not a loopback address; load goes to this machine only unless --allow-remote"));
        }
        let chosen = exp
            .variants
            .iter()
            .filter(|v| args.variant.as_ref().is_none_or(|n| n == &v.name))
            .count();
        if chosen != 1 {
            return Err("--deployed drives one variant's system: name it with --variant".into());
        }
    }
    let Some(count) = args.agents else {
        return Ok(None);
    };
    if !(1..=1000).contains(&count) {
        return Err(format!("--agents must be between 1 and 1000, not {count}"));
    }
    if let experiment::Environment::External { .. } = exp.environment {
        if args.deployed.is_none() {
            return Err("--agents with an external target is not supported: the agents drive a system this run starts or --deployed names".into());
        }
    }
    let (listen, source, join) = match args.agent_listen {
        Some(addr) => {
            if !addr.ip().is_loopback() && !args.allow_remote {
                return Err(format!("--agent-listen {addr} is not a loopback address; agents elsewhere need --allow-remote"));
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

fn agent(args: harness::run::agent::AgentArgs) -> Result<Finished, CliError> {
    let (rt, stop) = cli_runtime()?;
    rt.block_on(harness::run::agent::run(args, stop))
        .map_err(|e| CliError::Line(format!("harness agent: error: {e:#}")))?;
    Ok(Finished::Passed)
}

fn report(
    dir: &std::path::Path,
    with: Option<&std::path::Path>,
    quiet: bool,
) -> Result<Finished, CliError> {
    let mut run = run_report::read_run(dir).map_err(|e| match e {
        run_report::ReportError::Io { .. } => CliError::new(format_args!(
            "{e} (a report directory written by this harness holds run.json)"
        )),
        e => CliError::new(e),
    })?;
    if run.schema < run_report::RUN_SCHEMA {
        eprintln!(
            "note: {} was recorded with run schema {} (this harness writes {}): judged again \
             with the current rule; what it did not record is not judged, and the report says \
             so (e.g. latency without per-second latency counts)",
            dir.join("run.json").display(),
            run.schema,
            run_report::RUN_SCHEMA
        );
    }
    if let Some(file) = with {
        let exp = load(file, run.quick, None)?;
        run.expectations = exp
            .expectations
            .into_iter()
            .filter(|e| run.variants.iter().any(|v| v.name == e.variant))
            .collect();
        run.analysis = exp.analysis;
        run.incident_figures = exp.incident;
    }
    let analysis = run_report::analyse(&run);
    let files = run_report::write_report(dir, &run, &analysis).map_err(CliError::new)?;
    let outcome = run::RunOutcome {
        interrupted: run.variants.iter().any(|v| v.interrupted),
        report_dir: dir.to_path_buf(),
        files,
        analysis,
        run,
    };
    print_summary(&outcome, quiet);
    Ok(Finished::passed_if(outcome.analysis.all_passed))
}

fn ablate(args: AblateArgs) -> Result<Finished, CliError> {
    use harness::commands::ablate;
    let mut exp = load(&args.experiment, args.quick, args.seed)?;
    apply_clock(&args.experiment, &mut exp, args.clock, args.without_alerts)?;
    let plan = ablate::plan(&exp, &args.before, &args.after)
        .map_err(|e| CliError::new(format_args!("{e:#}")))?;
    let est = args.clock.wall_estimate(ablate::estimate(&plan));
    eprintln!(
        "ablation of {}: {} fix groups ({}), {} runs, estimated {}",
        exp.name,
        plan.groups.len(),
        plan.groups
            .iter()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        plan.experiment.variants.len(),
        humantime::format_duration(std::time::Duration::from_secs(est.as_secs()))
    );
    harness::commands::budget::check(est, *args.budget, args.force, "use --quick")
        .map_err(CliError::new)?;
    let (rt, stop) = harness::base::interrupt::clock_runtime(args.clock)?;
    let opts = RunOptions {
        out_dir: args.out,
        clock: args.clock,
        ..RunOptions::default()
    };
    let outcome = rt
        .block_on(run::run(&plan.experiment, &opts, stop.clone()))
        .map_err(|e| CliError::new(format_args!("{e:#}")))?;
    let c = ablate::classify(
        &plan.groups,
        &plan.before,
        &plan.after,
        &ablate::results_of(&outcome.analysis),
    );
    print!("{}", run_report::ablation::ablation_table(&c));
    let png = std::fs::read(outcome.report_dir.join("charts/waves.png")).ok();
    run_report::ablation::write_ablation(
        &outcome.report_dir,
        &exp.name,
        &c,
        "index.html",
        png.as_deref(),
    )
    .map_err(|e| CliError::new(format_args!("writing the ablation's page: {e}")))?;
    eprintln!("ablation: {}/ablation.html", outcome.report_dir.display());
    if outcome.interrupted {
        return Ok(Finished::Interrupted);
    }
    Ok(Finished::Passed)
}

fn print_summary(o: &run::RunOutcome, quiet: bool) {
    let a = &o.analysis;
    for v in &a.variants {
        let m = |k| v.metrics.get(k).unwrap_or(f64::NAN);
        eprintln!(
            "{:>12}: {} | waves {} | peak failure {:.2} | amplification peak {:.2} mean {:.2} | duplicate compute {:.1}% | cache writes lost {} | lost documents {} | incorrect results {}",
            v.name,
            v.verdict.label(),
            m(Metric::Waves),
            m(Metric::PeakFailureRatio),
            m(Metric::AmplificationPeak),
            m(Metric::AmplificationMean),
            m(Metric::DuplicateComputeShare) * 100.0,
            m(Metric::CacheWritesLost),
            m(Metric::LostDocuments),
            m(Metric::IncorrectResults),
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
                if e.passed { "PASS" } else { "FAIL" },
                e.spec.variant,
                run_report::MetricRef::of(&e.spec),
                e.spec.source,
                e.message
            );
        }
    }
    eprintln!("report: {}/index.html", o.report_dir.display());
}
