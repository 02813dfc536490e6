//! The vulnerability map of a sweep: x = load, y = trigger size, each cell
//! coloured by the verdict of its run (stable / recovered / metastable /
//! overloaded / inconclusive / never healthy / no trigger), with a thick line
//! along the boundary between cells that came back (stable or recovered) and
//! cells that did not (metastable, overloaded, never healthy); inconclusive
//! cells and cells not run sit on neither side.
//!
//! The chart is generic (labels and classes only), so the harness's `sweep`
//! command owns the grid and this module only draws it.

use super::font::{printable, FAMILY};
use super::panel::{err, DrawResult};
use super::style::{MUTED, TEXT, WIDTH};
use crate::analysis::Verdict;
use crate::error::ReportError;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

/// What one cell's run concluded (the report's [`Verdict`] class, plus "not run").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellClass {
    Stable,
    Recovered,
    Metastable,
    Overloaded,
    Inconclusive,
    NeverHealthy,
    NoTrigger,
    /// Not run, failed to run, or interrupted.
    NotRun,
}

impl CellClass {
    pub const ALL: [CellClass; 8] = [
        CellClass::Stable,
        CellClass::Recovered,
        CellClass::Metastable,
        CellClass::Overloaded,
        CellClass::Inconclusive,
        CellClass::NeverHealthy,
        CellClass::NoTrigger,
        CellClass::NotRun,
    ];

    /// The class of a verdict.
    pub fn of(v: &Verdict) -> CellClass {
        match v {
            Verdict::Stable => CellClass::Stable,
            Verdict::Recovered { .. } => CellClass::Recovered,
            Verdict::Metastable { .. } => CellClass::Metastable,
            Verdict::Overloaded { .. } => CellClass::Overloaded,
            Verdict::Inconclusive { .. } => CellClass::Inconclusive,
            Verdict::NeverHealthy { .. } => CellClass::NeverHealthy,
            Verdict::NoTrigger => CellClass::NoTrigger,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            CellClass::Stable => "stable",
            CellClass::Recovered => "recovered",
            CellClass::Metastable => "metastable",
            CellClass::Overloaded => "overloaded",
            CellClass::Inconclusive => "inconclusive",
            CellClass::NeverHealthy => "never healthy",
            CellClass::NoTrigger => "no trigger",
            CellClass::NotRun => "not run",
        }
    }

    pub fn color(self) -> RGBColor {
        match self {
            CellClass::Stable => RGBColor(35, 139, 69),
            CellClass::Recovered => RGBColor(116, 196, 118),
            CellClass::Metastable => RGBColor(215, 48, 39),
            CellClass::Overloaded => RGBColor(240, 120, 40),
            CellClass::Inconclusive => RGBColor(250, 225, 130),
            CellClass::NeverHealthy => RGBColor(84, 39, 136),
            CellClass::NoTrigger => RGBColor(189, 189, 189),
            CellClass::NotRun => RGBColor(245, 245, 245),
        }
    }

    /// The cell came back to its baseline (stable or recovered).
    pub fn came_back(self) -> bool {
        matches!(self, CellClass::Stable | CellClass::Recovered)
    }

    /// CSS colour (for HTML legends).
    pub fn css(self) -> String {
        let RGBColor(r, g, b) = self.color();
        format!("#{r:02x}{g:02x}{b:02x}")
    }

    /// Which side of the boundary: None for cells that say nothing either way.
    pub(crate) fn side(self) -> Option<bool> {
        match self {
            CellClass::NotRun | CellClass::Inconclusive | CellClass::NoTrigger => None,
            c => Some(c.came_back()),
        }
    }
}

/// A grid to draw. `cells[y][x]`, y = 0 at the bottom.
#[derive(Debug, Clone, Default)]
pub struct Heatmap {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub x_ticks: Vec<String>,
    pub y_ticks: Vec<String>,
    pub cells: Vec<Vec<CellClass>>,
    /// Optional short text per cell (same shape as `cells`; missing = none).
    pub notes: Vec<Vec<String>>,
}

impl Heatmap {
    fn nx(&self) -> usize {
        self.x_ticks.len()
    }
    fn ny(&self) -> usize {
        self.y_ticks.len()
    }
    fn class(&self, x: usize, y: usize) -> CellClass {
        self.cells
            .get(y)
            .and_then(|r| r.get(x))
            .copied()
            .unwrap_or(CellClass::NotRun)
    }
    fn note(&self, x: usize, y: usize) -> &str {
        self.notes
            .get(y)
            .and_then(|r| r.get(x))
            .map_or("", |s| s.as_str())
    }
}

