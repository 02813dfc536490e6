//! Running a sweep's cells, a few at a time, each seed of each cell through
//! the normal runner (its own system, its own report under `cells/`), and
//! classifying each variant by its report's verdict. On the virtual clock
//! each run gets a paused runtime of its own on a blocking thread, so runs
//! at once use the cores and never share a clock.

use super::plan::{Cell, Plan, SweepError};
use crate::base::clock::ClockKind;
use crate::base::interrupt::StopSignal;
use crate::commands::axis::Trigger;
use crate::run::{self, RunOptions};
use run_report::sweep::SweepCell;
use run_report::CellClass;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn cell_dir(plan: &Plan, c: &Cell, seed: u64) -> String {
    let dir = format!(
        "cells/{:03}-load{}-trigger{}",
        c.index,
        plan.loads.text(c.x),
        plan.trigger.range.text(c.y)
    );
    match c.seeds.len() {
        1 => dir,
        _ => format!("{dir}/seed{seed}"),
    }
}

/// One run of a cell's experiment with `seed`, on the plan's clock.
async fn run_seed(
    c: &Cell,
    seed: u64,
    opts: RunOptions,
    stop: Arc<StopSignal>,
) -> Result<run::RunOutcome, SweepError> {
    let mut e = c.experiment.clone();
    e.seed = seed;
    match opts.clock {
        ClockKind::Real => run::run(&e, &opts, stop)
            .await
            .map_err(|e| SweepError::Run(Box::new(e))),
        ClockKind::Virtual => tokio::task::spawn_blocking(move || {
            let rt = ClockKind::Virtual.runtime().map_err(SweepError::Runtime)?;
            rt.block_on(run::run(&e, &opts, stop))
                .map_err(|e| SweepError::Run(Box::new(e)))
        })
        .await
        .map_err(SweepError::Thread)?,
    }
}

async fn run_cell(
    plan: &Plan,
    (c, seed): (&Cell, u64),
    sweep_dir: &Path,
    variant: Option<String>,
    stop: Arc<StopSignal>,
) -> Vec<SweepCell> {
    let rel = cell_dir(plan, c, seed);
    let opts = RunOptions {
        out_dir: sweep_dir.join(&rel),
        quiet: true,
        variant,
        clock: plan.runs.clock,
        ..RunOptions::default()
    };
    let base = |variant: &str| SweepCell {
        index: c.index,
        x: c.x,
        y: c.y,
        load: plan.loads.values[c.x],
        trigger: plan.trigger.range.values[c.y],
        seed,
        variant: variant.to_string(),
        class: CellClass::NotRun,
        recovered_after_s: None,
        waves: 0,
        peak_failure_ratio: None,
        report: None,
        error: None,
    };
    match run_seed(c, seed, opts, stop).await {
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
                            r.class = CellClass::of(&v.verdict);
                            r.recovered_after_s = v.verdict.recovered_after_s();
                            r.waves = v.waves.len();
                            r.peak_failure_ratio =
                                v.metrics.get(run_report::Metric::PeakFailureRatio);
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
                r.error = Some(e.to_string());
                r
            })
            .collect(),
    }
}

fn describe(r: &[SweepCell]) -> String {
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

/// Runs every seed of every cell, `parallel` at a time; stops starting runs
/// once `stop` is set.
pub async fn run_grid(
    plan: Arc<Plan>,
    sweep_dir: PathBuf,
    variant: Option<String>,
    parallel: usize,
    stop: Arc<StopSignal>,
) -> Vec<SweepCell> {
    let queue: Arc<Mutex<VecDeque<(usize, u64)>>> = Arc::new(Mutex::new(
        plan.cells
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.seeds.iter().map(move |&s| (i, s)))
            .collect(),
    ));
    let results: Arc<Mutex<Vec<SweepCell>>> = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let total = queue.lock().expect("sweep queue").len();
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
                let Some((i, seed)) = queue.lock().expect("sweep queue").pop_front() else {
                    break;
                };
                let c = &plan.cells[i];
                let r = run_cell(&plan, (c, seed), &dir, variant.clone(), stop.clone()).await;
                let line = describe(&r);
                let done = {
                    let mut all = results.lock().expect("sweep results");
                    all.extend(r);
                    all.iter()
                        .map(|r| (r.index, r.seed))
                        .collect::<std::collections::BTreeSet<_>>()
                        .len()
                };
                eprintln!(
                    "[{done}/{total}] {:>5.0} s  load {} {} {} seed {seed}: {line}",
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
    all.sort_by_key(|r| (r.index, r.seed));
    all
}

/// The last two segments of a path (`oversized_documents.count`).
pub(crate) fn short_path(p: &str) -> String {
    let segs: Vec<&str> = p.split('.').collect();
    segs[segs.len().saturating_sub(2)..].join(".")
}

pub(crate) fn axis_label(t: &Trigger) -> String {
    let mut s = short_path(&t.paths[0]);
    if t.paths.len() > 1 {
        s.push_str(&format!(" (x{} paths)", t.paths.len()));
    }
    s
}
