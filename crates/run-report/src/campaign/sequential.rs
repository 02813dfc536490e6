//! A sequential campaign's claims: each share of runs claimed with error
//! rates, and each compared pair's headline, decided by a sequential test
//! as the runs come in, so the campaign stops when every claim is settled.
//!
//! **A share claim** `"runs with verdict metastable": ">= 90% (alpha 0.05,
//! beta 0.1)"` is Wald's SPRT ([`Sprt`]) on the runs where the condition
//! held, H1 p >= p1 = 90 % (the claim) against H0 p <= p0 = p1 - delta.
//! Between p0 and p1 lies the indifference region: a true share there may be
//! decided either way. `delta` defaults to [`DEFAULT_DELTA`]; a wider one
//! settles in fewer runs and claims less. An upper bound (`<= 10%`) is the
//! same test on the runs where the condition did *not* hold (>= 90 %).
//! Accepting H1 proves the claim (wrongly at most about alpha of the time
//! when the true share is p0 or less); accepting H0 refutes it (wrongly
//! about beta of the time when it is p1 or more). A claim of every run
//! (100 %, or 0 % as an upper bound) is refused: no finite campaign proves
//! it, and with p1 = 1 a single failing run decides.
//!
//! **The headline** of a compared pair (before-fix against after-fix) is
//! Wald's paired test ([`PairedSprt`]), one pair per seed, on how bad each
//! run went, in order: a run that did not come back is worse than one that
//! came back after a wave, which is worse than one without a wave
//! ([`badness`]). retry-storm's fix removes the waves; queue-overflow's
//! after-fix still has waves but comes back: both rank the fix's run
//! better. A seed whose two runs rank alike carries no information (a tie,
//! as in the sign test); of the others, H1 says the candidate's run is the
//! better one with odds of at least [`HEADLINE_ODDS`], H0 that it is not
//! more often better than worse (what a fix that changes nothing gives:
//! the two runs of a seed are then exchangeable). One test at
//! [`HEADLINE_ALPHA`]: a headline proven when the fix changes nothing at
//! most about alpha of the time, refuted at most about [`HEADLINE_BETA`]
//! when the fix is that much better. One ordered outcome rather than one
//! test per event: two tests would each need alpha/2 (Bonferroni), and the
//! proof 7 discordant seeds instead of 5.
//!
//! Runs are fed in seed order (the order the campaign planned), the first
//! counted run of each (seed, repeat); a test stops at the run whose ratio
//! crosses a boundary, and later runs do not move it.

use super::aggregate::value_of;
use super::model::{CampaignRun, CampaignSpec, ClaimRates, JudgedRun, OverRuns};
use super::CampaignSummary;
use crate::analysis::expect::compare;
use crate::analysis::verdict::BAD_CLASSES;
use crate::format::num;
use crate::metrics::Metric;
use crate::model::CompareOp;
use crate::stats::{Decision, Pair, PairedSprt, Share, Sprt, SprtError};
use serde::Serialize;

/// The indifference region's width when a claim does not state `delta`.
pub const DEFAULT_DELTA: f64 = 0.2;
/// The odds ratio of a wave (baseline's against candidate's) the headline's
/// test is to detect: 9, i.e. nine of ten discordant seeds favour the fix.
pub const HEADLINE_ODDS: f64 = 9.0;
pub const HEADLINE_ALPHA: f64 = 0.05;
pub const HEADLINE_BETA: f64 = 0.1;

/// A share claim that cannot be decided by a sequential test.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClaimError {
    #[error("{shown} of runs can only be refuted by a finite campaign; claim a share short of it, e.g. `{example} (alpha 0.05, beta 0.1)`")]
    EveryRun {
        shown: &'static str,
        example: &'static str,
    },
    #[error("a claim with error rates is a bound: write `>= N%` or `<= N%`")]
    NotABound,
    #[error("delta {delta} leaves no share below the stated {stated} % (p0 = {p0}); state a smaller delta")]
    NoRoom { delta: f64, stated: f64, p0: f64 },
    #[error(transparent)]
    Test(#[from] SprtError),
}

/// The SPRT's hypotheses for a share claim: p0 and p1 on the runs where
/// the condition held, or (`upper`) where it did not.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hypotheses {
    pub p0: f64,
    pub p1: f64,
    /// The claim is an upper bound: successes are the runs without the
    /// condition.
    pub upper: bool,
}

