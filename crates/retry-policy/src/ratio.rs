//! Retry budget as a share of requests (Google SRE book, ch. 21 "Handling Overload").
//!
//! The SRE book's per-client retry budget: "keep track of the ratio of requests
//! that correspond to retries. A request will only be retried as long as this
//! ratio is below 10%." As in Finagle's `RetryBudget` (10 s TTL, a reserve of
//! `minRetriesPerSec`), counts are kept over a sliding ~10 s window of 1 s
//! buckets and a small reserve lets a quiet client (few requests, so 10 % of
//! them rounds to nothing) still retry:
//!
//! `allow a retry  <=>  retries + 1 <= ratio * requests + min_retries_per_sec * 10`
//!
//! where `requests` counts first attempts ([`RatioBudget::on_request`]) and
//! `retries` counts retries this budget allowed, both over the window. Under a
//! total outage retries therefore add at most `ratio` to the offered load,
//! instead of multiplying it by `max_attempts`.

use crate::window::Window;
use std::time::{Duration, Instant};

/// Buckets in the window (one per second).
const BUCKETS: usize = 10;
/// Window length in seconds.
const WINDOW_SECS: u64 = BUCKETS as u64;

/// State of one client's ratio budget. Counter `a` = requests, `b` = retries.
#[derive(Clone, Debug)]
pub(crate) struct RatioBudget {
    ratio: f64,
    reserve: f64,
    window: Window<BUCKETS>,
}

impl RatioBudget {
    pub(crate) fn new(ratio: f64, min_retries_per_sec: f64) -> Self {
        RatioBudget {
            ratio,
            reserve: min_retries_per_sec * WINDOW_SECS as f64,
            window: Window::new(Duration::from_secs(WINDOW_SECS)),
        }
    }

    /// A request's first attempt was sent.
    pub(crate) fn on_request(&mut self, now: Instant) {
        self.window.add(now, 1, 0);
    }

    /// Charges one retry if the budget allows it.
    pub(crate) fn try_retry(&mut self, now: Instant) -> bool {
        let (requests, retries) = self.window.totals(now);
        let allowance = self.ratio * requests as f64 + self.reserve;
        // Written as `<=` so that a NaN allowance denies.
        if retries as f64 + 1.0 <= allowance {
            self.window.add(now, 0, 1);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn ten_percent_of_requests_without_reserve() {
        let t0 = Instant::now();
        let mut b = RatioBudget::new(0.1, 0.0);
        for _ in 0..100 {
            b.on_request(t0);
        }
        let allowed = (0..50).filter(|_| b.try_retry(t0)).count();
        assert_eq!(allowed, 10); // retries <= 0.1 * 100
    }

    #[test]
    fn reserve_allows_min_retries_per_sec_times_window() {
        let t0 = Instant::now();
        let mut b = RatioBudget::new(0.1, 2.0);
        // No requests at all: only the reserve, 2/s * 10 s = 20.
        let allowed = (0..100).filter(|_| b.try_retry(t0)).count();
        assert_eq!(allowed, 20);
        // 50 requests add 5 more.
        for _ in 0..50 {
            b.on_request(t0);
        }
        let more = (0..100).filter(|_| b.try_retry(t0)).count();
        assert_eq!(more, 5);
    }

    #[test]
    fn exhausted_budget_refills_as_the_window_slides() {
        let t0 = Instant::now();
        let mut b = RatioBudget::new(0.5, 0.0);
        for _ in 0..10 {
            b.on_request(t0);
        }
        assert_eq!((0..10).filter(|_| b.try_retry(t0)).count(), 5);
        assert!(!b.try_retry(t0 + 5 * S));
        // New traffic later in the window: 10 more requests, 5 more retries.
        for _ in 0..10 {
            b.on_request(t0 + 5 * S);
        }
        assert_eq!((0..10).filter(|_| b.try_retry(t0 + 5 * S)).count(), 5);
        // At 10 s the first second's requests and retries have left the window.
        assert_eq!((0..10).filter(|_| b.try_retry(t0 + 10 * S)).count(), 0);
        for _ in 0..2 {
            b.on_request(t0 + 10 * S);
        }
        // requests 12, retries 5 -> 0.5 * 12 = 6 -> one more.
        assert_eq!((0..10).filter(|_| b.try_retry(t0 + 10 * S)).count(), 1);
        // Everything forgotten after the window: quiet client, no reserve.
        assert!(!b.try_retry(t0 + 30 * S));
    }
}
