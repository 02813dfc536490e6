//! The runtime retry decision of one client (or one gateway).
//!
//! [`RetryPolicy`] holds a [`RetryConfig`] and the state of its budget, shared
//! by every request of that client. After a failed attempt it decides, in this
//! order: attempts exhausted? retryable? does the budget allow (and charge) a
//! retry? and then how long to wait: the server's Retry-After (capped) when
//! configured and present, else the backoff of [`crate::backoff_delay`].
//!
//! Time and randomness are inputs: every method takes `now`, and random draws
//! use the caller's RNG, so a simulated run replays exactly from its seed and
//! tests can step time forward by adding durations to an `Instant`.
//! State sits behind one mutex, so a policy is `Send + Sync` and can be shared
//! through an `Arc`; a poisoned lock is recovered rather than panicking.

use crate::backoff::backoff_delay;
use crate::budget::BudgetState;
use crate::config::RetryConfig;
use crate::outcome::{Decision, Failure, GiveUpReason};
use rand::Rng;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Counts for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RetryStats {
    /// Calls to [`RetryPolicy::admit_request`], admitted or not.
    pub requests: u64,
    /// [`Decision::Retry`] answers.
    pub retries_allowed: u64,
    /// Retries denied with [`GiveUpReason::BudgetExhausted`].
    pub retries_denied_by_budget: u64,
    /// Requests and retries rejected locally by adaptive throttling.
    pub throttled_locally: u64,
}

#[derive(Debug)]
struct State {
    budget: BudgetState,
    stats: RetryStats,
}

/// Configuration plus the shared budget state of one client.
#[derive(Debug)]
pub struct RetryPolicy {
    cfg: RetryConfig,
    state: Mutex<State>,
}

impl RetryPolicy {
    /// A policy with a fresh (full) budget. Does not validate `cfg`; call
    /// [`RetryConfig::validate`] first. Invalid values never panic here.
    pub fn new(cfg: RetryConfig) -> Self {
        let budget = BudgetState::new(&cfg.budget);
        RetryPolicy {
            cfg,
            state: Mutex::new(State {
                budget,
                stats: RetryStats::default(),
            }),
        }
    }

    pub fn config(&self) -> &RetryConfig {
        &self.cfg
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Call before every request's FIRST attempt (it counts the request for
    /// the ratio budget and the stats). Adaptive throttling (SRE) may reject
    /// locally, with probability `max(0, (requests - k * accepts) / (requests + 1))`
    /// over its window; a rejected request still counts as a request. Other
    /// budgets always admit.
    pub fn admit_request(&self, now: Instant, rng: &mut impl Rng) -> bool {
        let mut st = self.lock();
        st.stats.requests += 1;
        let admitted = st.budget.admit(now, rng);
        if !admitted {
            st.stats.throttled_locally += 1;
        }
        admitted
    }

    /// Attempt number `attempt` (1 = the first attempt) just failed with
    /// `failure`: retry, and after how long, or give up.
    ///
    /// Order: attempts exhausted? retryable (a timeout only with
    /// `retry_on_timeout`)? budget allows and charges the retry? then the
    /// delay. A retryable failure counts against the gRPC throttle even when no
    /// retry follows (gRFC A6); under adaptive throttling an allowed retry
    /// counts as a request, a rejected one gives [`GiveUpReason::Throttled`].
    pub fn on_failure(
        &self,
        attempt: u32,
        failure: Failure,
        now: Instant,
        rng: &mut impl Rng,
    ) -> Decision {
        let retryable = match failure {
            Failure::Timeout => self.cfg.retry_on_timeout,
            Failure::Overloaded { .. } | Failure::Error => true,
        };
        {
            let mut st = self.lock();
            if retryable {
                st.budget.on_retryable_failure();
            }
            if attempt.max(1) >= self.cfg.max_attempts {
                return Decision::GiveUp(GiveUpReason::AttemptsExhausted);
            }
            if !retryable {
                return Decision::GiveUp(GiveUpReason::NotRetryable);
            }
            match st.budget.try_retry(failure, now, rng) {
                Ok(()) => st.stats.retries_allowed += 1,
                Err(reason) => {
                    if reason == GiveUpReason::Throttled {
                        st.stats.throttled_locally += 1;
                    } else {
                        st.stats.retries_denied_by_budget += 1;
                    }
                    return Decision::GiveUp(reason);
                }
            }
        }
        Decision::Retry {
            after: self.delay(attempt, failure, rng),
        }
    }

    fn delay(&self, attempt: u32, failure: Failure, rng: &mut impl Rng) -> Duration {
        if let Failure::Overloaded {
            retry_after: Some(after),
        } = failure
        {
            if self.cfg.honour_retry_after {
                return self.cfg.retry_after_cap.map_or(after, |cap| after.min(cap));
            }
        }
        backoff_delay(&self.cfg.backoff, attempt, rng)
    }

    /// An attempt succeeded. Counts an accept (adaptive) and `token_ratio`
    /// (gRPC); for the token bucket this is a first-attempt success and adds
    /// `success_refund`. For a success after a retry prefer
    /// [`RetryPolicy::on_retry_success`], which refunds what AWS refunds.
    pub fn on_success(&self, now: Instant) {
        self.lock().budget.on_success(now, None);
    }

    /// An attempt that was a retry succeeded; `last_failure` is the failure
    /// that caused this retry. Like [`RetryPolicy::on_success`], except that
    /// the token bucket gets back the cost of that retry (5, or 10 after a
    /// timeout), as botocore's `release_retry_quota` does.
    pub fn on_retry_success(&self, last_failure: Failure, now: Instant) {
        self.lock().budget.on_success(now, Some(last_failure));
    }

    /// Counts for reports.
    pub fn stats(&self) -> RetryStats {
        self.lock().stats
    }

    /// Tokens left in the token bucket or gRPC throttle; None for other budgets.
    pub fn budget_tokens(&self) -> Option<f64> {
        self.lock().budget.tokens()
    }
}
