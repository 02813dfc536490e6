//! What a run measures: the recorder of every attempt and journey, scrapes
//! of the system's /metrics, the run's Prometheus with the harness's own
//! client-side metrics, and an external target's own PromQL series.

pub(crate) mod client_metrics;
pub mod prometheus;
pub mod recorder;
pub mod scrape;
pub mod target_series;
