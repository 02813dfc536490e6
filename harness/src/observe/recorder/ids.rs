//! Sets and maps of document ids with a cheap hash, for the recorder.
//!
//! Document ids are hashed by a few multiplications instead of SipHash: the
//! sets of ids are written on every attempt, under the recorder's lock, and
//! SipHash with its rehashing was about a tenth of the recorder's
//! instructions (callgrind). Ids come from the experiment's own seeded
//! workload, not from an adversary, so HashDoS resistance buys nothing.

use std::collections::{HashMap, HashSet};

/// The hasher of [`IdSet`].
#[derive(Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // murmur3's 64-bit finaliser: every input bit reaches the high bits
        // (hashbrown's tags) and the low ones (its bucket index).
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

pub(super) type IdSet = HashSet<u64, std::hash::BuildHasherDefault<IdHasher>>;

/// A map keyed by document id, hashed like [`IdSet`] (the watched documents,
/// looked up on every attempt's outcome).
pub(super) type IdMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<IdHasher>>;
