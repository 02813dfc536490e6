//! Client-side adaptive throttling (Google SRE book, ch. 21 "Handling Overload").
//!
//! Each client keeps, over the last two minutes, `requests` ("the number of
//! requests attempted by the application layer") and `accepts` ("the number of
//! requests accepted by the backend"), and rejects a new request locally,
//! without sending it, with probability
//!
//! `max(0, (requests - K * accepts) / (requests + 1))`
//!
//! with `K = 2` in the book. A locally rejected request still counts as a
//! request, so when the backend keeps failing the rejection probability keeps
//! rising and the load that reaches it falls towards `K * accepts`.
//!
//! Every attempt counts, retries included: a retry is a request to the
//! backend, and its success is an accept (without this, accepts could
//! outnumber requests).

use crate::window::Window;
use rand::Rng;
use std::time::{Duration, Instant};

/// Buckets in the window (2 s each for the default two minutes).
const BUCKETS: usize = 60;

/// `max(0, (requests - k * accepts) / (requests + 1))`, in `[0, 1]`.
pub fn rejection_probability(requests: u64, accepts: u64, k: f64) -> f64 {
    let p = (requests as f64 - k * accepts as f64) / (requests as f64 + 1.0);
    // A NaN `k` (an unvalidated config) never rejects.
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// State of one client's throttle. Counter `a` = requests, `b` = accepts.
#[derive(Clone, Debug)]
pub(crate) struct AdaptiveThrottle {
    k: f64,
    window: Window<BUCKETS>,
}

impl AdaptiveThrottle {
    pub(crate) fn new(k: f64, window: Duration) -> Self {
        AdaptiveThrottle {
            k,
            window: Window::new(window),
        }
    }

    /// Rejection probability now, from the counts over the window.
    pub(crate) fn probability(&mut self, now: Instant) -> f64 {
        let (requests, accepts) = self.window.totals(now);
        rejection_probability(requests, accepts, self.k)
    }

    /// An attempt is about to be made: decide whether to send it, and count
    /// it as a request either way. Draws from `rng` only when rejection is
    /// possible.
    pub(crate) fn admit(&mut self, now: Instant, rng: &mut impl Rng) -> bool {
        let p = self.probability(now);
        let admitted = p <= 0.0 || rng.random::<f64>() >= p;
        self.window.add(now, 1, 0);
        admitted
    }

    /// The backend accepted an attempt.
    pub(crate) fn on_accept(&mut self, now: Instant) {
        self.window.add(now, 0, 1);
    }

    #[cfg(test)]
    pub(crate) fn counts(&mut self, now: Instant) -> (u64, u64) {
        self.window.totals(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn formula_at_known_counts() {
        assert_eq!(rejection_probability(0, 0, 2.0), 0.0);
        assert_eq!(rejection_probability(100, 50, 2.0), 0.0);
        assert_eq!(rejection_probability(100, 100, 2.0), 0.0);
        let p = rejection_probability(100, 40, 2.0);
        assert!((p - 20.0 / 101.0).abs() < 1e-12, "{p}");
        let p = rejection_probability(100, 0, 2.0);
        assert!((p - 100.0 / 101.0).abs() < 1e-12, "{p}");
        let p = rejection_probability(10, 5, 1.1);
        assert!((p - 4.5 / 11.0).abs() < 1e-12, "{p}");
        assert_eq!(rejection_probability(10, 0, f64::NAN), 0.0);
    }

    #[test]
    fn probability_from_window_counts() {
        let t0 = Instant::now();
        let mut a = AdaptiveThrottle::new(2.0, 120 * S);
        let mut rng = StdRng::seed_from_u64(3);
        // 10 requests, 3 accepted: p = (10 - 2 * 3) / 11.
        for i in 0..10 {
            a.window.add(t0, 1, 0);
            if i < 3 {
                a.on_accept(t0);
            }
        }
        assert_eq!(a.counts(t0), (10, 3));
        let p = a.probability(t0);
        assert!((p - 4.0 / 11.0).abs() < 1e-12, "{p}");
        // A rejected request still counts as a request.
        let before = a.counts(t0).0;
        let _ = a.admit(t0, &mut rng);
        assert_eq!(a.counts(t0).0, before + 1);
    }

    #[test]
    fn healthy_backend_never_rejects() {
        let t0 = Instant::now();
        let mut a = AdaptiveThrottle::new(2.0, 120 * S);
        let mut rng = StdRng::seed_from_u64(4);
        for i in 0..10_000u32 {
            let now = t0 + Duration::from_millis(u64::from(i));
            assert!(a.admit(now, &mut rng));
            a.on_accept(now);
        }
    }

    #[test]
    fn empirical_rejection_rate_matches_formula() {
        let t0 = Instant::now();
        let mut rng = StdRng::seed_from_u64(5);
        // Fixed state: 1000 requests, 300 accepts -> p = 400 / 1001.
        let mut rejected = 0;
        let trials = 20_000;
        for _ in 0..trials {
            let mut a = AdaptiveThrottle::new(2.0, 120 * S);
            a.window.add(t0, 1000, 300);
            if !a.admit(t0, &mut rng) {
                rejected += 1;
            }
        }
        let rate = f64::from(rejected) / f64::from(trials);
        assert!((rate - 400.0 / 1001.0).abs() < 0.015, "{rate}");
    }

    #[test]
    fn dead_backend_converges_to_rejecting_almost_everything() {
        let t0 = Instant::now();
        let mut a = AdaptiveThrottle::new(2.0, 120 * S);
        let mut rng = StdRng::seed_from_u64(6);
        let sent = (0..1000).filter(|_| a.admit(t0, &mut rng)).count();
        // p = n / (n + 1) after n requests: only a handful get through.
        assert!(sent < 20, "{sent}");
        // Two minutes later the history is gone and requests flow again.
        assert!(a.admit(t0 + 120 * S, &mut rng));
    }
}
