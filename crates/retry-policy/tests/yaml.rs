//! Parsing of `RetryConfig` from experiment YAML with serde-saphyr: every
//! variant, the published defaults, humantime durations, and rejection of
//! unknown keys at every level.

use retry_policy::{Backoff, Budget, Jitter, RetryConfig};
use std::time::Duration;

fn parse(yaml: &str) -> RetryConfig {
    match serde_saphyr::from_str::<RetryConfig>(yaml) {
        Ok(cfg) => cfg,
        Err(e) => panic!("{yaml}: {e}"),
    }
}

fn parse_err(yaml: &str) -> String {
    match serde_saphyr::from_str::<RetryConfig>(yaml) {
        Ok(cfg) => panic!("{yaml} parsed as {cfg:?}"),
        Err(e) => e.to_string(),
    }
}

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

#[test]
fn minimal_config_takes_defaults() {
    let cfg = parse("max_attempts: 3\n");
    assert_eq!(cfg.max_attempts, 3);
    assert_eq!(cfg.backoff, Backoff::default());
    assert_eq!(
        cfg.backoff,
        Backoff::Exponential {
            base: 100 * MS,
            cap: 20 * S,
            jitter: Jitter::Full
        }
    );
    assert_eq!(cfg.retry_after_cap, None);
    assert!(!cfg.honour_retry_after);
    assert_eq!(cfg.budget, Budget::None);
    assert!(cfg.retry_on_timeout);
    assert_eq!(cfg.validate().map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn backoff_variants() {
    assert_eq!(
        parse("max_attempts: 2\nbackoff: none\n").backoff,
        Backoff::None
    );
    assert_eq!(
        parse("max_attempts: 2\nbackoff: { fixed: { delay: 1s } }\n").backoff,
        Backoff::Fixed { delay: S }
    );
    assert_eq!(
        parse(
            "max_attempts: 2\nbackoff: { exponential: { base: 100ms, cap: 5s, jitter: full } }\n"
        )
        .backoff,
        Backoff::Exponential {
            base: 100 * MS,
            cap: 5 * S,
            jitter: Jitter::Full
        }
    );
    for (text, jitter) in [
        ("none", Jitter::None),
        ("equal", Jitter::Equal),
        ("full", Jitter::Full),
    ] {
        let cfg = parse(&format!(
            "max_attempts: 2\nbackoff:\n  exponential:\n    base: 125ms\n    cap: 2s\n    jitter: {text}\n"
        ));
        assert_eq!(
            cfg.backoff,
            Backoff::Exponential {
                base: 125 * MS,
                cap: 2 * S,
                jitter
            }
        );
    }
    assert_eq!(
        parse("max_attempts: 2\nbackoff: { exponential: {} }\n").backoff,
        Backoff::default()
    );
}

#[test]
fn retry_after_fields() {
    let cfg = parse("max_attempts: 4\nhonour_retry_after: true\nretry_after_cap: 30s\nretry_on_timeout: false\n");
    assert!(cfg.honour_retry_after);
    assert_eq!(cfg.retry_after_cap, Some(30 * S));
    assert!(!cfg.retry_on_timeout);
}

#[test]
fn budget_variants_explicit() {
    let b = |yaml: &str| parse(&format!("max_attempts: 3\nbudget: {yaml}\n")).budget;
    assert_eq!(b("none"), Budget::None);
    assert_eq!(
        b("{ ratio: { ratio: 0.2, min_retries_per_sec: 5 } }"),
        Budget::Ratio {
            ratio: 0.2,
            min_retries_per_sec: 5.0
        }
    );
    assert_eq!(
        b("{ token_bucket: { max_tokens: 100, retry_cost: 2, timeout_retry_cost: 4, success_refund: 0 } }"),
        Budget::TokenBucket {
            max_tokens: 100,
            retry_cost: 2,
            timeout_retry_cost: 4,
            success_refund: 0
        }
    );
    assert_eq!(
        b("{ grpc_throttle: { max_tokens: 20, token_ratio: 0.5 } }"),
        Budget::GrpcThrottle {
            max_tokens: 20,
            token_ratio: 0.5
        }
    );
    assert_eq!(
        b("{ adaptive: { k: 1.5, window: 30s } }"),
        Budget::Adaptive {
            k: 1.5,
            window: 30 * S
        }
    );
}

#[test]
fn budget_variants_take_published_defaults() {
    let b = |yaml: &str| parse(&format!("max_attempts: 3\nbudget: {yaml}\n")).budget;
    assert_eq!(b("{ ratio: {} }"), Budget::ratio_default());
    assert_eq!(
        Budget::ratio_default(),
        Budget::Ratio {
            ratio: 0.1,
            min_retries_per_sec: 10.0
        }
    );
    assert_eq!(b("{ token_bucket: {} }"), Budget::token_bucket_default());
    assert_eq!(
        Budget::token_bucket_default(),
        Budget::TokenBucket {
            max_tokens: 500,
            retry_cost: 5,
            timeout_retry_cost: 10,
            success_refund: 1
        }
    );
    assert_eq!(b("{ grpc_throttle: {} }"), Budget::grpc_throttle_default());
    assert_eq!(
        Budget::grpc_throttle_default(),
        Budget::GrpcThrottle {
            max_tokens: 10,
            token_ratio: 0.1
        }
    );
    assert_eq!(b("{ adaptive: {} }"), Budget::adaptive_default());
    assert_eq!(
        Budget::adaptive_default(),
        Budget::Adaptive {
            k: 2.0,
            window: 120 * S
        }
    );
}

#[test]
fn unknown_keys_are_rejected_at_every_level() {
    let e = parse_err("max_attempts: 3\nmax_attempt: 4\n");
    assert!(e.contains("unknown field `max_attempt`"), "{e}");
    let e = parse_err("max_attempts: 3\nbackoff: { fixed: { delay: 1s, jitter: full } }\n");
    assert!(e.contains("unknown field `jitter`"), "{e}");
    let e = parse_err("max_attempts: 3\nbackoff: { exponential: { base: 1s, max: 5s } }\n");
    assert!(e.contains("unknown field `max`"), "{e}");
    let e = parse_err("max_attempts: 3\nbudget: { token_bucket: { capacity: 500 } }\n");
    assert!(e.contains("unknown field `capacity`"), "{e}");
    let e = parse_err("max_attempts: 3\nbudget: { adaptive: { K: 2 } }\n");
    assert!(e.contains("unknown field `K`"), "{e}");
}

#[test]
fn unknown_variants_and_bad_values_are_rejected() {
    let e = parse_err("max_attempts: 3\nbudget: leaky_bucket\n");
    assert!(e.contains("leaky_bucket"), "{e}");
    let e = parse_err("max_attempts: 3\nbackoff: { exponential: { jitter: decorrelated } }\n");
    assert!(e.contains("decorrelated"), "{e}");
    parse_err("max_attempts: 3\nbackoff: { fixed: { delay: soon } }\n");
    parse_err("max_attempts: 3\nbackoff: { fixed: {} }\n");
}

#[test]
fn max_attempts_defaults_to_a_single_attempt() {
    // So a variant can override only a budget: `retry: { budget: ... }`.
    assert_eq!(parse("backoff: none\n").max_attempts, 1);
}

#[test]
fn parsed_but_invalid_values_fail_validate() {
    let cfg = parse("max_attempts: 0\n");
    assert_eq!(
        cfg.validate().map_err(|e| e.to_string()),
        Err("max_attempts must be >= 1".to_string())
    );
    let cfg = parse("max_attempts: 3\nbudget: { ratio: { ratio: 1.5 } }\n");
    assert_eq!(
        cfg.validate().map_err(|e| e.to_string()),
        Err("budget.ratio.ratio must be in (0, 1]".to_string())
    );
    let cfg = parse("max_attempts: 3\nbackoff: { exponential: { base: 2s, cap: 1s } }\n");
    assert_eq!(
        cfg.validate().map_err(|e| e.to_string()),
        Err("backoff.exponential.cap must be >= base".to_string())
    );
}

#[test]
fn serialises_back_to_the_same_config() {
    let cfg = parse(
        "max_attempts: 5\nbackoff: { exponential: { base: 50ms, cap: 3s, jitter: equal } }\n\
         honour_retry_after: true\nretry_after_cap: 10s\n\
         budget: { adaptive: { k: 2.0, window: 2m } }\nretry_on_timeout: false\n",
    );
    let text = serde_saphyr::to_string(&cfg).unwrap();
    assert_eq!(parse(&text), cfg, "{text}");
    for budget in [
        Budget::None,
        Budget::ratio_default(),
        Budget::token_bucket_default(),
        Budget::grpc_throttle_default(),
    ] {
        let cfg = RetryConfig {
            budget,
            ..RetryConfig::no_retries()
        };
        let text = serde_saphyr::to_string(&cfg).unwrap();
        assert_eq!(parse(&text), cfg, "{text}");
    }
}
