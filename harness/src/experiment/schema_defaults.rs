//! The defaults the experiment file's schema (`schema.rs`) shows for keys
//! whose absence the validator fills in: they are `Option`s in `raw.rs`, so
//! that the validator can tell "absent" from a value, and serde has no
//! default to show. Used by `#[schemars(default = ...)]` only; parsing is not
//! touched. Taken from the values the code applies where it names them;
//! `schema.rs`'s tests check each against a validated file that leaves the
//! key out.

use crate::experiment::{images, EnvironmentKind};
use run_report::AnalysisConfig;
use std::collections::BTreeMap;

fn secs(s: u32) -> String {
    format!("{s}s")
}

pub fn environment() -> &'static str {
    EnvironmentKind::Embedded.as_str()
}
pub fn empty_list() -> Vec<String> {
    Vec::new()
}
pub fn empty_map() -> BTreeMap<String, String> {
    BTreeMap::new()
}
/// `harness campaign` without `--seeds` (commands/campaign/plan.rs).
pub fn campaign_seeds() -> &'static str {
    "1..5"
}
pub fn one_second() -> &'static str {
    "1s"
}
pub fn sut_image() -> &'static str {
    images::DEFAULT_SUT_IMAGE
}
pub fn redis_image() -> &'static str {
    images::DEFAULT_REDIS_IMAGE
}
pub fn wave_threshold() -> f64 {
    AnalysisConfig::default().wave_threshold
}
pub fn wave_merge_gap() -> String {
    secs(AnalysisConfig::default().wave_merge_gap_s)
}
pub fn wave_min_duration() -> String {
    secs(AnalysisConfig::default().wave_min_duration_s)
}
pub fn recovery_factor() -> f64 {
    AnalysisConfig::default().recovery_factor
}
pub fn recovery_window() -> String {
    secs(AnalysisConfig::default().recovery_window_s)
}
pub fn warmup() -> String {
    secs(AnalysisConfig::default().warmup_s)
}
pub fn min_baseline() -> String {
    secs(AnalysisConfig::default().min_baseline_s)
}
pub fn customer_failure_threshold() -> f64 {
    AnalysisConfig::default().customer_failure_threshold
}
pub fn max_in_flight() -> u64 {
    5_000
}
pub fn client_mode() -> &'static str {
    "sync"
}
pub fn popularity() -> &'static str {
    "uniform"
}
pub fn http_tenants() -> u32 {
    1
}
pub fn http_method() -> &'static str {
    "GET"
}
pub fn retry_later() -> Vec<u16> {
    vec![429, 503]
}
pub fn first_tenant() -> &'static str {
    "t1"
}
pub fn ready_timeout() -> &'static str {
    "30s"
}
