//! What a 503 tells the client about when to come back.
//!
//! Seed 000: "Each rejection told clients to retry after five seconds" whatever
//! the state of the pool, so rejected clients returned together and either too
//! early or too late. The fix estimates the wait from the queue depth and the
//! observed drain rate (mean slot hold time over slots) and adds jitter so the
//! rejected clients spread out.
//!
//! HTTP's `Retry-After` carries whole seconds, which is too coarse for the
//! compressed time scale of experiments, so responses also carry
//! `Retry-After-Ms`; clients prefer it when present.

use crate::config::RetryAfterMode;
use rand::Rng;
use std::time::Duration;

/// Header with millisecond precision, sent beside `Retry-After`.
pub const RETRY_AFTER_MS: &str = "retry-after-ms";

/// The pool state an estimate is made from.
#[derive(Debug, Clone, Copy)]
pub struct DrainState {
    pub queued: u32,
    pub slots: u32,
    pub mean_hold: Duration,
}

/// Retry-After advice for an overloaded pool.
pub fn advise(mode: &RetryAfterMode, state: DrainState, rng: &mut impl Rng) -> Duration {
    match mode {
        RetryAfterMode::Fixed { after } => *after,
        RetryAfterMode::Estimated { jitter, min, max } => {
            // Time until the queue ahead of us plus one slot drains.
            let per_slot = state.mean_hold.as_secs_f64() / f64::from(state.slots.max(1));
            let base = per_slot * f64::from(state.queued + 1);
            let j = if *jitter > 0.0 {
                rng.random_range(1.0 - jitter..1.0 + jitter)
            } else {
                1.0
            };
            Duration::from_secs_f64(base * j).clamp(*min, *max)
        }
    }
}

/// Bounds a time-until-ready advice as the mode bounds its own: an
/// estimate within `min..=max`; the fixed defect's advice is left as it is
/// (at least 1 ms, so a client never reads it as "now").
pub fn bounded(mode: &RetryAfterMode, advice: Duration) -> Duration {
    match mode {
        RetryAfterMode::Estimated { min, max, .. } => advice.clamp(*min, *max),
        RetryAfterMode::Fixed { .. } => advice.max(Duration::from_millis(1)),
    }
}

/// Retry-After for a duplicate of work already in progress: the expected remaining time.
pub fn remaining(expected_total: Duration, elapsed: Duration, min: Duration) -> Duration {
    expected_total.saturating_sub(elapsed).max(min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fixed_ignores_state() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let s = DrainState {
            queued: 100,
            slots: 4,
            mean_hold: Duration::from_millis(10),
        };
        let mode = RetryAfterMode::Fixed {
            after: Duration::from_secs(5),
        };
        assert_eq!(advise(&mode, s, &mut rng), Duration::from_secs(5));
    }

    #[test]
    fn estimated_follows_queue_and_drain_rate_with_jitter() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mode = RetryAfterMode::Estimated {
            jitter: 0.5,
            min: Duration::from_millis(1),
            max: Duration::from_secs(60),
        };
        let s = DrainState {
            queued: 7,
            slots: 4,
            mean_hold: Duration::from_millis(400),
        };
        // (400 ms / 4) * (7 + 1) = 800 ms, jittered into [400, 1200) ms.
        let mut distinct = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let d = advise(&mode, s, &mut rng);
            assert!(
                d >= Duration::from_millis(400) && d < Duration::from_millis(1200),
                "{d:?}"
            );
            distinct.insert(d.as_millis());
        }
        assert!(distinct.len() > 50, "jitter must spread clients out");
    }

    #[test]
    fn remaining_time_advice_is_bounded_like_the_modes_own() {
        let est = RetryAfterMode::Estimated {
            jitter: 0.5,
            min: Duration::from_millis(20),
            max: Duration::from_secs(2),
        };
        assert_eq!(
            bounded(&est, Duration::from_secs(9)),
            Duration::from_secs(2)
        );
        assert_eq!(bounded(&est, Duration::ZERO), Duration::from_millis(20));
        assert_eq!(
            bounded(&est, Duration::from_millis(700)),
            Duration::from_millis(700)
        );
        let fixed = RetryAfterMode::Fixed {
            after: Duration::from_secs(5),
        };
        assert_eq!(bounded(&fixed, Duration::ZERO), Duration::from_millis(1));
        assert_eq!(
            bounded(&fixed, Duration::from_secs(9)),
            Duration::from_secs(9)
        );
    }

    #[test]
    fn estimated_is_clamped() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mode = RetryAfterMode::Estimated {
            jitter: 0.0,
            min: Duration::from_millis(50),
            max: Duration::from_millis(100),
        };
        let idle = DrainState {
            queued: 0,
            slots: 4,
            mean_hold: Duration::ZERO,
        };
        assert_eq!(advise(&mode, idle, &mut rng), Duration::from_millis(50));
    }
}
