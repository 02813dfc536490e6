//! `harness sweep`: vulnerability maps.
//!
//! Researchers of metastable failures map, for one configuration, which
//! combinations of load and trigger size recover and which stay degraded.
//! This runs the experiment's quick form over a grid — x = load (the share of
//! capacity of `workload.arrival.constant.capacity`), y = one trigger field
//! set by a dotted path in the YAML tree — each cell with its own seed
//! (experiment seed + cell index), and classifies each cell and variant by the
//! report's recovery verdict: recovered / metastable / never healthy / no
//! trigger. Grid values are applied to the file's tree *before* validation,
//! so a cell is validated exactly like a file a user wrote.
//!
//! Output under `<out>/<experiment>-sweep/<run-id>/`: a map per variant
//! (`charts/<variant>.svg|png`), `grid.csv`, `grid.json`, `index.html` (the
//! maps side by side, inline) and each cell's normal report under `cells/`.
//! The hidden capacity per trigger value is the highest load that recovered.

use crate::experiment::{self, Experiment};
use crate::interrupt::{runtime_with_ctrl_c, StopSignal};
use crate::runner::{self, RunOptions};
use anyhow::Context;
use run_report::charts::heatmap::{self, CellClass, Heatmap};
use run_report::RecoveryVerdict;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where `--load` goes in the experiment tree.
pub const LOAD_PATH: &str = "workload.arrival.constant.capacity";

/// Command-line arguments of `harness sweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// The experiment file (YAML); its quick form is run in every cell.
    pub experiment: PathBuf,
    /// Loads (share of capacity): `FROM..TO:STEPS`, e.g. 0.3..0.9:7.
    #[arg(long, default_value = "0.3..0.9:7")]
    pub load: String,
    /// The trigger axis: `PATH[,PATH..]=FROM..TO:STEPS`, a dotted path in the
    /// YAML tree (numeric segments index lists), e.g.
    /// `quick.timeline.1.fault.oversized_documents.count=1..8:5`. Several
    /// comma-separated paths all get the same value.
    #[arg(long)]
    pub trigger: String,
    /// Fixed changes applied to every cell before the grid values:
    /// `PATH=VALUE` (VALUE is YAML: `4s`, `30`, `true`), repeatable, e.g.
    /// `--set quick.timeline.2.at=4s`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Map only this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// Cells run at once (each starts its own system on its own port).
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// Refuse grids estimated to take longer than this (e.g. 30m).
    #[arg(long, default_value = "30m")]
    pub budget: humantime::Duration,
    /// Run even when the estimate exceeds the budget.
    #[arg(long)]
    pub force: bool,
    /// Report folder root; the sweep goes to <OUT>/<experiment>-sweep/<run-id>/.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Base seed (default: the experiment's); cell i runs with base + i.
    #[arg(long)]
    pub seed: Option<u64>,
}

// ---------------------------------------------------------------- pure parts

/// Evenly spaced values of an axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Range {
    pub values: Vec<f64>,
    /// Both ends were integers: the values are whole numbers, set as integers.
    pub integer: bool,
}

impl Range {
    /// The `i`-th value as a YAML/JSON number.
    pub fn json(&self, i: usize) -> Value {
        let v = self.values[i];
        if self.integer {
            Value::from(v as i64)
        } else {
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
        }
    }

    /// The `i`-th value as text (axis ticks, folder names).
    pub fn text(&self, i: usize) -> String {
        fmt_value(self.values[i])
    }
}

/// A number without trailing noise: `0.3`, `4`, `0.45`.
pub fn fmt_value(v: f64) -> String {
    let s = format!("{:.6}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Parses `FROM..TO:STEPS` (or a single value `X`).
pub fn parse_range(s: &str) -> anyhow::Result<Range> {
    let s = s.trim();
    let bad = || {
        anyhow::anyhow!("{s:?} is not a range; write FROM..TO:STEPS (e.g. 0.3..0.9:7 or 1..8:5)")
    };
    let is_int = |t: &str| t.trim().parse::<i64>().is_ok();
    let num = |t: &str| -> anyhow::Result<f64> {
        let v: f64 = t.trim().parse().map_err(|_| bad())?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(bad())
        }
    };
    let Some((span, steps)) = s.split_once(':') else {
        if s.contains("..") {
            return Err(bad());
        }
        return Ok(Range {
            values: vec![num(s)?],
            integer: is_int(s),
        });
    };
    let (a, b) = span.split_once("..").ok_or_else(bad)?;
    let n: usize = steps.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        anyhow::bail!("{s:?}: the number of steps must be at least 1");
    }
    if n > 100 {
        anyhow::bail!("{s:?}: at most 100 steps per axis");
    }
    let (x, y) = (num(a)?, num(b)?);
    let integer = is_int(a) && is_int(b);
    let mut values: Vec<f64> = (0..n)
        .map(|i| {
            let v = if n == 1 {
                x
            } else {
                x + (y - x) * i as f64 / (n - 1) as f64
            };
            if integer {
                v.round()
            } else {
                (v * 1e6).round() / 1e6
            }
        })
        .collect();
    values.dedup();
    Ok(Range { values, integer })
}

/// The trigger axis: one or more paths sharing one range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trigger {
    pub paths: Vec<String>,
    pub range: Range,
}

