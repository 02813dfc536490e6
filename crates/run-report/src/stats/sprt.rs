//! Sequential tests: a campaign that stops as soon as its claims are
//! settled, at stated error rates, instead of after a typed number of seeds.
//!
//! * [`Sprt`]: Wald's sequential probability ratio test on a proportion,
//!   H0: p <= p0 against H1: p >= p1 (p0 < p1), with error rates alpha
//!   (accepting H1 when H0 holds) and beta (accepting H0 when H1 holds).
//!   Each observation adds its log-likelihood ratio
//!   `x ln(p1/p0) + (1 - x) ln((1 - p1)/(1 - p0))`; the test accepts H1
//!   when the sum reaches `A = ln((1 - beta)/alpha)`, H0 when it falls to
//!   `B = ln(beta/(1 - alpha))`, and continues between. Wald, *Sequential
//!   Analysis* (1947), ch. 3 and 5; the same boundaries as fishtest's
//!   `stats/sprt.py` (Stockfish), which stops each engine test with them.
//!   Wald's bounds make the realised error rates at most alpha/(1 - beta)
//!   and beta/(1 - alpha), and in practice (checked by simulation in
//!   `sprt_tests.rs`) at or below alpha and beta.
//! * [`PairedSprt`]: whether a fix changes how often something happens
//!   (runs with a wave), from one run of each variant per seed. Only the
//!   discordant pairs (a wave in one run of the seed and not in the other)
//!   carry information about the difference; given that a pair is
//!   discordant, it favours the fix with probability `q = u / (1 + u)`,
//!   where `u` is the odds ratio of the two variants. The test is an SPRT on
//!   the discordant pairs of H0: u <= 1 (q <= 1/2, the fix changes nothing)
//!   against H1: u >= u1: Wald's test for comparing two proportions from
//!   paired observations (*Sequential Analysis*, ch. 6), the sequential form
//!   of McNemar's test. Its error rates are those of the SPRT on q.
//!
//! Neither test looks at the data in any other order than the one it is
//! given: the campaign feeds runs in seed order, so when a run ends does
//! not bias the decision.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a sequential test stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The log-likelihood ratio reached `A`: H1 (the claim) holds.
    AcceptH1,
    /// It fell to `B`: H0 holds (the claim is refuted).
    AcceptH0,
    /// Between the boundaries: more observations are needed.
    Continue,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Decision::AcceptH1 => "accept H1",
            Decision::AcceptH0 => "accept H0",
            Decision::Continue => "continue",
        })
    }
}

/// Parameters a sequential test cannot work with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SprtError {
    #[error("p0 {p0} and p1 {p1} must satisfy 0 < p0 < p1 <= 1")]
    Proportions { p0: f64, p1: f64 },
    #[error("alpha {alpha} and beta {beta} must each be in (0, 0.5)")]
    ErrorRates { alpha: f64, beta: f64 },
    #[error("the odds ratio u1 {0} must be above 1")]
    OddsRatio(f64),
}

/// Wald's boundaries `(A, B)` for error rates alpha and beta.
pub fn boundaries(alpha: f64, beta: f64) -> (f64, f64) {
    (((1.0 - beta) / alpha).ln(), (beta / (1.0 - alpha)).ln())
}

/// The decision for a log-likelihood ratio against `(A, B)`.
pub fn decide(llr: f64, (upper, lower): (f64, f64)) -> Decision {
    if llr >= upper {
        Decision::AcceptH1
    } else if llr <= lower {
        Decision::AcceptH0
    } else {
        Decision::Continue
    }
}

/// Wald's SPRT on a proportion: H0 p <= p0 against H1 p >= p1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sprt {
    pub p0: f64,
    pub p1: f64,
    pub alpha: f64,
    pub beta: f64,
    /// The log-likelihood ratio of what was seen.
    pub llr: f64,
    /// Observations seen, and how many were successes.
    pub n: u64,
    pub successes: u64,
}

