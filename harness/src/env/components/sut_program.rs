//! The system under test's own program, for the component processes: a
//! `sut` binary, or the harness itself with its `sut` subcommand (one
//! build carries both, so every shipped experiment runs after it).

use super::ComponentError;
use std::path::PathBuf;

/// How to start the system under test as a process: a `sut` binary, or a
/// `harness` binary with its `sut` subcommand (one build carries both).
#[derive(Debug, Clone)]
pub(crate) struct SutProgram {
    pub program: PathBuf,
    /// `Some("sut")` when `program` is the harness.
    subcommand: Option<&'static str>,
}

impl SutProgram {
    /// `program [subcommand] args`.
    pub(super) fn args(&self, args: Vec<String>) -> Vec<String> {
        self.subcommand
            .map(str::to_string)
            .into_iter()
            .chain(args)
            .collect()
    }
}

/// The service's program: `$HARNESS_SUT_BIN` (a `sut` binary), else this
/// executable when it is the harness, else a `harness` (then a `sut`)
/// binary beside it or one folder up (integration tests run from
/// `target/debug/deps`).
pub(crate) fn sut_binary() -> Result<SutProgram, ComponentError> {
    if let Some(p) = std::env::var_os("HARNESS_SUT_BIN").filter(|p| !p.is_empty()) {
        return Ok(SutProgram {
            program: PathBuf::from(p),
            subcommand: None,
        });
    }
    let exe = std::env::current_exe().map_err(ComponentError::Exe)?;
    let harness = |program: PathBuf| SutProgram {
        program,
        subcommand: Some("sut"),
    };
    if exe.file_stem().is_some_and(|s| s == "harness") {
        return Ok(harness(exe));
    }
    let here = exe.parent().ok_or(ComponentError::ExeFolder)?;
    for dir in [Some(here), here.parent()].into_iter().flatten() {
        let p = dir.join(format!("harness{}", std::env::consts::EXE_SUFFIX));
        if p.is_file() {
            return Ok(harness(p));
        }
        let p = dir.join(format!("sut{}", std::env::consts::EXE_SUFFIX));
        if p.is_file() {
            return Ok(SutProgram {
                program: p,
                subcommand: None,
            });
        }
    }
    Err(ComponentError::NoSut(exe))
}
