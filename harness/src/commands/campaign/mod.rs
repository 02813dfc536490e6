//! `harness campaign`: one experiment over many seeds (and repeats), each
//! (variant, seed, repeat) a normal run in a child process of its own with
//! its own report, several at once; then judged over the runs with its
//! confidence (`run_report::campaign`).
//!
//! Why child processes: a run that crashes or is killed must not take the
//! campaign with it (it is recorded as errored and the campaign goes on),
//! and each run's harness-cost panel measures its own process. A run whose
//! load was not delivered as planned is left out of the statistics, run
//! again once, and the campaign lowers its parallelism.

mod check_real;
mod collect;
mod execute;
mod merge;
mod plan;
mod sequential;

use crate::base::exit::{CliError, Finished};
use crate::commands::budget::words;
use run_report::campaign::{CampaignSummary, RunStatus};
use std::path::{Path, PathBuf};

use crate::cli::{CampaignArgs, CampaignCommand, TableArgs};

/// `harness campaign table FILE...`: each recorded campaign context's
/// figures as the Markdown table the documents carry, so nobody types them.
fn table(args: TableArgs) -> Result<Finished, CliError> {
    for (i, path) in args.contexts.iter().enumerate() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::new(format_args!("{}: {e}", path.display())))?;
        let ctx: run_report::campaign::context::CampaignContext = serde_json::from_str(&text)
            .map_err(|e| CliError::new(format_args!("{}: {e}", path.display())))?;
        if i > 0 {
            println!();
        }
        print!("{}", ctx.figures_markdown());
    }
    Ok(Finished::Passed)
}

/// The commit the experiment file's checkout is at (`-dirty` with
/// uncommitted changes to tracked files), for the campaign's context; None
/// outside a git checkout or without git.
pub(crate) fn source_commit(file: &Path) -> Option<String> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

/// `harness campaign ...`.
pub fn cli(args: CampaignArgs) -> Result<Finished, CliError> {
    match args.command {
        Some(CampaignCommand::Merge(m)) => return merge::cli(m),
        Some(CampaignCommand::Compare(c)) => return merge::compare(c),
        Some(CampaignCommand::Table(t)) => return table(t),
        None => {}
    }
    let mut plan = plan::Plan::from_args(&args)?;
    if args.until_settled {
        sequential::check(&plan)?;
        if args.parallel.is_none() {
            sequential::widen_first_batch(&mut plan);
        }
    }
    if let Some(n) = args.check_real {
        if !plan.clock.is_virtual() {
            return Err(CliError::new(
                "--check-real checks a virtual campaign in real time: give --clock virtual",
            ));
        }
        // Refused now, not after the virtual runs.
        check_real::real_plan(&plan, n)?;
    }
    eprintln!("{}", plan.describe());
    if args.until_settled {
        eprintln!("{}", sequential::describe(&plan));
    }
    crate::commands::budget::check(
        plan.estimate(),
        *args.budget,
        args.force,
        "use fewer --seeds, fewer --repeat, --quick",
    )
    .map_err(CliError::new)?;
    let stop = execute::install_stop()?;
    let started = std::time::Instant::now();
    let mut summary = if args.until_settled {
        sequential::summary(&mut plan, &stop, started)?
    } else {
        let outcome = execute::run_all(&plan, &stop);
        plan.summary(outcome, started.elapsed(), stop.is_set())
    };
    if let Some(n) = args.check_real.filter(|_| !stop.is_set()) {
        check_real::run(&plan, &mut summary, n, &stop)?;
    }
    finish(&plan.dir, &summary)
}

/// Writes the campaign's files, prints its headline, and says how it ended.
pub(crate) fn finish(dir: &Path, summary: &CampaignSummary) -> Result<Finished, CliError> {
    let written = run_report::campaign::write::write_campaign(dir, summary)
        .map_err(|e| CliError::new(format_args!("writing the campaign's files: {e}")))?;
    print_summary(summary);
    if let Some(page) = written.iter().find(|p| p.ends_with("campaign.html")) {
        eprintln!("campaign: {}", page.display());
    }
    if summary.plan.interrupted {
        eprintln!("interrupted: the campaign's report holds the runs that finished");
        return Ok(Finished::Interrupted);
    }
    Ok(Finished::passed_if(summary.all_passed))
}

fn print_summary(s: &CampaignSummary) {
    for c in &s.comparisons {
        eprintln!("\n{}\n", c.sentence);
    }
    for v in &s.variants {
        let verdicts: Vec<String> = v
            .verdicts
            .iter()
            .map(|(k, sh)| format!("{} {sh}", run_report::class_words(k)))
            .collect();
        eprintln!(
            "{:>14}: {} of {} runs counted | {} | with a wave {}",
            v.variant,
            v.counted,
            v.planned,
            verdicts.join(", "),
            v.with_waves
        );
        for (run, why) in v.errored.iter().chain(&v.excluded) {
            eprintln!("{:>14}  {run}: {why}", "");
        }
    }
    for e in &s.expectations {
        eprintln!(
            "  [{}] {}: {} ({})",
            if e.passed { "PASS" } else { "FAIL" },
            e.spec.variant,
            e.spec.source,
            e.message
        );
    }
    // A per-run expectation that failed in every run fails the campaign
    // too: say which, as the flaky ones are said below.
    for v in &s.variants {
        for e in v.expectations.iter().filter(|e| e.held == 0 && e.of > 0) {
            eprintln!(
                "  [FAIL] {}: {} failed in every run ({} of {})",
                v.variant, e.expectation, e.of, e.of
            );
        }
    }
    for (variant, e) in s.flaky() {
        eprintln!(
            "  [FLAKY] {variant}: {} held in {} of {} runs (failed in {})",
            e.expectation,
            e.held,
            e.of,
            e.failed_in.join(", ")
        );
    }
    let errored = s
        .runs
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Errored { .. }))
        .count();
    eprintln!(
        "{} runs, {errored} errored, in {}",
        s.runs.len(),
        words(std::time::Duration::from_secs_f64(s.plan.wall_s))
    );
}

/// The folder a (variant, seed, repeat) run writes into, under the campaign's.
pub(crate) fn run_dir(variant: &str, seed: u64, repeat: u32) -> PathBuf {
    let name = if repeat == 0 {
        format!("s{seed}")
    } else {
        format!("s{seed}-r{repeat}")
    };
    Path::new("runs").join(variant).join(name)
}

/// The experiment's last recorded campaign, committed beside it as
/// `campaigns/<file stem>.json` (`-quick.json` for the quick form), when
/// there is one for this experiment and form; a file that cannot be read
/// is said loudly and ignored.
pub fn recorded_context(
    file: &Path,
    exp: &crate::experiment::Experiment,
) -> Option<run_report::campaign::context::CampaignContext> {
    let stem = file.file_stem()?.to_string_lossy();
    let name = format!("{stem}{}.json", if exp.quick { "-quick" } else { "" });
    let path = file.parent()?.join("campaigns").join(name);
    let text = std::fs::read_to_string(&path).ok()?;
    match serde_json::from_str::<run_report::campaign::context::CampaignContext>(&text) {
        Ok(c) if c.experiment == exp.name && c.quick == exp.quick => Some(c),
        Ok(_) => {
            eprintln!(
                "WARNING: {} is another experiment's or form's campaign; not used",
                path.display()
            );
            None
        }
        Err(e) => {
            eprintln!(
                "WARNING: {}: {e}; the run is not placed in a campaign",
                path.display()
            );
            None
        }
    }
}
