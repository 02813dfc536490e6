//! `harness`: run an overload experiment, or validate one.
//!
//! Exit codes: 0 every expectation met; 1 an expectation failed; 2 bad input
//! or a setup error; 130 interrupted (the report of what was measured is
//! still written).

use clap::{Parser, Subcommand};
use harness::experiment;
use harness::interrupt::{install_ctrl_c, StopSignal};
use harness::runner::{self, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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
    #[arg(long)]
    seed: Option<u64>,
    /// Run only this variant.
    #[arg(long)]
    variant: Option<String>,
    /// No progress bar, one summary line per variant.
    #[arg(long)]
    quiet: bool,
    /// Print the summary JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and validate an experiment file; run nothing.
    Validate {
        experiment: PathBuf,
        /// Validate the quick form too.
        #[arg(long)]
        quick: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,goose=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Validate { experiment, quick }) => validate(&experiment, quick),
        None => match cli.run.experiment.clone() {
            Some(path) => run(path, cli.run),
            None => {
                eprintln!("usage: harness <EXPERIMENT.yaml> [--quick] [--out DIR] | harness validate <EXPERIMENT.yaml>");
                ExitCode::from(2)
            }
        },
    }
}

fn validate(path: &std::path::Path, quick: bool) -> ExitCode {
    let mut forms = vec![false];
    if quick {
        forms.push(true);
    }
    for q in forms {
        match experiment::load(path, q) {
            Ok(e) => println!(
                "{}: ok{} — {} variant(s), {} timeline entries, {} expectations, {} per variant",
                path.display(),
                if q { " (quick)" } else { "" },
                e.variants.len(),
                e.timeline.len(),
                e.expectations.len(),
                humantime::format_duration(e.duration)
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::SUCCESS
}

fn run(path: PathBuf, args: RunArgs) -> ExitCode {
    let mut exp = match experiment::load(&path, args.quick) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = args.seed {
        exp.seed = seed;
    }
    let stop = Arc::new(StopSignal::default());
    install_ctrl_c(stop.clone());
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = RunOptions {
        out_dir: args.out.clone(),
        quiet: args.quiet,
        variant: args.variant.clone(),
    };
    let outcome = rt.block_on(runner::run(&exp, &opts, stop.clone()));
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
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
        return ExitCode::from(130);
    }
    if outcome.analysis.all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_summary(o: &runner::RunOutcome, quiet: bool) {
    let a = &o.analysis;
    for v in &a.variants {
        let m = |k: &str| v.metrics.get(k).copied().unwrap_or(f64::NAN);
        eprintln!(
            "{:>12}: waves {} | peak failure {:.2} | amplification peak {:.2} mean {:.2} | duplicate compute {:.1}% | cache writes lost {} | lost documents {} | incorrect results {} | {:?}",
            v.name,
            m("waves"),
            m("peak_failure_ratio"),
            m("amplification_peak"),
            m("amplification_mean"),
            m("duplicate_compute_share") * 100.0,
            m("cache_writes_lost"),
            m("lost_documents"),
            m("incorrect_results"),
            v.verdict
        );
    }
    for e in &a.expectations {
        if !quiet || !e.passed {
            eprintln!(
                "  [{}] {}: {} {} (measured {})",
                if e.passed { "PASS" } else { "FAIL" },
                e.spec.variant,
                e.spec.metric,
                e.spec.source,
                e.measured
                    .map(|x| format!("{x:.3}"))
                    .unwrap_or_else(|| "n/a".into())
            );
        }
    }
    eprintln!("report: {}/index.html", o.report_dir.display());
}