/// Parses `PATH[,PATH..]=RANGE`.
pub fn parse_trigger(s: &str) -> anyhow::Result<Trigger> {
    let (paths, range) = s.split_once('=').ok_or_else(|| {
        anyhow::anyhow!("--trigger {s:?}: write PATH=FROM..TO:STEPS, e.g. quick.timeline.1.fault.oversized_documents.count=1..8:5")
    })?;
    let paths: Vec<String> = paths
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if paths.is_empty() {
        anyhow::bail!("--trigger {s:?}: no path before '='");
    }
    Ok(Trigger {
        paths,
        range: parse_range(range)?,
    })
}

/// Sets the existing value at a dotted `path` (numeric segments index lists).
/// A path that does not exist is an error naming the first missing segment.
pub fn set_path(tree: &mut Value, path: &str, value: Value) -> anyhow::Result<()> {
    set_path_in(tree, path, value, false)
}

/// As [`set_path`]; with `add_key`, the last segment may be a new key of an
/// existing mapping (`--set analysis.recovery_factor=2`).
pub fn set_path_in(
    tree: &mut Value,
    path: &str,
    value: Value,
    add_key: bool,
) -> anyhow::Result<()> {
    let mut node = tree;
    let mut walked: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('.').collect();
    for (i, &seg) in segs.iter().enumerate() {
        if add_key && i + 1 == segs.len() {
            if let Value::Object(map) = node {
                map.insert(seg.to_string(), value);
                return Ok(());
            }
        }
        let here = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("`{}`", walked.join("."))
        };
        node = match node {
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                map.get_mut(seg).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{path}: no key `{seg}` in {here} (it has: {})",
                        keys.join(", ")
                    )
                })?
            }
            Value::Array(list) => {
                let len = list.len();
                let i: usize = seg.parse().map_err(|_| {
                    anyhow::anyhow!("{path}: {here} is a list; `{seg}` is not an index")
                })?;
                list.get_mut(i).ok_or_else(|| {
                    anyhow::anyhow!("{path}: index {i} is outside {here} ({len} entries)")
                })?
            }
            _ => anyhow::bail!("{path}: {here} is a value, not a mapping or list"),
        };
        walked.push(seg);
    }
    *node = value;
    Ok(())
}

/// Parses `--set PATH=VALUE` (VALUE read as YAML).
pub fn parse_set(s: &str) -> anyhow::Result<(String, Value)> {
    let (p, v) = s.split_once('=').ok_or_else(|| {
        anyhow::anyhow!("--set {s:?}: write PATH=VALUE, e.g. quick.timeline.2.at=4s")
    })?;
    let p = p.trim();
    if p.is_empty() {
        anyhow::bail!("--set {s:?}: no path before '='");
    }
    let v: Value = serde_saphyr::from_str(v.trim())
        .map_err(|e| anyhow::anyhow!("--set {s:?}: the value is not YAML: {e}"))?;
    Ok((p.to_string(), v))
}

/// The experiment text of one cell: the file's tree with the fixed changes,
/// the load and the trigger value set, as YAML.
pub fn cell_text(
    tree: &Value,
    sets: &[(String, Value)],
    load: Option<Value>,
    trigger: &Trigger,
    trigger_index: usize,
) -> anyhow::Result<String> {
    let mut t = tree.clone();
    for (p, v) in sets {
        set_path_in(&mut t, p, v.clone(), true).context("--set")?;
    }
    if let Some(load) = load {
        set_path(&mut t, LOAD_PATH, load).map_err(|e| {
            anyhow::anyhow!("--load needs `workload: {{ arrival: {{ constant: {{ capacity: .. }} }} }}` in the experiment ({e})")
        })?;
    }
    for p in &trigger.paths {
        set_path(&mut t, p, trigger.range.json(trigger_index))?;
    }
    serde_saphyr::to_string(&t).context("writing the cell's experiment as YAML")
}

/// The class of a cell from the report's verdict.
pub fn classify(v: &RecoveryVerdict) -> CellClass {
    match v {
        RecoveryVerdict::NoTrigger => CellClass::NoTrigger,
        RecoveryVerdict::Recovered { .. } => CellClass::Recovered,
        RecoveryVerdict::Metastable => CellClass::Metastable,
        RecoveryVerdict::NeverHealthy => CellClass::NeverHealthy,
    }
}

/// The hidden capacity at one trigger value, from the cells along the load axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HiddenCapacity {
    pub variant: String,
    pub trigger: f64,
    /// The highest load that recovered (None: none did).
    pub highest_recovered: Option<f64>,
    /// The lowest load that did not recover (None: every load run recovered).
    pub lowest_not_recovered: Option<f64>,
    /// The highest load below which every load run recovered (the safe region).
    pub safe_up_to: Option<f64>,
}

/// Hidden capacity from `(load, class)` pairs of one variant at one trigger
/// value. Cells not run and cells without trigger are ignored.
pub fn hidden_capacity(variant: &str, trigger: f64, cells: &[(f64, CellClass)]) -> HiddenCapacity {
    let mut run: Vec<(f64, bool)> = cells
        .iter()
        .filter(|(_, c)| !matches!(c, CellClass::NotRun | CellClass::NoTrigger))
        .map(|&(l, c)| (l, c == CellClass::Recovered))
        .collect();
    run.sort_by(|a, b| a.0.total_cmp(&b.0));
    let highest_recovered = run.iter().rev().find(|c| c.1).map(|c| c.0);
    let lowest_not_recovered = run.iter().find(|c| !c.1).map(|c| c.0);
    let safe_up_to = run.iter().take_while(|c| c.1).map(|c| c.0).last();
    HiddenCapacity {
        variant: variant.to_string(),
        trigger,
        highest_recovered,
        lowest_not_recovered,
        safe_up_to,
    }
}

