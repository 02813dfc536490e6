//! The harness's command boundary: every subcommand returns
//! `Result<Finished, CliError>`, and [`code`] is the one place either
//! becomes the process's exit code and the one place an error is printed.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done: every expectation (or benchmark target) met |
//! | 1 | done: an expectation failed, a target was missed |
//! | 2 | bad input or a setup error ([`CliError`]) |
//! | 130 | interrupted by Ctrl-C; the report of what was measured is still written |
//! | 143 | stopped by SIGTERM; likewise |
//!
//! (A second Ctrl-C exits at once with 130, from the signal handler:
//! `interrupt::install_ctrl_c`, and `bench`'s own.)

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a command that ran to its end (or was stopped) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// Every expectation or target met: exit 0.
    Passed,
    /// An expectation failed or a target was missed: exit 1.
    Failed,
    /// Stopped early (Ctrl-C, a system that stopped answering) after
    /// writing what was measured: exit 130.
    Interrupted,
}

impl Finished {
    /// `Passed` when `ok`, else `Failed`.
    pub fn passed_if(ok: bool) -> Finished {
        if ok {
            Finished::Passed
        } else {
            Finished::Failed
        }
    }
}

/// Why a command could not do its work: exit 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Printed as `error: <message>`.
    #[error("error: {0}")]
    Error(String),
    /// Printed as written: a line with its own prefix (`usage: ...`,
    /// `harness agent: error: ...`).
    #[error("{0}")]
    Line(String),
    /// The command has already said why (e.g. `bench`'s summary on stdout);
    /// nothing more is printed.
    #[error("(reported above)")]
    Reported,
}

impl CliError {
    /// `error: <e>`, `e` as it displays (the harness's error types print
    /// their causes themselves).
    pub fn new(e: impl fmt::Display) -> CliError {
        CliError::Error(e.to_string())
    }
}

/// Whether the process was stopped by SIGTERM, not Ctrl-C: its
/// interruption exits 143 (128 + 15), as a shell reports it.
static SIGTERM: AtomicBool = AtomicBool::new(false);

/// Notes that SIGTERM stopped the process (`interrupt.rs`'s watcher).
pub(crate) fn note_sigterm() {
    SIGTERM.store(true, Ordering::SeqCst);
}

/// The exit code of a command's result; prints the error, if any, on stderr.
pub fn code(result: Result<Finished, CliError>) -> ExitCode {
    match result {
        Ok(Finished::Passed) => ExitCode::SUCCESS,
        Ok(Finished::Failed) => ExitCode::from(1),
        Ok(Finished::Interrupted) if SIGTERM.load(Ordering::SeqCst) => ExitCode::from(143),
        Ok(Finished::Interrupted) => ExitCode::from(130),
        Err(CliError::Reported) => ExitCode::from(2),
        Err(e @ (CliError::Error(_) | CliError::Line(_))) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_code_per_outcome() {
        assert_eq!(code(Ok(Finished::Passed)), ExitCode::SUCCESS);
        assert_eq!(code(Ok(Finished::Failed)), ExitCode::from(1));
        assert_eq!(code(Ok(Finished::Interrupted)), ExitCode::from(130));
        assert_eq!(code(Err(CliError::Reported)), ExitCode::from(2));
        assert_eq!(CliError::new("bad").to_string(), "error: bad");
        assert_eq!(CliError::Line("usage: x".into()).to_string(), "usage: x");
    }
}
