//! Whether a figure differs between two sets of runs: the Mann–Whitney U
//! test.
//!
//! Figures over a campaign (documents given up, peak failure ratio) are far
//! from normal: often zero in every run of one variant, with one run now and
//! then far from the rest. A t-test would judge their means; Mann–Whitney
//! compares only the order of the values, so one wild run moves it no more
//! than any run above the others would.
//!
//! It matches `scipy.stats.mannwhitneyu(x, y)` with its defaults
//! (two-sided, `method="auto"`, continuity correction), as read in scipy
//! 1.17's `_mannwhitneyu.py`:
//!
//! * exact when at least one sample has 8 values or fewer and no value
//!   occurs twice in the two samples together: the p-value counts the
//!   orderings of the pooled values that give a U as extreme;
//! * otherwise the normal approximation, its variance corrected for ties
//!   and its distance from the mean shortened by 1/2 for continuity.
//!
//! Where scipy gives NaN, this gives an answer a report can print:
//!
//! * NaN values are left out (a run that did not measure the figure), where
//!   scipy's default propagates them into a NaN result;
//! * an empty sample gives U = 0 and p = 1, exactly: its null distribution
//!   has one ordering (scipy: NaN, "too small");
//! * all values equal gives p = 1, as scipy (its z is -∞ there).
//!
//! One difference in method, far beyond a campaign: when the count of
//! orderings would not fit in 128 bits or its table would pass a million
//! entries (8 runs against some 230 000, 1 against some 2 million), the
//! normal approximation is used and [`Method::Asymptotic`] says so, where
//! scipy goes on counting in floating point.

use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;
use std::f64::consts::SQRT_2;

/// The largest sample for which scipy's "auto" may count exactly.
const EXACT_MAX_SAMPLE: usize = 8;
/// A bound on the exact method's table of counts (16 MiB of u128).
const EXACT_MAX_CELLS: usize = 1 << 20;

/// How the p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// From the exact null distribution of U.
    Exact,
    /// From the normal approximation, with tie and continuity corrections.
    Asymptotic,
}

/// The outcome of [`mann_whitney_u`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample (scipy's `statistic`): the number of pairs
    /// (x, y) with x > y, ties counting 1/2.
    pub u: f64,
    /// Two-sided p-value, in [0, 1].
    pub p_value: f64,
    pub method: Method,
}

/// The two-sided Mann–Whitney U test of `x` against `y`, NaNs left out.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> MannWhitney {
    let x: Vec<f64> = x.iter().copied().filter(|v| !v.is_nan()).collect();
    let y: Vec<f64> = y.iter().copied().filter(|v| !v.is_nan()).collect();
    let (n1, n2) = (x.len(), y.len());
    let ranks = Ranks::of(&x, &y);
    let u = ranks.x_sum - (n1 * (n1 + 1)) as f64 / 2.0;
    // The p-value comes from the larger of U and its mirror n1 n2 - U.
    let product = (n1 * n2) as f64;
    let extreme = u.max(product - u);

    let small = n1 <= EXACT_MAX_SAMPLE || n2 <= EXACT_MAX_SAMPLE;
    if small && !ranks.tied {
        if let Some(p_value) = exact_p(n1, n2, extreme) {
            return MannWhitney {
                u,
                p_value,
                method: Method::Exact,
            };
        }
    }
    MannWhitney {
        u,
        p_value: asymptotic_p(n1 as f64, n2 as f64, extreme, ranks.tie_term),
        method: Method::Asymptotic,
    }
}

/// What the test needs from the ranks of the pooled values.
struct Ranks {
    /// Sum of the ranks of the first sample's values (ties share the mean
    /// rank of their places).
    x_sum: f64,
    /// Σ (t³ - t) over the groups of t equal values: the variance's tie
    /// correction.
    tie_term: f64,
    /// Whether any value occurs more than once.
    tied: bool,
}

impl Ranks {
    fn of(x: &[f64], y: &[f64]) -> Ranks {
        let mut pooled: Vec<(f64, bool)> = x.iter().map(|&v| (v, true)).collect();
        pooled.extend(y.iter().map(|&v| (v, false)));
        // total_cmp puts -0.0 just before 0.0; the `==` below still groups
        // them, as scipy's ranking does.
        pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut ranks = Ranks {
            x_sum: 0.0,
            tie_term: 0.0,
            tied: false,
        };
        let mut start = 0;
        while start < pooled.len() {
            let value = pooled[start].0;
            let len = pooled[start..].iter().take_while(|p| p.0 == value).count();
            let end = start + len;
            // Places start + 1 ..= end, 1-based.
            let mean_rank = (start + 1 + end) as f64 / 2.0;
            let from_x = pooled[start..end].iter().filter(|p| p.1).count();
            let t = len as f64;
            ranks.x_sum += mean_rank * from_x as f64;
            ranks.tie_term += t * t * t - t;
            ranks.tied |= len > 1;
            start = end;
        }
        ranks
    }
}

