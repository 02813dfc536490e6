//! One second's attempt latencies as counts on a fixed logarithmic grid.
//!
//! The verdict judges latency by *counting* attempts slower than a limit the
//! baseline sets after the run, with the same Poisson allowance as failures.
//! A per-second p99 cannot do that: at ~30 attempts a second it is the
//! slowest attempt, so one ordinary large document decides it. The limit is
//! only known once the baseline is measured, so every second keeps its
//! distribution, not a percentile.
//!
//! Buckets grow by 2^(1/8) (about 9 %) from [`FIRST_EDGE_MS`]; a second holds
//! a handful of non-empty ones, stored sparsely as `[index, count]` pairs.
//! Counting "slower than L" takes only buckets that lie wholly above L, so
//! the bucket straddling L is never called slow (at most 9 % of slack).

use serde::{Deserialize, Serialize};

/// Lower edge of bucket 1 (ms); bucket 0 holds everything faster.
pub const FIRST_EDGE_MS: f64 = 0.1;
/// Buckets per doubling of latency.
const PER_DOUBLING: f64 = 8.0;
/// The last bucket (about 3 days at this grid) holds everything slower.
const LAST: u16 = 300;

/// Sparse `(bucket, count)` pairs in increasing bucket order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LatencyCounts(Vec<(u16, u64)>);

impl LatencyCounts {
    /// The bucket of a latency of `ms` milliseconds.
    fn bucket(ms: f64) -> u16 {
        if ms.is_nan() || ms < FIRST_EDGE_MS {
            return 0;
        }
        let i = ((ms / FIRST_EDGE_MS).log2() * PER_DOUBLING).floor() + 1.0;
        i.min(f64::from(LAST)) as u16
    }

    /// The lower edge of bucket `i` (ms).
    fn lower_edge(i: u16) -> f64 {
        if i == 0 {
            0.0
        } else {
            FIRST_EDGE_MS * (f64::from(i - 1) / PER_DOUBLING).exp2()
        }
    }

    /// Adds `n` to bucket `b`, keeping the pairs sorted and sparse.
    fn add(&mut self, b: u16, n: u64) {
        if n == 0 {
            return;
        }
        match self.0.binary_search_by_key(&b, |(i, _)| *i) {
            Ok(k) => self.0[k].1 += n,
            Err(k) => self.0.insert(k, (b, n)),
        }
    }

    /// Counts `n` attempts that took `ms` milliseconds.
    pub fn record_n(&mut self, ms: f64, n: u64) {
        self.add(Self::bucket(ms), n);
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &LatencyCounts) {
        for &(b, n) in &other.0 {
            self.add(b, n);
        }
    }

    pub fn count(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Attempts certainly slower than `limit_ms`: those in buckets whose
    /// lower edge is at or above it.
    pub fn count_slower_than(&self, limit_ms: f64) -> u64 {
        self.0
            .iter()
            .filter(|(i, _)| Self::lower_edge(*i) >= limit_ms)
            .map(|(_, n)| n)
            .sum()
    }

    /// The upper edge (ms) of the bucket holding the `q` quantile: at least
    /// the true quantile, by at most one bucket's width. `None` when empty.
    pub fn quantile_upper_ms(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for &(i, n) in &self.0 {
            seen += n;
            if seen >= rank {
                return Some(Self::lower_edge(i.saturating_add(1)));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(values: &[(f64, u64)]) -> LatencyCounts {
        let mut c = LatencyCounts::default();
        for &(ms, n) in values {
            c.record_n(ms, n);
        }
        c
    }

    #[test]
    fn a_value_lies_in_a_bucket_no_wider_than_a_ninth() {
        for ms in [0.15, 1.0, 7.3, 42.0, 273.0, 5_000.0, 120_000.0] {
            let b = LatencyCounts::bucket(ms);
            let (lo, hi) = (
                LatencyCounts::lower_edge(b),
                LatencyCounts::lower_edge(b + 1),
            );
            assert!(lo <= ms && ms < hi, "{ms} in [{lo}, {hi})");
            assert!(hi / lo < 1.095, "{ms}: [{lo}, {hi})");
        }
        assert_eq!(LatencyCounts::bucket(0.0), 0);
        assert_eq!(LatencyCounts::bucket(f64::NAN), 0);
        assert_eq!(LatencyCounts::bucket(1e12), LAST);
    }

    #[test]
    fn counts_merge_and_stay_sorted() {
        let mut a = counts(&[(50.0, 3), (10.0, 2)]);
        a.merge(&counts(&[(50.0, 1), (900.0, 1), (1.0, 4)]));
        assert_eq!(a.count(), 11);
        assert!(a.0.windows(2).all(|w| w[0].0 < w[1].0), "{a:?}");
        assert_eq!(
            a.0.iter()
                .find(|(i, _)| *i == LatencyCounts::bucket(50.0))
                .unwrap()
                .1,
            4
        );
    }

    #[test]
    fn slower_than_counts_only_buckets_wholly_above_the_limit() {
        let c = counts(&[(40.0, 97), (100.0, 2), (400.0, 1)]);
        assert_eq!(c.count_slower_than(50.0), 3);
        assert_eq!(c.count_slower_than(200.0), 1);
        assert_eq!(c.count_slower_than(1_000.0), 0);
        // The bucket holding 100 ms starts at or below 100 ms: not slower than 100.
        assert_eq!(c.count_slower_than(100.0), 1);
    }

    #[test]
    fn the_quantile_is_the_upper_edge_of_its_bucket() {
        let c = counts(&[(40.0, 99), (400.0, 1)]);
        let p99 = c.quantile_upper_ms(0.99).unwrap();
        assert!((40.0..40.0 * 1.095).contains(&p99), "{p99}");
        let max = c.quantile_upper_ms(1.0).unwrap();
        assert!((400.0..400.0 * 1.095).contains(&max), "{max}");
        assert_eq!(LatencyCounts::default().quantile_upper_ms(0.99), None);
    }

    #[test]
    fn it_serialises_as_pairs() {
        let c = counts(&[(1.0, 2)]);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, format!("[[{},2]]", LatencyCounts::bucket(1.0)));
        assert_eq!(serde_json::from_str::<LatencyCounts>(&json).unwrap(), c);
    }
}
