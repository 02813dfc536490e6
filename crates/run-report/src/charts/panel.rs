//! One chart panel: a legend strip, a time axis shared by every panel of a
//! chart, fault/action shading (faults red, operator actions green, instant
//! events as vertical lines, like Jepsen's nemesis shading), optional wave
//! bars and threshold line, and the panel's lines. Generic over the plotters
//! backend so the SVG and PNG charts are drawn by the same code.

use super::font::{printable, FAMILY};
use super::style::*;
use crate::model::{EventKind, RunData, TimelineEvent};
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::iter::once;

/// plotters failed to draw: its error in words (plotters' error types are
/// generic over the backend, and the SVG and PNG charts share this code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(pub String);

/// Drawing result.
pub type DrawResult = Result<(), DrawError>;

/// Turn a plotters error into a [`DrawError`].
pub fn err<E: std::fmt::Display>(e: E) -> DrawError {
    DrawError(e.to_string())
}

/// Height of a panel's legend strip.
pub const LEGEND_H: u32 = 20;
/// Height of the x label area of a panel that shows the time axis.
pub const X_LABEL_H: u32 = 22;

/// One line of a panel, possibly broken into segments where data is missing.
pub struct Line {
    pub label: String,
    pub segments: Vec<Vec<(f64, f64)>>,
    pub color: RGBColor,
    pub width: u32,
    pub dashed: bool,
}

impl Line {
    /// A line from per-second values; `None` or non-finite values break it.
    pub fn from_points(
        label: &str,
        color: RGBColor,
        width: u32,
        points: impl IntoIterator<Item = (f64, Option<f64>)>,
    ) -> Line {
        let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (x, y) in points {
            match y.filter(|y| y.is_finite()) {
                Some(y) => segments.last_mut().map_or((), |s| s.push((x, y))),
                None if segments.last().is_some_and(|s| !s.is_empty()) => segments.push(Vec::new()),
                None => {}
            }
        }
        segments.retain(|s| !s.is_empty());
        Line {
            label: label.to_string(),
            segments,
            color,
            width,
            dashed: false,
        }
    }

    pub fn dashed(mut self) -> Line {
        self.dashed = true;
        self
    }
}

/// What one panel shows.
pub struct Panel {
    pub title: String,
    pub lines: Vec<Line>,
    pub y_lo: f64,
    pub y_hi: f64,
    pub log_y: bool,
    pub y_fmt: fn(f64) -> String,
    /// Horizontal dashed line and its legend label.
    pub threshold: Option<(f64, String)>,
    /// Spans `[from, to)` marked by a bar along the top (failure waves).
    pub bars: Vec<(f64, f64)>,
    /// Seconds `[from, to)` the verdict judged after a residue, `true` when
    /// healthy: a strip along the bottom, so the seconds a verdict was
    /// decided on can be read off the chart.
    pub judged: Vec<(f64, f64, bool)>,
    /// Show the time axis labels under this panel.
    pub x_labels: bool,
    /// Write event labels inside this panel.
    pub event_labels: bool,
}

/// What every panel of a chart shares: the time range, the events shaded,
/// and each trigger's residue `(trigger end, residue end)` (None: it never
/// ended), drawn as a band with a dashed line where it ended.
pub struct Frame<'a> {
    pub t_max: f64,
    pub events: &'a [TimelineEvent],
    pub residues: Vec<(f64, Option<f64>)>,
}

fn font(size: u32) -> FontDesc<'static> {
    (FAMILY, size).into_font()
}