/// 2 P(U >= `extreme`) under the null, by counting orderings, or `None`
/// past the bounds in the module's doc.
///
/// `extreme` is at least n1 n2 / 2 and U's distribution is symmetric, so
/// this is 2 P(U <= n1 n2 - extreme): a sum over the short lower tail.
fn exact_p(n1: usize, n2: usize, extreme: f64) -> Option<f64> {
    let (m, n) = (n1.min(n2), n1.max(n2));
    let total = orderings(m, n)?;
    // Without ties U is a whole number.
    let below = ((m * n) as f64 - extreme) as usize;
    if below >= EXACT_MAX_CELLS {
        return None;
    }
    let counts = u_counts(m, n, below);
    // Every count is at most `total`, and so is their sum.
    let at_most = counts.iter().fold(0u128, |sum, &c| sum.wrapping_add(c));
    // p can pass 1 when extreme = n1 n2 / 2 (the middle counted twice).
    Some((2.0 * (at_most as f64 / total as f64)).min(1.0))
}

/// C(m + n, m), the number of orderings of the pooled samples, or `None`
/// when it does not fit in a u128.
fn orderings(m: usize, n: usize) -> Option<u128> {
    let mut c: u128 = 1;
    for i in 1..=m as u128 {
        // c = C(n + i - 1, i - 1), so c (n + i) is divisible by i.
        c = c.checked_mul(n as u128 + i)? / i;
    }
    Some(c)
}

/// How many orderings of samples of sizes `m` and `n` give U = 0, 1, ...,
/// `up_to`.
///
/// They are the coefficients of the Gaussian binomial
/// [m + n choose m]_q = Π_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one
/// factor at a time: O(m · up_to) steps, against the O(m n · up_to) of the
/// textbook recurrence. Multiplying by (1 - q^k) makes coefficients
/// negative midway; arithmetic modulo 2^128 stays exact through that, and
/// the final counts lie in [0, C(m + n, m)], so they come out exactly.
fn u_counts(m: usize, n: usize, up_to: usize) -> Vec<u128> {
    let mut c = vec![0u128; up_to + 1];
    c[0] = 1;
    for i in 1..=m {
        // Multiply by (1 - q^(n+i)): from the top, so that c[u - k] is
        // still the old coefficient.
        let k = n + i;
        for u in (k..=up_to).rev() {
            c[u] = c[u].wrapping_sub(c[u - k]);
        }
        // Divide by (1 - q^i), i.e. multiply by 1 + q^i + q^2i + ...: from
        // the bottom, so that c[u - i] is already the new coefficient.
        for u in i..=up_to {
            c[u] = c[u].wrapping_add(c[u - i]);
        }
    }
    c
}

/// The two-sided p-value of the normal approximation, as scipy's
/// `_get_mwu_z` and `2 * ndtr(-z)` (in the same order of operations).
///
/// When every value is equal the variance is 0: scipy's z is -∞ and its p
/// of 2 is clipped to 1; here the p of 1 is given directly.
fn asymptotic_p(n1: f64, n2: f64, extreme: f64, tie_term: f64) -> f64 {
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let sd = (n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    if sd.is_nan() || sd <= 0.0 {
        return 1.0;
    }
    // Continuity: U is discrete, so the tail starts half a step nearer.
    let z = (extreme - mean - 0.5) / sd;
    // 2 P(Z >= z) = erfc(z / √2).
    erfc(z / SQRT_2).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The U of every ordering of samples of sizes m and n, one by one: the
    /// first sample takes the ranks (1-based) of the bits set in `mask`.
    fn u_of_every_ordering(m: usize, n: usize) -> Vec<usize> {
        (0u32..1 << (m + n))
            .filter(|mask| mask.count_ones() as usize == m)
            .map(|mask| {
                let ranks = (0..m + n).filter(|i| mask >> i & 1 == 1);
                ranks.map(|i| i + 1).sum::<usize>() - m * (m + 1) / 2
            })
            .collect()
    }

    #[test]
    fn counts_match_every_ordering_counted_one_by_one() {
        for (m, n) in [(0, 3), (1, 1), (1, 6), (3, 3), (4, 7), (2, 10), (6, 6)] {
            let all = u_of_every_ordering(m, n);
            assert_eq!(orderings(m, n), Some(all.len() as u128), "{m} and {n}");
            let counts = u_counts(m, n, m * n);
            for (u, &count) in counts.iter().enumerate() {
                let expected = all.iter().filter(|&&v| v == u).count() as u128;
                assert_eq!(count, expected, "{m} and {n}: U = {u}");
            }
        }
    }

    #[test]
    fn exact_p_is_the_share_of_orderings_as_extreme() {
        let (m, n) = (4, 7);
        let all = u_of_every_ordering(m, n);
        for u in 0..=m * n {
            let extreme = u.max(m * n - u);
            let as_extreme = all.iter().filter(|&&v| v.max(m * n - v) >= extreme);
            let expected = (as_extreme.count() as f64 / all.len() as f64).min(1.0);
            let p = exact_p(m, n, extreme as f64).unwrap();
            assert!((p - expected).abs() <= 1e-15 * expected, "U = {u}");
        }
    }

    #[test]
    fn too_many_orderings_fall_back_to_the_normal_approximation() {
        assert_eq!(orderings(8, 300_000), None);
        // U near the middle, so the lower tail to count has 1.25 million
        // entries.
        let x = [1_250_000.5];
        let y: Vec<f64> = (0..2_500_000).map(f64::from).collect();
        assert_eq!(mann_whitney_u(&x, &y).method, Method::Asymptotic);
    }
}
