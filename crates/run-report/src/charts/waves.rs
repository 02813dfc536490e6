//! The wave chart: the variants stacked vertically, each a group of panels,
//! every panel type with ONE time range and ONE y scale across variants, so
//! the before-fix and after-fix storms can be compared by eye:
//!
//! 1. traffic: attempts/s vs distinct documents/s vs arrivals/s;
//! 2. failure ratio, with the wave threshold and detected waves marked, and
//!    along its bottom the seconds the verdict judged after each residue
//!    (red degraded, green healthy);
//! 3. worker slots busy and held by waiters (slots total dashed);
//! 4. cache writes lost/s and pages recomputed/s;
//! 5. the result cache's hit ratio and the share of repeat submissions,
//!    when the traffic repeats documents (a population);
//! 6. failure ratio per zone, when the system has zones;
//!
//! and, above them, one row per alert rule when the experiment has
//! `alerts:` (see `alerts.rs`).
//!
//! Faults and operator actions are shaded on every panel and labelled on the
//! first; each trigger's residue (its work still in the system after the
//! fault) is shaded orange up to a dashed line where it ended.

use super::font::{printable, FAMILY};
use super::panel::{draw_panel, err, title_strip, DrawResult, Frame, Line, Panel};
use super::style::*;
use crate::analysis::verdict::{second_roles, triggers_of, SecondRole};
use crate::analysis::{Analysis, VariantAnalysis};
use crate::format::{num, pct};
use crate::metrics::Metric;
use crate::model::{RunData, Second, VariantRun};
use crate::series;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Smallest panel height the chart will draw (the height is raised to fit).
const MIN_PANEL_H: u32 = 60;

fn has_zones(run: &RunData) -> bool {
    run.variants
        .iter()
        .any(|v| v.seconds.iter().any(|s| !s.zones.is_empty()))
}

fn has_repeats(run: &RunData) -> bool {
    run.variants
        .iter()
        .any(|v| v.seconds.iter().any(|s| s.repeat_submissions > 0))
}

fn has_alerts(run: &RunData) -> bool {
    run.variants.iter().any(|v| !v.alerts.is_empty())
}

fn panels_per_variant(run: &RunData) -> u32 {
    4 + u32::from(has_zones(run)) + u32::from(has_repeats(run)) + u32::from(has_alerts(run))
}

fn groups(run: &RunData) -> u32 {
    run.variants.len().max(1) as u32
}

/// Default size: 1400 px wide, 150 px per panel.
pub fn default_size(run: &RunData) -> (u32, u32) {
    let h = TITLE_H + groups(run) * (HEADER_H + panels_per_variant(run) * PANEL_H);
    (WIDTH, h)
}

/// The size actually drawn: at least 480 px wide and tall enough for every panel.
pub fn effective_size(run: &RunData, (w, h): (u32, u32)) -> (u32, u32) {
    let min_h = TITLE_H + groups(run) * (HEADER_H + panels_per_variant(run) * MIN_PANEL_H);
    (w.max(480), h.max(min_h))
}

/// Time range shared by every panel: `[0, last second + 1)`.
pub fn time_max(run: &RunData) -> f64 {
    let t = run
        .variants
        .iter()
        .flat_map(|v| v.seconds.iter().map(|s| f64::from(s.t) + 1.0))
        .fold(1.0, f64::max);
    t.max(1.0)
}

/// Upper end of a shared linear scale: the largest value plus 10 %, at least `floor`.
fn scale(run: &RunData, floor: f64, f: impl Fn(&Second) -> f64) -> f64 {
    let m = series::max_finite(run.variants.iter().flat_map(|v| v.seconds.iter().map(&f)))
        .unwrap_or(0.0);
    (m * 1.1).max(floor)
}

fn x(s: &Second) -> f64 {
    f64::from(s.t) + 0.5
}

fn counter(
    label: &str,
    color: RGBColor,
    width: u32,
    v: &VariantRun,
    f: impl Fn(&Second) -> f64,
) -> Line {
    Line::from_points(
        label,
        color,
        width,
        v.seconds.iter().map(|s| (x(s), Some(f(s)))),
    )
}

fn fmt_count(y: f64) -> String {
    num(y)
}

fn fmt_pct(y: f64) -> String {
    format!("{:.0}%", y * 100.0)
}

struct Scales {
    traffic: f64,
    slots: f64,
    cache: f64,
}

