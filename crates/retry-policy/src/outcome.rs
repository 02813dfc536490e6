//! What an attempt's failure was and what the policy answers: the words
//! shared by [`crate::RetryPolicy`] and the budgets that charge retries
//! (ratio, token bucket, gRPC throttle, adaptive throttle). They sit below
//! all of them so a budget can read a failure without knowing the policy.

use std::time::Duration;

/// Why an attempt failed, as the caller saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server shed the request (503 / 429), possibly saying when to retry.
    Overloaded { retry_after: Option<Duration> },
    /// No answer in time.
    Timeout,
    /// Any other retryable error (5xx, connection reset).
    Error,
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send the next attempt after this delay.
    Retry { after: Duration },
    /// Return the failure to the caller.
    GiveUp(GiveUpReason),
}

/// Why no retry follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum GiveUpReason {
    /// `max_attempts` attempts were made.
    AttemptsExhausted,
    /// The ratio budget, token bucket or gRPC throttle denied the retry.
    BudgetExhausted,
    /// A timeout with `retry_on_timeout: false`.
    NotRetryable,
    /// Adaptive throttling rejected the retry locally.
    Throttled,
}
