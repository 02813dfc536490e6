//! Turns a recorded chaos/load run ([`RunData`]: per-second series for a
//! before-fix and an after-fix variant) into verdicts and a report a
//! reliability engineer reads in a minute.
//!
//! * [`analyse`] — pure analysis: failure waves, amplification, the
//!   verdict (stable, recovered, metastable, ...), integrity, expectations,
//!   fidelity to the incident.
//! * [`write_report`] — the report directory: `index.html` (self-contained),
//!   `summary.json`, `timeseries.csv`, `junit.xml` and the charts (SVG + PNG).
//!
//! Metric names (the contract with experiment files) are listed and defined
//! on [`METRICS`].

pub mod analysis;
pub mod charts;
mod csv;
mod error;
pub mod format;
mod html;
mod junit;
pub mod metrics;
pub mod model;
pub mod series;
mod summary;
pub mod sweep;
pub mod threshold;
mod write;
mod xml;

pub use analysis::{
    analyse, analyse_variant, Analysis, Baseline, Episode, EpisodeOutcome, ExpectationResult,
    FidelityRow, SustainingEffect, VariantAnalysis, Verdict, Wave, VERDICT_CLASSES,
};
pub use charts::{
    latency_chart_png, latency_chart_svg, render_charts, wave_chart_png, wave_chart_svg, Charts,
};
pub use csv::timeseries_csv;
pub use error::ReportError;
pub use html::{data_uri, page, render_html};
pub use junit::junit_xml;
pub use metrics::{metric_value, MetricRef, METRICS, WINDOWED_METRICS, ZONE_METRICS};
pub use model::*;
pub use summary::{summary_json, SCHEMA_VERSION};
pub use write::{read_run, write_files, write_report, REPORT_FILES};
