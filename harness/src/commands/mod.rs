//! The commands: a run (`harness FILE`), `validate`, `report`, and those
//! built on runs: campaigns over seeds, sweeps and thresholds over a
//! parameter, ablations of a fix, the harness's own benchmark, and
//! Kubernetes renderings; with their budgets and axes. Each takes its
//! arguments from `cli/`.

pub mod ablate;
pub(crate) mod axis;
pub mod bench;
pub mod budget;
pub mod campaign;
pub mod reference;
pub mod render;
pub mod report;
pub mod run;
pub mod sweep;
pub mod threshold;
pub mod validate;
