//! Writing the report directory. Everything is rendered in memory first (a
//! chart that fails to draw leaves no half-written report), then each file is
//! written to a temporary name in its final directory, flushed, and renamed
//! over its final name, so a reader never sees a truncated file. index.html is
//! renamed last: once it exists, the rest of the report is complete.

use crate::analysis::Analysis;
use crate::charts::render_charts;
use crate::csv::timeseries_csv;
use crate::error::ReportError;
use crate::html::render_html;
use crate::junit::junit_xml;
use crate::model::{EventKind, RunData, RUN_SCHEMA};
use crate::summary::summary_json;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The files of a report directory, relative to it, in the order written.
pub const REPORT_FILES: &[&str] = &[
    "charts/waves.svg",
    "charts/waves.png",
    "charts/latency.svg",
    "charts/latency.png",
    "timeseries.csv",
    "run.json",
    "summary.json",
    "junit.xml",
    "index.html",
];

/// The recorded run a report was made from: `run.json` in the report
/// directory, so the analysis can be run again on it (`harness report DIR`).
/// A run of an older schema is read and judged with the current rule; one
/// of a newer schema, or one that no longer parses, is refused with why.
pub fn read_run(dir: &Path) -> Result<RunData, ReportError> {
    let path = dir.join("run.json");
    let text = fs::read_to_string(&path).map_err(io("reading", &path))?;
    let unreadable = |why: String| ReportError::Recorded {
        path: path.clone(),
        why,
    };
    let run: RunData = serde_json::from_str(&text).map_err(|e| {
        unreadable(format!(
            "it does not parse as a run of schema {RUN_SCHEMA} or older ({e}); run the \
             experiment again with this harness"
        ))
    })?;
    let mut run = run;
    // An expectation recorded on the whole run's `amplification_mean` is on
    // the figure now named `attempts_per_document`.
    for e in run.expectations.iter_mut().filter(|e| e.window.is_none()) {
        if let Some(m) = crate::metrics::Metric::renamed(e.metric.name()) {
            e.metric = m;
        }
    }
    if run.schema == 0 {
        from_schema_0(&mut run);
    }
    if run.schema > RUN_SCHEMA {
        return Err(unreadable(format!(
            "it was recorded with run schema {}, newer than this harness's {RUN_SCHEMA}; \
             judge it with the harness that recorded it",
            run.schema
        )));
    }
    Ok(run)
}

/// Schema 0 recorded a fault's undoing as an operator's action labelled
/// "end: <fault>"; the verdict must not take it for an intervention.
fn from_schema_0(run: &mut RunData) {
    for e in run.variants.iter_mut().flat_map(|v| v.events.iter_mut()) {
        if e.kind == EventKind::Action && e.label.starts_with("end: ") {
            e.kind = EventKind::FaultUndone;
        }
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ReportError {
    let path = path.to_path_buf();
    move |source| ReportError::Io {
        action,
        path,
        source,
    }
}

/// Write `bytes` to `path` through a temporary file in the same directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp).map_err(io("creating", &tmp))?;
        f.write_all(bytes).map_err(io("writing", &tmp))?;
        f.sync_all().map_err(io("flushing", &tmp))?;
        fs::rename(&tmp, path).map_err(io("renaming into place", path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes `files` (relative path, contents) under `dir`, each atomically,
/// creating folders as needed; the last file is renamed into place last, so
/// a page listed last appears only once everything it links to exists.
pub fn write_files(dir: &Path, files: &[(&str, &[u8])]) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::with_capacity(files.len());
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        write_atomic(&path, bytes)?;
        written.push(path);
    }
    Ok(written)
}

/// Write the whole report directory (created if needed): index.html,
/// summary.json, run.json, timeseries.csv, junit.xml and
/// charts/{waves,latency}.{svg,png}.
/// Returns the paths written.
pub fn write_report(
    dir: &Path,
    run: &RunData,
    analysis: &Analysis,
) -> Result<Vec<PathBuf>, ReportError> {
    let charts = render_charts(run, analysis)?;
    let summary = serde_json::to_string_pretty(&summary_json(run, analysis))? + "\n";
    let html = render_html(run, analysis, &charts);
    let csv = timeseries_csv(run, analysis);
    let junit = junit_xml(run, analysis);
    let recorded = crate::summary::run_json(run);
    let contents: [&[u8]; 9] = [
        charts.waves_svg.as_bytes(),
        &charts.waves_png,
        charts.latency_svg.as_bytes(),
        &charts.latency_png,
        csv.as_bytes(),
        recorded.as_bytes(),
        summary.as_bytes(),
        junit.as_bytes(),
        html.as_bytes(),
    ];
    let files: Vec<(&str, &[u8])> = REPORT_FILES.iter().copied().zip(contents).collect();
    write_files(dir, &files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(json: &str) -> Result<RunData, ReportError> {
        let dir = std::env::temp_dir().join(format!(
            "run-report-read-{}-{}",
            std::process::id(),
            json.len()
        ));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("run.json"), json).unwrap();
        let run = read_run(&dir);
        fs::remove_dir_all(&dir).unwrap();
        run
    }

    #[test]
    fn a_run_of_the_old_schema_is_read_and_a_newer_one_refused() {
        let undone = |kind| crate::model::TimelineEvent {
            at_s: 25.0,
            end_s: None,
            kind,
            label: "end: GPU at 0.3 speed".into(),
            ok: true,
            detail: String::new(),
        };
        let mut run = RunData {
            variants: vec![crate::model::VariantRun {
                events: vec![undone(EventKind::Action)],
                ..Default::default()
            }],
            ..RunData::default()
        };
        let mut old = serde_json::to_value(&run).unwrap();
        old.as_object_mut().unwrap().remove("schema");
        let read = recorded(&old.to_string()).expect("an unversioned run.json is read");
        assert_eq!(read.schema, 0);
        // Its fault undone at the end of a duration is not an operator's action.
        assert_eq!(read.variants[0].events[0].kind, EventKind::FaultUndone);
        run.schema = RUN_SCHEMA + 1;
        let newer = recorded(&serde_json::to_string(&run).unwrap()).unwrap_err();
        assert!(
            newer.to_string().contains("newer than this harness"),
            "{newer}"
        );
        let broken = recorded("{\"variants\": 3}").unwrap_err().to_string();
        assert!(broken.contains("cannot judge") && broken.contains("run the experiment again"));
    }
}
