//! `RetryPolicy` through its public API: decision order, Retry-After, each
//! budget's exhaustion and refill, stats, sharing across threads, and
//! reproducibility from a seed.

use rand::rngs::StdRng;
use rand::SeedableRng;
use retry_policy::{
    Backoff, Budget, Decision, Failure, GiveUpReason, Jitter, RetryConfig, RetryPolicy, RetryStats,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);
const OVERLOADED: Failure = Failure::Overloaded { retry_after: None };

fn rng() -> StdRng {
    StdRng::seed_from_u64(2024)
}

fn cfg(max_attempts: u32, budget: Budget) -> RetryConfig {
    RetryConfig {
        max_attempts,
        backoff: Backoff::Fixed { delay: 10 * MS },
        budget,
        ..RetryConfig::no_retries()
    }
}

fn retry(after: Duration) -> Decision {
    Decision::Retry { after }
}

const EXHAUSTED: Decision = Decision::GiveUp(GiveUpReason::AttemptsExhausted);
const BUDGET: Decision = Decision::GiveUp(GiveUpReason::BudgetExhausted);

#[test]
fn no_retries_gives_up_after_the_first_attempt() {
    let p = RetryPolicy::new(RetryConfig::no_retries());
    let now = Instant::now();
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut rng()), EXHAUSTED);
    assert_eq!(p.stats(), RetryStats::default());
}

#[test]
fn attempts_exhausted_after_max_attempts() {
    let p = RetryPolicy::new(cfg(3, Budget::None));
    let (now, mut r) = (Instant::now(), rng());
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), retry(10 * MS));
    assert_eq!(p.on_failure(2, Failure::Error, now, &mut r), retry(10 * MS));
    assert_eq!(p.on_failure(3, Failure::Error, now, &mut r), EXHAUSTED);
    assert_eq!(p.on_failure(9, Failure::Error, now, &mut r), EXHAUSTED);
    assert_eq!(p.stats().retries_allowed, 2);
}

#[test]
fn timeouts_follow_retry_on_timeout_after_the_attempts_check() {
    let mut c = cfg(2, Budget::None);
    assert_eq!(
        RetryPolicy::new(c.clone()).on_failure(1, Failure::Timeout, Instant::now(), &mut rng()),
        retry(10 * MS)
    );
    c.retry_on_timeout = false;
    let p = RetryPolicy::new(c);
    let now = Instant::now();
    assert_eq!(
        p.on_failure(1, Failure::Timeout, now, &mut rng()),
        Decision::GiveUp(GiveUpReason::NotRetryable)
    );
    assert_eq!(
        p.on_failure(2, Failure::Timeout, now, &mut rng()),
        EXHAUSTED
    );
    assert_eq!(
        p.on_failure(1, Failure::Error, now, &mut rng()),
        retry(10 * MS)
    );
}

#[test]
fn retry_after_is_honoured_and_capped_only_when_configured() {
    let mut c = cfg(5, Budget::None);
    let told = |secs| Failure::Overloaded {
        retry_after: Some(secs * S),
    };
    let now = Instant::now();
    // Not honoured: the backoff delay.
    let p = RetryPolicy::new(c.clone());
    assert_eq!(p.on_failure(1, told(7), now, &mut rng()), retry(10 * MS));
    // Honoured, uncapped.
    c.honour_retry_after = true;
    let p = RetryPolicy::new(c.clone());
    assert_eq!(p.on_failure(1, told(7), now, &mut rng()), retry(7 * S));
    // Honoured, capped at 5 s.
    c.retry_after_cap = Some(5 * S);
    let p = RetryPolicy::new(c);
    assert_eq!(p.on_failure(1, told(7), now, &mut rng()), retry(5 * S));
    assert_eq!(p.on_failure(1, told(3), now, &mut rng()), retry(3 * S));
    // Absent Retry-After, or another failure: the backoff delay.
    assert_eq!(p.on_failure(1, OVERLOADED, now, &mut rng()), retry(10 * MS));
    assert_eq!(
        p.on_failure(1, Failure::Error, now, &mut rng()),
        retry(10 * MS)
    );
}