/// Legend strip: bold title, then a colour sample and label per line.
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    items: &[(String, RGBColor, bool)],
) -> DrawResult {
    let mid = (LEGEND_H / 2) as i32;
    let at = Pos::new(HPos::Left, VPos::Center);
    let title_style = font(13).style(FontStyle::Bold).color(&TEXT).pos(at);
    let item_style = font(12).color(&MUTED).pos(at);
    let mut x = Y_LABEL_W as i32;
    let title = printable(title);
    area.draw(&Text::new(title.clone(), (x, mid), title_style.clone()))
        .map_err(err)?;
    x += area
        .estimate_text_size(&title, &title_style)
        .map_err(err)?
        .0 as i32
        + 18;
    for (label, color, dashed) in items {
        let sample: Vec<(i32, i32)> = if *dashed {
            vec![(x, mid), (x + 7, mid)]
        } else {
            vec![(x, mid), (x + 18, mid)]
        };
        area.draw(&PathElement::new(sample, color.stroke_width(3)))
            .map_err(err)?;
        if *dashed {
            area.draw(&PathElement::new(
                vec![(x + 11, mid), (x + 18, mid)],
                color.stroke_width(3),
            ))
            .map_err(err)?;
        }
        let label = printable(label);
        area.draw(&Text::new(label.clone(), (x + 23, mid), item_style.clone()))
            .map_err(err)?;
        x += 23 + area.estimate_text_size(&label, &item_style).map_err(err)?.0 as i32 + 16;
    }
    Ok(())
}

/// Draw one panel into `area`.
pub fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    f: &Frame,
) -> DrawResult {
    let (top, body) = area.split_vertically(LEGEND_H);
    let mut items: Vec<(String, RGBColor, bool)> = p
        .lines
        .iter()
        .map(|l| (l.label.clone(), l.color, l.dashed))
        .collect();
    if let Some((_, label)) = &p.threshold {
        items.push((label.clone(), THRESHOLD, true));
    }
    if !p.judged.is_empty() {
        items.push(("judged degraded".into(), BAD, false));
        items.push(("judged healthy".into(), GOOD, false));
    }
    legend(&top, &p.title, &items)?;
    let mut builder = ChartBuilder::on(&body);
    builder
        .margin_right(18)
        .margin_top(2)
        .y_label_area_size(Y_LABEL_W)
        .x_label_area_size(if p.x_labels { X_LABEL_H } else { 0 });
    let x_range = 0f64..f.t_max;
    macro_rules! mesh_and_contents {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_labels(16)
                .y_labels(5)
                .max_light_lines(4)
                .light_line_style(GRID_LIGHT)
                .bold_line_style(GRID_BOLD)
                .axis_style(MUTED)
                .label_style(font(11).color(&TEXT))
                .x_label_formatter(&|x| format!("{}s", crate::format::num(*x)))
                .y_label_formatter(&|y| (p.y_fmt)(*y))
                .draw()
                .map_err(err)?;
            contents(&mut chart, p, f)
        }};
    }
    if p.log_y {
        mesh_and_contents!(builder
            .build_cartesian_2d(x_range, (p.y_lo..p.y_hi).log_scale())
            .map_err(err)?)
    } else {
        mesh_and_contents!(builder
            .build_cartesian_2d(x_range, p.y_lo..p.y_hi)
            .map_err(err)?)
    }
}

