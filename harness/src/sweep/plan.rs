//! A sweep's plan: its arguments, and every cell built and validated
//! before anything runs (the grid values are set in the file's YAML tree, so
//! a cell is checked exactly like a file a user wrote).

use crate::axis::{parse_range, parse_trigger, Range, Trigger};
use crate::experiment::{self, Experiment};
use crate::tree::{parse_sets, set_path, to_yaml, with_sets, Source};
use anyhow::Context;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// Where the load goes in the YAML tree (a dotted path, as for
    /// `--trigger`): for an experiment whose arrivals step up, e.g.
    /// `workload.arrival.steps.1.capacity`.
    #[arg(long, default_value = LOAD_PATH)]
    pub load_path: String,
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
    #[command(flatten)]
    pub plan: crate::budget::PlanArgs,
}

/// The experiment text of one cell: the file's tree with the fixed changes,
/// the load and the trigger value set, as YAML.
pub fn cell_text(
    tree: &Value,
    sets: &[(String, Value)],
    load: Option<(&str, Value)>,
    trigger: &Trigger,
    trigger_index: usize,
) -> anyhow::Result<String> {
    let mut t = with_sets(tree, sets)?;
    if let Some((path, load)) = load {
        set_path(&mut t, path, load).map_err(|e| {
            if path == LOAD_PATH {
                anyhow::anyhow!("--load needs `workload: {{ arrival: {{ constant: {{ capacity: .. }} }} }}` in the experiment, or --load-path naming where the load goes ({e})")
            } else {
                anyhow::anyhow!("--load-path {path}: {e}")
            }
        })?;
    }
    for p in &trigger.paths {
        set_path(&mut t, p, trigger.range.json(trigger_index))?;
    }
    to_yaml(&t)
}

/// Estimated wall time: cells x variants x (duration + drain + start-up) / parallel.
pub fn estimate(cells: usize, variants: usize, duration: Duration, parallel: usize) -> Duration {
    let per =
        duration + crate::load::drain_time(Duration::from_secs(1), 4) + Duration::from_secs(3);
    let runs = (cells * variants) as u32;
    let waves = runs.div_ceil(parallel.max(1) as u32);
    per * waves
}

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
    /// Where each load value was set in the tree.
    pub load_path: String,
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
    load_path: &str,
    trigger: &str,
    sets: &[String],
    variant: Option<&str>,
    seed: Option<u64>,
) -> anyhow::Result<Plan> {
    // The file as written must be valid first (errors point at its lines).
    let src = Source::read(path, true)?;
    let loads = parse_range(loads).context("--load")?;
    let trigger = parse_trigger(trigger)?;
    let sets = parse_sets(sets)?;
    if src.tree.pointer("/quick/timeline").is_some() {
        for p in &trigger.paths {
            if p.starts_with("timeline.") {
                eprintln!("warning: {p}: the sweep runs the quick form, which uses `quick.timeline`; this path only changes the full timeline");
            }
        }
    }
    let base = &src.base;
    let variants = src.variants(variant);
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
    let axes = Axes {
        loads: &loads,
        load_path,
        trigger: &trigger,
    };
    let cells = axes.cells(&src, &sets, base_seed)?;
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
    /// `sets` and its two values, validated, seeded `base_seed` + its index.
    fn cells(
        &self,
        src: &Source,
        sets: &[(String, Value)],
        base_seed: u64,
    ) -> anyhow::Result<Vec<Cell>> {
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
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::parse_set;
    use serde_json::json;

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
            Some(100),
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
            None,
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
            None,
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("no variant"), "{e:#}");
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
            None,
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
            None,
        )
        .err()
        .unwrap();
        assert!(format!("{e:#}").contains("--load-path"), "{e:#}");
    }
}
