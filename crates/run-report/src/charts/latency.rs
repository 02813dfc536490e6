//! The latency chart: per-second p50 and p99 of attempts for each variant
//! (stacked, one shared log scale and time axis, faults shaded, and the
//! verdict's slow limit where latency was judged: a p99 above it is one slow
//! attempt or more, not yet a degraded second), then the
//! percentile distribution of every variant overlaid on a "nines" axis
//! (x = -log10(1 - p/100): p90 at 1, p99 at 2, p99.9 at 3, max at 4), which is
//! where retry storms hide: the tail.

use super::font::{printable, FAMILY};
use super::panel::{
    draw_panel, err, legend, title_strip, DrawResult, Frame, Line, Panel, LEGEND_H, X_LABEL_H,
};
use super::style::*;
use super::waves::time_max;
use crate::analysis::Analysis;
use crate::model::{LatencySummary, RunData};
use crate::series;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Height of one variant's per-second panel.
const SERIES_H: u32 = 170;
/// Height of the distribution panel.
const DIST_H: u32 = 330;
/// Where `max` sits on the nines axis.
const MAX_X: f64 = 4.0;

/// Default size: 1400 px wide.
pub fn default_size(run: &RunData) -> (u32, u32) {
    (
        WIDTH,
        TITLE_H + run.variants.len().max(1) as u32 * SERIES_H + DIST_H,
    )
}

/// The size actually drawn: at least 480 px wide and tall enough for every panel.
pub fn effective_size(run: &RunData, (w, h): (u32, u32)) -> (u32, u32) {
    let min_h = TITLE_H + run.variants.len().max(1) as u32 * 70 + 160;
    (w.max(480), h.max(min_h))
}

fn fmt_ms(y: f64) -> String {
    crate::format::ms(y)
}

/// Position of percentile `p` on the nines axis; `None` for p >= 99.99 or p < 50.
fn nines(p: f64) -> Option<f64> {
    (p.is_finite() && (50.0..99.99).contains(&p)).then(|| -(1.0 - p / 100.0).log10())
}

fn nines_label(x: f64) -> String {
    match x.round() as i64 {
        _ if (x - x.round()).abs() > 1e-6 => String::new(),
        1 => "p90".into(),
        2 => "p99".into(),
        3 => "p99.9".into(),
        4 => "max".into(),
        _ => String::new(),
    }
}

/// The five summary points (p50, p90, p99, p99.9, max) on the nines axis.
fn summary_points(l: &LatencySummary) -> Vec<(f64, f64, &'static str)> {
    let mut pts = vec![
        (-(0.5f64).log10(), l.p50_ms, "p50"),
        (1.0, l.p90_ms, "p90"),
        (2.0, l.p99_ms, "p99"),
        (3.0, l.p999_ms, "p99.9"),
        (MAX_X, l.max_ms, "max"),
    ];
    pts.retain(|(_, y, _)| y.is_finite() && *y > 0.0);
    pts
}

