//! The delay before a retry: none, fixed, or capped exponential with jitter.
//!
//! Formulas from the AWS Architecture Blog, "Exponential Backoff and Jitter"
//! (Marc Brooker, 2015), which is also what the AWS SDK standard retry mode and
//! gRFC A6 (`random(0, min(initialBackoff * multiplier^(n-1), maxBackoff))`)
//! use. With `ceiling = min(cap, base * 2^(attempt - 1))`:
//!
//! * full jitter: `uniform(0, ceiling)`,
//! * equal jitter: `ceiling / 2 + uniform(0, ceiling / 2)`,
//! * no jitter: `ceiling` (every client retries in lockstep: the storm case).
//!
//! Jitter matters here because the harness reproduces retry storms: clients
//! that failed together retry together unless the delay is randomised.
//! Randomness comes from the caller's RNG so a run is reproducible from a seed.

use crate::config::{Backoff, Jitter};
use rand::Rng;
use std::time::Duration;

/// Delay before the retry that follows failed attempt `attempt` (1-based:
/// 1 = the first attempt just failed). Attempt 0 is treated as 1; large
/// attempt numbers saturate at the cap instead of overflowing.
pub fn backoff_delay(backoff: &Backoff, attempt: u32, rng: &mut impl Rng) -> Duration {
    match *backoff {
        Backoff::None => Duration::ZERO,
        Backoff::Fixed { delay } => delay,
        Backoff::Exponential { base, cap, jitter } => {
            let ceiling = exponential_ceiling(base, cap, attempt);
            match jitter {
                Jitter::None => ceiling,
                Jitter::Full => uniform(rng, ceiling),
                Jitter::Equal => {
                    let half = ceiling / 2;
                    half + uniform(rng, ceiling - half)
                }
            }
        }
    }
}

/// `min(cap, base * 2^(attempt - 1))`, saturating at `cap`.
pub fn exponential_ceiling(base: Duration, cap: Duration, attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1);
    if exp >= 32 {
        return cap;
    }
    base.checked_mul(1u32 << exp).map_or(cap, |d| d.min(cap))
}

/// Uniform in `[0, max]`, at nanosecond resolution.
fn uniform(rng: &mut impl Rng, max: Duration) -> Duration {
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.random_range(0..=nanos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    const MS: Duration = Duration::from_millis(1);

    fn exp(jitter: Jitter) -> Backoff {
        Backoff::Exponential {
            base: 100 * MS,
            cap: 5000 * MS,
            jitter,
        }
    }

    #[test]
    fn none_and_fixed() {
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(backoff_delay(&Backoff::None, 3, &mut rng), Duration::ZERO);
        let fixed = Backoff::Fixed { delay: 700 * MS };
        for attempt in 1..10 {
            assert_eq!(backoff_delay(&fixed, attempt, &mut rng), 700 * MS);
        }
    }

    #[test]
    fn ceiling_doubles_then_caps() {
        let c = |n| exponential_ceiling(100 * MS, 5000 * MS, n);
        assert_eq!(c(0), 100 * MS);
        assert_eq!(c(1), 100 * MS);
        assert_eq!(c(2), 200 * MS);
        assert_eq!(c(3), 400 * MS);
        assert_eq!(c(6), 3200 * MS);
        assert_eq!(c(7), 5000 * MS);
        assert_eq!(c(40), 5000 * MS);
        assert_eq!(c(u32::MAX), 5000 * MS);
        // A product that overflows Duration saturates at the cap.
        assert_eq!(
            exponential_ceiling(Duration::MAX, Duration::MAX, 5),
            Duration::MAX
        );
    }

    #[test]
    fn no_jitter_is_the_ceiling() {
        let mut rng = StdRng::seed_from_u64(2);
        assert_eq!(backoff_delay(&exp(Jitter::None), 3, &mut rng), 400 * MS);
        assert_eq!(backoff_delay(&exp(Jitter::None), 30, &mut rng), 5000 * MS);
    }

    /// Full jitter: every sample in `[0, min(cap, base * 2^(n-1))]`, mean about half.
    #[test]
    fn full_jitter_bounds_and_mean() {
        let mut rng = StdRng::seed_from_u64(42);
        for attempt in 1..=9 {
            let ceiling = exponential_ceiling(100 * MS, 5000 * MS, attempt);
            let n = 20_000u32;
            let mut sum = Duration::ZERO;
            for _ in 0..n {
                let d = backoff_delay(&exp(Jitter::Full), attempt, &mut rng);
                assert!(d <= ceiling, "attempt {attempt}: {d:?} > {ceiling:?}");
                sum += d;
            }
            let mean = (sum / n).as_secs_f64();
            let half = ceiling.as_secs_f64() / 2.0;
            assert!(
                (mean - half).abs() < 0.03 * half,
                "attempt {attempt}: mean {mean} vs {half}"
            );
        }
    }

    #[test]
    fn equal_jitter_bounds_and_mean() {
        let mut rng = StdRng::seed_from_u64(7);
        let ceiling = 800 * MS; // attempt 4
        let n = 20_000u32;
        let mut sum = Duration::ZERO;
        for _ in 0..n {
            let d = backoff_delay(&exp(Jitter::Equal), 4, &mut rng);
            assert!(d >= ceiling / 2 && d <= ceiling, "{d:?}");
            sum += d;
        }
        let mean = (sum / n).as_secs_f64();
        assert!((mean - 0.6).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn seeded_runs_reproduce() {
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (1..=8)
                .map(|a| backoff_delay(&exp(Jitter::Full), a, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(9), draw(9));
        assert_ne!(draw(9), draw(10));
    }
}
