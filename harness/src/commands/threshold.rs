//! `harness threshold`: the critical trigger, found automatically.
//!
//! The studies of metastable failures found their thresholds by hand (the
//! OSDI'22 artifact: CPU cut by 80 % for 10 s tips, 78 % or 9 s recovers).
//! This bisects one trigger value — a magnitude or a duration, any dotted
//! path of the YAML tree as in `sweep` — for the smallest value that tips a
//! variant into a metastable failure. Each probe runs the experiment at one
//! value with N seeds and is called by majority of all its seeds (see
//! `run_report::threshold::Probe`). The search probes the top of the range
//! first: a variant that comes back there has no tipping point in it (what a
//! fix should show); then the bottom; then bisects until the bracket is at
//! most `--resolution` of the range. Every probe is validated before
//! anything runs, the estimate is stated first, and plans over `--budget`
//! are refused.

use crate::base::exit::{CliError, Finished};
use crate::base::interrupt::StopSignal;
use crate::base::run_id::RunFolder;
use crate::cli::ThresholdArgs;
use crate::commands::axis::{parse_span, AxisError, Scale};
use crate::commands::budget::words;
use crate::experiment::tree::{parse_sets, set_path, to_yaml, with_sets, Source, TreeError};
use crate::experiment::{self, Experiment, ExperimentError};
use crate::run::{self, RunOptions};
use run_report::threshold::{
    Outcome, Probe, ProbeCall, ProbeRun, ThresholdReport, VariantThreshold,
};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A validated search.
pub struct Search {
    pub name: String,
    pub file: String,
    tree: Value,
    sets: Vec<(String, Value)>,
    pub paths: Vec<String>,
    /// The ends in numeric order (`low < high`).
    pub low: f64,
    pub high: f64,
    /// The trigger grows as the value falls (`--trigger PATH=HI..LO`): the
    /// severe end is `low`.
    pub descending: bool,
    pub scale: Scale,
    pub resolution: f64,
    pub quick: bool,
    pub seeds: Vec<u64>,
    pub variants: Vec<String>,
    /// Of one variant run (duration + drain + start-up), the longest of the probes.
    pub per_run: Duration,
    /// The probes' clock (the virtual one leaves `alerts:` out).
    pub clock: crate::base::clock::ClockKind,
}