#[test]
fn exponential_full_jitter_through_the_policy() {
    let c = RetryConfig {
        max_attempts: 10,
        backoff: Backoff::Exponential {
            base: 100 * MS,
            cap: 1000 * MS,
            jitter: Jitter::Full,
        },
        ..RetryConfig::no_retries()
    };
    let p = RetryPolicy::new(c);
    let (now, mut r) = (Instant::now(), rng());
    for attempt in 1..10 {
        let ceiling = retry_policy::exponential_ceiling(100 * MS, 1000 * MS, attempt);
        for _ in 0..200 {
            match p.on_failure(attempt, Failure::Error, now, &mut r) {
                Decision::Retry { after } => assert!(after <= ceiling),
                d => panic!("{d:?}"),
            }
        }
    }
}

#[test]
fn token_bucket_exhaustion_and_refill() {
    let p = RetryPolicy::new(cfg(3, Budget::token_bucket_default()));
    let (now, mut r) = (Instant::now(), rng());
    assert_eq!(p.budget_tokens(), Some(500.0));
    for _ in 0..100 {
        assert_eq!(p.on_failure(1, OVERLOADED, now, &mut r), retry(10 * MS));
    }
    assert_eq!(p.budget_tokens(), Some(0.0));
    assert_eq!(p.on_failure(1, OVERLOADED, now, &mut r), BUDGET);
    // Attempts are checked first: no charge, no budget denial counted.
    assert_eq!(p.on_failure(3, OVERLOADED, now, &mut r), EXHAUSTED);
    // Five first-attempt successes buy one retry.
    for _ in 0..5 {
        p.on_success(now);
    }
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), retry(10 * MS));
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), BUDGET);
    // A successful retry gives back its cost: 10 after a timeout.
    p.on_retry_success(Failure::Timeout, now);
    assert_eq!(p.budget_tokens(), Some(10.0));
    assert_eq!(
        p.on_failure(1, Failure::Timeout, now, &mut r),
        retry(10 * MS)
    );
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), BUDGET);
    assert_eq!(
        p.stats(),
        RetryStats {
            requests: 0,
            retries_allowed: 102,
            retries_denied_by_budget: 3,
            throttled_locally: 0
        }
    );
}

#[test]
fn grpc_throttle_stops_at_exactly_half() {
    let p = RetryPolicy::new(cfg(5, Budget::grpc_throttle_default()));
    let (now, mut r) = (Instant::now(), rng());
    // 10 tokens: failures take it to 9, 8, 7, 6 (retry), then 5 (no retry).
    for _ in 0..4 {
        assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), retry(10 * MS));
    }
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), BUDGET);
    assert_eq!(p.budget_tokens(), Some(5.0));
    // Ten successes: 6.0; a failure takes it back to 5.0, at half: no retry.
    for _ in 0..10 {
        p.on_success(now);
    }
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), BUDGET);
    // Eleven successes: 6.1 -> failure -> 5.1 > 5: retry.
    for _ in 0..11 {
        p.on_retry_success(Failure::Error, now);
    }
    assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), retry(10 * MS));
}

#[test]
fn grpc_counts_failures_even_when_no_retry_follows() {
    let p = RetryPolicy::new(cfg(1, Budget::grpc_throttle_default()));
    let (now, mut r) = (Instant::now(), rng());
    for _ in 0..3 {
        assert_eq!(p.on_failure(1, Failure::Error, now, &mut r), EXHAUSTED);
    }
    assert_eq!(p.budget_tokens(), Some(7.0));
    // Non-retryable failures do not count (gRFC A6).
    let mut c = cfg(3, Budget::grpc_throttle_default());
    c.retry_on_timeout = false;
    let p = RetryPolicy::new(c);
    p.on_failure(1, Failure::Timeout, now, &mut r);
    assert_eq!(p.budget_tokens(), Some(10.0));
}

