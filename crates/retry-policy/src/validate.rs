//! Checks a [`RetryConfig`] before an experiment starts.
//!
//! A value that cannot work (zero attempts, a cap below the base, a ratio
//! outside `(0, 1]`, a window of zero) is reported with the dotted path of the
//! field, the way the experiment YAML spells it, so the message points at the
//! line to fix. Limits come from the sources the budgets implement: gRFC A6
//! requires `maxTokens > 0` and `tokenRatio > 0` with three decimal places;
//! the SRE book's ratio is a share of requests.

use crate::config::{Backoff, Budget, RetryConfig};

/// A configuration value that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be {requirement}")]
pub struct ConfigError {
    /// Dotted field path, e.g. `budget.ratio.ratio`.
    pub field: &'static str,
    /// What the value must satisfy, e.g. `in (0, 1]`.
    pub requirement: &'static str,
}

fn bad(field: &'static str, requirement: &'static str) -> Result<(), ConfigError> {
    Err(ConfigError { field, requirement })
}

impl RetryConfig {
    /// Rejects values that cannot work; the message names the field,
    /// e.g. `"max_attempts must be >= 1"`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(self)
    }
}

/// The first invalid value of `cfg`, if any.
fn check(cfg: &RetryConfig) -> Result<(), ConfigError> {
    if cfg.max_attempts < 1 {
        return bad("max_attempts", ">= 1");
    }
    if cfg.retry_after_cap.is_some_and(|c| c.is_zero()) {
        return bad("retry_after_cap", "> 0");
    }
    check_backoff(&cfg.backoff)?;
    check_budget(&cfg.budget)
}

fn check_backoff(b: &Backoff) -> Result<(), ConfigError> {
    if let Backoff::Exponential { base, cap, .. } = b {
        if base.is_zero() {
            return bad("backoff.exponential.base", "> 0");
        }
        if cap < base {
            return bad("backoff.exponential.cap", ">= base");
        }
    }
    Ok(())
}

