//! `harness campaign merge DIR...`: a campaign built from recorded runs
//! (another machine's, the nightly's, a Kubernetes Indexed Job's), judged
//! like one run here. Every `summary.json` under the folders is one run of
//! each of its variants; runs of the same seed are repeats.

use super::collect;
use super::plan::Job;
use crate::base::exit::{CliError, Finished};
use crate::cli::{CompareArgs, MergeArgs};
use run_report::campaign::{CampaignPlan, CampaignRun, CampaignSpec, CampaignSummary};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub(crate) fn cli(args: MergeArgs) -> Result<Finished, CliError> {
    let recorded = recorded_runs(&args.dirs)?;
    let exp = match &args.with {
        Some(f) => Some(crate::experiment::load(f, recorded.quick).map_err(CliError::new)?),
        None => None,
    };
    let spec = exp.as_ref().map_or_else(
        || CampaignSpec {
            compare: vec![("before-fix".into(), "after-fix".into())],
            ..CampaignSpec::default()
        },
        |e| e.campaign.clone(),
    );
    let mut plan = merged_plan(recorded.experiment, recorded.quick, &recorded.runs);
    if let Some(e) = &exp {
        // The file's order, as a campaign run here shows them.
        let rank = |v: &String| e.variants.iter().position(|x| &x.name == v);
        plan.variants.sort_by_key(rank);
    }
    eprintln!(
        "merging {} runs of {} from {} summaries",
        recorded.runs.len(),
        plan.experiment,
        recorded.summaries
    );
    super::finish(
        &args.out,
        &CampaignSummary::build(plan, &spec, recorded.runs),
    )
}

pub(crate) fn compare(args: CompareArgs) -> Result<Finished, CliError> {
    let a = recorded_runs(std::slice::from_ref(&args.a))?;
    let b = recorded_runs(std::slice::from_ref(&args.b))?;
    if (a.experiment.as_str(), a.quick) != (b.experiment.as_str(), b.quick) {
        return Err(CliError::new(format_args!(
            "{} holds runs of {} (quick: {}), {} of {} (quick: {})",
            args.a.display(),
            a.experiment,
            a.quick,
            args.b.display(),
            b.experiment,
            b.quick
        )));
    }
    let variants = merged_plan(a.experiment.clone(), a.quick, &a.runs).variants;
    let checks = run_report::campaign::agreement::compare_sets(&variants, &a.runs, &b.runs);
    let (na, nb) = (args.a.display().to_string(), args.b.display().to_string());
    println!(
        "{}",
        run_report::campaign::agreement::markdown(&checks, &na, &nb)
    );
    let differ = checks.iter().filter(|c| c.differs).count();
    println!(
        "{} of {} runs against {}: {} checks, {differ} differ after Holm's correction at 5 %",
        a.experiment,
        a.runs.len(),
        b.runs.len(),
        checks.len()
    );
    Ok(Finished::passed_if(differ == 0))
}

/// The runs recorded under some folders.
struct Recorded {
    experiment: String,
    quick: bool,
    runs: Vec<CampaignRun>,
    summaries: usize,
}

fn recorded_runs(dirs: &[PathBuf]) -> Result<Recorded, CliError> {
    let mut summaries = Vec::new();
    for d in dirs {
        collect::collect_summaries(d, &mut summaries, 10);
    }
    summaries.sort();
    if summaries.is_empty() {
        return Err(CliError::new("no summary.json under the folders given"));
    }
    let (experiment, quick, per_file) = read_all(&summaries)?;
    let mut runs: Vec<CampaignRun> = Vec::new();
    let mut repeats: BTreeMap<(String, u64), u32> = BTreeMap::new();
    for (path, seed, variants) in per_file {
        for variant in variants {
            let n = repeats.entry((variant.clone(), seed)).or_default();
            let job = Job {
                variant,
                seed,
                repeat: *n,
            };
            *n += 1;
            let mut run = judged_run(&path, &job);
            run.report = std::path::absolute(path.parent().unwrap_or(&path))
                .ok()
                .map(|p| p.display().to_string());
            runs.push(run);
        }
    }
    Ok(Recorded {
        experiment,
        quick,
        runs,
        summaries: summaries.len(),
    })
}

type PerFile = Vec<(PathBuf, u64, Vec<String>)>;

/// The experiment, its form and each summary's seed and variants; mixing
/// experiments or forms is an error.
fn read_all(summaries: &[PathBuf]) -> Result<(String, bool, PerFile), CliError> {
    let mut experiment: Option<(String, bool)> = None;
    let mut out = Vec::new();
    for path in summaries {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::new(format_args!("{}: {e}", path.display())))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::new(format_args!("{}: {e}", path.display())))?;
        let this = (
            json["experiment"].as_str().unwrap_or("?").to_string(),
            json["quick"].as_bool().unwrap_or(false),
        );
        match &experiment {
            Some(e) if *e != this => {
                return Err(CliError::new(format_args!(
                    "{} is a run of {} (quick: {}), the others of {} (quick: {}): merge one experiment's runs",
                    path.display(), this.0, this.1, e.0, e.1
                )))
            }
            _ => experiment = Some(this),
        }
        let variants = run_report::campaign::read::judged_variants(&json)
            .map_err(|e| CliError::new(format_args!("{}: {e}", path.display())))?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        out.push((path.clone(), json["seed"].as_u64().unwrap_or(0), variants));
    }
    let (name, quick) = experiment.unwrap_or_default();
    Ok((name, quick, out))
}

fn judged_run(path: &std::path::Path, job: &Job) -> CampaignRun {
    let status = collect::judged(path, &job.variant).unwrap_or_else(|why| {
        run_report::campaign::RunStatus::Errored {
            reason: why.to_string(),
        }
    });
    CampaignRun {
        variant: job.variant.clone(),
        seed: job.seed,
        repeat: job.repeat,
        report: None,
        status,
    }
}

fn merged_plan(experiment: String, quick: bool, runs: &[CampaignRun]) -> CampaignPlan {
    let mut seeds: Vec<u64> = runs.iter().map(|r| r.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    let mut variants: Vec<String> = Vec::new();
    for r in runs {
        if !variants.contains(&r.variant) {
            variants.push(r.variant.clone());
        }
    }
    CampaignPlan {
        experiment,
        quick,
        seeds,
        repeats: runs.iter().map(|r| r.repeat + 1).max().unwrap_or(1),
        variants,
        parallel_start: 0,
        parallel_end: 0,
        estimate_s: 0.0,
        wall_s: 0.0,
        interrupted: false,
        commit: None,
        // Each run's own summary.json says which clock it ran on.
        clock: run_report::RunClock::Real,
        modeled_s: 0.0,
    }
}
