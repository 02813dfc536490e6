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
//! * [`sweep`] and [`threshold`] — the pages and files of a sweep's
//!   vulnerability maps and of a threshold search.
//! * [`stats`] — exact small-sample statistics for campaigns (one
//!   experiment run over many seeds): shares, spreads and their tests.
//! * [`campaign`] — a campaign's runs judged over seeds and repeats, and
//!   its page.
//!
//! Metric names (the contract with experiment files) are listed and defined
//! on [`Metric`], the typed catalogue. Everything else is private to the crate.

pub mod ablation;
mod analysis;
pub mod campaign;
mod charts;
mod cost;
mod csv;
mod error;
mod format;
mod gpu_pacing;
mod html;
mod junit;
mod latency_counts;
mod metrics;
mod model;
pub mod reference;
mod series;
mod sha256;
pub mod stats;
mod summary;
pub mod sweep;
mod target_series;
pub mod threshold;
mod write;
mod xml;

pub use analysis::metric_value;
pub use analysis::{
    analyse, analyse_variant, class_words, op_symbol, verdict_rule_text, wave_rule_text, Analysis,
    Baseline, EffectFigures, Episode, EpisodeOutcome, ExpectationResult, FidelityRow, SlowRecovery,
    SustainingEffect, VariantAnalysis, Verdict, Wave, VERDICT_CLASSES,
};
pub use charts::heatmap::CellClass;
pub use charts::{
    latency_chart_png, latency_chart_size, latency_chart_svg, render_charts, wave_chart_png,
    wave_chart_size, wave_chart_svg, Charts,
};
pub use cost::{CostRole, CpuUse, HarnessCost, LAG_P99_LIMIT_MS, MACHINE_SHARE_LIMIT};
pub use csv::timeseries_csv;
pub use error::ReportError;
pub use gpu_pacing::{GpuPacing, PACING_TOLERANCE};
pub use html::{data_uri, page, render_html};
pub use junit::junit_xml;
pub use latency_counts::LatencyCounts;
pub use metrics::{
    Metric, MetricRef, MetricRefError, MetricValues, Scope as MetricScope, Undefined,
    Unit as MetricUnit, UnknownMetric,
};
pub use model::*;
pub use sha256::sha256_hex;
pub use summary::{run_json, summary_json, SCHEMA_VERSION};
pub use target_series::{figures as target_figures, TargetFigures};
pub use write::{read_run, write_files, write_report, REPORT_FILES};
