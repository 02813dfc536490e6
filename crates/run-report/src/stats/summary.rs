//! The five-number summary of a figure over a campaign's runs.
//!
//! A campaign has 3 to 100 runs, too few for a mean and a standard deviation
//! to say much when one run goes wrong: the median and the quartiles do not
//! move when the worst run gets worse. Quartiles interpolate linearly
//! between order statistics (Hyndman & Fan type 7, numpy's and R's default),
//! so a reader checking a report with `numpy.percentile` gets the same
//! numbers.

use serde::{Deserialize, Serialize};

/// Smallest value, quartiles, median and largest value of a sample's finite
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// How many finite values the sample had (NaN and infinities are left out).
    pub n: usize,
    pub min: f64,
    /// The 25th percentile.
    pub q1: f64,
    pub median: f64,
    /// The 75th percentile.
    pub q3: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of the finite values of `values`, or `None` when there are
    /// none.
    ///
    /// A run that measured nothing records NaN, and it is left out rather
    /// than ranked: there is no place in the order for it. Infinities are
    /// left out too, as no interpolation between one and a number means
    /// anything.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        Some(Spread {
            n: sorted.len(),
            min,
            q1: quantile(&sorted, 0.25),
            median: quantile(&sorted, 0.5),
            q3: quantile(&sorted, 0.75),
            max,
        })
    }
}

/// The `q`-quantile of non-empty sorted finite values, type 7: the value at
/// the fractional position `(n - 1) q`, between its two neighbours.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = (sorted.len() - 1) as f64 * q;
    let below = position.floor();
    let i = below as usize;
    let Some(&next) = sorted.get(i + 1) else {
        return sorted[i];
    };
    lerp(sorted[i], next, position - below)
}

/// numpy's `_lerp`: from the nearer end, so that a weight of 1 gives `b`
/// exactly and the result matches numpy to the last bit.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}
