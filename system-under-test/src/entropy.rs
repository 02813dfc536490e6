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
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

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
