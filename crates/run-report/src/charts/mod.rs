//! The report's charts, drawn with plotters as SVG (crisp, for the charts/
//! folder) and PNG (about 1400 px wide, embedded in index.html). Both formats
//! come from the same generic drawing code, so they always agree.

mod alerts;
pub(crate) mod font;
pub mod heatmap;
pub mod latency;
pub(crate) mod panel;
mod png;
pub(crate) mod style;
pub mod waves;

use crate::analysis::Analysis;
use crate::error::ReportError;
use crate::model::RunData;
use panel::DrawResult;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Every chart of the report, rendered.
#[derive(Debug, Clone)]
pub struct Charts {
    pub waves_svg: String,
    pub waves_png: Vec<u8>,
    pub latency_svg: String,
    pub latency_png: Vec<u8>,
}

/// A chart drawn by `draw` as SVG text; a drawing error names `chart`.
pub(crate) fn svg(
    chart: &'static str,
    (w, h): (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult,
) -> Result<String, ReportError> {
    font::ensure_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        draw(&root).map_err(|e| ReportError::Chart {
            chart,
            message: e.0,
        })?;
        root.present().map_err(|e| ReportError::Chart {
            chart,
            message: e.to_string(),
        })?;
    }
    Ok(out)
}

/// A chart drawn by `draw` as PNG bytes; a drawing error names `chart`.
pub(crate) fn png(
    chart: &'static str,
    (w, h): (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult,
) -> Result<Vec<u8>, ReportError> {
    font::ensure_font();
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        draw(&root).map_err(|e| ReportError::Chart {
            chart,
            message: e.0,
        })?;
        root.present().map_err(|e| ReportError::Chart {
            chart,
            message: e.to_string(),
        })?;
    }
    png::encode_rgb(&buf, w, h).map_err(|e| ReportError::Png {
        chart,
        message: e.to_string(),
    })
}

/// The wave chart's natural size for `run` (1400 px wide, 150 px per panel).
pub fn wave_chart_size(run: &RunData) -> (u32, u32) {
    waves::default_size(run)
}

/// The latency chart's natural size for `run`.
pub fn latency_chart_size(run: &RunData) -> (u32, u32) {
    latency::default_size(run)
}

/// The wave chart as SVG. The height is raised when too small for every panel
/// (see [`wave_chart_size`] for the natural size).
pub fn wave_chart_svg(
    run: &RunData,
    analysis: &Analysis,
    width: u32,
    height: u32,
) -> Result<String, ReportError> {
    let size = waves::effective_size(run, (width, height));
    svg("wave", size, |root| waves::draw(root, run, analysis))
}

/// The wave chart as PNG bytes (same drawing as [`wave_chart_svg`]).
pub fn wave_chart_png(
    run: &RunData,
    analysis: &Analysis,
    width: u32,
    height: u32,
) -> Result<Vec<u8>, ReportError> {
    let size = waves::effective_size(run, (width, height));
    png("wave", size, |root| waves::draw(root, run, analysis))
}

/// The latency chart as SVG (see [`latency_chart_size`]).
pub fn latency_chart_svg(
    run: &RunData,
    analysis: &Analysis,
    width: u32,
    height: u32,
) -> Result<String, ReportError> {
    let size = latency::effective_size(run, (width, height));
    svg("latency", size, |root| latency::draw(root, run, analysis))
}

/// The latency chart as PNG bytes (same drawing as [`latency_chart_svg`]).
pub fn latency_chart_png(
    run: &RunData,
    analysis: &Analysis,
    width: u32,
    height: u32,
) -> Result<Vec<u8>, ReportError> {
    let size = latency::effective_size(run, (width, height));
    png("latency", size, |root| latency::draw(root, run, analysis))
}

/// Every chart at its default size (1400 px wide).
pub fn render_charts(run: &RunData, analysis: &Analysis) -> Result<Charts, ReportError> {
    let (ww, wh) = waves::default_size(run);
    let (lw, lh) = latency::default_size(run);
    Ok(Charts {
        waves_svg: wave_chart_svg(run, analysis, ww, wh)?,
        waves_png: wave_chart_png(run, analysis, ww, wh)?,
        latency_svg: latency_chart_svg(run, analysis, lw, lh)?,
        latency_png: latency_chart_png(run, analysis, lw, lh)?,
    })
}
