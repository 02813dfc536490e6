//! `index.html`: the one page a reliability engineer reads. Self-contained (CSS
//! inline, charts as base64 PNG data URIs, no script, no external resource), so
//! it can be attached to a ticket or opened from a CI artifact as is. Order:
//! verdict first, then why (expectations, fidelity, charts), then the
//! evidence (rules, tables, environment, the experiment file).

mod cost;
mod detection;
mod sections;
pub(crate) mod table;
mod target;
mod verdict;

use crate::analysis::Analysis;
use crate::charts::Charts;
use crate::model::RunData;
use crate::xml::escape;
use base64::Engine;
use std::fmt::Write;

const CSS: &str = r#"
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1440px;padding:16px 24px;color:#1e1e1e;background:#fff}
h1{margin:4px 0;font-size:26px}h2{margin-top:28px;border-bottom:2px solid #e4e4ea;padding-bottom:4px;font-size:20px}
.meta,.muted{color:#666}.desc{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #dcdce2;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a783c;font-weight:bold}.fail{color:#c8141e;font-weight:bold}
tr.failed td{background:#fff1f1}
.overall{font-size:20px;font-weight:bold;padding:10px 14px;border-radius:6px;margin:10px 0}
.overall.pass{background:#e5f5ea;border:2px solid #1a783c}.overall.fail{background:#fde8e8;border:2px solid #c8141e}
.banner{background:#c8141e;color:#fff;font-weight:bold;font-size:18px;padding:12px 16px;margin:10px 0;border-radius:6px;border:3px solid #7a0010}
.banner small{display:block;font-weight:normal;font-size:14px;margin-top:4px}
.verdict-bad{color:#c8141e;font-weight:bold}.verdict-good{color:#1a783c;font-weight:bold}.verdict-unknown{color:#8a6d00;font-weight:bold}
h3{font-size:16px;margin:16px 0 4px}
img.chart{width:100%;max-width:1400px;border:1px solid #e4e4ea}
pre{background:#f7f7f9;border:1px solid #e4e4ea;padding:10px;overflow:auto;font-size:12px}
.rule{background:#f7f7fb;border-left:4px solid #7a7aa0;padding:8px 12px;max-width:1100px}
"#;

/// A self-contained page (the report's CSS inline) around `body`, for the
/// pages of sweeps, threshold searches and ablations.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}{PAGE_CSS}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

/// What the other pages add to the report's CSS.
const PAGE_CSS: &str = r#"
.maps{display:flex;flex-wrap:wrap;gap:16px}.maps figure{margin:0;flex:1 1 600px}
.maps img{width:100%;max-width:760px;border:1px solid #ddd}
.sw{display:inline-block;width:12px;height:12px;border:1px solid #999;vertical-align:middle;margin-right:4px}
"#;

/// A PNG as a `data:` URI, for self-contained pages.
pub fn data_uri(png: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// The whole page.
pub fn render_html(run: &RunData, analysis: &Analysis, charts: &Charts) -> String {
    let mut h = String::with_capacity(
        64 * 1024 + (charts.waves_png.len() + charts.latency_png.len()) * 4 / 3,
    );
    let title = format!("{} — {}", run.experiment, run.label());
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    sections::header(&mut h, run, analysis);
    sections::banners(&mut h, run, analysis);
    cost::banner(&mut h, run);
    sections::summary(&mut h, run, analysis);
    sections::expectations(&mut h, analysis);
    sections::fidelity(&mut h, analysis);
    verdict::explained(&mut h, run, analysis);
    target::section(&mut h, run);
    let _ = write!(
        h,
        "<section id=\"charts\">\n<h2>Failure waves</h2>\n\
         <img class=\"chart\" alt=\"Failure waves per variant: traffic, failure ratio, worker slots, cache\" src=\"{}\">\n\
         <p class=\"muted\">Vector version: <a href=\"charts/waves.svg\">charts/waves.svg</a>. \
         Red shading: faults; violet: a trigger's residue (its work still in the system), ending at the dashed line; green: operator actions; orange bars: failure waves; the strip along the bottom of the failure ratio: the seconds the verdict judged after each residue, red degraded and green healthy; alert rows (when the experiment has <code>alerts:</code>): light = pending, dark = firing, black tick = first customer-visible failure.</p>\n\
         <h2>Latency</h2>\n\
         <img class=\"chart\" alt=\"Attempt latency per second and percentile distribution per variant\" src=\"{}\">\n\
         <p class=\"muted\">Vector version: <a href=\"charts/latency.svg\">charts/latency.svg</a>.</p>\n</section>\n",
        data_uri(&charts.waves_png),
        data_uri(&charts.latency_png)
    );
    detection::section(&mut h, run);
    sections::waves(&mut h, analysis);
    sections::latency(&mut h, run);
    cost::section(&mut h, run);
    verdict::rules(&mut h, run, analysis);
    sections::timeline(&mut h, run);
    sections::integrity_examples(&mut h, run);
    sections::environment(&mut h, run);
    let _ = write!(
        h,
        "<section id=\"experiment\">\n<h2>Experiment file</h2>\n<pre>{}</pre>\n</section>\n</body>\n</html>\n",
        escape(&run.experiment_yaml)
    );
    h
}
