//! A campaign's plan: which runs, how many at once, where they go, and how
//! long that should take (stated first, refused over `--budget`).

use crate::base::exit::CliError;
use crate::cli::CampaignArgs;
use crate::commands::budget::words;
use crate::experiment::{self, Experiment};
use run_report::campaign::{CampaignPlan, CampaignRun, CampaignSummary};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the runs left, and the parallelism the campaign ended at.
pub(crate) struct Outcome {
    pub runs: Vec<CampaignRun>,
    pub parallel_end: usize,
}

/// What `--resume` needs to run the same campaign again: written first.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Saved {
    experiment: PathBuf,
    quick: bool,
    seeds: Vec<u64>,
    repeats: u32,
    variants: Vec<String>,
    #[serde(default)]
    agents: Option<u32>,
    #[serde(default, skip_serializing_if = "is_false")]
    virtual_clock: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    without_alerts: bool,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

/// A validated campaign, ready to run.
pub(crate) struct Plan {
    pub file: PathBuf,
    pub exp: Experiment,
    pub seeds: Vec<u64>,
    pub repeats: u32,
    pub variants: Vec<String>,
    pub parallel: usize,
    /// Load agents per run (`--agents`).
    pub agents: Option<u32>,
    /// The runs' clock (`--clock`).
    pub clock: crate::base::clock::ClockKind,
    /// The runs leave the file's `alerts:` out (`--without-alerts`).
    pub without_alerts: bool,
    /// The campaign's folder.
    pub dir: PathBuf,
    /// The commit of the source at the start (`super::source_commit`),
    /// recorded with the campaign's figures.
    pub commit: Option<String>,
}

/// One run to make.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub variant: String,
    pub seed: u64,
    pub repeat: u32,
}

impl Plan {
    /// Validates the file and the flags (exit 2 before anything runs).
    pub fn from_args(args: &CampaignArgs) -> Result<Plan, CliError> {
        let saved = match &args.resume {
            Some(dir) => Some(read_saved(dir)?),
            None => None,
        };
        let file = match (&saved, &args.experiment) {
            (Some(s), _) => s.experiment.clone(),
            (None, Some(f)) => f.clone(),
            (None, None) => return Err(CliError::Line("usage: harness campaign <EXPERIMENT.yaml> [--seeds 1..10] | harness campaign merge DIR...".into())),
        };
        let quick = saved.as_ref().map_or(args.quick, |s| s.quick);
        let mut exp = experiment::load(&file, quick).map_err(CliError::new)?;
        let without_alerts = saved
            .as_ref()
            .map_or(args.without_alerts, |s| s.without_alerts);
        let clock = match &saved {
            Some(s) if s.virtual_clock => crate::base::clock::ClockKind::Virtual,
            Some(_) => crate::base::clock::ClockKind::Real,
            None => args.clock,
        };
        if clock.is_virtual() {
            let agents = saved.as_ref().map_or(args.agents, |s| s.agents).is_some();
            if let Some(why) = crate::base::clock::refuse_flags(agents, false, false) {
                return Err(CliError::new(why));
            }
            experiment::check_virtual_clock(&exp.source, &file.display().to_string())
                .map_err(CliError::new)?;
        }
        if without_alerts && !clock.is_virtual() {
            return Err(CliError::new(
                "--without-alerts is for --clock virtual only",
            ));
        }
        // The virtual clock leaves `alerts:` out whether asked or not.
        let without_alerts = clock.is_virtual();
        if without_alerts && exp.leave_out_alerts(crate::base::clock::WITHOUT_ALERTS) {
            eprintln!("WARNING: {}", crate::base::clock::WITHOUT_ALERTS);
        }
        // What every run would fail on is said once, before any runs.
        if let Some(a) = &exp.alerts {
            crate::observe::prometheus::check_installed().map_err(CliError::new)?;
            crate::observe::prometheus::check_rules(a).map_err(CliError::new)?;
        }
        crate::observe::target_series::check(&exp).map_err(CliError::new)?;
        let seeds = match (&saved, &args.seeds) {
            (Some(s), _) => s.seeds.clone(),
            (None, Some(text)) => experiment::parse_seeds(text)
                .map_err(|e| CliError::new(format_args!("--seeds: {e}")))?,
            // A sequential campaign takes seeds from 1 until settled.
            (None, None) if args.until_settled => (1..=u64::from(args.max_seeds)).collect(),
            (None, None) if !exp.campaign.seeds.is_empty() => exp.campaign.seeds.clone(),
            (None, None) => (1..=5).collect(),
        };
        let variants = match &saved {
            Some(s) => s.variants.clone(),
            None => chosen_variants(&exp, &args.variant)?,
        };
        let (dir, folder) = match &args.resume {
            Some(d) => (d.clone(), None),
            None => {
                let kind = format!("{}-campaign", exp.name);
                let f = crate::base::run_id::RunFolder::now(&args.out, &kind, seeds[0]);
                (f.dir.clone(), Some(f))
            }
        };
        let commit = super::source_commit(&file);
        let plan = Plan {
            commit,
            file,
            repeats: saved.as_ref().map_or(args.repeat, |s| s.repeats),
            agents: saved.as_ref().map_or(args.agents, |s| s.agents),
            clock,
            without_alerts,
            parallel: args
                .parallel
                .map_or_else(|| default_parallel(clock), |n| n as usize),
            exp,
            seeds,
            variants,
            dir,
        };
        plan.save()?;
        // After the folder exists: `latest` points at the newest campaign.
        if let Some(f) = folder {
            f.link_latest();
        }
        Ok(plan)
    }