/// The hypotheses of `op value` claimed at `rates` (its test checked).
pub fn hypotheses(op: CompareOp, value: f64, rates: &ClaimRates) -> Result<Hypotheses, ClaimError> {
    let (p1, upper) = match op {
        CompareOp::Ge | CompareOp::Gt => (value, false),
        CompareOp::Le | CompareOp::Lt => (1.0 - value, true),
        // `100%` and `0%` claim every run, or none.
        CompareOp::Eq if value >= 1.0 => (1.0, false),
        CompareOp::Eq if value <= 0.0 => (1.0, true),
        _ => return Err(ClaimError::NotABound),
    };
    if p1 >= 1.0 {
        return Err(if upper {
            ClaimError::EveryRun {
                shown: "0 %",
                example: "<= 10%",
            }
        } else {
            ClaimError::EveryRun {
                shown: "100 %",
                example: ">= 90%",
            }
        });
    }
    let p0 = p1 - rates.delta;
    if p0 <= 0.0 {
        let stated = value * 100.0;
        return Err(ClaimError::NoRoom {
            delta: rates.delta,
            stated,
            p0,
        });
    }
    Sprt::new(p0, p1, rates.alpha, rates.beta)?;
    Ok(Hypotheses { p0, p1, upper })
}

/// How a claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Holds,
    Refuted,
    NotSettled,
}

impl Outcome {
    fn of(d: Decision) -> Outcome {
        match d {
            Decision::AcceptH1 => Outcome::Holds,
            Decision::AcceptH0 => Outcome::Refuted,
            Decision::Continue => Outcome::NotSettled,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Refuted => "refuted",
            Outcome::NotSettled => "not settled",
        }
    }
}

/// One claim under a sequential test.
#[derive(Debug, Clone, Serialize)]
pub struct SequentialClaim {
    /// As the page names it: `before-fix: runs with verdict metastable: >=
    /// 90% (alpha 0.05, beta 0.1)`.
    pub claim: String,
    /// Its variant, or the compared pair (baseline, candidate).
    pub variants: Vec<String>,
    pub h0: String,
    pub h1: String,
    pub alpha: f64,
    pub beta: f64,
    pub decision: Decision,
    pub outcome: Outcome,
    /// Runs the test used (two per seed for a headline).
    pub runs: u64,
    pub llr: f64,
    /// Wald's boundaries: A (accept H1) and B (accept H0).
    pub upper: f64,
    pub lower: f64,
    /// The boundary crossed, e.g. `A = 2.890 (LLR 3.012 at run 12)`.
    pub boundary: Option<String>,
    /// The share seen: runs where the claim's condition held, or for a
    /// headline, discordant seeds favouring the candidate.
    pub observed: Share,
    pub message: String,
    /// The fewest further runs of each of its variants (seeds, for a
    /// headline) that could prove it: a sequential campaign's next batch is
    /// at least this wide when the claim is open. Only how many runs are
    /// made depends on it, never a decision: the runs are fed in seed
    /// order and the test stops at the run that crosses a boundary.
    pub fewest_more: u64,
}

/// Whether the claim's condition held in a run (None: not a share).
fn holds(statistic: &OverRuns, j: &JudgedRun) -> Option<bool> {
    match statistic {
        OverRuns::VerdictShare { classes } => Some(classes.contains(&j.verdict)),
        OverRuns::ConditionShare { metric, op, value } => {
            Some(value_of(j, metric).is_some_and(|x| compare(*op, x, *value)))
        }
        _ => None,
    }
}

/// The counted runs of `variant`, one per (seed, repeat), in `seeds`'
/// order.
fn in_order<'a>(
    runs: &'a [CampaignRun],
    variant: &str,
    seeds: &[u64],
) -> Vec<(u64, u32, &'a JudgedRun)> {
    let mut out: Vec<(u64, u32, &JudgedRun)> = Vec::new();
    for r in runs.iter().filter(|r| r.variant == variant) {
        if let Some(j) = r.counted() {
            if !out.iter().any(|(s, k, _)| (*s, *k) == (r.seed, r.repeat)) {
                out.push((r.seed, r.repeat, j));
            }
        }
    }
    let rank = |s: u64| seeds.iter().position(|x| *x == s).unwrap_or(usize::MAX);
    out.sort_by_key(|(s, k, _)| (*k, rank(*s)));
    out
}

fn boundary_text(test: &Sprt, at_run: u64) -> Option<String> {
    let (a, b) = test.boundaries();
    match test.decision() {
        Decision::AcceptH1 => Some(format!(
            "A = {} (LLR {} at run {at_run})",
            num(a),
            num(test.llr)
        )),
        Decision::AcceptH0 => Some(format!(
            "B = {} (LLR {} at run {at_run})",
            num(b),
            num(test.llr)
        )),
        Decision::Continue => None,
    }
}

