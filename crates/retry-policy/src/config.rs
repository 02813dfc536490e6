//! The retry configuration as it appears in experiment YAML files.
//!
//! One struct is shared by the load generator's simulated clients and the
//! gateway's internal retry layer, so an experiment's "before" and "after"
//! variants differ only in a few keys. Every struct and struct variant denies
//! unknown fields: a misspelt fix must be a parse error, not a silently ignored
//! setting. Durations are humantime strings (`"5s"`, `"125ms"`).
//!
//! Defaults follow the published values of each mechanism: AWS SDK standard
//! retry mode (100 ms base, 20 s cap, 500 tokens, cost 5 / 10, refund 1), the
//! gRPC retry throttling example of gRFC A6 (`maxTokens: 10`, `tokenRatio: 0.1`),
//! and the Google SRE book, chapter 21 "Handling Overload" (retry ratio 10 %,
//! adaptive throttling `K = 2` over two minutes). `min_retries_per_sec` (10)
//! is Finagle's `RetryBudget` default reserve.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Configuration of one client's (or one gateway's) retries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Total attempts including the first; 1 = no retries (the default). Must be >= 1.
    #[serde(default = "one")]
    pub max_attempts: u32,
    /// Delay between attempts when the server gave no usable Retry-After.
    #[serde(default)]
    pub backoff: Backoff,
    /// Upper bound on an honoured Retry-After (> 0). Absent: no bound.
    /// Only used when `honour_retry_after` is true.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub retry_after_cap: Option<Duration>,
    /// Wait the server's Retry-After (capped by `retry_after_cap`) instead of
    /// the backoff delay when an overloaded answer carries one.
    #[serde(default)]
    pub honour_retry_after: bool,
    /// Optional budget / throttle shared by all requests of one client: `none`,
    /// `ratio`, `token_bucket`, `grpc_throttle` or `adaptive`.
    #[serde(default)]
    pub budget: Budget,
    /// Retry on timeouts too (default true).
    #[serde(default = "yes")]
    pub retry_on_timeout: bool,
}

fn yes() -> bool {
    true
}

/// Delay before a retry. YAML: `none` | `{ fixed: { delay: 1s } }` |
/// `{ exponential: { base: 100ms, cap: 20s, jitter: full } }`.
// Computed by [`crate::backoff_delay`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Backoff {
    /// Retry immediately.
    None,
    /// Always wait `delay`.
    Fixed {
        /// The wait, e.g. `1s`.
        #[serde(with = "humantime_serde")]
        #[schemars(with = "String")]
        delay: Duration,
    },
    /// Capped exponential: ceiling `min(cap, base * 2^(attempt - 1))`, then jitter.
    Exponential {
        /// The first retry's ceiling (> 0), doubled at each further attempt.
        #[serde(default = "default_base", with = "humantime_serde")]
        #[schemars(with = "String")]
        base: Duration,
        /// The largest ceiling (>= `base`).
        #[serde(default = "default_cap", with = "humantime_serde")]
        #[schemars(with = "String")]
        cap: Duration,
        /// How the wait is drawn under the ceiling.
        #[serde(default)]
        jitter: Jitter,
    },
}

impl Default for Backoff {
    /// Exponential with full jitter and the AWS SDK values (100 ms base, 20 s cap).
    fn default() -> Self {
        Backoff::Exponential {
            base: default_base(),
            cap: default_cap(),
            jitter: Jitter::Full,
        }
    }
}

fn default_base() -> Duration {
    Duration::from_millis(100)
}

fn default_cap() -> Duration {
    Duration::from_secs(20)
}

/// Randomisation of the exponential ceiling (AWS Architecture Blog,
/// "Exponential Backoff and Jitter").
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    /// `uniform(0, ceiling)`.
    #[default]
    Full,
    /// Exactly the ceiling (synchronised clients: the retry storm case).
    None,
    /// `ceiling / 2 + uniform(0, ceiling / 2)`.
    Equal,
}

