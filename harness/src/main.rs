//! `harness`: run an overload experiment, or any command built on runs.
//! It parses the command line (`harness::cli`), undoes what an earlier
//! harness killed with SIGKILL left in force, and dispatches to the command
//! (`harness::commands`); [`exit::code`] turns the result into the exit code.
//!
//! Exit codes: 0 every expectation met; 1 an expectation failed; 2 bad input
//! or a setup error; 130 interrupted (the report of what was measured is
//! still written).

use clap::Parser;
use harness::base::exit::{self, CliError, Finished};
use harness::cli::{Cli, Command, RenderCommand};
use harness::commands;
use std::process::ExitCode;

// mimalloc instead of glibc's malloc: the load path allocates and frees a
// few small buffers per attempt (hyper's request and answer, the journey's
// task), and glibc's malloc and free were about a tenth of the lanes' CPU
// samples (7 % of the machine's; measured when the load path moved to lanes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    // every start, and said; agents and the service's processes apply none
    // and leave them to their run.
    if !matches!(cli.command, Some(Command::Agent(_) | Command::Sut(_))) {
        for line in harness::env::ledger::recover() {
            eprintln!("harness: undone, left by an earlier harness: {line}");
        }
        harness::env::components::sweep_leftover_dirs();
    }
    exit::code(dispatch(cli))
}

/// The command line's command.
fn dispatch(cli: Cli) -> Result<Finished, CliError> {
    match cli.command {
        Some(Command::Validate { experiment, .. }) => commands::validate::cli(&experiment),
        Some(Command::Ablate(args)) => commands::ablate::cli(args),
        Some(Command::Bench {
            quick,
            only,
            agents,
        }) => commands::bench::cli(quick, only, agents),
        Some(Command::Report { dir, with, quiet }) => {
            commands::report::cli(&dir, with.as_deref(), quiet)
        }
        Some(Command::Campaign(args)) => commands::campaign::cli(args),
        Some(Command::Sweep(args)) => commands::sweep::cli(args),
        Some(Command::Threshold(args)) => commands::threshold::cli(args),
        Some(Command::Agent(args)) => harness::run::agent::cli(args),
        Some(Command::Schema) => {
            // Into a pipe that closes early (`| head`, `| diff -q`), a
            // broken pipe ends the output quietly; print! would panic.
            use std::io::Write;
            let json = harness::experiment::schema::json();
            let _ = std::io::stdout().lock().write_all(json.as_bytes());
            Ok(Finished::Passed)
        }
        Some(Command::Sut(args)) => match sut::serve::main(args) {
            Ok(()) => Ok(Finished::Passed),
            Err(e) => Err(CliError::new(format_args!("sut: {e}"))),
        },
        Some(Command::Reference { page }) => {
            use std::io::Write;
            let text = commands::reference::page(page);
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(Finished::Passed)
        }
        Some(Command::Render(RenderCommand::K8s(args))) => {
            let files = commands::render::k8s_to_dir(&args).map_err(CliError::new)?;
            for f in files {
                println!("{}", f.display());
            }
            Ok(Finished::Passed)
        }
        None => match cli.run.experiment.clone() {
            Some(path) => commands::run::cli(path, cli.run),
            None => Err(CliError::Line(
                "usage: harness <EXPERIMENT.yaml> [--quick] [--out DIR] | harness validate <EXPERIMENT.yaml>".into(),
            )),
        },
    }
}
