//! From the raw file to a checked `Experiment`, with located errors.
//!
//! [`parse`] runs one function per section, in the order a reader meets
//! them, each returning the first located error of its section:
//! [`sections`] (name, form, environment, analysis, workload, variants,
//! incident figures), [`timeline`] (every entry, the baseline before the
//! first trigger; with [`spike`], load spikes and the arrival steps marked
//! as triggers) and [`expect`] (metrics, windows, zones, verdicts); [`campaign`] what must hold over
//! runs; [`target_series`] an external target's PromQL and its `target.metrics`.

mod alerts;
mod campaign;
mod claim;
pub use campaign::{parse_seeds, seed_at_index};

/// The highest arrival rate a file may ask for (documents/s), a load
/// spike's extra rate included: far above what one machine's load path
/// sends, so a typo is caught rather than a run that could never be honest.
pub const MAX_RATE: f64 = 100_000.0;
mod client;
mod clock;
mod compose;
mod http_workload;
pub use clock::check_virtual_clock;
mod expect;
mod processes;
mod proxy;
mod sections;
pub(crate) use proxy::{binary as proxy_binary, which};
pub(crate) use sections::loopback_host;
mod spike;
mod target_series;
mod timeline;
mod workload;

use super::raw::*;
use super::*;
use serde_saphyr::Location;
use std::path::Path;

/// A bad experiment file: where, which field, what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{column}: {field}: {message}")]
pub struct ExperimentError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub field: String,
    pub message: String,
}

pub(super) struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    /// The experiment file's name as given.
    pub(super) fn file(&self) -> &str {
        self.file
    }

    pub(super) fn err(
        &self,
        at: &Location,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ExperimentError {
        ExperimentError {
            file: self.file.to_string(),
            line: at.line(),
            column: at.column(),
            field: field.into(),
            message: message.into(),
        }
    }

    pub(super) fn duration(
        &self,
        at: &Location,
        field: &str,
        text: &str,
    ) -> Result<Duration, ExperimentError> {
        humantime::parse_duration(text.trim()).map_err(|e| {
            self.err(
                at,
                field,
                format!("{text:?} is not a duration ({e}); write e.g. 30s, 500ms, 2m"),
            )
        })
    }
}

/// The file's text and its name for errors.
fn read(path: &Path) -> Result<(String, String), ExperimentError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((text, file)),
        Err(e) => Err(ExperimentError {
            file,
            line: 0,
            column: 0,
            field: "(file)".into(),
            message: format!("cannot read: {e}"),
        }),
    }
}

/// Reads and validates an experiment file.
pub fn load(path: &Path, quick: bool) -> Result<Experiment, ExperimentError> {
    let (text, file) = read(path)?;
    parse(&text, &file, quick)
}

/// Reads a file and validates every form it has: the full one, and the
/// quick one (`--quick`, what CI runs) when the file has a `quick:`
/// section. An error in the quick form says so.
pub fn load_forms(path: &Path) -> Result<(Experiment, Option<Experiment>), ExperimentError> {
    let (text, file) = read(path)?;
    parse_forms(&text, &file)
}

/// [`load_forms`] on text.
pub fn parse_forms(
    text: &str,
    file: &str,
) -> Result<(Experiment, Option<Experiment>), ExperimentError> {
    let full = parse(text, file, false)?;
    let has_quick = serde_saphyr::from_str::<serde_json::Value>(text)
        .ok()
        .is_some_and(|t| t.get("quick").is_some());
    if !has_quick {
        return Ok((full, None));
    }
    let quick = parse(text, file, true).map_err(|mut e| {
        e.message = format!("in the quick form (what --quick and CI run): {}", e.message);
        e
    })?;
    Ok((full, Some(quick)))
}

