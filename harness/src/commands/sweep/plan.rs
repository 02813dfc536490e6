//! A sweep's plan: its arguments, and every cell built and validated
//! before anything runs (the grid values are set in the file's YAML tree, so
//! a cell is checked exactly like a file a user wrote).

use crate::base::clock::ClockKind;
use crate::cli::SweepArgs;
use crate::commands::axis::{parse_range, parse_trigger, AxisError, Range, Trigger};
use crate::experiment::tree::{parse_sets, set_path, to_yaml, with_sets, Source, TreeError};
use crate::experiment::{self, Experiment, ExperimentError};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

pub use crate::cli::LOAD_PATH;

/// Why a sweep could not be planned (its arguments, the file, a cell that
/// does not validate) or a cell's run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("--load needs `workload: {{ arrival: {{ constant: {{ capacity: .. }} }} }}` in the experiment, or --load-path naming where the load goes ({0})")]
    NoLoadPath(TreeError),
    #[error("--load-path {path}: {error}")]
    LoadPath { path: String, error: TreeError },
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("--load: {0}")]
    Load(AxisError),
    #[error(transparent)]
    Axis(#[from] AxisError),
    #[error("--without-alerts is for --clock virtual only")]
    WithoutAlerts,
    #[error("no variant named {variant:?} in {name} (it has: {has})")]
    NoVariant {
        variant: String,
        name: String,
        has: String,
    },
    /// The file refused on the virtual clock, or a cell that does not validate.
    #[error("{0}")]
    Invalid(#[from] ExperimentError),
    #[error(transparent)]
    Run(#[from] Box<crate::run::RunError>),
    /// A virtual-time cell's own runtime could not start.
    #[error("{}", crate::base::causes::Causes(.0))]
    Runtime(std::io::Error),
    #[error("a virtual-time cell's thread ended: {0}")]
    Thread(tokio::task::JoinError),
}

/// How each cell runs: its seeds and its clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct CellRuns {
    /// The first cell's first seed (`None`: the file's).
    pub base_seed: Option<u64>,
    /// Runs per cell (at least one).
    pub runs_per_cell: u32,
    pub clock: crate::base::clock::ClockKind,
    /// Leave `alerts:` out of every cell (virtual time).
    pub without_alerts: bool,
}

impl CellRuns {
    /// The options of `harness sweep`'s arguments.
    pub fn of(args: &SweepArgs) -> CellRuns {
        CellRuns {
            base_seed: args.plan.seed,
            runs_per_cell: args.runs_per_cell.max(1),
            clock: args.clock,
            without_alerts: args.without_alerts,
        }
    }
}

/// The experiment text of one cell: the file's tree with the fixed changes,
/// the load and the trigger value set, as YAML.
pub fn cell_text(
    tree: &Value,
    sets: &[(String, Value)],
    load: Option<(&str, Value)>,
    trigger: &Trigger,
    trigger_index: usize,
) -> Result<String, SweepError> {
    let mut t = with_sets(tree, sets)?;
    if let Some((path, load)) = load {
        set_path(&mut t, path, load).map_err(|e| {
            if path == LOAD_PATH {
                SweepError::NoLoadPath(e)
            } else {
                SweepError::LoadPath {
                    path: path.to_string(),
                    error: e,
                }
            }
        })?;
    }
    for p in &trigger.paths {
        set_path(&mut t, p, trigger.range.json(trigger_index))?;
    }
    Ok(to_yaml(&t)?)
}

/// Estimated wall time: runs (cells x seeds x variants) x (duration +
/// drain + start-up) / parallel, on `clock` (`ClockKind::wall_estimate`).
pub fn estimate(runs: usize, duration: Duration, parallel: usize, clock: ClockKind) -> Duration {
    let per =
        duration + crate::load::drain_time(Duration::from_secs(1), 4) + Duration::from_secs(3);
    let waves = (runs as u32).div_ceil(parallel.max(1) as u32);
    clock.wall_estimate(per * waves)
}

/// One cell of the grid, validated.
pub struct Cell {
    pub index: usize,
    /// Position: x = load index, y = trigger index.
    pub x: usize,
    pub y: usize,
    /// Seeded with the cell's first seed.
    pub experiment: Experiment,
    /// The cell's seeds, one run each: base seed + index x seeds per cell + k.
    pub seeds: Vec<u64>,
}

/// A validated sweep.
pub struct Plan {
    pub name: String,
    pub file: String,
    pub loads: Range,
    /// Where each load value was set in the tree.
    pub load_path: String,
    pub trigger: Trigger,
    /// The `--set` changes, as `path=json`.
    pub sets: Vec<String>,
    pub variants: Vec<String>,
    pub cells: Vec<Cell>,
    pub duration: Duration,
    pub base_seed: u64,
    pub runs: CellRuns,
}

impl Plan {
    /// Every run of the grid, as (cell, seed) pairs.
    pub fn run_count(&self) -> usize {
        self.cells.iter().map(|c| c.seeds.len()).sum::<usize>() * self.variants.len()
    }
}

/// Builds and validates every cell (nothing runs before all of them passed).
pub fn plan(
    path: &Path,
    loads: &str,
    load_path: &str,
    trigger: &str,
    sets: &[String],
    variant: Option<&str>,
    runs: CellRuns,
) -> Result<Plan, SweepError> {
    // The file as written must be valid first (errors point at its lines).
    let src = Source::read(path, true)?;
    let loads = parse_range(loads).map_err(SweepError::Load)?;
    let trigger = parse_trigger(trigger)?;
    let sets = parse_sets(sets)?;
    if src.tree.pointer("/quick/timeline").is_some() {
        for p in &trigger.paths {
            if p.starts_with("timeline.") {
                eprintln!("warning: {p}: the sweep runs the quick form, which uses `quick.timeline`; this path only changes the full timeline");
            }
        }
    }
    if runs.without_alerts && !runs.clock.is_virtual() {
        return Err(SweepError::WithoutAlerts);
    }
    if runs.clock.is_virtual() {
        experiment::check_virtual_clock(&src.base.source, &src.file)?;
        if src.base.alerts.is_some() {
            eprintln!("WARNING: {}", crate::base::clock::WITHOUT_ALERTS);
        }
    }
    let base = &src.base;
    let variants = src.variants(variant);
    if variants.is_empty() {
        return Err(SweepError::NoVariant {
            variant: variant.unwrap_or("").to_string(),
            name: base.name.clone(),
            has: base
                .variants
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let base_seed = runs.base_seed.unwrap_or(base.seed);
    let axes = Axes {
        loads: &loads,
        load_path,
        trigger: &trigger,
    };
    let cells = axes.cells(&src, &sets, base_seed, runs)?;
    let cells_duration = cells
        .iter()
        .map(|c| c.experiment.duration)
        .max()
        .unwrap_or(base.duration);
    Ok(Plan {
        name: base.name.clone(),
        file: src.file,
        loads,
        load_path: load_path.to_string(),
        trigger,
        sets: sets
            .iter()
            .map(|(p, v)| format!("{p}={}", serde_json::to_string(v).unwrap_or_default()))
            .collect(),
        variants,
        cells,
        duration: cells_duration,
        base_seed,
        runs,
    })
}

/// The grid's two axes: the loads (x), set at `load_path`, and the
/// trigger's values (y).
struct Axes<'a> {
    loads: &'a Range,
    load_path: &'a str,
    trigger: &'a Trigger,
}

impl Axes<'_> {
    /// Every cell, row by row (trigger value, then load), each the file with
    /// `sets` and its two values, validated, with `runs.runs_per_cell` seeds from
    /// `base_seed` + its index x `runs.runs_per_cell`.
    fn cells(
        &self,
        src: &Source,
        sets: &[(String, Value)],
        base_seed: u64,
        runs: CellRuns,
    ) -> Result<Vec<Cell>, SweepError> {
        let (loads, trigger) = (self.loads, self.trigger);
        let mut cells: Vec<Cell> = Vec::new();
        for y in 0..trigger.range.values.len() {
            for x in 0..loads.values.len() {
                let index = cells.len();
                let load = Some((self.load_path, loads.json(x)));
                let text = cell_text(&src.tree, sets, load, trigger, y)?;
                let label = format!(
                    "{} (sweep cell load={} {}={})",
                    src.file,
                    loads.text(x),
                    trigger.paths[0],
                    trigger.range.text(y)
                );
                let mut e = experiment::parse(&text, &label, true)?;
                let n = u64::from(runs.runs_per_cell.max(1));
                let seeds: Vec<u64> = (0..n)
                    .map(|k| base_seed.wrapping_add(index as u64 * n + k))
                    .collect();
                e.seed = seeds[0];
                // The virtual clock leaves `alerts:` out, asked or not.
                if runs.clock.is_virtual() {
                    e.leave_out_alerts(crate::base::clock::WITHOUT_ALERTS);
                }
                cells.push(Cell {
                    index,
                    x,
                    y,
                    experiment: e,
                    seeds,
                });
            }
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::tree::parse_set;
    use serde_json::json;

    #[test]
    fn estimate_scales_with_parallel() {
        let one = estimate(50, Duration::from_secs(20), 1, ClockKind::Real);
        let two = estimate(50, Duration::from_secs(20), 2, ClockKind::Real);
        assert!(one >= Duration::from_secs(50 * 26));
        assert_eq!(two * 2, one);
        let virt = estimate(50, Duration::from_secs(20), 1, ClockKind::Virtual);
        assert_eq!(virt * 50, one);
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
        let trig =
            parse_trigger("quick.timeline.1.fault.oversized_documents.count=1..8:3").unwrap();
        let sets = vec![parse_set("quick.timeline.1.at=9s").unwrap()];
        let cell = cell_text(&tree, &sets, Some((LOAD_PATH, json!(0.7))), &trig, 2).unwrap();
        let e =
            experiment::parse(&cell, &format!("{file} (cell)"), true).expect("the cell validates");
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
                experiment::TimelineOp::Admin(_)
                | experiment::TimelineOp::LoadSpike(_)
                | experiment::TimelineOp::Generic(_) => None,
            })
            .collect();
        assert_eq!(counts, vec![8]);
        // Everything else is as written.
        assert_eq!(e.timeline.len(), orig.timeline.len());
        assert_eq!(e.timeline[0], orig.timeline[0]);
        assert_eq!(e.timeline[1].at, Duration::from_secs(9));
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
            LOAD_PATH,
            "quick.timeline.1.fault.oversized_documents.count=1..8:2",
            &[],
            None,
            CellRuns {
                base_seed: Some(100),
                ..CellRuns::default()
            },
        )
        .unwrap();
        assert_eq!(p.cells.len(), 6);
        assert_eq!(p.variants, vec!["before-fix", "async-clients", "after-fix"]);
        assert_eq!(p.cells[5].experiment.seed, 105);
        assert_eq!((p.cells[4].x, p.cells[4].y), (1, 1));
        let e = plan(
            Path::new(&file),
            "0.5",
            LOAD_PATH,
            "quick.timeline.9.fault.oversized_documents.count=1..8:2",
            &[],
            None,
            CellRuns::default(),
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("index 9"), "{e:#}");
        let e = plan(
            Path::new(&file),
            "0.5",
            LOAD_PATH,
            "x=1..2:2",
            &[],
            Some("nope"),
            CellRuns::default(),
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("no variant"), "{e:#}");
    }

    #[test]
    fn several_seeds_per_cell_and_the_virtual_clock() {
        let (_, file) = retry_storm();
        let trigger = "quick.timeline.1.fault.oversized_documents.count=1..8:2";
        let runs = CellRuns {
            base_seed: Some(100),
            runs_per_cell: 3,
            clock: ClockKind::Virtual,
            without_alerts: true,
        };
        let p = plan(
            Path::new(&file),
            "0.3..0.5:2",
            LOAD_PATH,
            trigger,
            &[],
            None,
            runs,
        )
        .unwrap();
        assert_eq!(p.cells[1].seeds, vec![103, 104, 105]);
        assert_eq!(p.cells[1].experiment.seed, 103);
        assert!(p.cells.iter().all(|c| c.experiment.alerts.is_none()));
        assert_eq!(p.run_count(), 4 * 3 * 3);
        // A real Prometheus cannot run on the virtual clock: the file's
        // `alerts:` are left out, asked or not.
        let runs = CellRuns {
            without_alerts: false,
            ..runs
        };
        let p = plan(Path::new(&file), "0.5", LOAD_PATH, trigger, &[], None, runs).unwrap();
        assert!(p.cells.iter().all(|c| c.experiment.alerts.is_none()));
    }

    #[test]
    fn the_load_goes_where_load_path_says() {
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../experiments/cache-flush.yaml"
        );
        let p = plan(
            Path::new(file),
            "1.0..2.0:2",
            "workload.arrival.steps.1.capacity",
            "quick.timeline.0.fault.cache_flush.share=0.5..1.0:2",
            &[],
            Some("before-fix"),
            CellRuns::default(),
        )
        .unwrap();
        assert_eq!(p.cells.len(), 4);
        assert_eq!(p.load_path, "workload.arrival.steps.1.capacity");
        // A constant-rate path on a stepped arrival names the fix.
        let e = plan(
            Path::new(file),
            "1.0",
            LOAD_PATH,
            "quick.timeline.0.fault.cache_flush.share=0.5..1.0:2",
            &[],
            None,
            CellRuns::default(),
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("--load-path"), "{e:#}");
    }
}
