//! Why a step of `harness bench` could not measure: printed as the step's
//! `ERROR` line (`mod.rs` `error`), the other steps going on. The words are
//! those the step has always printed: what it was doing, then the cause
//! with its own causes.

use crate::base::causes::Causes;

/// A benchmark step that failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file, process, socket or runtime call that failed on its own words.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The same, with what the step was doing.
    #[error("{what}: {error}")]
    IoDuring { what: String, error: std::io::Error },
    /// An HTTP client that could not be built or a request that failed.
    #[error("{}", Causes(.0))]
    Http(#[from] reqwest::Error),
    /// A JSON answer or result that could not be read.
    #[error("{what}: {error}")]
    Json {
        what: String,
        error: serde_json::Error,
    },
    /// The system under test did not start.
    #[error("starting the system under test: {}", Causes(.0))]
    System(sut::StartError),
    /// The agents' experiment file was refused.
    #[error("{0}")]
    Experiment(#[from] crate::experiment::ExperimentError),
    /// The load path failed.
    #[error("{}", Causes(.0))]
    Load(#[from] crate::load::LoadError),
    /// The load agents or their coordinator failed.
    #[error("{}", Causes(.0))]
    Agent(#[from] crate::run::agent::AgentError),
    /// An inner step failed while driving `what`.
    #[error("{what}: {inner}")]
    Driving {
        what: String,
        inner: Box<BenchError>,
    },
    /// What the step found instead of a measurement.
    #[error("{0}")]
    Invalid(String),
}

/// `map_err` for an I/O call made while doing `what`.
pub(super) fn during(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BenchError {
    let what = what.into();
    move |error| BenchError::IoDuring { what, error }
}