impl Sprt {
    /// A test that has seen nothing.
    pub fn new(p0: f64, p1: f64, alpha: f64, beta: f64) -> Result<Sprt, SprtError> {
        let rate = |x: f64| x > 0.0 && x < 0.5;
        if !(p0 > 0.0 && p0 < p1 && p1 <= 1.0) {
            return Err(SprtError::Proportions { p0, p1 });
        }
        if !(rate(alpha) && rate(beta)) {
            return Err(SprtError::ErrorRates { alpha, beta });
        }
        Ok(Sprt {
            p0,
            p1,
            alpha,
            beta,
            llr: 0.0,
            n: 0,
            successes: 0,
        })
    }

    /// One observation's log-likelihood ratio (`-inf` for a failure when
    /// p1 = 1: a single failure refutes "every run").
    pub fn llr_of(&self, success: bool) -> f64 {
        if success {
            (self.p1 / self.p0).ln()
        } else {
            ((1.0 - self.p1) / (1.0 - self.p0)).ln()
        }
    }

    /// Adds one observation (ignored once decided) and says where the test
    /// stands.
    pub fn observe(&mut self, success: bool) -> Decision {
        if self.decision() == Decision::Continue {
            self.llr += self.llr_of(success);
            self.n += 1;
            self.successes += u64::from(success);
        }
        self.decision()
    }

    pub fn boundaries(&self) -> (f64, f64) {
        boundaries(self.alpha, self.beta)
    }

    pub fn decision(&self) -> Decision {
        decide(self.llr, self.boundaries())
    }

    /// The fewest further observations that could prove H1 (all of them
    /// successes); 0 once decided.
    pub fn fewest_to_prove(&self) -> u64 {
        if self.decision() != Decision::Continue {
            return 0;
        }
        let (upper, _) = self.boundaries();
        let step = self.llr_of(true);
        ((upper - self.llr) / step).ceil().max(1.0) as u64
    }

    /// The LLR after `successes` of `n` (a closed form, for references).
    pub fn llr_after(&self, successes: u64, n: u64) -> f64 {
        let s = successes as f64;
        let f = (n - successes) as f64;
        let term = |count: f64, success: bool| {
            if count == 0.0 {
                0.0
            } else {
                count * self.llr_of(success)
            }
        };
        term(s, true) + term(f, false)
    }
}

/// How one seed's pair of runs went for the compared event (e.g. a wave):
/// the baseline's run and the candidate's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub baseline: bool,
    pub candidate: bool,
}

/// Wald's paired comparison (sequential McNemar): does the candidate make
/// the event rarer than the baseline? An SPRT on the discordant pairs,
/// H0 q <= 1/2 against H1 q >= u1/(1 + u1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedSprt {
    /// The odds ratio the test is to detect (H1).
    pub u1: f64,
    /// The SPRT on the discordant pairs (success: the event in the
    /// baseline's run only).
    pub test: Sprt,
    /// Pairs seen, discordant or not.
    pub pairs: u64,
}

impl PairedSprt {
    pub fn new(u1: f64, alpha: f64, beta: f64) -> Result<PairedSprt, SprtError> {
        if !(u1 > 1.0 && u1.is_finite()) {
            return Err(SprtError::OddsRatio(u1));
        }
        Ok(PairedSprt {
            u1,
            test: Sprt::new(0.5, u1 / (1.0 + u1), alpha, beta)?,
            pairs: 0,
        })
    }

    /// Adds one seed's pair (ignored once decided).
    pub fn observe(&mut self, pair: Pair) -> Decision {
        if self.test.decision() != Decision::Continue {
            return self.test.decision();
        }
        self.pairs += 1;
        match (pair.baseline, pair.candidate) {
            (true, false) => self.test.observe(true),
            (false, true) => self.test.observe(false),
            _ => self.test.decision(),
        }
    }

    /// Discordant pairs favouring the candidate, and against it.
    pub fn discordant(&self) -> (u64, u64) {
        (self.test.successes, self.test.n - self.test.successes)
    }

    pub fn decision(&self) -> Decision {
        self.test.decision()
    }
}

#[cfg(test)]
#[path = "sprt_tests.rs"]
mod tests;