fn contents<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    f: &Frame,
) -> DrawResult
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let (lo, hi, t_max) = (p.y_lo, p.y_hi, f.t_max);
    let events = f
        .events
        .iter()
        .filter(|e| e.at_s.is_finite() && e.at_s <= t_max);
    for (i, e) in events.enumerate() {
        let color = match e.kind {
            EventKind::Fault | EventKind::FaultUndone => FAULT,
            EventKind::Action => ACTION,
        };
        let x0 = e.at_s.max(0.0);
        match e.end_s.filter(|end| end.is_finite() && *end > e.at_s) {
            Some(end) => chart.draw_series(once(Rectangle::new(
                [(x0, hi), (end.min(t_max), lo)],
                color.mix(SHADE_ALPHA).filled(),
            ))),
            None => chart.draw_series(once(PathElement::new(
                vec![(x0, lo), (x0, hi)],
                color.mix(0.8).stroke_width(2),
            ))),
        }
        .map_err(err)?;
        if p.event_labels {
            let row = (i % 3) as i32;
            let style = font(11).color(&color.mix(0.95));
            let label = printable(&e.label);
            chart
                .draw_series(once(
                    EmptyElement::at((x0, hi)) + Text::new(label, (4, 3 + 13 * row), style),
                ))
                .map_err(err)?;
        }
    }
    for &(from, to) in &f.residues {
        if !from.is_finite() || from >= t_max {
            continue;
        }
        let end = to.filter(|t| t.is_finite()).unwrap_or(t_max).min(t_max);
        if end > from {
            chart
                .draw_series(once(Rectangle::new(
                    [(from.max(0.0), hi), (end, lo)],
                    RESIDUE.mix(SHADE_ALPHA).filled(),
                )))
                .map_err(err)?;
        }
        if let Some(t) = to.filter(|t| t.is_finite() && *t <= t_max) {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(t, lo), (t, hi)],
                    5,
                    3,
                    RESIDUE.stroke_width(2),
                ))
                .map_err(err)?;
        }
    }
    let strip_hi = lo + (hi - lo) * 0.04;
    for &(from, to, healthy) in &p.judged {
        let color = if healthy {
            GOOD.mix(0.55)
        } else {
            BAD.mix(0.9)
        };
        chart
            .draw_series(once(Rectangle::new(
                [(from.max(0.0), strip_hi), (to.min(t_max), lo)],
                color.filled(),
            )))
            .map_err(err)?;
    }
    let bar_lo = hi - (hi - lo) * 0.05;
    for &(from, to) in &p.bars {
        chart
            .draw_series(once(Rectangle::new(
                [(from.max(0.0), hi), (to.min(t_max), bar_lo)],
                WAVE.filled(),
            )))
            .map_err(err)?;
    }
    if let Some((y, _)) = &p.threshold {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, *y), (t_max, *y)],
                6,
                4,
                THRESHOLD.stroke_width(1),
            ))
            .map_err(err)?;
    }
    for line in &p.lines {
        let style = line.color.stroke_width(line.width);
        for seg in &line.segments {
            let pts: Vec<(f64, f64)> = seg.iter().map(|&(x, y)| (x, y.clamp(lo, hi))).collect();
            if line.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts, 8, 5, style))
                    .map_err(err)?;
            } else if pts.len() == 1 {
                chart
                    .draw_series(once(Circle::new(pts[0], 2, style.filled())))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts, style))
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Title strip of a chart: experiment, what the chart is, run facts and the shading key.
pub fn title_strip<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    run: &RunData,
    what: &str,
    with_waves: bool,
) -> DrawResult {
    let (w, _) = area.dim_in_pixel();
    let left = Pos::new(HPos::Left, VPos::Center);
    let bold = (FAMILY, 17)
        .into_font()
        .style(FontStyle::Bold)
        .color(&TEXT)
        .pos(left);
    let small = (FAMILY, 12).into_font().color(&MUTED).pos(left);
    let text = printable(&format!("{} — {what}", run.experiment));
    area.draw(&Text::new(text, (12, 15), bold)).map_err(err)?;
    let sub = printable(&format!(
        "{} · seed {}{} · shared time axis and scales across variants",
        run.label(),
        run.seed,
        if run.quick { " · QUICK" } else { "" }
    ));
    area.draw(&Text::new(sub, (12, 34), small.clone()))
        .map_err(err)?;
    let keys = [
        ("fault", FAULT.mix(0.35)),
        ("residue", RESIDUE.mix(0.45)),
        ("operator action", ACTION.mix(0.35)),
        ("wave", WAVE.mix(1.0)),
    ];
    let keys = &keys[..if with_waves { 4 } else { 3 }];
    let mut x = w as i32 - 420;
    for &(label, color) in keys {
        area.draw(&Rectangle::new([(x, 27), (x + 16, 39)], color.filled()))
            .map_err(err)?;
        area.draw(&Text::new(label, (x + 21, 34), small.clone()))
            .map_err(err)?;
        x += 26 + 8 * label.len() as i32;
    }
    Ok(())
}
