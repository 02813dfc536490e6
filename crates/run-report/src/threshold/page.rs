//! The threshold search's page and files: `threshold.html` (the chart and
//! a table per variant), `threshold.json` and the chart, written from a
//! [`ThresholdReport`].

use super::chart;
use super::ThresholdReport;
use crate::error::ReportError;
use crate::html::{data_uri, page};
use crate::xml::escape;
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn html(r: &ThresholdReport, png: &[u8]) -> String {
    let mut h = String::new();
    let secs = |s: u64| humantime::format_duration(std::time::Duration::from_secs(s)).to_string();
    let _ = write!(
        h,
        "<h1>{} — tipping point</h1>\
         <p class=\"muted\">run {} · {} form · trigger <code>{}</code> from {} to {} · {} seed(s) \
         per probe ({}) · bracket resolution {:.0} % of the range · estimated {}, took {}{}</p>",
        escape(&r.experiment),
        escape(&r.run_id),
        if r.quick { "quick" } else { "full" },
        escape(&r.trigger_paths.join(", ")),
        escape(&r.low_text),
        escape(&r.high_text),
        r.seeds.len(),
        r.seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        r.resolution * 100.0,
        secs(r.estimated_s),
        secs(r.wall_s as u64),
        if r.interrupted { " · INTERRUPTED" } else { "" }
    );
    h.push_str(
        "<section id=\"result\"><h2>Result</h2><table><tr><th>variant</th><th>result</th></tr>",
    );
    for v in &r.variants {
        let _ = write!(
            h,
            "<tr><td><b>{}</b></td><td>{}</td></tr>",
            escape(&v.variant),
            escape(&v.sentence())
        );
    }
    let _ = write!(
        h,
        "</table><p>A probe runs the experiment with the trigger at one value, once per seed, \
         and calls it by majority of all its seeds: metastable (the verdict of the report), \
         came back (stable or recovered), or undecided. The search bisects between a value \
         that came back and one that tipped until the bracket is at most {:.0} % of the range.</p>\
         <img class=\"chart\" alt=\"verdict against the trigger value\" src=\"{}\">\
         <p class=\"muted\">Vector version: <a href=\"charts/threshold.svg\">charts/threshold.svg</a>.</p></section>",
        r.resolution * 100.0,
        data_uri(png)
    );
    h.push_str("<section id=\"probes\"><h2>Probes</h2><table><tr><th>variant</th><th>#</th><th>value</th><th>call</th><th>metastable</th><th>came back</th><th>runs</th></tr>");
    for v in &r.variants {
        for (i, p) in v.probes.iter().enumerate() {
            let runs = p
                .runs
                .iter()
                .map(|x| match &x.report {
                    Some(rep) => format!(
                        "<a href=\"{}/index.html\" title=\"{}\">seed {}: {}</a>",
                        escape(rep),
                        escape(&x.verdict),
                        x.seed,
                        escape(&x.class)
                    ),
                    None => format!("seed {}: {}", x.seed, escape(&x.class)),
                })
                .collect::<Vec<_>>()
                .join("<br>");
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{:?}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{runs}</td></tr>",
                escape(&v.variant),
                i + 1,
                escape(&p.text),
                p.call,
                p.metastable,
                p.came_back
            );
        }
    }
    h.push_str("</table></section>\n");
    page(&format!("{} — tipping point", r.experiment), &h)
}

/// Writes the search's files under `dir` (charts/threshold.svg|png,
/// threshold.json, threshold.html last); returns the page's path.
pub fn write_threshold(dir: &Path, r: &ThresholdReport) -> Result<PathBuf, ReportError> {
    let svg = chart::threshold_svg(r)?;
    let png = chart::threshold_png(r)?;
    let json = serde_json::to_vec_pretty(r)?;
    let page = html(r, &png);
    crate::write::write_files(
        dir,
        &[
            ("charts/threshold.svg", svg.as_bytes()),
            ("charts/threshold.png", &png),
            ("threshold.json", &json),
            ("threshold.html", page.as_bytes()),
        ],
    )?;
    Ok(dir.join("threshold.html"))
}
