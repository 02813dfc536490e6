//! The outputs of a sweep (`harness sweep`): the grid of cells, each run's
//! verdict class, the hidden capacity per trigger value, and the page, CSV,
//! JSON and maps written from them. Pure functions of [`SweepGrid`]; the
//! harness only runs the cells.

mod cell_class;

use crate::charts::heatmap::{self, CellClass, Heatmap};
use crate::error::ReportError;
use crate::html::{data_uri, page};
use crate::xml::escape;
use cell_class::{cell_note, modal_class};
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One variant of one cell, measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepCell {
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

/// The hidden capacity at one trigger value, from the cells along the load axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HiddenCapacity {
    pub variant: String,
    pub trigger: f64,
    /// The highest load that came back (stable or recovered); None: none did.
    pub highest_recovered: Option<f64>,
    /// The lowest load that did not come back (None: every load judged did).
    pub lowest_not_recovered: Option<f64>,
    /// The highest load below which every load judged came back (the safe region).
    pub safe_up_to: Option<f64>,
}

/// Hidden capacity from `(load, class)` pairs of one variant at one trigger
/// value. Cells not run, without trigger or inconclusive are ignored.
pub fn hidden_capacity(variant: &str, trigger: f64, cells: &[(f64, CellClass)]) -> HiddenCapacity {
    let mut judged: Vec<(f64, bool)> = cells
        .iter()
        .filter_map(|&(l, c)| c.side().map(|back| (l, back)))
        .collect();
    judged.sort_by(|a, b| a.0.total_cmp(&b.0));
    HiddenCapacity {
        variant: variant.to_string(),
        trigger,
        highest_recovered: judged.iter().rev().find(|c| c.1).map(|c| c.0),
        lowest_not_recovered: judged.iter().find(|c| !c.1).map(|c| c.0),
        safe_up_to: judged.iter().take_while(|c| c.1).map(|c| c.0).last(),
    }
}

/// A whole sweep: its axes, its cells and how it ran.
#[derive(Debug, Clone, Serialize)]
pub struct SweepGrid {
    pub experiment: String,
    pub file: String,
    pub run_id: String,
    pub quick: bool,
    pub load_path: String,
    pub loads: Vec<f64>,
    pub load_ticks: Vec<String>,
    pub trigger_paths: Vec<String>,
    pub triggers: Vec<f64>,
    pub trigger_ticks: Vec<String>,
    /// The y axis in words, e.g. `oversized_documents.count (x2 paths)`.
    pub trigger_label: String,
    /// The `--set` changes, as `path=json`.
    pub set: Vec<String>,
    pub variants: Vec<String>,
    pub base_seed: u64,
    /// Runs per cell and variant, each with its own seed (a cell's class:
    /// `cell_class::modal_class`).
    pub seeds_per_cell: u32,
    /// The cells' clock: `real` or `virtual`.
    pub clock: String,
    pub estimated_s: u64,
    pub wall_s: f64,
    pub interrupted: bool,
    pub cells: Vec<SweepCell>,
}

impl SweepGrid {
    /// The map of one variant: each cell coloured by the side most of its
    /// runs took (`cell_class::modal_class`), with a note saying how many
    /// came back when it ran several seeds.
    pub fn heatmap(&self, variant: &str) -> Heatmap {
        let (nx, ny) = (self.loads.len(), self.triggers.len());
        let mut cells = vec![vec![CellClass::NotRun; nx]; ny];
        let mut notes = vec![vec![String::new(); nx]; ny];
        for y in 0..ny {
            for x in 0..nx {
                let runs = self.runs_of(variant, x, y);
                cells[y][x] = modal_class(&runs);
                notes[y][x] = cell_note(&runs, cells[y][x]);
            }
        }
        let runs = (nx * ny) as u64 * u64::from(self.seeds_per_cell.max(1));
        Heatmap {
            title: format!("{} — {variant}", self.experiment),
            subtitle: format!(
                "{} form, {} clock, {nx} x {ny} cells x {} seed(s), seeds {}..{}; {}",
                if self.quick { "quick" } else { "full" },
                self.clock,
                self.seeds_per_cell.max(1),
                self.base_seed,
                self.base_seed + runs.saturating_sub(1),
                if self.seeds_per_cell > 1 {
                    "cell: the side most runs took; text: runs back of those judged"
                } else {
                    "cell text: recovery time after the residue, or peak failure"
                }
            ),
            x_label: "load (share of calibrated capacity)".into(),
            y_label: self.trigger_label.clone(),
            x_ticks: self.load_ticks.clone(),
            y_ticks: self.trigger_ticks.clone(),
            cells,
            notes,
        }
    }

