//! `harness campaign FILE --until-settled [--max-seeds N]`: a campaign that
//! stops when its claims are settled, not after a typed number of seeds.
//!
//! Seeds 1, 2, ... run in batches as wide as the parallelism (seeds per
//! batch: the runs at once over the variants still needed), and never
//! narrower than the fewest seeds that could prove every open claim (5 for
//! a share claimed at 90 % against 50 %: no 4 runs can). After each
//! batch every claim is judged again from all finished runs, in seed order
//! (`run_report::campaign::sequential`): each share of `campaign.expect`,
//! stated with its error rates, by Wald's SPRT, and each compared pair's
//! headline by the paired test. A variant whose claims are all decided is
//! not run again. The campaign ends when every claim is decided, or at
//! `--max-seeds` with "not settled", the share seen and its exact interval,
//! and a suggestion. Why batches and not run by run: a batch starts all its
//! runs at once, so a decision inside it saves no run that was not already
//! running, and a run is never stopped half-way.

use super::execute;
use super::plan::{Job, Outcome, Plan};
use crate::base::exit::CliError;
use crate::base::interrupt::StopSignal;
use crate::commands::budget::words;
use run_report::campaign::sequential::{
    fewest_seeds_to_settle, judge, undecided_variants, Outcome as ClaimOutcome, SequentialClaim,
    SequentialSummary, TimeToProof,
};
use run_report::campaign::CampaignRun;
use run_report::campaign::CampaignSummary;
use std::time::{Duration, Instant};

/// Refuses, before anything runs, a campaign with nothing to settle
/// (validation already refused any share claimed without error rates).
pub(super) fn check(plan: &Plan) -> Result<(), CliError> {
    if judge(&plan.exp.campaign, &plan.variants, &[], &plan.seeds).is_empty() {
        return Err(CliError::new(
            "--until-settled: nothing to settle: the file claims no share of runs and compares no pair of these variants",
        ));
    }
    Ok(())
}

/// With no `--parallel`, a real-time campaign runs its first batch all at
/// once, up to 8 runs a core: a batch narrower than its width costs a whole
/// extra round of modeled time (retry-storm's 15 runs: three rounds of
/// 2.5 min at the default 6), while a real-time run mostly waits on that
/// time (15 at once used 41 % of 2 cores on average, 58 % at the 90th
/// percentile of its seconds: BENCHMARKS.md). A run the machine could not
/// carry is left out and run again with one fewer at once (`execute.rs`).
/// Virtual runs only compute: their default (one per core) stays.
pub(super) fn widen_first_batch(plan: &mut Plan) {
    if plan.clock.is_virtual() {
        return;
    }
    let cores = crate::base::cpu::cores();
    plan.parallel = plan.parallel.max(first_batch_runs(plan).min(cores * 8));
}

/// The runs of the first batch: the fewest seeds that could prove every
/// claim (or the parallelism's worth, if more) of every variant.
fn first_batch_runs(plan: &Plan) -> usize {
    let claims = judge(&plan.exp.campaign, &plan.variants, &[], &plan.seeds);
    let needed = undecided_variants(&claims, &plan.variants).len();
    let fewest = fewest_seeds_to_settle(&claims);
    seeds_per_batch(plan.parallel, needed, fewest).min(plan.seeds.len()) * needed
}

/// Seeds in the next batch: as wide as the parallelism over the variants
/// still `needed`, and never narrower than the fewest seeds that could
/// prove every open claim, `fewest` (see [`summary`]).
fn seeds_per_batch(parallel: usize, needed: usize, fewest: u64) -> usize {
    let fewest = usize::try_from(fewest).unwrap_or(usize::MAX);
    (parallel / needed.max(1)).max(fewest).max(1)
}

/// The plan's line for a sequential campaign: its estimate is for every
/// seed up to `--max-seeds`; what runs first is one batch.
pub(super) fn describe(plan: &Plan) -> String {
    let runs = first_batch_runs(plan);
    let rounds = runs.div_ceil(plan.parallel.max(1)) as u32;
    format!(
        "  until settled: the first batch is {runs} runs, {} at once (about {}); the estimate above is for all {} seeds",
        plan.parallel.min(runs),
        words(plan.per_run() * rounds),
        plan.seeds.len()
    )
}

