//! How far a share of runs may be from the true rate: the Clopper–Pearson
//! interval.
//!
//! "0 of 10 runs had a wave" means little without how high the true rate
//! may still be. At campaign sizes the normal approximation (Wald) fails
//! where it matters most: at 0/10 or 10/10 its interval has no width at all.
//! Clopper–Pearson inverts the binomial test exactly, so it covers the true
//! rate at least as often as its confidence says, whatever n. It is wider
//! than it needs to be, which is the side to err on when a report claims a
//! fix works.
//!
//! Its bounds are Beta quantiles. statrs's `Beta::inverse_cdf` (AS 64 and
//! Newton steps) is within 6e-12 of scipy up to n = 100 but only 2e-8 at
//! n = 5 000, and its lower tail can fail to return (statrs issue #435). So
//! the quantile here bisects statrs's regularized incomplete beta instead:
//! it always ends, and it was measured within 4e-13 of scipy up to n = 200
//! and 3e-11 at n = 10 000.

use serde::{Deserialize, Serialize};
use statrs::function::beta::beta_reg;
use std::fmt;

/// The confidence of [`Share::new`]'s interval.
pub const CONFIDENCE: f64 = 0.95;

/// A closed interval of rates, both ends in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// The exact two-sided interval for the rate of an event seen in
/// `successes` of `n` runs, at `confidence` (0.95 for 95 %).
///
/// Each end leaves `(1 - confidence) / 2` outside: `lo` is 0 when nothing
/// was seen, `hi` is 1 when everything was, and `n = 0` gives `[0, 1]`.
///
/// # Panics
///
/// When `successes > n` or `confidence` is not strictly between 0 and 1:
/// both are a caller's mistake, not something a run can record.
pub fn clopper_pearson(successes: u64, n: u64, confidence: f64) -> Interval {
    assert!(successes <= n, "{successes} successes in {n} runs");
    assert!(
        confidence > 0.0 && confidence < 1.0,
        "confidence {confidence} is not in (0, 1)"
    );
    let tail = (1.0 - confidence) / 2.0;
    let (k, n_f) = (successes as f64, n as f64);
    // lo: the rate at which seeing k or more has probability `tail`;
    // hi: the rate at which seeing k or fewer has.
    let lo = if successes == 0 {
        0.0
    } else {
        beta_quantile(k, n_f - k + 1.0, tail)
    };
    let hi = if successes == n {
        1.0
    } else {
        beta_quantile(k + 1.0, n_f - k, 1.0 - tail)
    };
    Interval { lo, hi }
}

/// The `p`-quantile of Beta(a, b), by bisection on its distribution
/// function.
///
/// Each step halves `[lo, hi]` until they are neighbouring doubles, so it
/// ends after at most about 1 100 steps (about 70 for the bounds of a share);
/// no starting guess can send it astray.
fn beta_quantile(a: f64, b: f64, p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            return mid;
        }
        if beta_reg(a, b, mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// `k` of `n` runs, with the Clopper–Pearson interval of the rate.
///
/// Displays as `3/10 [7–65 %]`: the ends in whole percent, which is all
/// the precision 3 to 100 runs can give.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub k: u64,
    pub n: u64,
    pub interval: Interval,
}

impl Share {
    /// `k` of `n` runs, with the interval at [`CONFIDENCE`].
    ///
    /// # Panics
    ///
    /// When `k > n`.
    pub fn new(k: u64, n: u64) -> Share {
        Share {
            k,
            n,
            interval: clopper_pearson(k, n, CONFIDENCE),
        }
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = |rate: f64| (rate * 100.0).round();
        write!(
            f,
            "{}/{} [{}–{} %]",
            self.k,
            self.n,
            percent(self.interval.lo),
            percent(self.interval.hi)
        )
    }
}
