//! `FailureCache`: short-lived memory of submissions that failed on queue overflow.
//!
//! Seed 002: "when the queue was full, failed submissions were not cached.
//! Repeated retries re-entered processing instead of being deduplicated." The
//! fix remembers a failed document for a TTL, so a duplicate retry within it is
//! rejected before it costs any work, with the remaining TTL as Retry-After.
//! A TTL of zero is the defect (nothing is remembered).
//!
//! Bound: at most `capacity` entries; the oldest is forgotten first. Because
//! the TTL is constant, insertion order is expiry order.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

pub struct FailureCache {
    ttl: Duration,
    capacity: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    expiry: HashMap<u64, Instant>,
    order: VecDeque<(u64, Instant)>,
}

impl FailureCache {
    pub fn new(ttl: Duration, capacity: u64) -> Self {
        FailureCache {
            ttl,
            capacity: capacity as usize,
            state: Mutex::new(State::default()),
        }
    }

    pub fn enabled(&self) -> bool {
        !self.ttl.is_zero()
    }

    /// Remembers that `doc` failed now.
    pub fn record(&self, doc: u64) {
        if !self.enabled() {
            return;
        }
        let now = Instant::now();
        let until = now + self.ttl;
        let mut st = self.state.lock().expect("failure cache lock");
        Self::purge(&mut st, now);
        while st.order.len() >= self.capacity {
            if let Some((k, at)) = st.order.pop_front() {
                if st.expiry.get(&k) == Some(&at) {
                    st.expiry.remove(&k);
                }
            }
        }
        st.expiry.insert(doc, until);
        st.order.push_back((doc, until));
    }

    /// Remaining time `doc` is remembered as failed, if it is.
    pub fn check(&self, doc: u64) -> Option<Duration> {
        if !self.enabled() {
            return None;
        }
        let now = Instant::now();
        let mut st = self.state.lock().expect("failure cache lock");
        Self::purge(&mut st, now);
        st.expiry
            .get(&doc)
            .map(|until| until.saturating_duration_since(now))
    }

    /// Forgets `doc` (it completed after all).
    pub fn forget(&self, doc: u64) {
        if self.enabled() {
            self.state
                .lock()
                .expect("failure cache lock")
                .expiry
                .remove(&doc);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.state.lock().expect("failure cache lock").expiry.len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn purge(st: &mut State, now: Instant) {
        while let Some(&(k, at)) = st.order.front() {
            if at > now {
                break;
            }
            st.order.pop_front();
            if st.expiry.get(&k) == Some(&at) {
                st.expiry.remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn remembers_for_ttl_then_forgets() {
        let fc = FailureCache::new(Duration::from_secs(2), 10);
        fc.record(5);
        assert_eq!(fc.check(5), Some(Duration::from_secs(2)));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(fc.check(5), Some(Duration::from_millis(500)));
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(fc.check(5), None);
        assert!(fc.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn zero_ttl_is_the_defect_nothing_remembered() {
        let fc = FailureCache::new(Duration::ZERO, 10);
        fc.record(5);
        assert_eq!(fc.check(5), None);
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_oldest_forgotten() {
        let fc = FailureCache::new(Duration::from_secs(10), 2);
        fc.record(1);
        fc.record(2);
        fc.record(3);
        assert_eq!(fc.len(), 2);
        assert_eq!(fc.check(1), None);
        assert!(fc.check(3).is_some());
    }
}
