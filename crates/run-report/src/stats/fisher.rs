//! Whether two shares of runs differ: Fisher's exact test on a 2x2 table.
//!
//! "0/10 runs with a wave against 10/10" is a 2x2 table (variant by
//! outcome). At 3 to 100 runs a chi-squared test is unreliable: its
//! approximation wants every expected count at 5 or more, and the tables a
//! campaign cares about have zeros in them. Fisher's test takes the margins
//! as given and sums the exact (hypergeometric) probabilities of the tables
//! that could have been seen with them, so it is right at any size.
//!
//! Two-sided, as scipy and R define it: the p-value sums every table no
//! more probable than the observed one (up to [`RELATIVE_TOLERANCE`]).
//! Probabilities come from log factorials (statrs's `ln_factorial`, within
//! 2e-16), so no factorial overflows and a table of a few thousand runs is
//! as stable as one of ten.

use statrs::function::factorial::ln_factorial;

/// How much more probable than the observed table another may be and still
/// count as "no more probable": a relative 1e-7, as R's `fisher.test`.
///
/// Tables with mathematically equal probabilities (the mirror image when
/// the margins are symmetric) must both count. Log factorials of a few
/// thousand carry rounding of about 1e-12 relative, so the 1e-14 of scipy
/// 1.17 (whose probabilities come from Boost's hypergeometric, not from
/// logarithms) could split such a tie here; 1e-7 cannot. Nor does it join
/// tables that differ, so the two definitions agree: among tables of up to
/// 200 runs with the same margins, two unequal probabilities are never
/// closer than a relative 1.05e-6 (checked exhaustively, in integers).
const RELATIVE_TOLERANCE: f64 = 1e-7;

/// The two-sided p-value of Fisher's exact test for `table`, rows
/// `[[a, b], [c, d]]` (e.g. one row per variant: runs with a wave, runs
/// without).
///
/// A table with an empty row or column has only one arrangement, so its
/// p-value is 1 (as scipy's).
pub fn fisher_exact(table: [[u64; 2]; 2]) -> f64 {
    let [[a, b], [c, d]] = table;
    let (row1, row2, col1) = (a + b, c + d, a + c);
    let ln_p = |x: u64| ln_table_probability(row1, row2, col1, x);
    let limit = ln_p(a) + RELATIVE_TOLERANCE.ln_1p();

    // x is the top-left cell; the margins fix the other three.
    let lowest = col1.saturating_sub(row2);
    let highest = row1.min(col1);
    let mut p = 0.0;
    let mut left_out = false;
    for x in lowest..=highest {
        let ln = ln_p(x);
        if ln <= limit {
            p += ln.exp();
        } else {
            left_out = true;
        }
    }
    // With every table counted the sum is 1 up to rounding; say so exactly.
    if left_out {
        p.min(1.0)
    } else {
        1.0
    }
}

/// ln of the hypergeometric probability of the table with margins `row1`,
/// `row2`, `col1` and `x` in its top-left cell:
/// C(row1, x) C(row2, col1 - x) / C(row1 + row2, col1).
fn ln_table_probability(row1: u64, row2: u64, col1: u64, x: u64) -> f64 {
    ln_choose(row1, x) + ln_choose(row2, col1 - x) - ln_choose(row1 + row2, col1)
}

/// ln C(n, k), for k <= n.
fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}