/// A limit on retries shared by all requests of one client.
///
/// YAML: `none` | `{ ratio: { ratio: 0.1, min_retries_per_sec: 10 } }` |
/// `{ token_bucket: { max_tokens: 500, retry_cost: 5, timeout_retry_cost: 10, success_refund: 1 } }` |
/// `{ grpc_throttle: { max_tokens: 10, token_ratio: 0.1 } }` | `{ adaptive: { k: 2.0, window: 120s } }`.
/// Every field has a default, so `{ token_bucket: {} }` is the published configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Budget {
    /// No limit beyond `max_attempts`.
    #[default]
    None,
    /// SRE retry budget: retries over the last ~10 s at most
    /// `ratio * requests + min_retries_per_sec * 10`.
    Ratio {
        /// Retries allowed per first attempt, in (0, 1].
        #[serde(default = "default_ratio")]
        ratio: f64,
        /// Retries per second always allowed on top (>= 0): a reserve for
        /// clients that send little.
        #[serde(default = "default_min_retries_per_sec")]
        min_retries_per_sec: f64,
    },
    /// AWS SDK standard retry mode retry quota.
    TokenBucket {
        /// The bucket's size, and its content at the start (>= 1).
        #[serde(default = "default_bucket_tokens")]
        max_tokens: u32,
        /// Tokens a retry after an error takes, in [1, max_tokens]; no tokens, no retry.
        #[serde(default = "default_retry_cost")]
        retry_cost: u32,
        /// Tokens a retry after a timeout takes, in [1, max_tokens].
        #[serde(default = "default_timeout_retry_cost")]
        timeout_retry_cost: u32,
        /// Added when a request succeeds at its first attempt
        /// (AWS `NO_RETRY_INCREMENT`).
        #[serde(default = "default_success_refund")]
        success_refund: u32,
    },
    /// gRPC retry throttling (gRFC A6).
    GrpcThrottle {
        /// The token count's ceiling and start (>= 1); a failure takes one,
        /// and retries stop while at most half are left.
        #[serde(default = "default_grpc_tokens")]
        max_tokens: u32,
        /// Tokens a success gives back (>= 0.001).
        #[serde(default = "default_token_ratio")]
        token_ratio: f64,
    },
    /// SRE client-side adaptive throttling.
    Adaptive {
        /// The multiplier K (> 0): a request is dropped client-side with
        /// probability `max(0, (requests - K * accepts) / (requests + 1))`.
        #[serde(default = "default_k")]
        k: f64,
        /// The time the requests and accepts are counted over (> 0).
        #[serde(default = "default_window", with = "humantime_serde")]
        #[schemars(with = "String")]
        window: Duration,
    },
}

fn default_ratio() -> f64 {
    0.1
}
fn default_min_retries_per_sec() -> f64 {
    10.0
}
fn default_bucket_tokens() -> u32 {
    500
}
fn default_retry_cost() -> u32 {
    5
}
fn default_timeout_retry_cost() -> u32 {
    10
}
fn default_success_refund() -> u32 {
    1
}
fn default_grpc_tokens() -> u32 {
    10
}
fn default_token_ratio() -> f64 {
    0.1
}
fn default_k() -> f64 {
    2.0
}
fn default_window() -> Duration {
    Duration::from_secs(120)
}

impl Budget {
    /// The SRE ratio budget with its published values.
    pub fn ratio_default() -> Self {
        Budget::Ratio {
            ratio: default_ratio(),
            min_retries_per_sec: default_min_retries_per_sec(),
        }
    }

    /// The AWS standard-mode retry quota with its published values.
    pub fn token_bucket_default() -> Self {
        Budget::TokenBucket {
            max_tokens: default_bucket_tokens(),
            retry_cost: default_retry_cost(),
            timeout_retry_cost: default_timeout_retry_cost(),
            success_refund: default_success_refund(),
        }
    }

    /// gRPC retry throttling with the gRFC A6 example values.
    pub fn grpc_throttle_default() -> Self {
        Budget::GrpcThrottle {
            max_tokens: default_grpc_tokens(),
            token_ratio: default_token_ratio(),
        }
    }

    /// SRE adaptive throttling with its published values.
    pub fn adaptive_default() -> Self {
        Budget::Adaptive {
            k: default_k(),
            window: default_window(),
        }
    }
}

impl RetryConfig {
    /// One attempt, nothing else.
    pub fn no_retries() -> Self {
        RetryConfig {
            max_attempts: 1,
            backoff: Backoff::None,
            retry_after_cap: None,
            honour_retry_after: false,
            budget: Budget::None,
            retry_on_timeout: true,
        }
    }
}

impl Default for RetryConfig {
    /// [`RetryConfig::no_retries`].
    fn default() -> Self {
        RetryConfig::no_retries()
    }
}

fn one() -> u32 {
    1
}
