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
        let fewest = usize::try_from(fewest_seeds_to_settle(&claims)).unwrap_or(usize::MAX);
        let per = (parallel / needed.len()).max(fewest).max(1);
        let batch: Vec<u64> = plan.seeds[next..(next + per).min(plan.seeds.len())].to_vec();
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