    /// The runs of one variant in cell (x, y), one per seed.
    fn runs_of(&self, variant: &str, x: usize, y: usize) -> Vec<&SweepCell> {
        self.cells
            .iter()
            .filter(|r| r.variant == variant && r.x == x && r.y == y)
            .collect()
    }

    /// Hidden capacity of every variant at every trigger value.
    pub fn capacities(&self) -> Vec<HiddenCapacity> {
        let mut out = Vec::new();
        for v in &self.variants {
            for (y, &t) in self.triggers.iter().enumerate() {
                let cells: Vec<(f64, CellClass)> = (0..self.loads.len())
                    .map(|x| (self.loads[x], modal_class(&self.runs_of(v, x, y))))
                    .collect();
                out.push(hidden_capacity(v, t, &cells));
            }
        }
        out
    }

    /// Class counts of one variant, in `CellClass::ALL` order.
    pub fn counts(&self, variant: &str) -> Vec<(CellClass, usize)> {
        CellClass::ALL
            .iter()
            .map(|&c| {
                let n = self
                    .cells
                    .iter()
                    .filter(|r| r.variant == variant && r.class == c)
                    .count();
                (c, n)
            })
            .collect()
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

fn csv(cells: &[SweepCell]) -> String {
    let mut s = String::from(
        "index,load,trigger,seed,variant,class,recovered_after_s,waves,peak_failure_ratio,report,error\n",
    );
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
    let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    for r in cells {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{}",
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
        );
    }
    s
}

/// One line: the grid, the run, its estimate and wall time.
pub fn summary_line(g: &SweepGrid) -> String {
    let secs = |s: u64| humantime::format_duration(std::time::Duration::from_secs(s)).to_string();
    format!(
        "{} x {} cells x {} seed(s) x {} variant(s), {} form, {} clock, run {}; estimated {}, took {}{}",
        g.loads.len(),
        g.triggers.len(),
        g.seeds_per_cell.max(1),
        g.variants.len(),
        if g.quick { "quick" } else { "full" },
        g.clock,
        g.run_id,
        secs(g.estimated_s),
        secs(g.wall_s as u64),
        if g.interrupted {
            " — INTERRUPTED, cells not run are blank"
        } else {
            ""
        }
    )
}

fn html(g: &SweepGrid, caps: &[HiddenCapacity], pngs: &[(String, Vec<u8>)]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<h1>{} — vulnerability map</h1><p class=\"muted\">{}</p>\
         <p>x: load, <code>{}</code>; y: <code>{}</code>. Each cell runs the experiment with \
         its own seeds (base seed + cell index x seeds per cell + k) and is classified by its \
         reports' verdicts (the side, came back or not, that more than half of its judged runs \
         took, half and half counting as not, then that side's most common class); the \
         thick line separates cells that came back (stable or recovered) from cells that did not \
         (metastable, overloaded, never healthy). Inconclusive cells sit on neither side.</p>",
        escape(&g.experiment),
        escape(&summary_line(g)),
        escape(&g.load_path),
        escape(&g.trigger_paths.join(", "))
    );
    if !g.set.is_empty() {
        let _ = write!(
            h,
            "<p>Fixed changes in every cell: <code>{}</code></p>",
            escape(&g.set.join("  "))
        );
    }
    h.push_str("<div class=\"maps\">");
    for (v, png) in pngs {
        let _ = write!(
            h,
            "<figure><img alt=\"{0} map\" src=\"{1}\"><figcaption>{0} (<a href=\"charts/{0}.svg\">SVG</a>)</figcaption></figure>",
            escape(v),
            data_uri(png)
        );
    }
    h.push_str("</div><h2>Cells per class</h2><table><tr><th>variant</th>");
    for c in CellClass::ALL {
        let _ = write!(
            h,
            "<th><span class=\"sw\" style=\"background:{}\"></span>{}</th>",
            c.css(),
            c.label()
        );
    }
    h.push_str("</tr>");
    for v in &g.variants {
        let _ = write!(h, "<tr><td>{}</td>", escape(v));
        for (_, n) in g.counts(v) {
            let _ = write!(h, "<td class=\"num\">{n}</td>");
        }
        h.push_str("</tr>");
    }
    h.push_str(
        "</table><h2>Hidden capacity</h2><p>Per trigger value: the highest load that came back, \
         the highest load up to which every load came back, and the lowest load that did not.</p>\
         <table><tr><th>trigger</th>",
    );
    for v in &g.variants {
        let _ = write!(
            h,
            "<th>{0}: highest recovered</th><th>{0}: all recovered up to</th><th>{0}: first not recovered</th>",
            escape(v)
        );
    }
    h.push_str("</tr>");
    let o = |x: Option<f64>| x.map_or("—".to_string(), fmt_value);
    for (y, &t) in g.triggers.iter().enumerate() {
        let tick = g
            .trigger_ticks
            .get(y)
            .cloned()
            .unwrap_or_else(|| fmt_value(t));
        let _ = write!(h, "<tr><td>{}</td>", escape(&tick));
        for v in &g.variants {
            if let Some(c) = caps.iter().find(|c| &c.variant == v && c.trigger == t) {
                let _ = write!(
                    h,
                    "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                    o(c.highest_recovered),
                    o(c.safe_up_to),
                    o(c.lowest_not_recovered)
                );
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</table><h2>Cells</h2><table><tr><th>#</th><th>load</th><th>trigger</th><th>seed</th><th>variant</th><th>class</th><th>recovered after</th><th>waves</th><th>peak failure</th><th>report</th></tr>");
    for r in &g.cells {
        let _ = write!(
            h,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            r.index,
            fmt_value(r.load),
            fmt_value(r.trigger),
            r.seed,
            escape(&r.variant),
            r.class.css(),
            escape(&match &r.error {
                Some(e) => format!("not run: {e}"),
                None => r.class.label().to_string(),
            }),
            r.recovered_after_s.map_or("—".into(), |s| format!("{s:.0} s")),
            r.waves,
            r.peak_failure_ratio.map_or("—".into(), |p| format!("{:.2}", p)),
            r.report.as_deref().map_or("—".into(), |p| format!(
                "<a href=\"{0}/index.html\">{0}</a>",
                escape(p)
            )),
        );
    }
    h.push_str("</table>\n");
    page(&format!("{} — vulnerability map", g.experiment), &h)
}

/// Writes the sweep's files under `dir` (maps as SVG and PNG, grid.csv,
/// grid.json, index.html last); returns the page's path.
pub fn write_sweep(dir: &Path, g: &SweepGrid) -> Result<PathBuf, ReportError> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut pngs = Vec::new();
    for v in &g.variants {
        let map = g.heatmap(v);
        let size = heatmap::default_size(&map);
        files.push((
            format!("charts/{v}.svg"),
            heatmap::heatmap_svg(&map, size)?.into_bytes(),
        ));
        let png = heatmap::heatmap_png(&map, size)?;
        files.push((format!("charts/{v}.png"), png.clone()));
        pngs.push((v.clone(), png));
    }
    let caps = g.capacities();
    #[derive(Serialize)]
    struct GridJson<'a> {
        #[serde(flatten)]
        grid: &'a SweepGrid,
        hidden_capacity: &'a [HiddenCapacity],
    }
    files.push(("grid.csv".into(), csv(&g.cells).into_bytes()));
    files.push((
        "grid.json".into(),
        serde_json::to_vec_pretty(&GridJson {
            grid: g,
            hidden_capacity: &caps,
        })?,
    ));
    files.push(("index.html".into(), html(g, &caps, &pngs).into_bytes()));
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    crate::write::write_files(dir, &refs)?;
    Ok(dir.join("index.html"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_from_grid() {
        use CellClass::*;
        let cells = [
            (0.3, Recovered),
            (0.5, Stable),
            (0.7, Metastable),
            (0.9, Recovered),
            (1.1, NotRun),
            (1.3, Inconclusive),
        ];
        let h = hidden_capacity("b", 4.0, &cells);
        assert_eq!(h.highest_recovered, Some(0.9));
        assert_eq!(h.safe_up_to, Some(0.5));
        assert_eq!(h.lowest_not_recovered, Some(0.7));
        let h = hidden_capacity("b", 4.0, &[(0.3, NeverHealthy), (0.5, Overloaded)]);
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

    fn grid() -> SweepGrid {
        let mut cells = Vec::new();
        for (index, (x, y)) in [(0, 0), (1, 0), (0, 1), (1, 1)].into_iter().enumerate() {
            for v in ["before-fix", "after-fix"] {
                cells.push(SweepCell {
                    index,
                    x,
                    y,
                    load: [0.3, 0.5][x],
                    trigger: [1.0, 8.0][y],
                    seed: 42 + index as u64,
                    variant: v.into(),
                    class: if v == "before-fix" && x + y >= 1 {
                        CellClass::Metastable
                    } else {
                        CellClass::Recovered
                    },
                    recovered_after_s: Some(2.0),
                    waves: 1,
                    peak_failure_ratio: Some(0.6),
                    report: Some(format!("cells/{index:03}")),
                    error: None,
                });
            }
        }
        SweepGrid {
            experiment: "retry-storm".into(),
            file: "experiments/retry-storm.yaml".into(),
            run_id: "test".into(),
            quick: true,
            load_path: "workload.arrival.constant.capacity".into(),
            loads: vec![0.3, 0.5],
            load_ticks: vec!["0.3".into(), "0.5".into()],
            trigger_paths: vec!["quick.timeline.1.fault.oversized_documents.count".into()],
            triggers: vec![1.0, 8.0],
            trigger_ticks: vec!["1".into(), "8".into()],
            trigger_label: "oversized_documents.count".into(),
            set: vec![],
            variants: vec!["before-fix".into(), "after-fix".into()],
            base_seed: 42,
            seeds_per_cell: 1,
            clock: "real".into(),
            estimated_s: 60,
            wall_s: 50.0,
            interrupted: false,
            cells,
        }
    }

    #[test]
    fn maps_and_outputs_from_cells() {
        let g = grid();
        let m = g.heatmap("before-fix");
        assert_eq!(
            m.cells[0],
            vec![CellClass::Recovered, CellClass::Metastable]
        );
        let caps = g.capacities();
        assert_eq!(caps[0].highest_recovered, Some(0.3));
        assert_eq!(caps[1].highest_recovered, None);
        assert_eq!(caps[2].highest_recovered, Some(0.5));
        let dir = std::env::temp_dir().join(format!("sweep-page-test-{}", std::process::id()));
        let page = write_sweep(&dir, &g).unwrap();
        let html = std::fs::read_to_string(page).unwrap();
        assert_eq!(html.matches("data:image/png;base64,").count(), 2);
        assert!(
            html.contains("<style>"),
            "self-contained, with the report's CSS"
        );
        assert!(dir.join("charts/before-fix.svg").exists());
        let csv = std::fs::read_to_string(dir.join("grid.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 8);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("grid.json")).unwrap()).unwrap();
        assert_eq!(json["cells"].as_array().unwrap().len(), 8);
        assert_eq!(json["hidden_capacity"].as_array().unwrap().len(), 4);
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(leftovers, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn several_seeds_per_cell_give_the_side_most_runs_took() {
        let mut g = grid();
        g.seeds_per_cell = 4;
        // Cell (0, 0) of before-fix: recovered, then metastable twice and
        // never healthy once, all judged.
        let one = g.cells[0].clone();
        let more = [
            CellClass::NeverHealthy,
            CellClass::Metastable,
            CellClass::Metastable,
        ];
        for (k, class) in more.into_iter().enumerate() {
            g.cells.push(SweepCell {
                seed: 100 + k as u64,
                class,
                ..one.clone()
            });
        }
        let m = g.heatmap("before-fix");
        assert_eq!(m.cells[0][0], CellClass::Metastable);
        assert_eq!(m.notes[0][0], "1/4 back");
        // The load axis judges by the cell's class, not by its first run.
        assert_eq!(g.capacities()[0].highest_recovered, None);
        // Half came back: not called safe, even where the most common
        // single class is recovered (2 recovered, 1 metastable, 1 never healthy).
        g.cells.pop();
        g.cells.push(SweepCell {
            seed: 200,
            ..one.clone()
        });
        let m = g.heatmap("before-fix");
        assert_eq!(
            (m.cells[0][0], m.notes[0][0].as_str()),
            (CellClass::Metastable, "2/4 back")
        );
        // More than half came back; inconclusive runs are not judged.
        g.cells.push(SweepCell {
            seed: 201,
            ..one.clone()
        });
        g.cells.push(SweepCell {
            seed: 202,
            class: CellClass::Inconclusive,
            ..one.clone()
        });
        let m = g.heatmap("before-fix");
        assert_eq!(
            (m.cells[0][0], m.notes[0][0].as_str()),
            (CellClass::Recovered, "3/5 back")
        );
        assert!(m.subtitle.contains("real clock"));
    }
}