fn check_budget(b: &Budget) -> Result<(), ConfigError> {
    match *b {
        Budget::None => Ok(()),
        Budget::Ratio {
            ratio,
            min_retries_per_sec,
        } => {
            if !(ratio > 0.0 && ratio <= 1.0) {
                return bad("budget.ratio.ratio", "in (0, 1]");
            }
            if !(min_retries_per_sec >= 0.0 && min_retries_per_sec.is_finite()) {
                return bad("budget.ratio.min_retries_per_sec", "a finite number >= 0");
            }
            Ok(())
        }
        Budget::TokenBucket {
            max_tokens,
            retry_cost,
            timeout_retry_cost,
            ..
        } => {
            if max_tokens < 1 {
                return bad("budget.token_bucket.max_tokens", ">= 1");
            }
            if !(1..=max_tokens).contains(&retry_cost) {
                return bad("budget.token_bucket.retry_cost", "in [1, max_tokens]");
            }
            if !(1..=max_tokens).contains(&timeout_retry_cost) {
                return bad(
                    "budget.token_bucket.timeout_retry_cost",
                    "in [1, max_tokens]",
                );
            }
            Ok(())
        }
        Budget::GrpcThrottle {
            max_tokens,
            token_ratio,
        } => {
            if max_tokens < 1 {
                return bad("budget.grpc_throttle.max_tokens", ">= 1");
            }
            // gRFC A6: "must be greater than zero. Up to 3 decimal places".
            if !(token_ratio >= 0.001 && token_ratio.is_finite()) {
                return bad(
                    "budget.grpc_throttle.token_ratio",
                    ">= 0.001 (gRFC A6: > 0, three decimal places)",
                );
            }
            Ok(())
        }
        Budget::Adaptive { k, window } => {
            if !(k > 0.0 && k.is_finite()) {
                return bad("budget.adaptive.k", "a finite number > 0");
            }
            if window.is_zero() {
                return bad("budget.adaptive.window", "> 0");
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Jitter;
    use std::time::Duration;

    fn with_budget(budget: Budget) -> RetryConfig {
        RetryConfig {
            max_attempts: 3,
            budget,
            ..RetryConfig::no_retries()
        }
    }

    fn msg(cfg: &RetryConfig) -> String {
        cfg.validate().unwrap_err().to_string()
    }

    #[test]
    fn published_defaults_are_valid() {
        for b in [
            Budget::None,
            Budget::ratio_default(),
            Budget::token_bucket_default(),
            Budget::grpc_throttle_default(),
            Budget::adaptive_default(),
        ] {
            assert_eq!(with_budget(b).validate(), Ok(()));
        }
        let mut cfg = RetryConfig::no_retries();
        cfg.backoff = Backoff::default();
        assert_eq!(cfg.validate(), Ok(()));
    }

    #[test]
    fn zero_attempts() {
        let cfg = RetryConfig {
            max_attempts: 0,
            ..RetryConfig::no_retries()
        };
        assert_eq!(msg(&cfg), "max_attempts must be >= 1");
    }

    #[test]
    fn exponential_cap_below_base_and_zero_base() {
        let mut cfg = RetryConfig::no_retries();
        cfg.backoff = Backoff::Exponential {
            base: Duration::from_secs(2),
            cap: Duration::from_secs(1),
            jitter: Jitter::Full,
        };
        assert_eq!(msg(&cfg), "backoff.exponential.cap must be >= base");
        cfg.backoff = Backoff::Exponential {
            base: Duration::ZERO,
            cap: Duration::from_secs(1),
            jitter: Jitter::Full,
        };
        assert_eq!(msg(&cfg), "backoff.exponential.base must be > 0");
    }

    #[test]
    fn zero_retry_after_cap() {
        let cfg = RetryConfig {
            retry_after_cap: Some(Duration::ZERO),
            honour_retry_after: true,
            ..RetryConfig::no_retries()
        };
        assert_eq!(msg(&cfg), "retry_after_cap must be > 0");
    }

    #[test]
    fn ratio_out_of_range() {
        for r in [0.0, -0.1, 1.5, f64::NAN] {
            let cfg = with_budget(Budget::Ratio {
                ratio: r,
                min_retries_per_sec: 10.0,
            });
            assert_eq!(msg(&cfg), "budget.ratio.ratio must be in (0, 1]");
        }
        let cfg = with_budget(Budget::Ratio {
            ratio: 1.0,
            min_retries_per_sec: -1.0,
        });
        assert!(msg(&cfg).starts_with("budget.ratio.min_retries_per_sec must be"));
    }

    #[test]
    fn token_bucket_limits() {
        let tb = |max_tokens, retry_cost, timeout_retry_cost| {
            with_budget(Budget::TokenBucket {
                max_tokens,
                retry_cost,
                timeout_retry_cost,
                success_refund: 0,
            })
        };
        assert_eq!(
            msg(&tb(0, 5, 10)),
            "budget.token_bucket.max_tokens must be >= 1"
        );
        assert_eq!(
            msg(&tb(500, 0, 10)),
            "budget.token_bucket.retry_cost must be in [1, max_tokens]"
        );
        assert_eq!(
            msg(&tb(8, 5, 10)),
            "budget.token_bucket.timeout_retry_cost must be in [1, max_tokens]"
        );
        assert_eq!(tb(10, 5, 10).validate(), Ok(()));
    }

    #[test]
    fn grpc_limits() {
        let g = |max_tokens, token_ratio| {
            with_budget(Budget::GrpcThrottle {
                max_tokens,
                token_ratio,
            })
        };
        assert_eq!(
            msg(&g(0, 0.1)),
            "budget.grpc_throttle.max_tokens must be >= 1"
        );
        for r in [0.0, 0.0001, -1.0, f64::INFINITY] {
            assert!(msg(&g(10, r)).starts_with("budget.grpc_throttle.token_ratio must be >= 0.001"));
        }
    }

    #[test]
    fn adaptive_limits() {
        let a = |k, window| with_budget(Budget::Adaptive { k, window });
        assert_eq!(
            msg(&a(0.0, Duration::from_secs(1))),
            "budget.adaptive.k must be a finite number > 0"
        );
        assert_eq!(
            msg(&a(2.0, Duration::ZERO)),
            "budget.adaptive.window must be > 0"
        );
    }

    #[test]
    fn error_type_names_the_field() {
        let cfg = RetryConfig {
            max_attempts: 0,
            ..RetryConfig::no_retries()
        };
        let e = check(&cfg).unwrap_err();
        assert_eq!(e.field, "max_attempts");
    }
}
