//! What every layer stands on: which clock a run keeps, the stop signal and
//! Ctrl-C, CPU threads and runtimes, exit codes, report folders, progress.
//! Nothing here uses another module of the harness.

pub(crate) mod causes;
pub mod clock;
pub mod cpu;
pub mod exit;
pub mod interrupt;
pub(crate) mod progress;
pub(crate) mod run_id;
pub(crate) mod stdout_to_log;