fn panels(run: &RunData, v: &VariantRun, a: Option<&VariantAnalysis>, sc: &Scales) -> Vec<Panel> {
    let threshold = run.analysis.wave_threshold;
    let base = |title: &str, lines: Vec<Line>, y_hi: f64, y_fmt: fn(f64) -> String| Panel {
        title: title.to_string(),
        lines,
        y_lo: 0.0,
        y_hi,
        log_y: false,
        y_fmt,
        threshold: None,
        bars: Vec::new(),
        judged: Vec::new(),
        x_labels: false,
        event_labels: false,
    };
    let mut traffic = base(
        "Traffic",
        vec![
            counter("attempts/s", ATTEMPTS, 2, v, |s| s.attempts as f64),
            counter("distinct documents/s", DISTINCT, 2, v, |s| {
                s.distinct_documents as f64
            }),
            counter("arrivals/s", ARRIVALS, 1, v, |s| s.arrivals as f64),
        ],
        sc.traffic,
        fmt_count,
    );
    traffic.event_labels = true;
    let mut failure = base(
        "Failure ratio",
        vec![Line::from_points(
            "failed / completed attempts",
            FAILURE,
            2,
            v.seconds.iter().map(|s| (x(s), series::failure_ratio(s))),
        )],
        1.05,
        fmt_pct,
    );
    failure.threshold = Some((threshold, format!("wave threshold {}", pct(threshold))));
    failure.bars = a.map_or_else(Vec::new, |a| {
        a.waves
            .iter()
            .map(|w| (f64::from(w.start_s), f64::from(w.end_s())))
            .collect()
    });
    failure.judged = a.map_or_else(Vec::new, |a| judged_spans(run, v, a));
    let slots = base(
        "Worker slots",
        vec![
            counter("busy", SLOTS_BUSY, 2, v, |s| s.slots_busy),
            counter("held by waiters", WAITERS, 2, v, |s| {
                s.slots_held_by_waiters
            }),
            counter("total", SLOTS_TOTAL, 1, v, |s| s.slots_total).dashed(),
        ],
        sc.slots,
        fmt_count,
    );
    let cache = base(
        "Cache & duplicate compute",
        vec![
            counter("cache writes lost/s", CACHE_LOST, 2, v, |s| {
                s.cache_writes_lost as f64
            }),
            counter("pages recomputed/s", RECOMPUTED, 2, v, |s| {
                s.pages_recomputed as f64
            }),
        ],
        sc.cache,
        fmt_count,
    );
    let mut out = vec![traffic, failure, slots, cache];
    if has_repeats(run) {
        out.push(base(
            "Result cache",
            vec![
                Line::from_points(
                    "hit ratio",
                    palette(0),
                    2,
                    v.seconds.iter().map(|s| {
                        (
                            x(s),
                            series::ratio(s.cache_hits, s.cache_hits + s.cache_misses),
                        )
                    }),
                ),
                Line::from_points(
                    "repeat submissions / submissions",
                    palette(1),
                    1,
                    v.seconds
                        .iter()
                        .map(|s| (x(s), series::ratio(s.repeat_submissions, s.arrivals))),
                ),
            ],
            1.05,
            fmt_pct,
        ));
    }
    if has_zones(run) {
        let zones = series::run_zone_names(run);
        let lines = zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                Line::from_points(
                    z,
                    palette(i),
                    2,
                    v.seconds.iter().map(|s| {
                        let r = s.zones.get(z).and_then(|zs| {
                            (zs.requests > 0)
                                .then(|| zs.failures.min(zs.requests) as f64 / zs.requests as f64)
                        });
                        (x(s), r)
                    }),
                )
            })
            .collect();
        out.push(base("Failure ratio per zone", lines, 1.05, fmt_pct));
    }
    if let Some(last) = out.last_mut() {
        last.x_labels = true;
    }
    out
}