/// Why a threshold search could not be planned (its arguments, the file, a
/// probe's experiment that does not validate) or a probe's run failed.
#[derive(Debug, thiserror::Error)]
pub enum ThresholdError {
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    Axis(#[from] AxisError),
    #[error("--trigger: {0}")]
    Trigger(AxisError),
    #[error("{0}: the search runs the quick form, which uses `quick.timeline`; use quick.timeline.… (or --full)")]
    QuickForm(String),
    #[error("--without-alerts is for --clock virtual only")]
    WithoutAlerts,
    /// The file refused on the virtual clock, or a probe that does not validate.
    #[error("{0}")]
    Invalid(#[from] ExperimentError),
    #[error("no variant named {variant:?} in {name}")]
    NoVariant { variant: String, name: String },
    #[error("--trigger {0:?}: the two ends must differ (LO..HI, or HI..LO for a trigger that grows as its value falls)")]
    SameEnds(String),
    #[error("--resolution {0}: must be between 0 and 1 (a share of the range)")]
    Resolution(f64),
    #[error("--runs-per-probe {0}: between 1 and 25")]
    RunsPerProbe(u32),
    #[error(transparent)]
    Run(#[from] Box<crate::run::RunError>),
}

impl From<crate::run::RunError> for ThresholdError {
    fn from(e: crate::run::RunError) -> ThresholdError {
        ThresholdError::Run(Box::new(e))
    }
}

impl Search {
    /// The experiment with the trigger at `value` and the probe's seed.
    pub fn experiment(&self, value: f64, seed: u64) -> Result<Experiment, ThresholdError> {
        let mut t = with_sets(&self.tree, &self.sets)?;
        for p in &self.paths {
            set_path(&mut t, p, self.scale.json(value))?;
        }
        let label = format!(
            "{} (threshold probe {}={})",
            self.file,
            self.paths[0],
            self.scale.text(value)
        );
        let mut e = experiment::parse(&to_yaml(&t)?, &label, self.quick)?;
        e.seed = seed;
        // The virtual clock leaves `alerts:` out, asked or not.
        if self.clock.is_virtual() {
            e.leave_out_alerts(crate::base::clock::WITHOUT_ALERTS);
        }
        Ok(e)
    }

    /// (mild end, severe end): the search probes the severe end first.
    pub fn ends(&self) -> (f64, f64) {
        if self.descending {
            (self.high, self.low)
        } else {
            (self.low, self.high)
        }
    }

    /// The most probes one variant can need: both ends, then halving the range
    /// down to the resolution (or to neighbouring whole numbers).
    pub fn max_probes(&self) -> u32 {
        let span = (self.high - self.low).abs();
        let steps = if self.scale.integer {
            span.max(1.0).log2().ceil()
        } else {
            (1.0 / self.resolution).log2().ceil()
        };
        2 + steps.max(0.0) as u32
    }

    /// The estimate stated before anything runs: every variant at its most probes.
    pub fn estimate(&self) -> Duration {
        let all =
            self.per_run * self.max_probes() * self.seeds.len() as u32 * self.variants.len() as u32;
        self.clock.wall_estimate(all)
    }
}

/// Parses and validates the search: the file, the span, and the experiment
/// at both ends and the middle (nothing runs before all of them passed).
pub fn plan(a: &ThresholdArgs) -> Result<Search, ThresholdError> {
    let quick = !a.full;
    let src = Source::read(&a.experiment, quick)?;
    let (paths, span) = crate::commands::axis::split_paths(
        &a.trigger,
        "PATH=LO..HI, e.g. quick.timeline.0.duration=0.5s..8s",
    )?;
    let (first, second, scale) = parse_span(span).map_err(ThresholdError::Trigger)?;
    check_search(a, first, second)?;
    let descending = first > second;
    let (low, high) = (first.min(second), first.max(second));
    if quick && src.tree.pointer("/quick/timeline").is_some() {
        if let Some(p) = paths.iter().find(|p| p.starts_with("timeline.")) {
            return Err(ThresholdError::QuickForm(p.clone()));
        }
    }
    let variants = src.variants(a.variant.as_deref());
    if a.without_alerts && !a.clock.is_virtual() {
        return Err(ThresholdError::WithoutAlerts);
    }
    if a.clock.is_virtual() {
        experiment::check_virtual_clock(&src.base.source, &src.file)?;
        if src.base.alerts.is_some() {
            eprintln!("WARNING: {}", crate::base::clock::WITHOUT_ALERTS);
        }
    }
    let Source { file, base, tree } = src;
    if variants.is_empty() {
        return Err(ThresholdError::NoVariant {
            variant: a.variant.as_deref().unwrap_or("").to_string(),
            name: base.name.clone(),
        });
    }
    let base_seed = a.plan.seed.unwrap_or(base.seed);
    let sets = parse_sets(&a.set)?;
    let mut search = Search {
        name: base.name.clone(),
        file,
        tree,
        sets,
        paths,
        low,
        high,
        descending,
        scale,
        resolution: a.resolution,
        quick,
        seeds: (0..u64::from(a.runs_per_probe))
            .map(|k| base_seed.wrapping_add(k))
            .collect(),
        variants,
        per_run: Duration::ZERO,
        clock: a.clock,
    };
    search.per_run = search.longest_run(base_seed)?;
    Ok(search)
}

/// The search's own bounds: two different ends (the second the severe
/// one), a resolution that is a share of the range, and a seed count a
/// probe can afford.
fn check_search(a: &ThresholdArgs, first: f64, second: f64) -> Result<(), ThresholdError> {
    if first == second {
        return Err(ThresholdError::SameEnds(a.trigger.clone()));
    }
    if !(a.resolution > 0.0 && a.resolution < 1.0) {
        return Err(ThresholdError::Resolution(a.resolution));
    }
    if a.runs_per_probe == 0 || a.runs_per_probe > 25 {
        return Err(ThresholdError::RunsPerProbe(a.runs_per_probe));
    }
    Ok(())
}

impl Search {
    /// One variant run at its longest (duration, drain, start-up) over the
    /// experiment at both ends and the middle of the range, each validated.
    fn longest_run(&self, seed: u64) -> Result<Duration, ThresholdError> {
        let mut longest = Duration::ZERO;
        for v in [self.low, (self.low + self.high) / 2.0, self.high] {
            let e = self.experiment(self.scale.round(v), seed)?;
            let drain = e
                .variants
                .iter()
                .map(|v| {
                    let (timeout, attempts) = v.client.slowest();
                    crate::load::drain_time(timeout, attempts)
                })
                .max()
                .unwrap_or_default();
            longest = longest.max(e.duration + drain + Duration::from_secs(3));
        }
        Ok(longest)
    }
}

/// Runs one probe of one variant: every seed, each with its own report.
async fn probe(
    s: &Search,
    variant: &str,
    value: f64,
    dir: &Path,
    stop: &Arc<StopSignal>,
) -> Result<Probe, ThresholdError> {
    let text = s.scale.text(value);
    let mut runs = Vec::new();
    for &seed in &s.seeds {
        if stop.is_set() {
            break;
        }
        let e = s.experiment(value, seed)?;
        let out = dir
            .join("probes")
            .join(format!("{variant}-{text}-seed{seed}"));
        let opts = RunOptions {
            out_dir: out,
            quiet: true,
            variant: Some(variant.to_string()),
            clock: s.clock,
            ..RunOptions::default()
        };
        let o = run::run(&e, &opts, stop.clone()).await?;
        let report = o
            .report_dir
            .strip_prefix(dir)
            .unwrap_or(&o.report_dir)
            .display()
            .to_string();
        let (class, verdict) = match o.analysis.variant(variant) {
            Some(a) if !a.interrupted => (a.verdict.class().to_string(), a.verdict.explanation()),
            Some(_) => ("not run".into(), "interrupted".into()),
            None => ("not run".into(), "not run".into()),
        };
        eprintln!("  {variant} at {text}, seed {seed}: {verdict}");
        runs.push(ProbeRun {
            seed,
            class,
            verdict,
            report: Some(report),
        });
    }
    let p = Probe::new(value, text, runs);
    eprintln!(
        "{variant} at {}: {:?} ({} metastable, {} came back, of {})",
        p.text,
        p.call,
        p.metastable,
        p.came_back,
        p.runs.len()
    );
    Ok(p)
}

/// The search of one variant (module doc).
async fn search_variant(
    s: &Search,
    variant: &str,
    dir: &Path,
    stop: &Arc<StopSignal>,
) -> VariantThreshold {
    let mut probes = Vec::new();
    let outcome = match bisect(s, variant, dir, stop, &mut probes).await {
        Ok(o) => o,
        Err(e) => Outcome::Stopped {
            reason: e.to_string(),
        },
    };
    VariantThreshold {
        variant: variant.to_string(),
        probes,
        outcome,
    }
}

async fn bisect(
    s: &Search,
    variant: &str,
    dir: &Path,
    stop: &Arc<StopSignal>,
    probes: &mut Vec<Probe>,
) -> Result<Outcome, ThresholdError> {
    let call = |p: Probe, probes: &mut Vec<Probe>| {
        let c = (p.call, p.text.clone(), p.runs.len());
        probes.push(p);
        c
    };
    let interrupted = || Outcome::Stopped {
        reason: "interrupted".into(),
    };
    // `lo` is the mild end, `hi` the severe one: in value order unless the
    // trigger grows as its value falls.
    let (mild, severe) = s.ends();
    let (hi_call, hi_text, n) = call(probe(s, variant, severe, dir, stop).await?, probes);
    if n < s.seeds.len() {
        return Ok(interrupted());
    }
    match hi_call {
        ProbeCall::Holds => return Ok(Outcome::NoTippingPoint { up_to: hi_text }),
        ProbeCall::Undecided => return Ok(Outcome::Undecided { at: hi_text }),
        ProbeCall::Tips => {}
    }
    let (lo_call, lo_text, n) = call(probe(s, variant, mild, dir, stop).await?, probes);
    if n < s.seeds.len() {
        return Ok(interrupted());
    }
    match lo_call {
        ProbeCall::Tips => return Ok(Outcome::TipsAtLow { at: lo_text }),
        ProbeCall::Undecided => return Ok(Outcome::Undecided { at: lo_text }),
        ProbeCall::Holds => {}
    }
    let (mut lo, mut hi) = ((mild, lo_text), (severe, hi_text));
    let width = (s.high - s.low) * s.resolution;
    while (hi.0 - lo.0).abs() > width {
        let mid = s.scale.round((lo.0 + hi.0) / 2.0);
        if mid <= lo.0.min(hi.0) || mid >= lo.0.max(hi.0) {
            break; // neighbouring whole numbers (or microunits)
        }
        let (c, text, n) = call(probe(s, variant, mid, dir, stop).await?, probes);
        if n < s.seeds.len() {
            return Ok(interrupted());
        }
        match c {
            ProbeCall::Tips => hi = (mid, text),
            ProbeCall::Holds => lo = (mid, text),
            ProbeCall::Undecided => return Ok(Outcome::Undecided { at: text }),
        }
    }
    Ok(Outcome::Bracket {
        holds_at: lo.1,
        tips_at: hi.1,
    })
}

/// `harness threshold`: exit 0 done, 2 bad input or over budget, 130 interrupted.
pub fn cli(args: ThresholdArgs) -> Result<Finished, CliError> {
    let s = plan(&args).map_err(CliError::new)?;
    let est = s.estimate();
    eprintln!(
        "threshold of {}: {} from {} to {}{}, {} seed(s) per probe, at most {} probes per variant ({}), {} form ({} per run): estimated at most {}",
        s.name,
        s.paths.join(", "),
        s.scale.text(s.ends().0),
        s.scale.text(s.ends().1),
        if s.descending {
            " (the trigger grows as the value falls)"
        } else {
            ""
        },
        s.seeds.len(),
        s.max_probes(),
        s.variants.join(", "),
        if s.quick { "quick" } else { "full" },
        words(s.per_run),
        words(est)
    );
    crate::commands::budget::check(
        est,
        *args.plan.budget,
        args.plan.force,
        "use fewer --runs-per-probe, a coarser --resolution",
    )
    .map_err(CliError::new)?;
    let folder = RunFolder::now(&args.plan.out, &format!("{}-threshold", s.name), s.seeds[0]);
    let dir = &folder.dir;
    let (rt, stop) = crate::base::interrupt::clock_runtime(s.clock)?;
    let started = Instant::now();
    let mut variants = Vec::new();
    for v in &s.variants {
        if stop.is_set() {
            break;
        }
        variants.push(rt.block_on(search_variant(&s, v, dir, &stop)));
    }
    let report = ThresholdReport {
        experiment: s.name.clone(),
        file: s.file.clone(),
        run_id: folder.id.clone(),
        quick: s.quick,
        trigger_paths: s.paths.clone(),
        low: s.low,
        high: s.high,
        // As written: from the mild end to the severe one.
        low_text: s.scale.text(s.ends().0),
        high_text: s.scale.text(s.ends().1),
        resolution: s.resolution,
        seeds: s.seeds.clone(),
        set: args.set.clone(),
        estimated_s: est.as_secs(),
        wall_s: started.elapsed().as_secs_f64(),
        interrupted: stop.is_set(),
        variants,
    };
    for v in &report.variants {
        eprintln!("{:>12}: {}", v.variant, v.sentence());
    }
    match run_report::threshold::write_threshold(dir, &report) {
        Ok(page) => {
            folder.link_latest();
            eprintln!(
                "threshold: {} (took {})",
                page.display(),
                words(started.elapsed())
            );
        }
        Err(e) => {
            return Err(CliError::new(format_args!(
                "writing the search's files: {e}"
            )))
        }
    }
    if report.interrupted {
        return Ok(Finished::Interrupted);
    }
    Ok(Finished::Passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(trigger: &str) -> ThresholdArgs {
        ThresholdArgs {
            experiment: concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../experiments/queue-overflow.yaml"
            )
            .into(),
            trigger: trigger.into(),
            runs_per_probe: 3,
            variant: None,
            resolution: 0.1,
            set: vec![],
            full: false,
            plan: crate::cli::PlanArgs {
                budget: "30m".parse().unwrap(),
                force: false,
                out: "reports".into(),
                seed: Some(1),
            },
            clock: crate::base::clock::ClockKind::Real,
            without_alerts: false,
        }
    }

    #[test]
    fn plans_validate_every_end_and_estimate_the_worst_case() {
        let s = plan(&args("quick.timeline.0.duration=0.5s..8s")).unwrap();
        assert_eq!((s.low, s.high), (0.5, 8.0));
        assert_eq!(s.seeds, vec![1, 2, 3]);
        // Both ends, then 4 halvings to reach 10 % of the range.
        assert_eq!(s.max_probes(), 6);
        assert_eq!(s.estimate(), s.per_run * 6 * 3 * 2);
        let e = s.experiment(2.25, 7).unwrap();
        assert_eq!(e.seed, 7);
        assert_eq!(e.timeline[0].duration, Some(Duration::from_millis(2250)));
    }

    #[test]
    fn a_generic_faults_value_is_searched_from_its_mild_end_to_its_severe_one() {
        // A CPU quota grows as a trigger as its value falls: written HI..LO,
        // the search probes the low end (the deep cut) first.
        let mut a = args("quick.timeline.0.fault.cpu_limit.cpus=0.5..0.02");
        a.experiment = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../experiments/capacity-cut.yaml"
        )
        .into();
        let s = plan(&a).unwrap();
        assert!(s.descending);
        assert_eq!((s.low, s.high), (0.02, 0.5));
        assert_eq!(s.ends(), (0.5, 0.02));
        assert_eq!(s.max_probes(), 6);
        let e = s.experiment(0.125, 3).unwrap();
        match &e.timeline[0].op {
            crate::experiment::TimelineOp::Generic(
                crate::experiment::faults::GenericFault::CpuLimit { component, cpus },
            ) => assert_eq!((component.as_str(), *cpus), ("pool-z1", 0.125)),
            op => panic!("not the CPU cut: {op:?}"),
        }
        // Written LO..HI it is an ordinary (ascending) search.
        a.trigger = "quick.timeline.0.fault.cpu_limit.cpus=0.02..0.5".into();
        let s = plan(&a).unwrap();
        assert!(!s.descending);
        assert_eq!(s.ends(), (0.02, 0.5));
        // A quota the validation refuses is refused before anything runs.
        a.trigger = "quick.timeline.0.fault.cpu_limit.cpus=0.5..0".into();
        let e = plan(&a).err().map(|e| format!("{e:#}")).unwrap_or_default();
        assert!(e.contains("cpus"), "{e}");
    }

    #[test]
    fn bad_searches_are_refused_before_anything_runs() {
        for (t, why) in [
            ("quick.timeline.0.duration=2s..2s", "must differ"),
            ("quick.timeline.9.duration=1s..2s", "index 9"),
            ("timeline.0.duration=1s..2s", "quick form"),
            ("quick.timeline.0.duration=1s..2", "same unit"),
            // A slowdown longer than the quick run leaves its trigger outside it.
            ("quick.timeline.0.duration=1s..90s", "duration"),
        ] {
            let e = plan(&args(t))
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(e.contains(why), "{t}: {e}");
        }
    }
}
