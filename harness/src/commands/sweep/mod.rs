//! `harness sweep`: vulnerability maps.
//!
//! Researchers of metastable failures map, for one configuration, which
//! combinations of load and trigger size recover and which stay degraded.
//! This runs the experiment's quick form over a grid — x = load (the share of
//! capacity of `workload.arrival.constant.capacity`), y = one trigger field
//! set by a dotted path in the YAML tree — each cell with its own seed
//! (experiment seed + cell index), and classifies each cell and variant by the
//! report's verdict (stable, recovered, metastable, overloaded, inconclusive,
//! never healthy). Grid values are applied to the file's tree *before*
//! validation, so a cell is validated exactly like a file a user wrote.
//!
//! - [`plan`]: the arguments and the validated cells;
//! - [`grid`]: running the cells;
//! - the outputs (maps, `grid.csv`, `grid.json`, `index.html`) are pure
//!   functions of `run_report::sweep::SweepGrid`.

pub mod grid;
pub mod plan;

use crate::cli::SweepArgs;
pub use plan::{estimate, plan, CellRuns, Plan, LOAD_PATH};

use crate::base::exit::{CliError, Finished};
use crate::base::interrupt::cli_runtime;
use crate::base::run_id::RunFolder;
use crate::commands::budget::words;
use run_report::sweep::{fmt_value, SweepCell, SweepGrid};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The grid of a finished (or interrupted) sweep, for the outputs.
pub fn grid_of(
    plan: &Plan,
    run_id: &str,
    cells: Vec<SweepCell>,
    estimated: Duration,
    wall: Duration,
    interrupted: bool,
) -> SweepGrid {
    SweepGrid {
        experiment: plan.name.clone(),
        file: plan.file.clone(),
        run_id: run_id.to_string(),
        quick: true,
        load_path: plan.load_path.clone(),
        loads: plan.loads.values.clone(),
        load_ticks: (0..plan.loads.values.len())
            .map(|i| plan.loads.text(i))
            .collect(),
        trigger_paths: plan.trigger.paths.clone(),
        triggers: plan.trigger.range.values.clone(),
        trigger_ticks: (0..plan.trigger.range.values.len())
            .map(|i| plan.trigger.range.text(i))
            .collect(),
        trigger_label: grid::axis_label(&plan.trigger),
        set: plan.sets.clone(),
        variants: plan.variants.clone(),
        base_seed: plan.base_seed,
        seeds_per_cell: plan.runs.runs_per_cell.max(1),
        clock: plan.runs.clock.name().to_string(),
        estimated_s: estimated.as_secs(),
        wall_s: wall.as_secs_f64(),
        interrupted,
        cells,
    }
}

/// Prints class counts and hidden capacity per variant.
fn print_summary(g: &SweepGrid) {
    let caps = g.capacities();
    for v in &g.variants {
        let c = g
            .counts(v)
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
pub fn cli(args: SweepArgs) -> Result<Finished, CliError> {
    let plan = plan(
        &args.experiment,
        &args.load,
        &args.load_path,
        &args.trigger,
        &args.set,
        args.variant.as_deref(),
        CellRuns::of(&args),
    )
    .map_err(CliError::new)?;
    let parallel = args.parallel.max(1);
    let est = estimate(plan.run_count(), plan.duration, parallel, plan.runs.clock);
    eprintln!(
        "sweep of {}: {} loads x {} trigger values = {} cells x {} seed(s) x {} variant(s) ({}), quick form ({} each, {} clock), {} at a time: estimated {}",
        plan.name,
        plan.loads.values.len(),
        plan.trigger.range.values.len(),
        plan.cells.len(),
        plan.runs.runs_per_cell,
        plan.variants.len(),
        plan.variants.join(", "),
        words(plan.duration),
        plan.runs.clock.name(),
        parallel,
        words(est)
    );
    crate::commands::budget::check(
        est,
        *args.plan.budget,
        args.plan.force,
        "use a smaller grid, --parallel",
    )
    .map_err(CliError::new)?;
    let folder = RunFolder::now(
        &args.plan.out,
        &format!("{}-sweep", plan.name),
        plan.base_seed,
    );
    let (rt, stop) = cli_runtime()?;
    let started = Instant::now();
    let plan = Arc::new(plan);
    let cells = rt.block_on(grid::run_grid(
        plan.clone(),
        folder.dir.clone(),
        args.variant.clone(),
        parallel,
        stop.clone(),
    ));
    let wall = started.elapsed();
    let interrupted = stop.is_set();
    let g = grid_of(&plan, &folder.id, cells, est, wall, interrupted);
    print_summary(&g);
    match run_report::sweep::write_sweep(&folder.dir, &g) {
        Ok(page) => {
            folder.link_latest();
            eprintln!("sweep: {} (took {})", page.display(), words(wall));
        }
        Err(e) => {
            return Err(CliError::new(format_args!(
                "writing the sweep's files: {e}"
            )))
        }
    }
    if interrupted {
        eprintln!(
            "interrupted: {}; the maps hold the cells that finished",
            stop.reason().unwrap_or_default()
        );
        return Ok(Finished::Interrupted);
    }
    Ok(Finished::Passed)
}
