//! Errors of report writing. Analysis itself cannot fail: odd data gives
//! undefined metrics, not errors.

use std::path::PathBuf;

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory could not be created, written or renamed.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// plotters failed to draw a chart.
    #[error("drawing the {chart} chart: {message}")]
    Chart {
        chart: &'static str,
        message: String,
    },
    /// The PNG encoder failed.
    #[error("encoding the {chart} chart as PNG: {message}")]
    Png {
        chart: &'static str,
        message: String,
    },
    /// A recorded run.json that cannot be judged again.
    #[error("cannot judge {path} again: {why}")]
    Recorded { path: PathBuf, why: String },
    /// summary.json could not be serialised.
    #[error("serialising summary.json: {0}")]
    Json(#[from] serde_json::Error),
}