    fn save(&self) -> Result<(), CliError> {
        let saved = Saved {
            experiment: std::path::absolute(&self.file).unwrap_or_else(|_| self.file.clone()),
            quick: self.exp.quick,
            seeds: self.seeds.clone(),
            repeats: self.repeats,
            variants: self.variants.clone(),
            agents: self.agents,
            virtual_clock: self.clock.is_virtual(),
            without_alerts: self.without_alerts,
        };
        let json = serde_json::to_vec_pretty(&saved).map_err(CliError::new)?;
        run_report::write_files(&self.dir, &[("plan.json", &json)])
            .map_err(|e| CliError::new(format_args!("writing the campaign's plan: {e}")))?;
        Ok(())
    }

    /// Every run, seed by seed so that an early stop leaves whole seeds.
    pub fn jobs(&self) -> Vec<Job> {
        let mut jobs = Vec::new();
        for repeat in 0..self.repeats {
            for &seed in &self.seeds {
                for variant in &self.variants {
                    jobs.push(Job {
                        variant: variant.clone(),
                        seed,
                        repeat,
                    });
                }
            }
        }
        jobs
    }

    /// One run's wall time: the load and its drain on the campaign's clock
    /// (`ClockKind::wall_estimate`), plus the process's start and report
    /// (a virtual run has no Prometheus and no system to start: a full
    /// retry-storm variant takes 0.3 s in all in release, 1.7 s in debug).
    pub fn per_run(&self) -> Duration {
        let modeled = self.exp.duration + crate::load::drain_time(Duration::from_secs(1), 4);
        let start = match self.clock {
            crate::base::clock::ClockKind::Real => Duration::from_secs(6),
            crate::base::clock::ClockKind::Virtual => Duration::from_millis(500),
        };
        self.clock.wall_estimate(modeled) + start
    }

    /// The modeled time of every run: its load and its clients' drain.
    fn modeled(&self) -> Duration {
        self.jobs()
            .iter()
            .filter_map(|j| self.exp.variants.iter().find(|v| v.name == j.variant))
            .map(|v| {
                let (timeout, attempts) = v.client.slowest();
                self.exp.duration + crate::load::drain_time(timeout, attempts)
            })
            .sum()
    }

    pub fn estimate(&self) -> Duration {
        let runs = self.jobs().len() as u32;
        self.per_run() * runs.div_ceil(self.parallel.max(1) as u32)
    }

    pub fn describe(&self) -> String {
        format!(
            "campaign of {}{}{}: {} variant(s) ({}) x {} seed(s) x {} repeat(s) = {} runs of {} each, {} at once: estimated {}\n  into {}",
            self.exp.name,
            if self.exp.quick { " (quick form)" } else { "" },
            self.agents.map_or(String::new(), |n| format!(" with {n} load agents a run")),
            self.variants.len(),
            self.variants.join(", "),
            self.seeds.len(),
            self.repeats,
            self.jobs().len(),
            words(self.per_run()),
            self.parallel,
            words(self.estimate()),
            self.dir.display()
        )
    }

    /// The campaign judged from what the runs left.
    pub fn summary(&self, done: Outcome, wall: Duration, interrupted: bool) -> CampaignSummary {
        let plan = CampaignPlan {
            experiment: self.exp.name.clone(),
            quick: self.exp.quick,
            seeds: self.seeds.clone(),
            repeats: self.repeats,
            variants: self.variants.clone(),
            parallel_start: self.parallel,
            parallel_end: done.parallel_end,
            estimate_s: self.estimate().as_secs_f64(),
            wall_s: wall.as_secs_f64(),
            interrupted,
            commit: self.commit.clone(),
            clock: self.clock.recorded(),
            modeled_s: self.modeled().as_secs_f64(),
        };
        let runs: Vec<CampaignRun> = done.runs;
        CampaignSummary::build(plan, &self.exp.campaign, runs)
    }
}

fn read_saved(dir: &Path) -> Result<Saved, CliError> {
    let path = dir.join("plan.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CliError::new(format_args!("--resume {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::new(format_args!("--resume {}: {e}", path.display())))
}

fn chosen_variants(exp: &Experiment, wanted: &[String]) -> Result<Vec<String>, CliError> {
    let names: Vec<String> = exp.variants.iter().map(|v| v.name.clone()).collect();
    if let Some(bad) = wanted.iter().find(|w| !names.contains(w)) {
        return Err(CliError::new(format_args!(
            "--variant {bad}: no such variant; variants are {names:?}"
        )));
    }
    Ok(if wanted.is_empty() {
        names
    } else {
        names.into_iter().filter(|n| wanted.contains(n)).collect()
    })
}

/// Real time: three runs per core, at most 8: a run mostly waits on
/// modeled time (a full retry-storm variant used about 5 % of this 2-core
/// machine in a debug build), and the campaign lowers this when a run's load
/// was late. Virtual time: one per core, since a virtual run only computes
/// (100 seeds of retry-storm: 50.4 s at 2 at once, 53.5 s at 6, 2 cores,
/// BENCHMARKS.md).
fn default_parallel(clock: crate::base::clock::ClockKind) -> usize {
    let cores = crate::base::cpu::cores();
    match clock {
        crate::base::clock::ClockKind::Real => (cores * 3).clamp(1, 8),
        crate::base::clock::ClockKind::Virtual => cores,
    }
}