/// Runs batches until every claim is settled or the seeds run out, then
/// writes the campaign with its claims and time to proof.
pub(super) fn summary(
    plan: &mut Plan,
    stop: &StopSignal,
    started: Instant,
) -> Result<CampaignSummary, CliError> {
    let max_seeds = plan.seeds.len();
    let mut runs: Vec<CampaignRun> = Vec::new();
    let mut parallel = plan.parallel;
    let mut next = 0;
    loop {
        let claims = judge(&plan.exp.campaign, &plan.variants, &runs, &plan.seeds);
        let needed = undecided_variants(&claims, &plan.variants);
        if needed.is_empty() || stop.is_set() || next >= plan.seeds.len() {
            break;
        }
        // As wide as the parallelism, and never narrower than the fewest
        // seeds that could prove every open claim: a narrower batch could
        // not end a campaign whose claims hold, only delay the runs it
        // needs. (Refuting takes fewer; the extra runs then cost time, not
        // correctness: the tests stop at the run that crosses.)
        let per = seeds_per_batch(parallel, needed.len(), fewest_seeds_to_settle(&claims));
        let batch: Vec<u64> =
            plan.seeds[next..next.saturating_add(per).min(plan.seeds.len())].to_vec();
        next += batch.len();
        eprintln!(
            "seeds {}: {} ({} claim(s) open)",
            seed_range(&batch),
            needed.join(", "),
            claims
                .iter()
                .filter(|c| c.outcome == ClaimOutcome::NotSettled)
                .count()
        );
        let jobs = jobs(&batch, &needed);
        let out = execute::run_jobs(plan, jobs, parallel, stop);
        parallel = out.parallel_end;
        runs.extend(out.runs);
    }
    let claims = judge(&plan.exp.campaign, &plan.variants, &runs, &plan.seeds);
    let fixed_runs = fixed_size(plan);
    plan.seeds.truncate(next);
    let wall = started.elapsed();
    let time = TimeToProof {
        wall_s: wall.as_secs_f64(),
        runs_used: runs.len(),
        fixed_runs,
    };
    let record = SequentialSummary::new(claims, max_seeds, time);
    print_claims(&record, wall);
    let outcome = Outcome {
        runs,
        parallel_end: parallel,
    };
    Ok(plan
        .summary(outcome, wall, stop.is_set())
        .with_sequential(record))
}

/// Every (seed, variant) of a batch, seed by seed.
fn jobs(seeds: &[u64], variants: &[String]) -> Vec<Job> {
    seeds
        .iter()
        .flat_map(|&seed| {
            variants.iter().map(move |v| Job {
                variant: v.clone(),
                seed,
                repeat: 0,
            })
        })
        .collect()
}

/// The runs a fixed-size campaign of this file would make: its
/// `campaign.seeds` (else 1..5) for every variant.
fn fixed_size(plan: &Plan) -> usize {
    let seeds = match plan.exp.campaign.seeds.len() {
        0 => 5,
        n => n,
    };
    seeds * plan.variants.len()
}

fn seed_range(seeds: &[u64]) -> String {
    match (seeds.first(), seeds.last()) {
        (Some(a), Some(b)) if a != b => format!("{a}–{b}"),
        (Some(a), _) => a.to_string(),
        _ => String::new(),
    }
}

fn print_claims(s: &SequentialSummary, wall: Duration) {
    eprintln!();
    for c in &s.claims {
        eprintln!("  [{}] {}", c.outcome.word().to_uppercase(), c.claim);
        eprintln!("        {}", claim_detail(c));
    }
    let t = &s.time_to_proof;
    eprintln!(
        "time to proof: {}, {} runs (a fixed-size campaign: {} runs){}",
        words(wall),
        t.runs_used,
        t.fixed_runs,
        if s.settled { "" } else { ": NOT SETTLED" }
    );
    if let Some(why) = &s.suggestion {
        eprintln!("  {why}");
    }
}

fn claim_detail(c: &SequentialClaim) -> String {
    match &c.boundary {
        Some(b) => format!("{}; crossed {b}", c.message),
        None => format!(
            "{}; LLR {:.3} between B {:.3} and A {:.3}",
            c.message, c.llr, c.lower, c.upper
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        campaign: crate::cli::CampaignArgs,
    }

    /// retry-storm's plan with `extra` options, into a fresh folder.
    fn plan(name: &str, extra: &[&str]) -> Plan {
        let root = env!("CARGO_MANIFEST_DIR");
        let out = std::env::temp_dir().join(format!("seq-{name}-{}", std::process::id()));
        let file = format!("{root}/../experiments/retry-storm.yaml");
        let mut argv = vec!["campaign", &file, "--until-settled", "--out"];
        let out_s = out.to_string_lossy().to_string();
        argv.push(&out_s);
        argv.extend(extra);
        let args = Args::try_parse_from(argv).expect("arguments").campaign;
        let plan = Plan::from_args(&args).expect("plan");
        let _ = std::fs::remove_dir_all(&out);
        plan
    }

    /// With no --parallel, real time runs the first batch (5 seeds of 3
    /// variants: 5 runs prove a share of 90 % against 50 %) at once, up
    /// to 8 a core; the virtual clock keeps its default; the line printed
    /// says so.
    #[test]
    fn the_first_real_batch_runs_at_once() {
        let cores = crate::base::cpu::cores();
        let mut real = plan("real", &[]);
        let before = real.parallel;
        widen_first_batch(&mut real);
        assert_eq!(real.parallel, before.max(15.min(cores * 8)));
        assert!(describe(&real).contains("the first batch is 15 runs"));
        let mut virt = plan("virtual", &["--clock", "virtual"]);
        let before = virt.parallel;
        widen_first_batch(&mut virt);
        assert_eq!(virt.parallel, before);
    }

    /// A batch is as wide as the parallelism over the variants, never
    /// narrower than the fewest seeds that could prove; a claim that no
    /// number of seeds could prove does not overflow.
    #[test]
    fn batches_are_never_narrower_than_a_proof() {
        assert_eq!(seeds_per_batch(6, 3, 5), 5);
        assert_eq!(seeds_per_batch(15, 1, 5), 15);
        assert_eq!(seeds_per_batch(2, 0, 0), 2);
        assert_eq!(seeds_per_batch(1, 3, u64::MAX), usize::MAX);
    }
}
