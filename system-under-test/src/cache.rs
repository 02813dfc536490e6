//! `ResultCache`: results of completed documents, shared by every worker.
//!
//! Seed 000's second defect lives here: a cache left at its storage limit that
//! *acknowledges* writes and then discards them, so completed documents are
//! recomputed when retried. `on_full` selects that behaviour (`ack_and_drop`)
//! or the fixes (`error`: a write that cannot be stored is an explicit,
//! counted error; `evict_oldest`: a cache sized and evicting like a real one).
//!
//! The trait is async so a networked backend (Redis) fits behind it. The
//! in-process backend keeps at most `capacity` entries.

use crate::config::{CacheConfig, OnFull};
use crate::entropy::Entropy;
use async_trait::async_trait;
use rand::Rng;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A write the cache refused, loudly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("result cache full: write of document {0} not stored")]
    Full(u64),
    #[error("result cache unavailable: {0}")]
    Unavailable(String),
}

/// Counters of the cache's health.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Writes the cache said it stored.
    pub writes_acked: u64,
    /// Of the acknowledged writes, those really stored.
    pub writes_stored: u64,
    /// Acknowledged, then discarded.
    pub writes_lost: u64,
    /// Refused with an error (the fix).
    pub write_errors: u64,
    pub entries: u64,
    pub capacity: u64,
}

#[async_trait]
pub trait ResultCache: Send + Sync + 'static {
    async fn get(&self, doc: u64) -> Option<u64>;
    /// Ok means acknowledged, which with the defect does not mean stored.
    async fn put(&self, doc: u64, digest: u64) -> Result<(), CacheError>;
    /// Fault: fill with `entries` filler entries (never more than the capacity).
    async fn fill(&self, entries: u64) -> Result<u64, CacheError>;
    /// Fault: fill to the storage limit.
    async fn fill_to_limit(&self) -> Result<u64, CacheError>;
    /// Fault: drop this share (0, 1] of the entries, chosen at random (1 =
    /// everything, a cold cache). Returns how many were dropped. Dropped
    /// results are not lost writes: the cache did not acknowledge and then
    /// discard them, an operator or a restart removed them.
    async fn flush(&self, share: f64) -> Result<u64, CacheError>;
    /// Operator / fault: switch what happens at the limit.
    fn set_on_full(&self, on_full: OnFull);
    fn stats(&self) -> CacheStats;
}

/// Keys of filler entries live above this, far from real document ids.
const FILLER_BASE: u64 = 1 << 63;

/// The in-process, bounded backend.
pub struct MemoryCache {
    state: Mutex<MemState>,
    capacity: u64,
    drop_ratio: f64,
    hits: AtomicU64,
    misses: AtomicU64,
    acked: AtomicU64,
    stored: AtomicU64,
    lost: AtomicU64,
    errors: AtomicU64,
    /// The draws of `ack_and_drop` and a partial flush.
    entropy: Entropy,
}

struct MemState {
    map: HashMap<u64, u64>,
    /// Insertion order, for `evict_oldest`; holds each key once.
    order: VecDeque<u64>,
    next_filler: u64,
    on_full: OnFull,
}

impl MemoryCache {
    pub fn new(cfg: &CacheConfig) -> Self {
        MemoryCache {
            state: Mutex::new(MemState {
                map: HashMap::new(),
                order: VecDeque::new(),
                next_filler: FILLER_BASE,
                on_full: cfg.on_full,
            }),
            capacity: cfg.capacity,
            drop_ratio: cfg.drop_ratio,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            entropy: Entropy::default(),
        }
    }

    /// Its draws from `entropy` instead of the thread's generator.
    pub(crate) fn with_entropy(mut self, entropy: Entropy) -> Self {
        self.entropy = entropy;
        self
    }

    fn insert_locked(st: &mut MemState, doc: u64, digest: u64) {
        if st.map.insert(doc, digest).is_none() {
            st.order.push_back(doc);
        }
    }

    fn fill_locked(&self, st: &mut MemState, entries: u64) -> u64 {
        let room = self.capacity.saturating_sub(st.map.len() as u64);
        let n = entries.min(room);
        for _ in 0..n {
            let k = st.next_filler;
            st.next_filler += 1;
            Self::insert_locked(st, k, 0);
        }
        n
    }
}

#[async_trait]
impl ResultCache for MemoryCache {
    async fn get(&self, doc: u64) -> Option<u64> {
        let v = self
            .state
            .lock()
            .expect("cache lock")
            .map
            .get(&doc)
            .copied();
        let c = if v.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        c.fetch_add(1, Ordering::Relaxed);
        v
    }

