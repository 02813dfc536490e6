//! `campaign --clock virtual --check-real N`: after the virtual campaign,
//! its first N seeds run again in real time, and the two are judged
//! together (`run_report::campaign::real_check`): the page says whether
//! the clocks agree for this experiment at this commit.
//!
//! The real runs are a campaign of their own in `real-check/` under the
//! virtual one's folder (its page, its runs), one run at a time: a run on
//! the wall clock needs the machine's cores to itself, where virtual runs
//! do not.

use super::execute;
use super::plan::Plan;
use crate::base::clock::ClockKind;
use crate::base::exit::CliError;
use crate::base::interrupt::StopSignal;
use run_report::campaign::CampaignSummary;

/// Runs the real-time check of the virtual campaign `plan` and adds it to
/// `summary`; a disagreement fails the campaign.
pub(super) fn run(
    plan: &Plan,
    summary: &mut CampaignSummary,
    n: u32,
    stop: &StopSignal,
) -> Result<(), CliError> {
    let real = real_plan(plan, n)?;
    eprintln!(
        "checking the virtual clock in real time: {}",
        real.describe()
    );
    let started = std::time::Instant::now();
    let outcome = execute::run_all(&real, stop);
    let real_summary = real.summary(outcome, started.elapsed(), stop.is_set());
    run_report::campaign::write::write_campaign(&real.dir, &real_summary)
        .map_err(|e| CliError::new(format_args!("writing the real-time check's files: {e}")))?;
    let check = run_report::campaign::real_check::judge(
        &plan.variants,
        &summary.runs,
        &real_summary.runs,
        real.seeds.clone(),
        started.elapsed().as_secs_f64(),
    );
    eprintln!("\n{}\n", check.sentence);
    summary.all_passed &= check.agree;
    summary.real_check = Some(check);
    Ok(())
}

/// The same file, form and variants on the wall clock: the campaign's
/// first `n` seeds, one run at a time, with the file's alerts (a real run
/// cannot leave them out, so a missing Prometheus is refused up front).
pub(super) fn real_plan(plan: &Plan, n: u32) -> Result<Plan, CliError> {
    let exp = crate::experiment::load(&plan.file, plan.exp.quick).map_err(CliError::new)?;
    if exp.alerts.is_some() {
        crate::observe::prometheus::check_installed().map_err(|e| {
            CliError::new(format_args!(
                "--check-real: the real-time runs evaluate the file's alerts: {e}"
            ))
        })?;
    }
    let dir = plan.dir.join("real-check");
    Ok(Plan {
        file: plan.file.clone(),
        seeds: plan.seeds.iter().copied().take(n as usize).collect(),
        repeats: 1,
        variants: plan.variants.clone(),
        parallel: 1,
        agents: None,
        clock: ClockKind::Real,
        without_alerts: false,
        dir,
        commit: plan.commit.clone(),
        exp,
    })
}