fn header<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    v: &VariantRun,
    a: Option<&VariantAnalysis>,
) -> DrawResult {
    area.fill(&HEADER_BG).map_err(err)?;
    let left = Pos::new(HPos::Left, VPos::Center);
    let bold = |c: &RGBColor| {
        (FAMILY, 15)
            .into_font()
            .style(FontStyle::Bold)
            .color(c)
            .pos(left)
    };
    let mid = (HEADER_H / 2) as i32;
    let name = printable(&v.name);
    area.draw(&Text::new(name.clone(), (12, mid), bold(&TEXT)))
        .map_err(err)?;
    let mut x = 12 + area.estimate_text_size(&name, &bold(&TEXT)).map_err(err)?.0 as i32 + 18;
    let (verdict, color) = match a.map(|a| &a.verdict) {
        Some(v) if v.is_bad() => (v.label(), BAD),
        Some(v @ crate::analysis::Verdict::Inconclusive { .. }) => (v.label(), MUTED),
        Some(v) => (v.label(), GOOD),
        None => ("not analysed".to_string(), MUTED),
    };
    area.draw(&Text::new(verdict.clone(), (x, mid), bold(&color)))
        .map_err(err)?;
    x += area
        .estimate_text_size(&verdict, &bold(&TEXT))
        .map_err(err)?
        .0 as i32
        + 18;
    if let Some(a) = a {
        let m = |k| a.metrics.get(k);
        let facts = format!(
            "waves {} · peak failure ratio {} · peak amplification {} · duplicate compute {}",
            a.waves.len(),
            m(Metric::PeakFailureRatio).map_or("—".into(), pct),
            m(Metric::AmplificationPeak).map_or("—".into(), |x| format!("{}x", num(x))),
            m(Metric::DuplicateComputeShare).map_or("—".into(), pct),
        );
        let style = (FAMILY, 12).into_font().color(&MUTED).pos(left);
        area.draw(&Text::new(facts.clone(), (x, mid), style.clone()))
            .map_err(err)?;
        x += area.estimate_text_size(&facts, &style).map_err(err)?.0 as i32 + 18;
    }
    if v.interrupted {
        area.draw(&Text::new("INTERRUPTED", (x, mid), bold(&BAD)))
            .map_err(err)?;
    }
    Ok(())
}

/// The seconds judged after a residue, as spans of equal health.
fn judged_spans(run: &RunData, v: &VariantRun, a: &VariantAnalysis) -> Vec<(f64, f64, bool)> {
    let roles = second_roles(v, a, &run.analysis);
    let mut spans: Vec<(f64, f64, bool)> = Vec::new();
    for (s, role) in v.seconds.iter().zip(roles) {
        let healthy = match role {
            Some(SecondRole::Healthy) => true,
            Some(SecondRole::Degraded) => false,
            _ => continue,
        };
        let (from, to) = (f64::from(s.t), f64::from(s.t) + 1.0);
        match spans.last_mut() {
            Some(last) if last.1 == from && last.2 == healthy => last.1 = to,
            _ => spans.push((from, to, healthy)),
        }
    }
    spans
}

/// Each trigger's residue: from its fault's end (its start, for injected
/// documents still in flight) to when its work had left the system.
pub fn residues(v: &VariantRun) -> Vec<(f64, Option<f64>)> {
    triggers_of(v)
        .iter()
        .map(|t| (t.end_s.unwrap_or(t.start_s), t.residue_end_s))
        .collect()
}

/// Draw the whole wave chart on `root`.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunData,
    analysis: &Analysis,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (top, rest) = root.split_vertically(TITLE_H);
    title_strip(&top, run, "failure waves", true)?;
    if run.variants.is_empty() {
        let style = (FAMILY, 16).into_font().color(&MUTED);
        return rest
            .draw(&Text::new("no variant recorded", (20, 20), style))
            .map_err(err);
    }
    let sc = Scales {
        traffic: scale(run, 1.0, |s| {
            (s.attempts.max(s.arrivals).max(s.distinct_documents)) as f64
        }),
        slots: scale(run, 1.0, |s| {
            s.slots_total.max(s.slots_busy).max(s.slots_held_by_waiters)
        }),
        cache: scale(run, 1.0, |s| {
            s.cache_writes_lost.max(s.pages_recomputed) as f64
        }),
    };
    let t_max = time_max(run);
    let groups = rest.split_evenly((run.variants.len(), 1));
    for (v, group) in run.variants.iter().zip(&groups) {
        let a = analysis.variant(&v.name);
        let (head, body) = group.split_vertically(HEADER_H);
        header(&head, v, a)?;
        let ps = panels(run, v, a, &sc);
        let frame = Frame {
            t_max,
            events: &v.events,
            residues: residues(v),
        };
        let alerts = usize::from(has_alerts(run));
        let areas = body.split_evenly((ps.len() + alerts, 1));
        if alerts == 1 {
            super::alerts::draw_rows(&areas[0], v, &run.analysis, t_max)?;
        }
        for (p, area) in ps.iter().zip(&areas[alerts..]) {
            draw_panel(area, p, &frame)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_seconds_are_merged_into_spans_of_equal_health() {
        // 20 of 30 attempts failed in 14-17, after a residue that ended at 13.5 s.
        let run = RunData {
            variants: vec![crate::analysis::verdict::one_trigger_run(14..18, 20)],
            ..RunData::default()
        };
        let analysis = crate::analysis::analyse(&run);
        let spans = judged_spans(&run, &run.variants[0], &analysis.variants[0]);
        assert_eq!(spans, vec![(14.0, 18.0, false), (18.0, 28.0, true)]);
    }
}