/// The distribution curve: the recorded distribution when there is one, else the summary points.
fn curve(l: &LatencySummary) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = l
        .distribution
        .iter()
        .filter_map(|&(p, y)| nines(p).zip(Some(y)))
        .filter(|(_, y)| y.is_finite() && *y > 0.0)
        .collect();
    if pts.is_empty() {
        pts = summary_points(l)
            .into_iter()
            .map(|(x, y, _)| (x, y))
            .collect();
    } else if l.max_ms.is_finite() && l.max_ms > 0.0 {
        pts.push((MAX_X, l.max_ms));
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// Shared log scale: decades around every positive latency in the run.
fn log_range(run: &RunData) -> (f64, f64) {
    let values = run.variants.iter().flat_map(|v| {
        let l = &v.latency;
        v.seconds
            .iter()
            .flat_map(|s| [s.p50_ms, s.p99_ms])
            .chain([l.p50_ms, l.p90_ms, l.p99_ms, l.p999_ms, l.max_ms])
            .chain(l.distribution.iter().map(|d| d.1))
            .filter(|y| y.is_finite() && *y > 0.0)
    });
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    if hi <= 0.0 {
        return (1.0, 1000.0);
    }
    let lo = 10f64.powf((lo * 0.9).log10().floor()).max(0.01);
    let hi = 10f64.powf((hi * 1.05).log10().ceil()).max(lo * 10.0);
    (lo, hi)
}

fn distribution<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    run: &RunData,
    (lo, hi): (f64, f64),
) -> DrawResult {
    let (top, body) = area.split_vertically(LEGEND_H);
    let items: Vec<(String, RGBColor, bool)> = run
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (v.name.clone(), variant_color(i), false))
        .collect();
    legend(&top, "Attempt latency percentiles (whole run)", &items)?;
    let mut chart = ChartBuilder::on(&body)
        .margin_right(40)
        .margin_top(4)
        .y_label_area_size(Y_LABEL_W)
        .x_label_area_size(X_LABEL_H)
        .build_cartesian_2d(0.2f64..MAX_X + 0.25, (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(6)
        .y_labels(6)
        .light_line_style(GRID_LIGHT)
        .bold_line_style(GRID_BOLD)
        .axis_style(MUTED)
        .label_style((FAMILY, 11).into_font().color(&TEXT))
        .x_label_formatter(&|x| nines_label(*x))
        .y_label_formatter(&|y| fmt_ms(*y))
        .draw()
        .map_err(err)?;
    for (i, v) in run.variants.iter().enumerate() {
        let color = variant_color(i);
        let pts: Vec<(f64, f64)> = curve(&v.latency)
            .into_iter()
            .map(|(x, y)| (x, y.clamp(lo, hi)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?;
        let dy = if i % 2 == 0 { -16 } else { 5 };
        let style = (FAMILY, 11).into_font().color(&color);
        for (x, y, name) in summary_points(&v.latency) {
            let text = printable(&format!("{name} {}", fmt_ms(y)));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((x, y.clamp(lo, hi)))
                        + Circle::new((0, 0), 4, color.filled())
                        + Text::new(text, (6, dy), style.clone()),
                ))
                .map_err(err)?;
        }
    }
    Ok(())
}

/// Draw the whole latency chart on `root`.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunData,
    analysis: &Analysis,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (_, h) = root.dim_in_pixel();
    let (top, rest) = root.split_vertically(TITLE_H);
    title_strip(&top, run, "attempt latency", false)?;
    let range = log_range(run);
    let n = run.variants.len();
    let dist_h = (h - TITLE_H) * DIST_H / (n.max(1) as u32 * SERIES_H + DIST_H);
    let (series_area, dist_area) = rest.split_vertically(h - TITLE_H - dist_h);
    if n > 0 {
        let t_max = time_max(run);
        for (i, (v, area)) in run
            .variants
            .iter()
            .zip(series_area.split_evenly((n, 1)))
            .enumerate()
        {
            let color = variant_color(i);
            let slow_limit = analysis
                .variants
                .iter()
                .find(|a| a.name == v.name)
                .and_then(|a| a.baseline.as_ref())
                .filter(|b| b.latency_judged && (range.0..=range.1).contains(&b.slow_above_ms))
                .map(|b| {
                    (
                        b.slow_above_ms,
                        format!("slow above {}", fmt_ms(b.slow_above_ms)),
                    )
                });
            let points = |f: fn(&crate::model::Second) -> f64| {
                v.seconds.iter().map(move |s| {
                    (
                        f64::from(s.t) + 0.5,
                        Some(f(s)).filter(|y| *y > 0.0 && series::completed(s) > 0),
                    )
                })
            };
            let panel = Panel {
                title: format!("{}: attempt latency per second", v.name),
                lines: vec![
                    Line::from_points("p99", color, 2, points(|s| s.p99_ms)),
                    Line::from_points("p50", lighten(color, 0.45), 1, points(|s| s.p50_ms)),
                ],
                y_lo: range.0,
                y_hi: range.1,
                log_y: true,
                y_fmt: fmt_ms,
                threshold: slow_limit,
                bars: Vec::new(),
                judged: Vec::new(),
                x_labels: true,
                event_labels: true,
            };
            draw_panel(
                &area,
                &panel,
                &Frame {
                    t_max,
                    events: &v.events,
                    residues: super::waves::residues(v),
                },
            )?;
        }
    }
    distribution(&dist_area, run, range)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis() {
        assert!((nines(90.0).unwrap() - 1.0).abs() < 1e-9);
        assert!((nines(99.9).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(nines(99.995), None);
        assert_eq!(nines(f64::NAN), None);
        assert_eq!(nines_label(2.0), "p99");
        assert_eq!(nines_label(2.5), "");
    }

    #[test]
    fn curve_falls_back_to_summary() {
        let l = LatencySummary {
            p50_ms: 10.0,
            p99_ms: 100.0,
            max_ms: 500.0,
            ..LatencySummary::default()
        };
        let c = curve(&l);
        assert_eq!(c.len(), 3);
        assert_eq!(c.last(), Some(&(MAX_X, 500.0)));
    }
}