const LEFT: i32 = 110;
const RIGHT: i32 = 190;
const TOP: i32 = 76;
const BOTTOM: i32 = 70;

/// Natural size: about 700 px wide, cells about square.
pub fn default_size(h: &Heatmap) -> (u32, u32) {
    let (nx, ny) = (h.nx().max(1) as u32, h.ny().max(1) as u32);
    let cell = ((WIDTH / 2 - (LEFT + RIGHT) as u32) / nx).clamp(30, 110);
    (
        (LEFT + RIGHT) as u32 + cell * nx,
        (TOP + BOTTOM) as u32 + cell * ny,
    )
}

/// Draw the map on `root`.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, h: &Heatmap) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (w, ht) = root.dim_in_pixel();
    let (w, ht) = (w as i32, ht as i32);
    let title = (FAMILY, 18).into_font().style(FontStyle::Bold).color(&TEXT);
    root.draw(&Text::new(printable(&h.title), (12, 10), title))
        .map_err(err)?;
    let sub = (FAMILY, 12).into_font().color(&MUTED);
    root.draw(&Text::new(printable(&h.subtitle), (12, 36), sub.clone()))
        .map_err(err)?;
    let (nx, ny) = (h.nx(), h.ny());
    if nx == 0 || ny == 0 {
        return root
            .draw(&Text::new("empty grid", (LEFT, TOP + 10), sub))
            .map_err(err);
    }
    let pw = (w - LEFT - RIGHT).max(nx as i32);
    let ph = (ht - TOP - BOTTOM).max(ny as i32);
    let cw = pw / nx as i32;
    let ch = ph / ny as i32;
    // Cell (x, y) spans [x0, x1) x [y0, y1) in pixels, y = 0 at the bottom.
    let x0 = |x: usize| LEFT + x as i32 * cw;
    let y1 = |y: usize| TOP + (ny - y) as i32 * ch;
    let note = (FAMILY, 11)
        .into_font()
        .color(&WHITE)
        .pos(Pos::new(HPos::Center, VPos::Center));
    let note_dark = (FAMILY, 11)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Center, VPos::Center));
    for y in 0..ny {
        for x in 0..nx {
            let c = h.class(x, y);
            let (ax, ay) = (x0(x), y1(y) - ch);
            root.draw(&Rectangle::new(
                [(ax, ay), (ax + cw, ay + ch)],
                c.color().filled(),
            ))
            .map_err(err)?;
            root.draw(&Rectangle::new(
                [(ax, ay), (ax + cw, ay + ch)],
                WHITE.stroke_width(1),
            ))
            .map_err(err)?;
            let t = h.note(x, y);
            if !t.is_empty() && cw >= 40 {
                let style = match c {
                    CellClass::Recovered
                    | CellClass::Inconclusive
                    | CellClass::NoTrigger
                    | CellClass::NotRun => note_dark.clone(),
                    _ => note.clone(),
                };
                root.draw(&Text::new(printable(t), (ax + cw / 2, ay + ch / 2), style))
                    .map_err(err)?;
            }
        }
    }
    // The boundary: between horizontally or vertically adjacent cells on
    // different sides (recovered vs not), ignoring cells not run.
    let line = ShapeStyle {
        color: BLACK.to_rgba(),
        filled: false,
        stroke_width: 4,
    };
    for y in 0..ny {
        for x in 0..nx {
            let here = h.class(x, y).side();
            if x + 1 < nx {
                let right = h.class(x + 1, y).side();
                if here.is_some() && right.is_some() && here != right {
                    let bx = x0(x + 1);
                    root.draw(&PathElement::new(vec![(bx, y1(y) - ch), (bx, y1(y))], line))
                        .map_err(err)?;
                }
            }
            if y + 1 < ny {
                let up = h.class(x, y + 1).side();
                if here.is_some() && up.is_some() && here != up {
                    let by = y1(y) - ch;
                    root.draw(&PathElement::new(vec![(x0(x), by), (x0(x) + cw, by)], line))
                        .map_err(err)?;
                }
            }
        }
    }
    // Ticks and axis labels.
    let tick_x = (FAMILY, 12)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (x, t) in h.x_ticks.iter().enumerate() {
        root.draw(&Text::new(
            printable(t),
            (x0(x) + cw / 2, TOP + ny as i32 * ch + 6),
            tick_x.clone(),
        ))
        .map_err(err)?;
    }
    let tick_y = (FAMILY, 12)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Right, VPos::Center));
    for (y, t) in h.y_ticks.iter().enumerate() {
        root.draw(&Text::new(
            printable(t),
            (LEFT - 8, y1(y) - ch / 2),
            tick_y.clone(),
        ))
        .map_err(err)?;
    }
    let axis = (FAMILY, 13)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new(
        printable(&h.x_label),
        (LEFT + nx as i32 * cw / 2, TOP + ny as i32 * ch + 30),
        axis,
    ))
    .map_err(err)?;
    let yaxis = (FAMILY, 13)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let ylab = printable(&h.y_label);
    // Wrap the y label above the axis (rotated text is not supported by every backend).
    root.draw(&Text::new(ylab, (12, TOP - 12), yaxis))
        .map_err(err)?;
    // Legend.
    let lx = LEFT + nx as i32 * cw + 20;
    let legend = (FAMILY, 12)
        .into_font()
        .color(&TEXT)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut ly = TOP + 8;
    for c in CellClass::ALL {
        root.draw(&Rectangle::new(
            [(lx, ly - 7), (lx + 14, ly + 7)],
            c.color().filled(),
        ))
        .map_err(err)?;
        root.draw(&Rectangle::new(
            [(lx, ly - 7), (lx + 14, ly + 7)],
            RGBColor(150, 150, 150).stroke_width(1),
        ))
        .map_err(err)?;
        root.draw(&Text::new(c.label(), (lx + 22, ly), legend.clone()))
            .map_err(err)?;
        ly += 22;
    }
    root.draw(&PathElement::new(vec![(lx, ly), (lx + 14, ly)], line))
        .map_err(err)?;
    root.draw(&Text::new("boundary", (lx + 22, ly), legend))
        .map_err(err)?;
    Ok(())
}

