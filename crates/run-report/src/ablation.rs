//! The outputs of an ablation (`harness ablate`): for each fix group, what
//! before-fix with only that fix and after-fix without it did, the
//! classification of the defect and the fix, and the page and JSON written
//! from them. Pure functions of [`Classification`]; the harness plans and
//! runs the variants and classifies them.

use crate::error::ReportError;
use crate::html::{data_uri, page};
use crate::xml::escape;
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// What one run of the ablation showed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    pub waves: f64,
    pub mean_failure: f64,
    /// The verdict's class (`metastable`, `recovered`, ...).
    pub verdict: String,
}

/// The verdict on one defect/fix group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupVerdict {
    pub group: String,
    pub changes: Vec<String>,
    /// before-fix with only this fix.
    pub fix_alone: RunOutcome,
    /// after-fix without this fix.
    pub without_fix: RunOutcome,
    /// necessary | contributing | harmful alone | neither
    pub defect: String,
    pub fix_sufficient_alone: bool,
    pub fix_needed: bool,
}

/// The whole ablation.
#[derive(Debug, Clone, Serialize)]
pub struct Classification {
    pub before: RunOutcome,
    pub after: RunOutcome,
    pub groups: Vec<GroupVerdict>,
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn outcome(o: &RunOutcome) -> String {
    format!("{} waves, {:.2}, {}", o.waves, o.mean_failure, o.verdict)
}

/// The classification as a text table, for the terminal.
pub fn ablation_table(c: &Classification) -> String {
    let mut s = format!(
        "before-fix: {}; after-fix: {}\n{:<32} {:<30} {:<30} {:<14} {:<10} {:<6}\n",
        outcome(&c.before),
        outcome(&c.after),
        "fix group",
        "only this fix",
        "all but this fix",
        "defect",
        "sufficient",
        "needed"
    );
    for g in &c.groups {
        let _ = writeln!(
            s,
            "{:<32} {:<30} {:<30} {:<14} {:<10} {:<6}",
            g.group,
            outcome(&g.fix_alone),
            outcome(&g.without_fix),
            g.defect,
            yes(g.fix_sufficient_alone),
            yes(g.fix_needed)
        );
    }
    s
}

fn html(exp: &str, c: &Classification, report_index: &str, waves_png: Option<&[u8]>) -> String {
    let mut rows = String::new();
    for g in &c.groups {
        let _ = writeln!(
            rows,
            "<tr><td><b>{}</b><br><small>{}</small></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.group),
            escape(&g.changes.join("; ")),
            escape(&outcome(&g.fix_alone)),
            escape(&outcome(&g.without_fix)),
            escape(&g.defect),
            yes(g.fix_sufficient_alone),
            yes(g.fix_needed)
        );
    }
    let img = waves_png
        .map(|b| {
            format!(
                "<img class=\"chart\" alt=\"every run's waves\" src=\"{}\">",
                data_uri(b)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<h1>{e}: which defect caused it?</h1>\
         <p>before-fix: {b}; after-fix: {a} (waves, mean failure ratio, verdict). Same seed, \
         load and timeline in every run.</p>\
         <table><tr><th>fix group (changes)</th><th>before-fix with only this fix</th>\
         <th>after-fix without this fix</th><th>defect</th><th>fix sufficient alone</th>\
         <th>fix needed</th></tr>{rows}</table>\
         <p class=\"rule\">A defect is <i>necessary</i> when fixing it alone removes every wave, \
         <i>contributing</i> when fixing it alone lowers the failure (fewer waves, or a mean \
         failure ratio 20 % lower), <i>harmful alone</i> when fixing it alone makes it worse; a \
         fix is <i>needed</i> when after-fix without it shows more waves.</p>\
         <p>Every run in full: <a href=\"{idx}\">{idx}</a></p>{img}\n",
        e = escape(exp),
        b = escape(&outcome(&c.before)),
        a = escape(&outcome(&c.after)),
        idx = escape(report_index),
    );
    page(&format!("{exp} — ablation"), &body)
}

/// Writes `ablation.json` and `ablation.html` (last) into the run's report
/// folder `dir`; returns the page's path.
pub fn write_ablation(
    dir: &Path,
    exp: &str,
    c: &Classification,
    report_index: &str,
    waves_png: Option<&[u8]>,
) -> Result<PathBuf, ReportError> {
    let json = serde_json::to_vec_pretty(c)?;
    let page = html(exp, c, report_index, waves_png);
    crate::write::write_files(
        dir,
        &[("ablation.json", &json), ("ablation.html", page.as_bytes())],
    )?;
    Ok(dir.join("ablation.html"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(w: f64, f: f64, v: &str) -> RunOutcome {
        RunOutcome {
            waves: w,
            mean_failure: f,
            verdict: v.into(),
        }
    }

    #[test]
    fn page_and_json_are_written() {
        let c = Classification {
            before: run(3.0, 0.4, "recovered"),
            after: run(0.0, 0.02, "recovered"),
            groups: vec![GroupVerdict {
                group: "pool.dedup <b>".into(),
                changes: vec!["pool.dedup: a -> b".into()],
                fix_alone: run(0.0, 0.03, "recovered"),
                without_fix: run(2.0, 0.3, "metastable"),
                defect: "necessary".into(),
                fix_sufficient_alone: true,
                fix_needed: true,
            }],
        };
        assert!(ablation_table(&c).contains("2 waves, 0.30, metastable"));
        let dir = std::env::temp_dir().join(format!("ablation-test-{}", std::process::id()));
        let p = write_ablation(&dir, "retry-storm", &c, "index.html", None).unwrap();
        let html = std::fs::read_to_string(p).unwrap();
        assert!(html.contains("pool.dedup &lt;b&gt;"));
        assert!(html.contains("<style>"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("ablation.json")).unwrap())
                .unwrap();
        assert_eq!(json["groups"][0]["without_fix"]["verdict"], "metastable");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