#[test]
fn ratio_budget_counts_admitted_requests() {
    let budget = Budget::Ratio {
        ratio: 0.1,
        min_retries_per_sec: 0.0,
    };
    let p = RetryPolicy::new(cfg(3, budget));
    let (t0, mut r) = (Instant::now(), rng());
    assert_eq!(p.on_failure(1, OVERLOADED, t0, &mut r), BUDGET);
    for _ in 0..50 {
        assert!(p.admit_request(t0, &mut r));
    }
    let allowed = (0..20)
        .filter(|_| p.on_failure(1, OVERLOADED, t0, &mut r) != BUDGET)
        .count();
    assert_eq!(allowed, 5);
    // After the 10 s window, the budget is empty again (no new requests).
    assert_eq!(p.on_failure(1, OVERLOADED, t0 + 11 * S, &mut r), BUDGET);
    let st = p.stats();
    assert_eq!((st.requests, st.retries_allowed), (50, 5));
    assert_eq!(st.retries_denied_by_budget, 17);
}

#[test]
fn adaptive_throttling_rejects_locally_when_the_backend_fails() {
    let p = RetryPolicy::new(cfg(3, Budget::adaptive_default()));
    let (t0, mut r) = (Instant::now(), rng());
    // Healthy: every attempt accepted, nothing rejected.
    for i in 0..1000u32 {
        let now = t0 + i * MS;
        assert!(p.admit_request(now, &mut r));
        p.on_success(now);
    }
    // Backend goes dark: requests keep counting, accepts stop. Once requests
    // exceed 2 * accepts (2000), rejections start and grow.
    let t1 = t0 + S;
    let admitted = (0..3000).filter(|_| p.admit_request(t1, &mut r)).count();
    let rejected = 3000 - admitted;
    assert!(rejected > 0 && admitted > 1000, "{admitted} admitted");
    let st = p.stats();
    assert_eq!(st.requests, 4000);
    assert_eq!(st.throttled_locally, rejected as u64);
    // Retries go through the same throttle.
    let throttled = (0..1000)
        .filter(|_| {
            p.on_failure(1, Failure::Error, t1, &mut r) == Decision::GiveUp(GiveUpReason::Throttled)
        })
        .count();
    assert!(throttled > 0);
    assert_eq!(p.stats().throttled_locally, (rejected + throttled) as u64);
    // Two minutes later the window has forgotten the outage.
    assert!(p.admit_request(t1 + 121 * S, &mut r));
}

#[test]
fn other_budgets_always_admit() {
    for budget in [
        Budget::None,
        Budget::token_bucket_default(),
        Budget::grpc_throttle_default(),
        Budget::ratio_default(),
    ] {
        let p = RetryPolicy::new(cfg(3, budget));
        let (now, mut r) = (Instant::now(), rng());
        assert!((0..1000).all(|_| p.admit_request(now, &mut r)));
        assert_eq!(p.stats().throttled_locally, 0);
    }
}

#[test]
fn seeded_runs_reproduce() {
    let run = |seed| {
        let c = RetryConfig {
            max_attempts: 4,
            backoff: Backoff::default(),
            budget: Budget::adaptive_default(),
            ..RetryConfig::no_retries()
        };
        let p = RetryPolicy::new(c);
        let mut r = StdRng::seed_from_u64(seed);
        let t0 = Instant::now();
        (0..200u32)
            .map(|i| {
                let now = t0 + i * MS;
                let admitted = p.admit_request(now, &mut r);
                (
                    admitted,
                    p.on_failure(1 + (i % 4), Failure::Error, now, &mut r),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(11), run(11));
}

#[test]
fn shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RetryPolicy>();
    let p = Arc::new(RetryPolicy::new(cfg(3, Budget::token_bucket_default())));
    let now = Instant::now();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                let mut r = StdRng::seed_from_u64(t);
                (0..100)
                    .filter(|_| p.on_failure(1, OVERLOADED, now, &mut r) != BUDGET)
                    .count()
            })
        })
        .collect();
    let allowed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(allowed, 100);
    assert_eq!(p.stats().retries_allowed, 100);
    assert_eq!(p.config().max_attempts, 3);
}
