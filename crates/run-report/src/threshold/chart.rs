//! The threshold chart: the share of seeds judged metastable at each trigger
//! value probed, one colour per variant, with the bracket of each variant
//! that tipped shaded. The y scale is fixed (0 to 1) and the majority line
//! drawn, so "tips" is simply "above the line".

use super::{Outcome, ThresholdReport};
use crate::charts::font::{printable, FAMILY};
use crate::charts::panel::{err, DrawResult};
use crate::charts::style::{palette, MUTED, TEXT, THRESHOLD, WIDTH};
use crate::charts::{png, svg};
use crate::error::ReportError;
use plotters::coord::Shift;
use plotters::prelude::*;

const HEIGHT: u32 = 460;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &ThresholdReport) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (lo, hi) = if r.high > r.low {
        (r.low, r.high)
    } else {
        (r.low - 1.0, r.low + 1.0)
    };
    let pad = (hi - lo) * 0.04;
    let mut chart = ChartBuilder::on(root)
        .caption(
            printable(&format!(
                "{} — share of seeds metastable against {}",
                r.experiment,
                r.trigger_paths
                    .first()
                    .map(String::as_str)
                    .unwrap_or("the trigger")
            )),
            (FAMILY, 17).into_font().color(&TEXT),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo - pad)..(hi + pad), -0.05f64..1.05f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(printable(&format!(
            "trigger value ({} .. {})",
            r.low_text, r.high_text
        )))
        .y_desc("metastable seeds")
        .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
        .label_style((FAMILY, 12).into_font().color(&TEXT))
        .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(lo - pad, 0.5), (hi + pad, 0.5)],
            6,
            4,
            THRESHOLD.stroke_width(1),
        ))
        .map_err(err)?;
    for (i, v) in r.variants.iter().enumerate() {
        let color = palette(i);
        if let Outcome::Bracket { holds_at, tips_at } = &v.outcome {
            let at = |t: &str| v.probes.iter().find(|p| p.text == *t).map(|p| p.value);
            if let (Some(a), Some(b)) = (at(holds_at), at(tips_at)) {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(a.min(b), -0.05), (a.max(b), 1.05)],
                        color.mix(0.15).filled(),
                    )))
                    .map_err(err)?;
            }
        }
        let mut pts: Vec<(f64, f64)> = v
            .probes
            .iter()
            .filter(|p| !p.runs.is_empty())
            .map(|p| (p.value, p.metastable as f64 / p.runs.len() as f64))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(printable(&format!("{}: {}", v.variant, v.sentence())))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
            });
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(MUTED)
        .label_font((FAMILY, 12).into_font().color(&TEXT))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The chart as SVG.
pub(super) fn threshold_svg(r: &ThresholdReport) -> Result<String, ReportError> {
    svg("threshold", (WIDTH, HEIGHT), |root| draw(root, r))
}

/// The chart as PNG bytes (same drawing as [`threshold_svg`]).
pub(super) fn threshold_png(r: &ThresholdReport) -> Result<Vec<u8>, ReportError> {
    png("threshold", (WIDTH, HEIGHT), |root| draw(root, r))
}