/// The map as SVG at `size` (see [`default_size`]).
pub fn heatmap_svg(h: &Heatmap, size: (u32, u32)) -> Result<String, ReportError> {
    super::svg("heatmap", size, |root| draw(root, h))
}

/// The map as PNG bytes (same drawing as [`heatmap_svg`]).
pub fn heatmap_png(h: &Heatmap, size: (u32, u32)) -> Result<Vec<u8>, ReportError> {
    super::png("heatmap", size, |root| draw(root, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Heatmap {
        use CellClass::*;
        Heatmap {
            title: "retry-storm — before-fix".into(),
            subtitle: "quick, 3 x 3 cells".into(),
            x_label: "load (share of capacity)".into(),
            y_label: "oversized documents per burst".into(),
            x_ticks: vec!["0.3".into(), "0.6".into(), "0.9".into()],
            y_ticks: vec!["1".into(), "4".into(), "8".into()],
            cells: vec![
                vec![Recovered, Recovered, Metastable],
                vec![Recovered, Metastable, NeverHealthy],
                vec![NoTrigger, Metastable, NotRun],
            ],
            notes: vec![vec!["2 s".into(), "5 s".into(), "".into()]],
        }
    }

    #[test]
    fn renders_png_and_svg() {
        let h = sample();
        let size = default_size(&h);
        let bytes = heatmap_png(&h, size).expect("png");
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .expect("png header");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("png data");
        assert_eq!((info.width, info.height), size);
        let px = info.color_type.samples();
        let pixels = &buf[..info.buffer_size()];
        let non_white = pixels
            .chunks(px)
            .filter(|p| p.iter().take(3).any(|&c| c < 245))
            .count();
        assert!(
            non_white as f64 / (size.0 * size.1) as f64 > 0.2,
            "the map is mostly blank"
        );
        // The metastable red is there.
        let red = CellClass::Metastable.color();
        assert!(pixels
            .chunks(px)
            .any(|p| p[0] == red.0 && p[1] == red.1 && p[2] == red.2));
        let svg = heatmap_svg(&h, size).expect("svg");
        assert!(svg.starts_with("<svg") && svg.contains("metastable"));
    }

    #[test]
    fn empty_grid_still_draws() {
        let h = Heatmap::default();
        let svg = heatmap_svg(&h, (400, 200)).expect("svg");
        assert!(svg.contains("empty grid"));
    }
}
