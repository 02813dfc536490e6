//! The alert rows of the wave chart: one row per alert rule of the
//! experiment, light where the rule was pending and dark where it fired,
//! with the first customer-visible failure as a black tick, on the same
//! time axis as the variant's other panels, so "did it fire before the
//! failures?" is read by eye.

use super::font::{printable, FAMILY};
use super::panel::{err, legend, DrawResult, LEGEND_H};
use super::style::*;
use crate::analysis::detection::detect;
use crate::model::{AnalysisConfig, VariantRun};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Pending and firing.
const PENDING: RGBColor = RGBColor(252, 187, 161);
const FIRING: RGBColor = RGBColor(203, 24, 29);

/// Draws the rows of `v`'s alerts into `area` (x from 0 to `t_max`).
pub fn draw_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    v: &VariantRun,
    cfg: &AnalysisConfig,
    t_max: f64,
) -> DrawResult {
    let (top, body) = area.split_vertically(LEGEND_H);
    legend(
        &top,
        "Alerts",
        &[
            ("pending".into(), PENDING, false),
            ("firing".into(), FIRING, false),
            ("first customer-visible failure".into(), TEXT, false),
        ],
    )?;
    let n = v.alerts.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&body)
        .margin_right(18)
        .margin_top(2)
        .y_label_area_size(Y_LABEL_W)
        .x_label_area_size(0)
        .build_cartesian_2d(0f64..t_max, 0f64..n)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_labels(16)
        .max_light_lines(4)
        .light_line_style(GRID_LIGHT)
        .bold_line_style(GRID_BOLD)
        .axis_style(MUTED)
        .draw()
        .map_err(err)?;
    for (i, a) in v.alerts.iter().enumerate() {
        // Row 0 at the top.
        let (lo, hi) = (n - i as f64 - 0.85, n - i as f64 - 0.15);
        for (iv, color) in [(&a.pending, PENDING), (&a.firing, FIRING)] {
            chart
                .draw_series(iv.iter().map(|(from, to)| {
                    Rectangle::new([(*from, lo), (to.min(t_max), hi)], color.filled())
                }))
                .map_err(err)?;
        }
        // The name over its row on a light box, so it reads on a firing bar too
        // (width estimated from the character count at this font size).
        let name = printable(&a.name);
        let w = (name.chars().count() as f64 * 6.3).ceil() as i32 + 6;
        let label = EmptyElement::at((t_max * 0.003, (lo + hi) / 2.0))
            + Rectangle::new([(0, -7), (w, 7)], WHITE.mix(0.85).filled())
            + Text::new(
                name,
                (3, 0),
                (FAMILY, 11)
                    .into_font()
                    .color(&TEXT)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            );
        chart.draw_series(std::iter::once(label)).map_err(err)?;
    }
    if let Some(t) = detect(v, cfg).first_customer_failure_s {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(t, 0.0), (t, n)],
                TEXT.stroke_width(2),
            )))
            .map_err(err)?;
    }
    Ok(())
}