/// Validates an experiment given as text; `file` names it in errors.
pub fn parse(text: &str, file: &str, quick: bool) -> Result<Experiment, ExperimentError> {
    let cx = Ctx { file };
    let raw: RawExperiment = serde_saphyr::from_str(text).map_err(|e| yaml_error(file, &e))?;
    // The untyped tree, for merging variant overrides key by key. It refuses
    // what JSON cannot hold (`.inf`), which the typed parse may have let by.
    let tree: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| yaml_error(file, &e))?;
    let name = sections::name(&cx, &raw)?;
    let form = sections::form(&cx, &raw, quick)?;
    let mut environment = sections::environment(&cx, &raw)?;
    let analysis = sections::analysis_config(&cx, &form.analysis)?;
    let (workload, implied) = workload::workload(&cx, &raw.workload, form.duration)?;
    let mut variants = sections::variants(&cx, &raw, &tree, &environment)?;
    processes::processes(&cx, &raw, &tree, &mut environment, &variants)?;
    let programs = proxy::proxies(&cx, &raw, &mut variants, &environment)?;
    let timeline = timeline::timeline(
        &cx,
        &form.timeline,
        implied,
        form.duration,
        &variants,
        &environment,
        &analysis,
    )?;
    match &raw.workload.http {
        Some(h) => http_workload::fits(&cx, h, &form.timeline, &environment, &variants)?,
        None => http_workload::no_requests(&cx, &form.timeline)?,
    }
    let alerts = alerts::alerts(&cx, &raw)?;
    let target_series = target_series::target_series(&cx, &raw, &environment)?;
    let expectations = expect::expectations(
        &cx,
        &raw,
        &form.expect,
        &variants,
        alerts.as_ref().map(|a| a.rule_names.as_slice()),
    )?;
    let incident = sections::incident(&cx, &raw, &variants)?;
    let zones = variants[0].system.zones.clone();
    let labels = expect::Labels {
        zones: &zones,
        alerts: alerts.as_ref().map(|a| a.rule_names.as_slice()),
    };
    let campaign = campaign::campaign(&cx, form.campaign.as_ref(), &variants, &labels)?;
    Ok(Experiment {
        name,
        description: raw.description.trim().to_string(),
        seed: raw.seed,
        duration: form.duration,
        quick,
        environment,
        analysis,
        workload,
        timeline,
        variants,
        expectations,
        incident,
        alerts,
        alerts_left_out: None,
        target_series,
        campaign,
        source: text.to_string(),
        container_images: sections::container_images(&raw),
        programs,
    })
}

/// A parse error, located where the YAML parser saw it.
fn yaml_error(file: &str, e: &serde_saphyr::Error) -> ExperimentError {
    let (line, column) = e
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((0, 0));
    ExperimentError {
        file: file.to_string(),
        line,
        column,
        field: field_of(&e.to_string()),
        message: e.to_string(),
    }
}

/// Best effort: the field a serde message talks about (`unknown field `x``).
fn field_of(msg: &str) -> String {
    for marker in ["unknown field `", "missing field `", "unknown variant `"] {
        if let Some(i) = msg.find(marker) {
            let rest = &msg[i + marker.len()..];
            if let Some(j) = rest.find('`') {
                return rest[..j].to_string();
            }
        }
    }
    "(syntax)".into()
}

/// A finite population (`size`, `popularity`) checked.
fn population(
    cx: &Ctx,
    at: &Location,
    field: &str,
    p: &RawPopulation,
) -> Result<Population, ExperimentError> {
    if p.size == 0 || p.size > 10_000_000 {
        return Err(cx.err(at, format!("{field}.size"), "must be in 1..=10000000"));
    }
    if let Popularity::Zipf { s } = p.popularity {
        if !(s > 0.0 && s.is_finite() && s <= 10.0) {
            return Err(cx.err(
                at,
                format!("{field}.popularity.zipf.s"),
                "must be in (0, 10]: the exponent of the Zipf law",
            ));
        }
    }
    Ok(Population {
        size: p.size,
        popularity: p.popularity,
    })
}

/// Deep merge, as a variant's overrides apply to the base `system:` (and
/// its processes): maps merge key by key, anything else replaces.
fn merge(base: &mut serde_json::Value, over: &serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}
