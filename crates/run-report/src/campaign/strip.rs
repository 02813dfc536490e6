//! The campaign's strip plots: one panel per figure, one row per variant,
//! one dot per run, and the median as a bar, on an axis shared by the
//! variants so the eye compares before against after directly.

use super::aggregate::VariantOverRuns;
use crate::charts::font::{ensure_font, FAMILY};
use crate::charts::panel::{err, DrawResult};
use crate::charts::style::{MUTED, PALETTE, TEXT};
use crate::error::ReportError;
use crate::metrics::MetricRef;
use plotters::prelude::*;

const PANEL_H: u32 = 120;
const WIDTH: u32 = 900;

/// The SVG of every figure of the first variant's list, all variants in each.
pub(crate) fn strip_svg(variants: &[VariantOverRuns]) -> Result<String, ReportError> {
    let Some(first) = variants.first() else {
        return Ok(String::new());
    };
    ensure_font();
    // A figure no run defines (an alert that never fired) has no panel.
    let shown: Vec<&MetricRef> = first
        .figures
        .iter()
        .map(|f| &f.metric)
        .filter(|m| {
            variants
                .iter()
                .any(|v| v.figure(m).is_some_and(|f| !f.values.is_empty()))
        })
        .collect();
    let panels = shown.len() as u32;
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (WIDTH, PANEL_H * panels.max(1))).into_drawing_area();
        let chart_err = |e: String| ReportError::Chart {
            chart: "campaign",
            message: e,
        };
        root.fill(&WHITE).map_err(|e| chart_err(e.to_string()))?;
        let areas = root.split_evenly((panels.max(1) as usize, 1));
        for (area, metric) in areas.iter().zip(&shown) {
            panel(area, variants, metric).map_err(|e| chart_err(e.0))?;
        }
        root.present().map_err(|e| chart_err(e.to_string()))?;
    }
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn panel(area: &Area, variants: &[VariantOverRuns], metric: &MetricRef) -> DrawResult {
    let all: Vec<f64> = variants
        .iter()
        .filter_map(|v| v.figure(metric))
        .flat_map(|f| f.values.iter().map(|(_, x)| *x))
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(0.5 * hi.abs().max(1.0) * 0.02);
    let rows = variants.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(metric.to_string(), (FAMILY, 14).into_font().color(&TEXT))
        .margin(6)
        .x_label_area_size(22)
        .y_label_area_size(110)
        .build_cartesian_2d((lo - pad)..(hi + pad), -0.5..(rows - 0.5))
        .map_err(err)?;
    let names: Vec<String> = variants.iter().map(|v| v.variant.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_labels(8)
        .light_line_style(WHITE)
        .y_labels(variants.len())
        .y_label_formatter(&|y| {
            let i = y.round() as usize;
            if (y - y.round()).abs() < 1e-6 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .label_style((FAMILY, 11).into_font().color(&MUTED))
        .draw()
        .map_err(err)?;
    for (i, v) in variants.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let Some(f) = v.figure(metric) else { continue };
        let n = f.values.len().max(1) as f64;
        // Spread the dots of one row over its height so ties stay visible.
        let dots = f.values.iter().enumerate().map(|(k, (_, x))| {
            let y = i as f64 + (k as f64 / n - 0.5) * 0.5;
            Circle::new((*x, y), 3, colour.mix(0.7).filled())
        });
        chart.draw_series(dots).map_err(err)?;
        if let Some(s) = &f.spread {
            let y = i as f64;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(s.median, y - 0.4), (s.median, y + 0.4)],
                    colour.stroke_width(3),
                )))
                .map_err(err)?;
        }
    }
    Ok(())
}