/// The sequential test of one share claim over the runs so far.
pub(crate) fn share_claim(
    spec: &super::CampaignExpectation,
    runs: &[CampaignRun],
    seeds: &[u64],
) -> Option<SequentialClaim> {
    let rates = spec.rates.as_ref()?;
    let h = hypotheses(spec.op, spec.value, rates).ok()?;
    let mut test = Sprt::new(h.p0, h.p1, rates.alpha, rates.beta).ok()?;
    let (mut held, mut n) = (0, 0);
    for (_, _, j) in in_order(runs, &spec.variant, seeds) {
        if test.decision() != Decision::Continue {
            break;
        }
        let x = holds(&spec.statistic, j)?;
        test.observe(x != h.upper);
        held += u64::from(x);
        n += 1;
    }
    let observed = Share::new(held, n);
    let pct = |p: f64| format!("{} %", num(p * 100.0));
    let (h0, h1) = if h.upper {
        (
            format!("share > {}", pct(1.0 - h.p0)),
            format!("share <= {}", pct(1.0 - h.p1)),
        )
    } else {
        (
            format!("share <= {}", pct(h.p0)),
            format!("share >= {}", pct(h.p1)),
        )
    };
    Some(finish(
        format!("{}: {}", spec.variant, spec.source),
        vec![spec.variant.clone()],
        (h0, h1),
        &test,
        n,
        observed,
        "runs where it held",
    ))
}

fn finish(
    claim: String,
    variants: Vec<String>,
    (h0, h1): (String, String),
    test: &Sprt,
    runs: u64,
    observed: Share,
    counted_as: &str,
) -> SequentialClaim {
    let (upper, lower) = test.boundaries();
    let outcome = Outcome::of(test.decision());
    let message = match outcome {
        Outcome::NotSettled => {
            format!("not settled after {runs} runs: {counted_as} {observed} (exact 95 % interval)")
        }
        o => format!("{} after {runs} runs ({counted_as} {observed})", o.word()),
    };
    SequentialClaim {
        claim,
        variants,
        h0,
        h1,
        alpha: test.alpha,
        beta: test.beta,
        decision: test.decision(),
        outcome,
        runs,
        llr: test.llr,
        upper,
        lower,
        boundary: boundary_text(test, runs),
        observed,
        message,
        fewest_more: test.fewest_to_prove(),
    }
}

/// How bad a run went, in order: 2 did not come back (a bad verdict), 1
/// came back after a wave, 0 neither.
pub fn badness(j: &JudgedRun) -> u8 {
    if BAD_CLASSES.contains(&j.verdict.as_str()) {
        2
    } else if j.metrics.get(Metric::Waves).unwrap_or(0.0) >= 1.0 {
        1
    } else {
        0
    }
}

/// The headline's paired test on [`badness`], at [`HEADLINE_ALPHA`].
#[derive(Debug, Clone)]
pub struct HeadlineTest {
    pub test: PairedSprt,
}

impl Default for HeadlineTest {
    fn default() -> Self {
        let test = PairedSprt::new(HEADLINE_ODDS, HEADLINE_ALPHA, HEADLINE_BETA)
            .expect("the headline's constants are a valid test");
        HeadlineTest { test }
    }
}

impl HeadlineTest {
    /// One seed's pair: how bad the baseline's run and the candidate's
    /// went (ignored once decided). A tie is a concordant pair.
    pub fn observe(&mut self, baseline: u8, candidate: u8) -> Decision {
        self.test.observe(Pair {
            baseline: baseline > candidate,
            candidate: candidate > baseline,
        })
    }

    pub fn decision(&self) -> Decision {
        self.test.decision()
    }

    /// Pairs fed before the decision.
    pub fn pairs(&self) -> u64 {
        self.test.pairs
    }
}

/// The seeds' pairs of (baseline, candidate) runs, in seed order: one per
/// (seed, repeat) where both variants have a counted run.
fn pairs<'a>(
    baseline: &str,
    candidate: &str,
    runs: &'a [CampaignRun],
    seeds: &[u64],
) -> Vec<(&'a JudgedRun, &'a JudgedRun)> {
    let cand = in_order(runs, candidate, seeds);
    in_order(runs, baseline, seeds)
        .into_iter()
        .filter_map(|(seed, repeat, b)| {
            let (_, _, c) = cand.iter().find(|(s, k, _)| (*s, *k) == (seed, repeat))?;
            Some((b, *c))
        })
        .collect()
}

