//! `harness report DIR`: a recorded run judged again with this harness's
//! rules, its report rewritten in place; with `--with FILE`, against that
//! file's expectations, analysis settings, incident figures and the
//! windowed metrics its campaign claims name.

use super::run::{load, print_summary};
use crate::base::exit::{CliError, Finished};
use crate::run;
use std::path::Path;

pub fn cli(dir: &Path, with: Option<&Path>, quiet: bool) -> Result<Finished, CliError> {
    let mut run = run_report::read_run(dir).map_err(|e| match e {
        run_report::ReportError::Io { .. } => CliError::new(format_args!(
            "{e} (a report directory written by this harness holds run.json)"
        )),
        e => CliError::new(e),
    })?;
    if run.schema < run_report::RUN_SCHEMA {
        eprintln!(
            "note: {} was recorded with run schema {} (this harness writes {}): judged again \
             with the current rule; what it did not record is not judged, and the report says \
             so (e.g. latency without per-second latency counts)",
            dir.join("run.json").display(),
            run.schema,
            run_report::RUN_SCHEMA
        );
    }
    if let Some(file) = with {
        let exp = load(file, run.quick, None)?;
        run.expectations = exp
            .expectations
            .into_iter()
            .filter(|e| run.variants.iter().any(|v| v.name == e.variant))
            .collect();
        run.analysis = exp.analysis;
        run.incident_figures = exp.incident;
        // The file's campaign claims name windowed metrics the summary must
        // carry for a campaign to read them back (as a run records them).
        run.campaign_metrics = exp.campaign.windowed_metrics();
    }
    let analysis = run_report::analyse(&run);
    let files = run_report::write_report(dir, &run, &analysis).map_err(CliError::new)?;
    let outcome = run::RunOutcome {
        interrupted: run.variants.iter().any(|v| v.interrupted),
        report_dir: dir.to_path_buf(),
        files,
        analysis,
        run,
    };
    print_summary(&outcome, quiet);
    Ok(Finished::passed_if(outcome.analysis.all_passed))
}
