//! `harness validate FILE`: both forms of an experiment parsed and
//! validated, the alert rules and target series checked; nothing runs.

use crate::base::exit::{CliError, Finished};
use crate::experiment;

pub fn cli(path: &std::path::Path) -> Result<Finished, CliError> {
    let (full, quick) = experiment::load_forms(path).map_err(CliError::new)?;
    // The rule files are the same in both forms: promtool judges them once.
    if let Some(a) = &full.alerts {
        crate::observe::prometheus::check_rules(a)
            .map_err(|e| CliError::new(format_args!("{}: alerts.rules: {e}", path.display())))?;
    }
    crate::observe::target_series::check(&full).map_err(CliError::new)?;
    for e in std::iter::once(&full).chain(quick.as_ref()) {
        println!(
            "{}: ok{} — {} variant(s), {} timeline entries, {} expectations, {} over runs, {} per variant",
            path.display(),
            if e.quick { " (quick form)" } else { "" },
            e.variants.len(),
            e.timeline.len(),
            e.expectations.len(),
            e.campaign.expectations.len(),
            humantime::format_duration(e.duration)
        );
    }
    Ok(Finished::Passed)
}