/// The headline's paired test of (baseline, candidate) over the runs so
/// far: whether the candidate's runs go better ([`badness`]) than the
/// baseline's of the same seed. It stops being fed at its decision.
fn headline(
    baseline: &str,
    candidate: &str,
    runs: &[CampaignRun],
    seeds: &[u64],
) -> SequentialClaim {
    let mut head = HeadlineTest::default();
    let mut ties = 0u64;
    for (b, c) in pairs(baseline, candidate, runs, seeds) {
        if head.decision() != Decision::Continue {
            break;
        }
        ties += u64::from(badness(b) == badness(c));
        head.observe(badness(b), badness(c));
    }
    let (favour, against) = head.test.discordant();
    let mut claim = finish(
        format!("{candidate} against {baseline}: its runs go better (fewer waves, more come back)"),
        vec![baseline.to_string(), candidate.to_string()],
        (
            "the candidate's run of a seed is not more often the better one".to_string(),
            format!(
                "it is the better one with odds of {} or more",
                num(HEADLINE_ODDS)
            ),
        ),
        &head.test.test,
        head.pairs() * 2,
        Share::new(favour, favour + against),
        "discordant seeds favouring the candidate",
    );
    claim.message = format!(
        "{}; {favour} seeds went better in the candidate, {against} in the baseline, {ties} alike",
        claim.message
    );
    claim
}

/// Every claim of `spec` a sequential campaign decides, over `runs`:
/// the share claims with error rates of `variants`, then the headlines.
pub fn judge(
    spec: &CampaignSpec,
    variants: &[String],
    runs: &[CampaignRun],
    seeds: &[u64],
) -> Vec<SequentialClaim> {
    let claims = spec
        .expectations
        .iter()
        .filter(|e| variants.contains(&e.variant))
        .filter_map(|e| share_claim(e, runs, seeds));
    let heads = spec
        .compare
        .iter()
        .filter(|(b, c)| variants.contains(b) && variants.contains(c))
        .map(|(b, c)| headline(b, c, runs, seeds));
    claims.chain(heads).collect()
}

/// The variants some undecided claim still needs runs of, in `variants`'
/// order.
pub fn undecided_variants(claims: &[SequentialClaim], variants: &[String]) -> Vec<String> {
    variants
        .iter()
        .filter(|v| {
            claims
                .iter()
                .any(|c| c.outcome == Outcome::NotSettled && c.variants.contains(v))
        })
        .cloned()
        .collect()
}

/// The fewest seeds that could prove every open claim: the widest of
/// their [`SequentialClaim::fewest_more`] (0 when all are settled).
pub fn fewest_seeds_to_settle(claims: &[SequentialClaim]) -> u64 {
    claims
        .iter()
        .filter(|c| c.outcome == Outcome::NotSettled)
        .map(|c| c.fewest_more)
        .max()
        .unwrap_or(0)
}

/// How long the proof took, against a campaign of a fixed size.
#[derive(Debug, Clone, Serialize)]
pub struct TimeToProof {
    pub wall_s: f64,
    /// Runs made (counted or not).
    pub runs_used: usize,
    /// Runs a fixed-size campaign of the file's seeds (else 1..5) would
    /// have made.
    pub fixed_runs: usize,
}

/// A sequential campaign's record: its claims and how long they took.
#[derive(Debug, Clone, Serialize)]
pub struct SequentialSummary {
    pub claims: Vec<SequentialClaim>,
    /// Every claim decided (held or refuted).
    pub settled: bool,
    pub max_seeds: usize,
    pub time_to_proof: TimeToProof,
    /// What to do when not settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

impl SequentialSummary {
    pub fn new(claims: Vec<SequentialClaim>, max_seeds: usize, time_to_proof: TimeToProof) -> Self {
        let settled = claims.iter().all(|c| c.outcome != Outcome::NotSettled);
        let suggestion = (!settled).then(|| {
            format!(
                "run more seeds (--max-seeds {}), or claim less: a wider delta or a lower proportion settles in fewer runs",
                max_seeds * 2
            )
        });
        SequentialSummary {
            claims,
            settled,
            max_seeds,
            time_to_proof,
            suggestion,
        }
    }
}

impl CampaignSummary {
    /// Attaches a sequential campaign's record: each share claim with error
    /// rates passes when its test proved it (not when its share happened to
    /// reach the number), and the campaign passes only when every claim
    /// holds.
    pub fn with_sequential(mut self, s: SequentialSummary) -> Self {
        for e in self.expectations.iter_mut() {
            let name = format!("{}: {}", e.spec.variant, e.spec.source);
            if let Some(c) = s.claims.iter().find(|c| c.claim == name) {
                e.passed = c.outcome == Outcome::Holds;
                e.message = c.message.clone();
            }
        }
        self.all_passed = self.all_passed
            && s.claims.iter().all(|c| c.outcome == Outcome::Holds)
            && self.expectations.iter().all(|e| e.passed);
        self.sequential = Some(s);
        self
    }
}

#[cfg(test)]
#[path = "sequential_tests.rs"]
mod tests;
