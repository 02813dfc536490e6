//! Where the system's random draws come from.
//!
//! In real time each draw takes the thread's generator, as a service would.
//! A run on a virtual clock must replay exactly from its seed, so there one
//! generator, seeded by the run, serves every draw of the system (a zone's
//! failure ratio, Retry-After jitter, the gateway's retry jitter, the
//! cache's victims). Its tasks share one thread, so the draws come in the
//! same order on every replay. Being seeded is also how the system knows it
//! runs on the virtual clock, whose timers need the real clock's lateness
//! added ([`Entropy::timer_lateness`]).

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
    /// gateway retry's backoff) so that it ends when a real timer would.
    ///
    /// In real time, nothing: a tokio timer fires on the first 1-ms tick at
    /// or after its deadline, and a timer started by a task that was just
    /// woken starts a little after a tick, so a 5-ms delay repeated back to
    /// back takes 6 ms each time by itself. On the virtual clock every timer
    /// starts and ends exactly on a tick, so the same delay takes 5 ms, and
    /// equal periods stay in phase for good: a document's page pushes landed
    /// on the 5-ms GPU batches' boundaries, and the documents in that phase
    /// always found the room a batch freed, which pulled queue-overflow out
    /// of a storm that real time stays in (BENCHMARKS.md, "Virtual against
    /// real time"). There the delay ends one tick later, as in real time.
    pub(crate) fn timer_lateness(&self) -> Duration {
        match self.0 {
            None => Duration::ZERO,
            Some(_) => Duration::from_millis(1),
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
        assert_eq!(
            Entropy::seeded(7).timer_lateness(),
            Duration::from_millis(1)
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
