//! Dispatch from the configured [`Budget`] to its state machine.
//!
//! Each budget answers the same four questions, at the points of a request's
//! life where the published designs hook in: may a request's first attempt be
//! sent (only adaptive throttling says no), what does a retryable failure do
//! (gRFC A6 counts every one, even when no retry follows), may this retry go
//! (and what does it cost), and what does a success give back.

use crate::adaptive::AdaptiveThrottle;
use crate::config::Budget;
use crate::grpc_throttle::GrpcThrottle;
use crate::outcome::{Failure, GiveUpReason};
use crate::ratio::RatioBudget;
use crate::token_bucket::TokenBucket;
use rand::Rng;
use std::time::Instant;

#[derive(Clone, Debug)]
pub(crate) enum BudgetState {
    None,
    // Boxed: their bucket rings are much larger than the other states.
    Ratio(Box<RatioBudget>),
    TokenBucket(TokenBucket),
    Grpc(GrpcThrottle),
    Adaptive(Box<AdaptiveThrottle>),
}

impl BudgetState {
    pub(crate) fn new(budget: &Budget) -> Self {
        match *budget {
            Budget::None => BudgetState::None,
            Budget::Ratio {
                ratio,
                min_retries_per_sec,
            } => BudgetState::Ratio(Box::new(RatioBudget::new(ratio, min_retries_per_sec))),
            Budget::TokenBucket {
                max_tokens,
                retry_cost,
                timeout_retry_cost,
                success_refund,
            } => BudgetState::TokenBucket(TokenBucket::new(
                max_tokens,
                retry_cost,
                timeout_retry_cost,
                success_refund,
            )),
            Budget::GrpcThrottle {
                max_tokens,
                token_ratio,
            } => BudgetState::Grpc(GrpcThrottle::new(max_tokens, token_ratio)),
            Budget::Adaptive { k, window } => {
                BudgetState::Adaptive(Box::new(AdaptiveThrottle::new(k, window)))
            }
        }
    }

    /// A request's first attempt: count it; adaptive throttling may reject it.
    pub(crate) fn admit(&mut self, now: Instant, rng: &mut impl Rng) -> bool {
        match self {
            BudgetState::Ratio(r) => {
                r.on_request(now);
                true
            }
            BudgetState::Adaptive(a) => a.admit(now, rng),
            BudgetState::None | BudgetState::TokenBucket(_) | BudgetState::Grpc(_) => true,
        }
    }

    /// An attempt failed in a way that qualifies for retrying.
    pub(crate) fn on_retryable_failure(&mut self) {
        if let BudgetState::Grpc(g) = self {
            g.on_failure();
        }
    }

    /// May a retry after `failure` go? Charges it when it may.
    pub(crate) fn try_retry(
        &mut self,
        failure: Failure,
        now: Instant,
        rng: &mut impl Rng,
    ) -> Result<(), GiveUpReason> {
        let allowed = match self {
            BudgetState::None => true,
            BudgetState::Ratio(r) => r.try_retry(now),
            BudgetState::TokenBucket(t) => t.try_retry(failure),
            BudgetState::Grpc(g) => g.allows_retry(),
            BudgetState::Adaptive(a) => {
                return if a.admit(now, rng) {
                    Ok(())
                } else {
                    Err(GiveUpReason::Throttled)
                };
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(GiveUpReason::BudgetExhausted)
        }
    }

    /// An attempt succeeded; `retried_after` is the failure that caused the
    /// retry that succeeded (None for a first attempt or when unknown).
    pub(crate) fn on_success(&mut self, now: Instant, retried_after: Option<Failure>) {
        match self {
            BudgetState::None | BudgetState::Ratio(_) => {}
            BudgetState::TokenBucket(t) => match retried_after {
                Some(f) => t.on_retry_success(f),
                None => t.on_first_attempt_success(),
            },
            BudgetState::Grpc(g) => g.on_success(),
            BudgetState::Adaptive(a) => a.on_accept(now),
        }
    }

    /// Tokens left, for budgets that have tokens.
    pub(crate) fn tokens(&self) -> Option<f64> {
        match self {
            BudgetState::TokenBucket(t) => Some(f64::from(t.available())),
            BudgetState::Grpc(g) => Some(g.tokens()),
            BudgetState::None | BudgetState::Ratio(_) | BudgetState::Adaptive(_) => None,
        }
    }
}
