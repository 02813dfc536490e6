//! Remembering which pages were computed before, in bounded memory.
//!
//! `pages_recomputed` is the signature of retry storms: the same page of the
//! same document computed again because the first result went to a caller who
//! had already given up. An exact set would grow without bound over a long
//! run, so two generations are kept: when the current one fills up it becomes
//! the previous one and the oldest generation is forgotten.

use std::collections::HashSet;

/// Default keys per generation (two generations: ~2M keys at most).
pub(crate) const DEFAULT_GENERATION: usize = 1 << 20;

type Key = (u64, u32);

/// An approximate "seen before" set with a memory bound.
pub(crate) struct SeenPages {
    current: HashSet<Key>,
    previous: HashSet<Key>,
    per_generation: usize,
}

impl SeenPages {
    pub fn new(per_generation: usize) -> Self {
        SeenPages {
            current: HashSet::new(),
            previous: HashSet::new(),
            per_generation: per_generation.max(1),
        }
    }

    /// Whether (doc_seed, page) was recorded (within the two generations kept).
    pub fn contains(&self, doc_seed: u64, page: u32) -> bool {
        let key = (doc_seed, page);
        self.current.contains(&key) || self.previous.contains(&key)
    }

    /// Records (doc_seed, page); returns whether it had been recorded before.
    pub fn insert(&mut self, doc_seed: u64, page: u32) -> bool {
        let key = (doc_seed, page);
        if self.current.contains(&key) {
            return true;
        }
        let seen = self.previous.contains(&key);
        // Re-inserting into the current generation keeps hot pages remembered.
        self.current.insert(key);
        if self.current.len() >= self.per_generation {
            self.previous = std::mem::take(&mut self.current);
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_within_two_generations_then_forgets() {
        let mut s = SeenPages::new(2);
        assert!(!s.insert(1, 0));
        assert!(s.insert(1, 0));
        assert!(!s.insert(1, 1)); // current full -> becomes previous
        assert!(s.insert(1, 0)); // found in previous, refreshed into current
        assert!(!s.insert(2, 0)); // rotate: previous = {(1,0),(2,0)}
        assert!(!s.insert(3, 0));
        assert!(!s.insert(4, 0)); // rotate: (1,0) and (2,0) are gone
        assert!(!s.insert(1, 1));
    }
}
