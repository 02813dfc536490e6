//! Programs a run starts on this machine (a proxy gateway's `haproxy` or
//! `nginx`), looked up on `PATH` when a run starts, not when the file is
//! validated: `harness validate` runs nothing, so a file is valid on a
//! machine that lacks them; the run that needs one refuses, before anything
//! starts, at the line that names it and with the package to install.

use super::{Environment, ExperimentError};

/// A program the experiment needs installed, and where the file asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct NeededProgram {
    /// Its executable's name, looked up on `PATH`.
    pub program: &'static str,
    /// The error a run reports when it is missing (file:line:col: field:
    /// what to install).
    pub missing: ExperimentError,
}

/// The first program `needed` names that is not on `PATH`, as its located
/// error. A proxy gateway runs as a process only in the embedded
/// environment (in containers its image carries it), so elsewhere nothing
/// is looked up.
pub fn check_installed(
    environment: &Environment,
    needed: &[NeededProgram],
) -> Result<(), ExperimentError> {
    if *environment != Environment::Embedded {
        return Ok(());
    }
    match needed.iter().find(|n| super::which(n.program).is_none()) {
        Some(n) => Err(n.missing.clone()),
        None => Ok(()),
    }
}