    async fn put(&self, doc: u64, digest: u64) -> Result<(), CacheError> {
        let mut st = self.state.lock().expect("cache lock");
        let full = st.map.len() as u64 >= self.capacity && !st.map.contains_key(&doc);
        if !full {
            Self::insert_locked(&mut st, doc, digest);
            self.acked.fetch_add(1, Ordering::Relaxed);
            self.stored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        match st.on_full {
            OnFull::AckAndDrop => {
                self.acked.fetch_add(1, Ordering::Relaxed);
                if self.entropy.with(|r| r.random_bool(self.drop_ratio)) {
                    self.lost.fetch_add(1, Ordering::Relaxed);
                } else {
                    // Stored by displacing a random entry, as an evicting store at its limit does.
                    let i = self.entropy.with(|r| r.random_range(0..st.order.len()));
                    if let Some(victim) = st.order.swap_remove_back(i) {
                        st.map.remove(&victim);
                    }
                    Self::insert_locked(&mut st, doc, digest);
                    self.stored.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
            OnFull::Error => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                Err(CacheError::Full(doc))
            }
            OnFull::EvictOldest => {
                if let Some(old) = st.order.pop_front() {
                    st.map.remove(&old);
                }
                Self::insert_locked(&mut st, doc, digest);
                self.acked.fetch_add(1, Ordering::Relaxed);
                self.stored.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    async fn fill(&self, entries: u64) -> Result<u64, CacheError> {
        let mut st = self.state.lock().expect("cache lock");
        Ok(self.fill_locked(&mut st, entries))
    }

    async fn fill_to_limit(&self) -> Result<u64, CacheError> {
        let mut st = self.state.lock().expect("cache lock");
        Ok(self.fill_locked(&mut st, u64::MAX))
    }

    async fn flush(&self, share: f64) -> Result<u64, CacheError> {
        let mut st = self.state.lock().expect("cache lock");
        let n = st.map.len();
        if share >= 1.0 {
            st.map.clear();
            st.order.clear();
            return Ok(n as u64);
        }
        let drop = ((n as f64) * share.max(0.0)).round() as usize;
        for _ in 0..drop {
            let i = self.entropy.with(|r| r.random_range(0..st.order.len()));
            if let Some(victim) = st.order.swap_remove_back(i) {
                st.map.remove(&victim);
            }
        }
        Ok(drop as u64)
    }

    fn set_on_full(&self, on_full: OnFull) {
        self.state.lock().expect("cache lock").on_full = on_full;
    }

    fn stats(&self) -> CacheStats {
        let entries = self.state.lock().expect("cache lock").map.len() as u64;
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            writes_acked: self.acked.load(Ordering::Relaxed),
            writes_stored: self.stored.load(Ordering::Relaxed),
            writes_lost: self.lost.load(Ordering::Relaxed),
            write_errors: self.errors.load(Ordering::Relaxed),
            entries,
            capacity: self.capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(on_full: OnFull, drop_ratio: f64) -> MemoryCache {
        MemoryCache::new(&CacheConfig {
            capacity: 4,
            on_full,
            drop_ratio,
            ..CacheConfig::default()
        })
    }

    #[tokio::test]
    async fn ack_and_drop_at_limit_loses_acknowledged_writes() {
        let c = cache(OnFull::AckAndDrop, 1.0);
        assert_eq!(c.fill_to_limit().await.unwrap(), 4);
        // Acknowledged...
        assert!(c.put(7, 99).await.is_ok());
        // ...and gone on the next read.
        assert_eq!(c.get(7).await, None);
        let s = c.stats();
        assert_eq!((s.writes_acked, s.writes_stored, s.writes_lost), (1, 0, 1));
    }

    #[tokio::test]
    async fn error_at_limit_fails_loudly() {
        let c = cache(OnFull::Error, 1.0);
        c.fill_to_limit().await.unwrap();
        assert_eq!(c.put(7, 99).await, Err(CacheError::Full(7)));
        let s = c.stats();
        assert_eq!((s.writes_acked, s.writes_lost, s.write_errors), (0, 0, 1));
    }

    #[tokio::test]
    async fn below_limit_everything_is_stored() {
        let c = cache(OnFull::AckAndDrop, 1.0);
        c.put(1, 10).await.unwrap();
        assert_eq!(c.get(1).await, Some(10));
        assert_eq!(c.get(2).await, None);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.writes_lost), (1, 1, 0));
    }

    #[tokio::test]
    async fn evict_oldest_stores_and_stays_bounded() {
        let c = cache(OnFull::EvictOldest, 1.0);
        for d in 0..10 {
            c.put(d, d * 2).await.unwrap();
        }
        assert_eq!(c.stats().entries, 4);
        assert_eq!(c.get(9).await, Some(18));
        assert_eq!(c.get(0).await, None);
    }

    #[tokio::test]
    async fn flush_drops_its_share_at_random_and_a_full_flush_empties() {
        let c = MemoryCache::new(&CacheConfig {
            capacity: 1000,
            on_full: OnFull::Error,
            ..CacheConfig::default()
        });
        for d in 0..100 {
            c.put(d, d).await.unwrap();
        }
        assert_eq!(c.flush(0.3).await.unwrap(), 30);
        assert_eq!(c.stats().entries, 70);
        let mut left = 0;
        for d in 0..100 {
            left += u64::from(c.get(d).await.is_some());
        }
        assert_eq!(left, 70);
        assert_eq!(c.flush(1.0).await.unwrap(), 70);
        assert_eq!(c.stats().entries, 0);
        assert_eq!(c.stats().writes_lost, 0, "a flush is not a lost write");
    }

    #[tokio::test]
    async fn fill_never_exceeds_capacity() {
        let c = cache(OnFull::Error, 1.0);
        c.put(1, 1).await.unwrap();
        assert_eq!(c.fill(100).await.unwrap(), 3);
        assert_eq!(c.stats().entries, 4);
    }
}
