//! Where the system's random draws come from.
//!
//! In real time each draw takes the thread's generator, as a service would.
//! A run on a virtual clock must replay exactly from its seed, so there one
//! generator, seeded by the run, serves every draw of the system (a zone's
//! failure ratio, Retry-After jitter, the gateway's retry jitter, the
//! cache's victims). Its tasks share one thread, so the draws come in the
//! same order on every replay.

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The source of one system's random draws; cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Entropy(Option<Arc<Mutex<StdRng>>>);

impl Entropy {
    /// Every draw from one generator seeded with `seed`.
    pub(crate) fn seeded(seed: u64) -> Entropy {
        Entropy(Some(Arc::new(Mutex::new(StdRng::seed_from_u64(seed)))))
    }

    /// Runs `f` with the generator: the thread's, or the seeded one.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut dyn RngCore) -> R) -> R {
        match &self.0 {
            None => f(&mut rand::rng()),
            Some(g) => f(&mut *g.lock().unwrap_or_else(PoisonError::into_inner)),
        }
    }

    /// What to add to a delay the system repeats (a page's split, a
    /// gateway retry's backoff) so that it ends as late as a real timer's.
    ///
    /// In real time, nothing: a tokio timer fires on the first 1-ms tick at
    /// or after its deadline, and from a random phase that is 0-1 ms late by
    /// itself. On the virtual clock every timer starts and ends exactly on a
    /// tick, so equal periods stay in phase for good: a document's page
    /// pushes, 5 ms apart, land on the 5-ms GPU batches' boundaries, and the
    /// documents in that phase always find the room a batch freed, which
    /// pulled queue-overflow out of a storm that real time stays in
    /// (docs/virtual-time.md). There, a seeded draw makes the delay one tick
    /// late half the time: the real clock's half a millisecond on average,
    /// and no phase kept.
    pub(crate) fn timer_lateness(&self) -> Duration {
        match self.0 {
            None => Duration::ZERO,
            Some(_) if self.with(|r| r.next_u32() & 1 == 1) => Duration::from_millis(1),
            Some(_) => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn only_a_seeded_source_makes_timers_late() {
        assert_eq!(Entropy::default().timer_lateness(), Duration::ZERO);
        let e = Entropy::seeded(7);
        let late: Vec<Duration> = (0..1000).map(|_| e.timer_lateness()).collect();
        let ticks = late
            .iter()
            .filter(|d| **d == Duration::from_millis(1))
            .count();
        assert!(late.iter().all(|d| *d <= Duration::from_millis(1)));
        assert!(
            (400..=600).contains(&ticks),
            "{ticks} of 1000 one tick late"
        );
    }

    #[test]
    fn a_seeded_source_replays_its_draws() {
        let draws = |e: &Entropy| -> Vec<u32> {
            (0..8)
                .map(|_| e.with(|r| r.random_range(0..1000)))
                .collect()
        };
        assert_eq!(draws(&Entropy::seeded(7)), draws(&Entropy::seeded(7)));
        assert_ne!(draws(&Entropy::seeded(7)), draws(&Entropy::seeded(8)));
    }
}