/// Estimated wall time: cells x variants x (duration + drain + start-up) / parallel.
pub fn estimate(cells: usize, variants: usize, duration: Duration, parallel: usize) -> Duration {
    let per =
        duration + crate::load::drain_time(Duration::from_secs(1), 4) + Duration::from_secs(3);
    let runs = (cells * variants) as u32;
    let waves = runs.div_ceil(parallel.max(1) as u32);
    per * waves
}

// ---------------------------------------------------------------- the plan

/// One cell of the grid, validated.
pub struct Cell {
    pub index: usize,
    /// Position: x = load index, y = trigger index.
    pub x: usize,
    pub y: usize,
    pub experiment: Experiment,
}

/// A validated sweep.
pub struct Plan {
    pub name: String,
    pub file: String,
    pub loads: Range,
    pub trigger: Trigger,
    /// The `--set` changes, as `path=json`.
    pub sets: Vec<String>,
    pub variants: Vec<String>,
    pub cells: Vec<Cell>,
    pub duration: Duration,
    pub base_seed: u64,
}

/// Builds and validates every cell (nothing runs before all of them passed).
pub fn plan(
    path: &Path,
    loads: &str,
    trigger: &str,
    sets: &[String],
    variant: Option<&str>,
    seed: Option<u64>,
) -> anyhow::Result<Plan> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    // The file as written must be valid first (errors point at its lines).
    let base = experiment::parse(&text, &file, true).map_err(|e| anyhow::anyhow!("{e}"))?;
    let tree: Value = serde_saphyr::from_str(&text).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
    let loads = parse_range(loads).context("--load")?;
    let trigger = parse_trigger(trigger)?;
    let sets = sets
        .iter()
        .map(|s| parse_set(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if tree.pointer("/quick/timeline").is_some() {
        for p in &trigger.paths {
            if p.starts_with("timeline.") {
                eprintln!("warning: {p}: the sweep runs the quick form, which uses `quick.timeline`; this path only changes the full timeline");
            }
        }
    }
    let variants: Vec<String> = base
        .variants
        .iter()
        .map(|v| v.name.clone())
        .filter(|n| variant.is_none_or(|w| w == n))
        .collect();
    if variants.is_empty() {
        anyhow::bail!(
            "no variant named {:?} in {} (it has: {})",
            variant.unwrap_or(""),
            base.name,
            base.variants
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let base_seed = seed.unwrap_or(base.seed);
    let mut cells: Vec<Cell> = Vec::new();
    for y in 0..trigger.range.values.len() {
        for x in 0..loads.values.len() {
            let index = cells.len();
            let text = cell_text(&tree, &sets, Some(loads.json(x)), &trigger, y)?;
            let label = format!(
                "{file} (sweep cell load={} {}={})",
                loads.text(x),
                trigger.paths[0],
                trigger.range.text(y)
            );
            let mut e =
                experiment::parse(&text, &label, true).map_err(|e| anyhow::anyhow!("{e}"))?;
            e.seed = base_seed.wrapping_add(index as u64);
            cells.push(Cell {
                index,
                x,
                y,
                experiment: e,
            });
        }
    }
    let cells_duration = cells
        .iter()
        .map(|c| c.experiment.duration)
        .max()
        .unwrap_or(base.duration);
    Ok(Plan {
        name: base.name.clone(),
        file,
        loads,
        trigger,
        sets: sets
            .iter()
            .map(|(p, v)| format!("{p}={}", serde_json::to_string(v).unwrap_or_default()))
            .collect(),
        variants,
        cells,
        duration: cells_duration,
        base_seed,
    })
}

// ---------------------------------------------------------------- running

/// One variant of one cell, measured.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    pub index: usize,
    pub x: usize,
    pub y: usize,
    pub load: f64,
    pub trigger: f64,
    pub seed: u64,
    pub variant: String,
    pub class: CellClass,
    pub recovered_after_s: Option<f64>,
    pub waves: usize,
    pub peak_failure_ratio: Option<f64>,
    /// The cell's report folder, relative to the sweep folder.
    pub report: Option<String>,
    /// Why the cell was not run or not classified.
    pub error: Option<String>,
}

fn cell_dir(plan: &Plan, c: &Cell) -> String {
    format!(
        "cells/{:03}-load{}-trigger{}",
        c.index,
        plan.loads.text(c.x),
        plan.trigger.range.text(c.y)
    )
}

async fn run_cell(
    plan: &Plan,
    c: &Cell,
    sweep_dir: &Path,
    variant: Option<String>,
    stop: Arc<StopSignal>,
) -> Vec<CellResult> {
    let rel = cell_dir(plan, c);
    let opts = RunOptions {
        out_dir: sweep_dir.join(&rel),
        quiet: true,
        variant,
    };
    let base = |variant: &str| CellResult {
        index: c.index,
        x: c.x,
        y: c.y,
        load: plan.loads.values[c.x],
        trigger: plan.trigger.range.values[c.y],
        seed: c.experiment.seed,
        variant: variant.to_string(),
        class: CellClass::NotRun,
        recovered_after_s: None,
        waves: 0,
        peak_failure_ratio: None,
        report: None,
        error: None,
    };
    match runner::run(&c.experiment, &opts, stop).await {
        Ok(o) => {
            let report = o
                .report_dir
                .strip_prefix(sweep_dir)
                .unwrap_or(&o.report_dir)
                .display()
                .to_string();
            plan.variants
                .iter()
                .map(|name| {
                    let mut r = base(name);
                    r.report = Some(report.clone());
                    match o.analysis.variants.iter().find(|v| &v.name == name) {
                        Some(v) if v.interrupted => {
                            r.error = Some("interrupted".into());
                            r.waves = v.waves.len();
                        }
                        Some(v) => {
                            r.class = classify(&v.verdict);
                            if let RecoveryVerdict::Recovered { after_s } = v.verdict {
                                r.recovered_after_s = Some(after_s);
                            }
                            r.waves = v.waves.len();
                            r.peak_failure_ratio = v.metrics.get("peak_failure_ratio").copied();
                        }
                        None => r.error = Some("not run (interrupted)".into()),
                    }
                    r
                })
                .collect()
        }
        Err(e) => plan
            .variants
            .iter()
            .map(|name| {
                let mut r = base(name);
                r.error = Some(format!("{e:#}"));
                r
            })
            .collect(),
    }
}

fn describe(r: &[CellResult]) -> String {
    r.iter()
        .map(|c| {
            let what = match (c.class, c.recovered_after_s, &c.error) {
                (_, _, Some(e)) => format!("not run ({e})"),
                (CellClass::Recovered, Some(s), _) => format!("recovered after {s:.0} s"),
                (cl, _, _) => cl.label().to_string(),
            };
            format!(
                "{} {what} (waves {}, peak failure {})",
                c.variant,
                c.waves,
                c.peak_failure_ratio
                    .map_or("—".into(), |p| format!("{:.2}", p))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs every cell, `parallel` at a time; stops starting cells once `stop` is set.
pub async fn run_grid(
    plan: Arc<Plan>,
    sweep_dir: PathBuf,
    variant: Option<String>,
    parallel: usize,
    stop: Arc<StopSignal>,
) -> Vec<CellResult> {
    let queue: Arc<Mutex<VecDeque<usize>>> = Arc::new(Mutex::new((0..plan.cells.len()).collect()));
    let results: Arc<Mutex<Vec<CellResult>>> = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let total = plan.cells.len();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..parallel.max(1) {
        let (plan, queue, results, stop, dir, variant) = (
            plan.clone(),
            queue.clone(),
            results.clone(),
            stop.clone(),
            sweep_dir.clone(),
            variant.clone(),
        );
        workers.spawn(async move {
            loop {
                if stop.is_set() {
                    break;
                }
                let Some(i) = queue.lock().expect("sweep queue").pop_front() else {
                    break;
                };
                let c = &plan.cells[i];
                let r = run_cell(&plan, c, &dir, variant.clone(), stop.clone()).await;
                let line = describe(&r);
                let done = {
                    let mut all = results.lock().expect("sweep results");
                    all.extend(r);
                    all.iter()
                        .map(|r| r.index)
                        .collect::<std::collections::BTreeSet<_>>()
                        .len()
                };
                eprintln!(
                    "[{done}/{total}] {:>5.0} s  load {} {} {}: {line}",
                    started.elapsed().as_secs_f64(),
                    plan.loads.text(c.x),
                    short_path(&plan.trigger.paths[0]),
                    plan.trigger.range.text(c.y),
                );
            }
        });
    }
    while workers.join_next().await.is_some() {}
    let mut all = std::mem::take(&mut *results.lock().expect("sweep results"));
    all.sort_by_key(|r| r.index);
    all
}

// ---------------------------------------------------------------- outputs

/// The last two segments of a path (`oversized_documents.count`).
fn short_path(p: &str) -> String {
    let segs: Vec<&str> = p.split('.').collect();
    segs[segs.len().saturating_sub(2)..].join(".")
}

fn axis_label(t: &Trigger) -> String {
    let mut s = short_path(&t.paths[0]);
    if t.paths.len() > 1 {
        s.push_str(&format!(" (x{} paths)", t.paths.len()));
    }
    s
}

/// The map of one variant.
pub fn heatmap_of(plan: &Plan, results: &[CellResult], variant: &str) -> Heatmap {
    let (nx, ny) = (plan.loads.values.len(), plan.trigger.range.values.len());
    let mut cells = vec![vec![CellClass::NotRun; nx]; ny];
    let mut notes = vec![vec![String::new(); nx]; ny];
    for r in results.iter().filter(|r| r.variant == variant) {
        cells[r.y][r.x] = r.class;
        notes[r.y][r.x] = match (r.class, r.recovered_after_s) {
            (CellClass::NotRun, _) => String::new(),
            (CellClass::Recovered, Some(s)) => format!("+{s:.0} s"),
            _ => r
                .peak_failure_ratio
                .map_or(String::new(), |p| format!("{:.0}%", p * 100.0)),
        };
    }
    Heatmap {
        title: format!("{} — {variant}", plan.name),
        subtitle: format!(
            "quick form, {nx} x {ny} cells, seeds {}..{}; cell text: recovery time or peak failure",
            plan.base_seed,
            plan.base_seed + plan.cells.len().saturating_sub(1) as u64
        ),
        x_label: "load (share of calibrated capacity)".into(),
        y_label: axis_label(&plan.trigger),
        x_ticks: (0..nx).map(|i| plan.loads.text(i)).collect(),
        y_ticks: (0..ny).map(|i| plan.trigger.range.text(i)).collect(),
        cells,
        notes,
    }
}

/// Hidden capacity of every variant at every trigger value.
pub fn capacities(plan: &Plan, results: &[CellResult]) -> Vec<HiddenCapacity> {
    let mut out = Vec::new();
    for v in &plan.variants {
        for (y, &t) in plan.trigger.range.values.iter().enumerate() {
            let cells: Vec<(f64, CellClass)> = results
                .iter()
                .filter(|r| &r.variant == v && r.y == y)
                .map(|r| (r.load, r.class))
                .collect();
            out.push(hidden_capacity(v, t, &cells));
        }
    }
    out
}

fn csv(results: &[CellResult]) -> String {
    let mut s = String::from(
        "index,load,trigger,seed,variant,class,recovered_after_s,waves,peak_failure_ratio,report,error\n",
    );
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
    let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    for r in results {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            r.index,
            fmt_value(r.load),
            fmt_value(r.trigger),
            r.seed,
            q(&r.variant),
            r.class.label(),
            opt(r.recovered_after_s),
            r.waves,
            opt(r.peak_failure_ratio),
            q(r.report.as_deref().unwrap_or("")),
            q(r.error.as_deref().unwrap_or("")),
        ));
    }
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Class counts of one variant, in `CellClass::ALL` order.
pub fn counts(results: &[CellResult], variant: &str) -> Vec<(CellClass, usize)> {
    CellClass::ALL
        .iter()
        .map(|&c| {
            (
                c,
                results
                    .iter()
                    .filter(|r| r.variant == variant && r.class == c)
                    .count(),
            )
        })
        .collect()
}

fn html(
    plan: &Plan,
    results: &[CellResult],
    caps: &[HiddenCapacity],
    pngs: &[(String, Vec<u8>)],
    summary: &str,
) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut h = String::new();
    h.push_str(&format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{} — vulnerability map</title>\
<style>body{{font-family:sans-serif;margin:24px;color:#1e1e1e}}.maps{{display:flex;flex-wrap:wrap;gap:16px}}\
.maps figure{{margin:0;flex:1 1 600px}}.maps img{{width:100%;max-width:760px;border:1px solid #ddd}}\
table{{border-collapse:collapse;margin:12px 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
th{{background:#f2f2f6}}.sw{{display:inline-block;width:12px;height:12px;border:1px solid #999;vertical-align:middle;margin-right:4px}}\
.muted{{color:#6e6e6e}}</style></head><body>",
        esc(&plan.name)
    ));
    h.push_str(&format!(
        "<h1>{} — vulnerability map</h1><p class=\"muted\">{}</p>",
        esc(&plan.name),
        esc(summary)
    ));
    h.push_str(&format!(
        "<p>x: load, <code>{LOAD_PATH}</code>; y: <code>{}</code>. Each cell runs the quick form with its own seed (experiment seed + cell index) and is classified by the report's recovery verdict; the thick line separates cells that recovered from cells that did not.</p>",
        esc(&plan.trigger.paths.join(", "))
    ));
    if !plan.sets.is_empty() {
        h.push_str(&format!(
            "<p>Fixed changes in every cell: <code>{}</code></p>",
            esc(&plan.sets.join("  "))
        ));
    }
    h.push_str("<div class=\"maps\">");
    for (v, png) in pngs {
        h.push_str(&format!(
            "<figure><img alt=\"{0} map\" src=\"data:image/png;base64,{1}\"><figcaption>{0} (<a href=\"charts/{0}.svg\">SVG</a>)</figcaption></figure>",
            esc(v),
            b64.encode(png)
        ));
    }
    h.push_str("</div><h2>Cells per class</h2><table><tr><th>variant</th>");
    for c in CellClass::ALL {
        h.push_str(&format!(
            "<th><span class=\"sw\" style=\"background:{}\"></span>{}</th>",
            c.css(),
            c.label()
        ));
    }
    h.push_str("</tr>");
    for v in &plan.variants {
        h.push_str(&format!("<tr><td>{}</td>", esc(v)));
        for (_, n) in counts(results, v) {
            h.push_str(&format!("<td>{n}</td>"));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table><h2>Hidden capacity</h2><p>Per trigger value: the highest load that recovered, the highest load up to which every load recovered, and the lowest load that did not.</p><table><tr><th>trigger</th>");
    for v in &plan.variants {
        h.push_str(&format!(
            "<th>{0}: highest recovered</th><th>{0}: all recovered up to</th><th>{0}: first not recovered</th>",
            esc(v)
        ));
    }
    h.push_str("</tr>");
    let o = |x: Option<f64>| x.map_or("—".to_string(), fmt_value);
    for (y, &t) in plan.trigger.range.values.iter().enumerate() {
        h.push_str(&format!("<tr><td>{}</td>", fmt_value(t)));
        for v in &plan.variants {
            if let Some(c) = caps
                .iter()
                .find(|c| &c.variant == v && c.trigger == plan.trigger.range.values[y])
            {
                h.push_str(&format!(
                    "<td>{}</td><td>{}</td><td>{}</td>",
                    o(c.highest_recovered),
                    o(c.safe_up_to),
                    o(c.lowest_not_recovered)
                ));
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</table><h2>Cells</h2><table><tr><th>#</th><th>load</th><th>trigger</th><th>seed</th><th>variant</th><th>class</th><th>recovered after</th><th>waves</th><th>peak failure</th><th>report</th></tr>");
    for r in results {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.index,
            fmt_value(r.load),
            fmt_value(r.trigger),
            r.seed,
            esc(&r.variant),
            r.class.css(),
            esc(&match &r.error {
                Some(e) => format!("not run: {e}"),
                None => r.class.label().to_string(),
            }),
            r.recovered_after_s.map_or("—".into(), |s| format!("{s:.0} s")),
            r.waves,
            r.peak_failure_ratio.map_or("—".into(), |p| format!("{:.2}", p)),
            r.report.as_deref().map_or("—".into(), |p| format!(
                "<a href=\"{0}/index.html\">{0}</a>",
                esc(p)
            )),
        ));
    }
    h.push_str("</table></body></html>\n");
    h
}

/// The grid as JSON.
#[derive(Serialize)]
struct GridJson<'a> {
    experiment: &'a str,
    file: &'a str,
    run_id: &'a str,
    quick: bool,
    load_path: &'a str,
    loads: &'a [f64],
    trigger_paths: &'a [String],
    set: &'a [String],
    triggers: &'a [f64],
    variants: &'a [String],
    base_seed: u64,
    estimated_s: u64,
    wall_s: f64,
    interrupted: bool,
    cells: &'a [CellResult],
    hidden_capacity: &'a [HiddenCapacity],
}

/// Writes every output file; returns the sweep folder's index.html.
#[allow(clippy::too_many_arguments)]
pub fn write_outputs(
    plan: &Plan,
    results: &[CellResult],
    dir: &Path,
    run_id: &str,
    estimated: Duration,
    wall: Duration,
    interrupted: bool,
) -> anyhow::Result<PathBuf> {
    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts).with_context(|| format!("creating {}", charts.display()))?;
    let mut pngs = Vec::new();
    for v in &plan.variants {
        let map = heatmap_of(plan, results, v);
        let size = heatmap::default_size(&map);
        let svg = heatmap::heatmap_svg(&map, size)?;
        let png = heatmap::heatmap_png(&map, size)?;
        std::fs::write(charts.join(format!("{v}.svg")), svg)?;
        std::fs::write(charts.join(format!("{v}.png")), &png)?;
        pngs.push((v.clone(), png));
    }
    let caps = capacities(plan, results);
    std::fs::write(dir.join("grid.csv"), csv(results))?;
    let json = GridJson {
        experiment: &plan.name,
        file: &plan.file,
        run_id,
        quick: true,
        load_path: LOAD_PATH,
        loads: &plan.loads.values,
        trigger_paths: &plan.trigger.paths,
        set: &plan.sets,
        triggers: &plan.trigger.range.values,
        variants: &plan.variants,
        base_seed: plan.base_seed,
        estimated_s: estimated.as_secs(),
        wall_s: wall.as_secs_f64(),
        interrupted,
        cells: results,
        hidden_capacity: &caps,
    };
    std::fs::write(dir.join("grid.json"), serde_json::to_string_pretty(&json)?)?;
    let summary = format!(
        "{} x {} cells x {} variant(s), quick form, run {run_id}; estimated {}, took {}{}",
        plan.loads.values.len(),
        plan.trigger.range.values.len(),
        plan.variants.len(),
        humantime::format_duration(Duration::from_secs(estimated.as_secs())),
        humantime::format_duration(Duration::from_secs(wall.as_secs())),
        if interrupted {
            " — INTERRUPTED, cells not run are blank"
        } else {
            ""
        }
    );
    let page = dir.join("index.html");
    std::fs::write(&page, html(plan, results, &caps, &pngs, &summary))?;
    Ok(page)
}

/// Prints class counts and hidden capacity per variant.
fn print_summary(plan: &Plan, results: &[CellResult]) {
    let caps = capacities(plan, results);
    for v in &plan.variants {
        let c = counts(results, v)
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("{n} {}", c.label()))
            .collect::<Vec<_>>()
            .join(", ");
        eprintln!("{v:>12}: {c}");
        for h in caps.iter().filter(|h| &h.variant == v) {
            let o = |x: Option<f64>| x.map_or("—".to_string(), fmt_value);
            eprintln!(
                "              trigger {}: highest recovered load {}, all recovered up to {}, first not recovered {}",
                fmt_value(h.trigger),
                o(h.highest_recovered),
                o(h.safe_up_to),
                o(h.lowest_not_recovered)
            );
        }
    }
}

/// `harness sweep`: exit 0 done, 2 bad input or over budget, 130 interrupted.
pub fn cli(args: SweepArgs) -> ExitCode {
    let plan = match plan(
        &args.experiment,
        &args.load,
        &args.trigger,
        &args.set,
        args.variant.as_deref(),
        args.seed,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let parallel = args.parallel.max(1);
    let est = estimate(
        plan.cells.len(),
        plan.variants.len(),
        plan.duration,
        parallel,
    );
    eprintln!(
        "sweep of {}: {} loads x {} trigger values = {} cells x {} variant(s) ({}), quick form ({} each), {} at a time: estimated {}",
        plan.name,
        plan.loads.values.len(),
        plan.trigger.range.values.len(),
        plan.cells.len(),
        plan.variants.len(),
        plan.variants.join(", "),
        humantime::format_duration(plan.duration),
        parallel,
        humantime::format_duration(Duration::from_secs(est.as_secs()))
    );
    let budget: Duration = *args.budget;
    if est > budget && !args.force {
        eprintln!(
            "error: the estimate exceeds the budget of {}; use a smaller grid, --parallel, a larger --budget, or --force",
            humantime::format_duration(budget)
        );
        return ExitCode::from(2);
    }
    let run_id = format!(
        "{}-seed{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        plan.base_seed
    );
    let root = args.out.join(format!("{}-sweep", plan.name));
    let dir = root.join(&run_id);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: creating {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    let (rt, stop) = match runtime_with_ctrl_c() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let plan = Arc::new(plan);
    let results = rt.block_on(run_grid(
        plan.clone(),
        dir.clone(),
        args.variant.clone(),
        parallel,
        stop.clone(),
    ));
    let wall = started.elapsed();
    let interrupted = stop.is_set();
    print_summary(&plan, &results);
    match write_outputs(&plan, &results, &dir, &run_id, est, wall, interrupted) {
        Ok(page) => {
            let _ = std::fs::remove_file(root.join("latest"));
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink(&run_id, root.join("latest"));
            eprintln!(
                "sweep: {} (took {})",
                page.display(),
                humantime::format_duration(Duration::from_secs(wall.as_secs()))
            );
        }
        Err(e) => {
            eprintln!("error: writing the sweep's files: {e:#}");
            return ExitCode::from(2);
        }
    }
    if interrupted {
        eprintln!(
            "interrupted: {}; the maps hold the cells that finished",
            stop.reason().unwrap_or_default()
        );
        return ExitCode::from(130);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ranges() {
        let r = parse_range("0.3..0.9:7").unwrap();
        assert!(!r.integer);
        assert_eq!(r.values, vec![0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]);
        assert_eq!(r.json(1), json!(0.4));
        let r = parse_range("1..8:5").unwrap();
        assert!(r.integer);
        assert_eq!(r.values, vec![1.0, 3.0, 5.0, 6.0, 8.0]);
        assert_eq!(r.json(0), json!(1));
        assert_eq!(r.text(2), "5");
        assert_eq!(parse_range("4").unwrap().values, vec![4.0]);
        assert_eq!(parse_range("2..6:1").unwrap().values, vec![2.0]);
        // Rounding to integers never repeats a value.
        assert_eq!(parse_range("1..3:5").unwrap().values, vec![1.0, 2.0, 3.0]);
        for bad in [
            "",
            "0.3..0.9",
            "a..b:3",
            "0.3..0.9:0",
            "0.3-0.9:3",
            "1..2:x",
        ] {
            assert!(parse_range(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(fmt_value(0.45), "0.45");
        assert_eq!(fmt_value(8.0), "8");
    }

    #[test]
    fn triggers() {
        let t = parse_trigger("a.1.b,a.2.b=1..8:5").unwrap();
        assert_eq!(t.paths, vec!["a.1.b", "a.2.b"]);
        assert_eq!(t.range.values.len(), 5);
        assert!(parse_trigger("1..8:5").is_err());
        assert!(parse_trigger("=1..8:5").is_err());
    }

    #[test]
    fn paths() {
        let mut t =
            json!({ "quick": { "timeline": [ {"at": "0s"}, {"fault": {"n": 4}} ] }, "x": 1 });
        set_path(&mut t, "quick.timeline.1.fault.n", json!(7)).unwrap();
        assert_eq!(t["quick"]["timeline"][1]["fault"]["n"], json!(7));
        set_path(&mut t, "x", json!(0.5)).unwrap();
        assert_eq!(t["x"], json!(0.5));
        let e = set_path(&mut t, "quick.timeline.5.fault", json!(1)).unwrap_err();
        assert!(
            e.to_string()
                .contains("index 5 is outside `quick.timeline` (2 entries)"),
            "{e}"
        );
        let e = set_path(&mut t, "quick.timelin.1", json!(1)).unwrap_err();
        assert!(e.to_string().contains("no key `timelin` in `quick`"), "{e}");
        let e = set_path(&mut t, "quick.timeline.x", json!(1)).unwrap_err();
        assert!(e.to_string().contains("not an index"), "{e}");
        let e = set_path(&mut t, "x.y", json!(1)).unwrap_err();
        assert!(e.to_string().contains("is a value"), "{e}");
        set_path_in(&mut t, "quick.added", json!(2), true).unwrap();
        assert_eq!(t["quick"]["added"], json!(2));
        assert!(set_path_in(&mut t, "nope.added", json!(2), true).is_err());
        // Nothing was changed by the failed attempts.
        assert_eq!(t["x"], json!(0.5));
        assert!(t.get("nope").is_none());
    }

    #[test]
    fn capacity_from_grid() {
        use CellClass::*;
        let cells = [
            (0.3, Recovered),
            (0.5, Recovered),
            (0.7, Metastable),
            (0.9, Recovered),
            (1.1, NotRun),
        ];
        let h = hidden_capacity("b", 4.0, &cells);
        assert_eq!(h.highest_recovered, Some(0.9));
        assert_eq!(h.safe_up_to, Some(0.5));
        assert_eq!(h.lowest_not_recovered, Some(0.7));
        let h = hidden_capacity("b", 4.0, &[(0.3, NeverHealthy), (0.5, Metastable)]);
        assert_eq!(
            (h.highest_recovered, h.safe_up_to, h.lowest_not_recovered),
            (None, None, Some(0.3))
        );
        let h = hidden_capacity("a", 1.0, &[(0.5, Recovered), (0.3, Recovered)]);
        assert_eq!(
            (h.highest_recovered, h.safe_up_to, h.lowest_not_recovered),
            (Some(0.5), Some(0.5), None)
        );
    }

    #[test]
    fn estimate_scales_with_parallel() {
        let one = estimate(25, 2, Duration::from_secs(20), 1);
        let two = estimate(25, 2, Duration::from_secs(20), 2);
        assert!(one >= Duration::from_secs(50 * 26));
        assert_eq!(two * 2, one);
    }

    fn retry_storm() -> (String, String) {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../experiments/retry-storm.yaml"
        );
        (
            std::fs::read_to_string(p).expect("retry-storm.yaml"),
            p.to_string(),
        )
    }

    #[test]
    fn cell_text_round_trips_through_validation() {
        let (text, file) = retry_storm();
        let tree: Value = serde_saphyr::from_str(&text).unwrap();
        let trig = parse_trigger(
            "quick.timeline.1.fault.oversized_documents.count,quick.timeline.2.fault.oversized_documents.count=1..8:3",
        )
        .unwrap();
        let sets = vec![parse_set("quick.timeline.2.at=4s").unwrap()];
        let cell = cell_text(&tree, &sets, Some(json!(0.7)), &trig, 2).unwrap();
        let e = experiment::parse(&cell, "cell", true).expect("the cell validates");
        let orig = experiment::parse(&text, &file, true).unwrap();
        assert_eq!(
            e.workload.arrival,
            experiment::Arrival::Constant(experiment::Rate::Capacity(0.7))
        );
        let counts: Vec<u32> = e
            .timeline
            .iter()
            .filter_map(|t| match &t.op {
                experiment::TimelineOp::OversizedDocuments(o) => Some(o.count),
                _ => None,
            })
            .collect();
        assert_eq!(counts, vec![8, 8]);
        // Everything else is as written.
        assert_eq!(e.timeline.len(), orig.timeline.len());
        assert_eq!(e.timeline[0], orig.timeline[0]);
        assert_eq!(e.timeline[2].at, Duration::from_secs(4));
        assert_eq!(e.expectations.len(), orig.expectations.len());
        assert_eq!(e.variants.len(), orig.variants.len());
        assert_eq!(e.duration, orig.duration);
    }

    #[test]
    fn plan_validates_every_cell_and_rejects_bad_paths() {
        let (_, file) = retry_storm();
        let p = plan(
            Path::new(&file),
            "0.3..0.7:3",
            "quick.timeline.1.fault.oversized_documents.count=1..8:2",
            &[],
            None,
            Some(100),
        )
        .unwrap();
        assert_eq!(p.cells.len(), 6);
        assert_eq!(p.variants, vec!["before-fix", "after-fix"]);
        assert_eq!(p.cells[5].experiment.seed, 105);
        assert_eq!((p.cells[4].x, p.cells[4].y), (1, 1));
        let e = plan(
            Path::new(&file),
            "0.5",
            "quick.timeline.9.fault.oversized_documents.count=1..8:2",
            &[],
            None,
            None,
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("index 9"), "{e:#}");
        let e = plan(Path::new(&file), "0.5", "x=1..2:2", &[], Some("nope"), None)
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("no variant"), "{e:#}");
    }

    #[test]
    fn maps_and_outputs_from_results() {
        let (_, file) = retry_storm();
        let p = plan(
            Path::new(&file),
            "0.3..0.5:2",
            "quick.timeline.1.fault.oversized_documents.count=1..8:2",
            &["quick.duration=25s".to_string()],
            None,
            None,
        )
        .unwrap();
        let mut results = Vec::new();
        for c in &p.cells {
            for v in &p.variants {
                results.push(CellResult {
                    index: c.index,
                    x: c.x,
                    y: c.y,
                    load: p.loads.values[c.x],
                    trigger: p.trigger.range.values[c.y],
                    seed: c.experiment.seed,
                    variant: v.clone(),
                    class: if v == "before-fix" && c.x + c.y >= 1 {
                        CellClass::Metastable
                    } else {
                        CellClass::Recovered
                    },
                    recovered_after_s: Some(2.0),
                    waves: 1,
                    peak_failure_ratio: Some(0.6),
                    report: None,
                    error: None,
                });
            }
        }
        assert_eq!(p.duration, Duration::from_secs(25));
        let m = heatmap_of(&p, &results, "before-fix");
        assert_eq!(
            m.cells[0],
            vec![CellClass::Recovered, CellClass::Metastable]
        );
        let caps = capacities(&p, &results);
        assert_eq!(caps[0].highest_recovered, Some(0.3));
        assert_eq!(caps[1].highest_recovered, None);
        assert_eq!(caps[2].highest_recovered, Some(0.5));
        let dir = std::env::temp_dir().join(format!("sweep-test-{}", std::process::id()));
        let page = write_outputs(
            &p,
            &results,
            &dir,
            "test",
            Duration::from_secs(60),
            Duration::from_secs(50),
            false,
        )
        .unwrap();
        let html = std::fs::read_to_string(page).unwrap();
        assert_eq!(html.matches("data:image/png;base64,").count(), 2);
        assert!(dir.join("charts/before-fix.svg").exists());
        let csv = std::fs::read_to_string(dir.join("grid.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 8);
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("grid.json")).unwrap()).unwrap();
        assert_eq!(json["cells"].as_array().unwrap().len(), 8);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
