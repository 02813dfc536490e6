//! Retry quota of the AWS SDK standard retry mode (a token bucket).
//!
//! As implemented by botocore (`botocore/retries/standard.py`,
//! `RetryQuotaChecker`) and aws-sdk-js-v3 (`middleware-retry`,
//! `defaultRetryQuota.ts`, constants `INITIAL_RETRY_TOKENS = 500`,
//! `RETRY_COST = 5`, `TIMEOUT_RETRY_COST = 10`, `NO_RETRY_INCREMENT = 1`):
//!
//! * the bucket starts full, at `max_tokens`;
//! * a retry needs `retry_cost` tokens, or `timeout_retry_cost` when the
//!   attempt timed out; if fewer are available the request is not retried;
//! * when a request succeeds, botocore gives back "whatever quota was
//!   associated with the last acquisition" if the request was retried, or
//!   `NO_RETRY_INCREMENT` (here `success_refund`) if it succeeded at its first
//!   attempt; the balance never exceeds `max_tokens`;
//! * there is no time-based refill in standard mode, and a failure costs
//!   nothing by itself: only retries drain the bucket.
//!
//! The effect is a circuit breaker: after ~100 retried failures (500 / 5) with
//! no successes, a client stops retrying until first attempts succeed again.

use crate::outcome::Failure;

/// State of one client's retry quota.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    max: u32,
    available: u32,
    retry_cost: u32,
    timeout_retry_cost: u32,
    success_refund: u32,
}

impl TokenBucket {
    pub(crate) fn new(
        max_tokens: u32,
        retry_cost: u32,
        timeout_retry_cost: u32,
        success_refund: u32,
    ) -> Self {
        TokenBucket {
            max: max_tokens,
            available: max_tokens,
            retry_cost,
            timeout_retry_cost,
            success_refund,
        }
    }

    /// Tokens a retry after `failure` costs.
    pub(crate) fn cost(&self, failure: Failure) -> u32 {
        match failure {
            Failure::Timeout => self.timeout_retry_cost,
            Failure::Overloaded { .. } | Failure::Error => self.retry_cost,
        }
    }

    /// Takes the cost of a retry after `failure`, if that many are available.
    pub(crate) fn try_retry(&mut self, failure: Failure) -> bool {
        let cost = self.cost(failure);
        if cost > self.available {
            return false;
        }
        self.available -= cost;
        true
    }

    /// A request succeeded at its first attempt: add `success_refund`.
    pub(crate) fn on_first_attempt_success(&mut self) {
        self.release(self.success_refund);
    }

    /// A retried request succeeded; `last_failure` caused the retry that
    /// succeeded: give back what that retry cost.
    pub(crate) fn on_retry_success(&mut self, last_failure: Failure) {
        self.release(self.cost(last_failure));
    }

    fn release(&mut self, amount: u32) {
        self.available = self.available.saturating_add(amount).min(self.max);
    }

    pub(crate) fn available(&self) -> u32 {
        self.available
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aws() -> TokenBucket {
        TokenBucket::new(500, 5, 10, 1)
    }

    #[test]
    fn hundred_retries_drain_the_published_bucket() {
        let mut b = aws();
        assert_eq!(
            (0..1000).filter(|_| b.try_retry(Failure::Error)).count(),
            100
        );
        assert_eq!(b.available(), 0);
    }

    #[test]
    fn timeouts_cost_double() {
        let mut b = aws();
        assert_eq!(
            (0..1000).filter(|_| b.try_retry(Failure::Timeout)).count(),
            50
        );
    }

    #[test]
    fn not_enough_tokens_denies_without_charging() {
        let mut b = TokenBucket::new(12, 5, 10, 1);
        assert!(b.try_retry(Failure::Overloaded { retry_after: None }));
        assert_eq!(b.available(), 7);
        assert!(!b.try_retry(Failure::Timeout)); // needs 10
        assert_eq!(b.available(), 7);
        assert!(b.try_retry(Failure::Error));
        assert_eq!(b.available(), 2);
    }

    #[test]
    fn first_attempt_success_adds_one_up_to_max() {
        let mut b = aws();
        b.on_first_attempt_success();
        assert_eq!(b.available(), 500);
        for _ in 0..3 {
            assert!(b.try_retry(Failure::Error));
        }
        assert_eq!(b.available(), 485);
        b.on_first_attempt_success();
        assert_eq!(b.available(), 486);
    }

    #[test]
    fn retried_success_returns_the_last_retry_cost() {
        let mut b = aws();
        assert!(b.try_retry(Failure::Timeout));
        assert!(b.try_retry(Failure::Error));
        assert_eq!(b.available(), 485);
        b.on_retry_success(Failure::Error);
        assert_eq!(b.available(), 490);
        b.on_retry_success(Failure::Timeout);
        assert_eq!(b.available(), 500);
        b.on_retry_success(Failure::Timeout);
        assert_eq!(b.available(), 500);
    }

    #[test]
    fn drained_bucket_refills_from_successes() {
        let mut b = aws();
        while b.try_retry(Failure::Error) {}
        assert!(!b.try_retry(Failure::Error));
        for _ in 0..4 {
            b.on_first_attempt_success();
        }
        assert!(!b.try_retry(Failure::Error)); // 4 < 5
        b.on_first_attempt_success();
        assert!(b.try_retry(Failure::Error)); // 5
    }
}
