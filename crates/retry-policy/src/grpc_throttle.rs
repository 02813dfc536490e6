//! gRPC retry throttling (gRFC A6 "gRPC Retry Design", `retryThrottling`).
//!
//! From the proposal: `token_count` starts at `maxTokens` and stays in
//! `[0, maxTokens]`; every failed RPC decrements it by 1, every successful RPC
//! increments it by `tokenRatio`; "if `token_count` is less than or equal to
//! the threshold, defined to be `(maxTokens / 2)`, then RPCs will not be
//! retried until `token_count` rises over the threshold". Only failures that
//! qualify as retryable count, so the caller's non-retryable failures (here a
//! timeout with `retry_on_timeout: false`) do not decrement.
//!
//! As in grpc-java's `RetryThrottle`, tokens are kept as integers in
//! thousandths (the proposal allows three decimal places for `tokenRatio`),
//! so "exactly half" is exact, and the failure is counted before the check
//! ("on qualified failure, then check is above threshold").

/// Fixed-point scale: one token = 1000 milli-tokens.
const SCALE: u64 = 1000;

/// State of one client's retry throttle.
#[derive(Clone, Debug)]
pub(crate) struct GrpcThrottle {
    max: u64,
    threshold: u64,
    ratio: u64,
    count: u64,
}

impl GrpcThrottle {
    pub(crate) fn new(max_tokens: u32, token_ratio: f64) -> Self {
        let max = u64::from(max_tokens) * SCALE;
        let ratio = (token_ratio * SCALE as f64).round();
        // `as` saturates (NaN -> 0); validation keeps it >= 1 milli-token.
        let ratio = ratio as u64;
        GrpcThrottle {
            max,
            threshold: max / 2,
            ratio,
            count: max,
        }
    }

    /// A retryable failure: decrement by one token (never below zero).
    pub(crate) fn on_failure(&mut self) {
        self.count = self.count.saturating_sub(SCALE);
    }

    /// Whether a retry is allowed now: `token_count > max_tokens / 2`.
    pub(crate) fn allows_retry(&self) -> bool {
        self.count > self.threshold
    }

    /// A success adds `token_ratio`, capped at `max_tokens`.
    pub(crate) fn on_success(&mut self) {
        self.count = self.count.saturating_add(self.ratio).min(self.max);
    }

    /// Current `token_count` in tokens.
    pub(crate) fn tokens(&self) -> f64 {
        self.count as f64 / SCALE as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a failed attempt does: count the failure, then check.
    fn fail(t: &mut GrpcThrottle) -> bool {
        t.on_failure();
        t.allows_retry()
    }

    #[test]
    fn starts_full_and_retries_while_above_half() {
        let mut t = GrpcThrottle::new(10, 0.1);
        assert_eq!(t.tokens(), 10.0);
        // 10 -> 9, 8, 7, 6: above 5, retry allowed.
        for expected in [9.0, 8.0, 7.0, 6.0] {
            assert!(fail(&mut t));
            assert_eq!(t.tokens(), expected);
        }
        // 6 -> 5: exactly half is not above the threshold.
        assert!(!fail(&mut t));
        assert_eq!(t.tokens(), 5.0);
        assert!(!fail(&mut t));
        assert_eq!(t.tokens(), 4.0);
    }

    #[test]
    fn never_below_zero_and_successes_refill_by_ratio() {
        let mut t = GrpcThrottle::new(10, 0.1);
        for _ in 0..20 {
            t.on_failure();
        }
        assert_eq!(t.tokens(), 0.0);
        // 60 successes: 6 tokens; a failure takes it to exactly 5: no retry.
        for _ in 0..60 {
            t.on_success();
        }
        assert_eq!(t.tokens(), 6.0);
        assert!(!fail(&mut t));
        // 11 more: 6.1; a failure takes it to 5.1 > 5: retry.
        for _ in 0..11 {
            t.on_success();
        }
        assert!(fail(&mut t)); // 6.1 -> 5.1 > 5
        assert!(!fail(&mut t)); // 5.1 -> 4.1
    }

    #[test]
    fn capped_at_max() {
        let mut t = GrpcThrottle::new(3, 0.5);
        for _ in 0..10 {
            t.on_success();
        }
        assert_eq!(t.tokens(), 3.0);
        // Odd max: threshold 1.5. 3 -> 2 allows, 2 -> 1 does not.
        assert!(fail(&mut t));
        assert!(!fail(&mut t));
    }
}
