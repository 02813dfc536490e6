//! A sliding window of two counters in a fixed ring of time buckets.
//!
//! The SRE book's retry budget and adaptive throttling both count events "over
//! the last N seconds". Keeping one bucket per slice of the window (as Finagle's
//! `RetryBudget` and most SRE-style implementations do) bounds memory to a fixed
//! array however many requests a client sends, at the price of the window
//! sliding in steps of one bucket.
//!
//! Time is passed in. The first `now` seen is the origin; a `now` earlier than
//! the latest one seen (callers on other threads) is counted in the latest
//! bucket, so the window never moves backwards.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Absolute bucket number since the origin.
    index: u64,
    a: u64,
    b: u64,
}

/// Two counters (`a`, `b`) over the last `N` buckets of `width` each.
#[derive(Clone, Debug)]
pub(crate) struct Window<const N: usize> {
    width_nanos: u128,
    origin: Option<Instant>,
    latest: u64,
    slots: [Slot; N],
}

impl<const N: usize> Window<N> {
    /// A window covering `span`, split into `N` buckets (each at least 1 ns).
    pub(crate) fn new(span: Duration) -> Self {
        let n = N.max(1) as u128;
        Window {
            width_nanos: (span.as_nanos() / n).max(1),
            origin: None,
            latest: 0,
            slots: [Slot::default(); N],
        }
    }

    fn bucket(&mut self, now: Instant) -> u64 {
        let origin = *self.origin.get_or_insert(now);
        let idx = now.saturating_duration_since(origin).as_nanos() / self.width_nanos;
        let idx = u64::try_from(idx).unwrap_or(u64::MAX);
        self.latest = self.latest.max(idx);
        self.latest
    }

    /// Adds to the counters of the bucket holding `now`.
    pub(crate) fn add(&mut self, now: Instant, a: u64, b: u64) {
        let idx = self.bucket(now);
        let Some(slot) = self.slots.get_mut(idx as usize % N.max(1)) else {
            return;
        };
        if slot.index != idx {
            *slot = Slot {
                index: idx,
                a: 0,
                b: 0,
            };
        }
        slot.a = slot.a.saturating_add(a);
        slot.b = slot.b.saturating_add(b);
    }

    /// Sums of `(a, b)` over the buckets still inside the window at `now`.
    pub(crate) fn totals(&mut self, now: Instant) -> (u64, u64) {
        let idx = self.bucket(now);
        self.slots
            .iter()
            .filter(|s| s.index <= idx && idx - s.index < N as u64)
            .fold((0, 0), |(a, b), s| {
                (a.saturating_add(s.a), b.saturating_add(s.b))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn counts_inside_the_window_and_forgets_after() {
        let t0 = Instant::now();
        let mut w = Window::<10>::new(10 * S);
        w.add(t0, 5, 1);
        w.add(t0 + 3 * S, 2, 0);
        assert_eq!(w.totals(t0 + 3 * S), (7, 1));
        // Bucket 0 is still inside at 9.9 s, gone at 10 s.
        assert_eq!(w.totals(t0 + 9 * S + S / 2), (7, 1));
        assert_eq!(w.totals(t0 + 10 * S), (2, 0));
        assert_eq!(w.totals(t0 + 13 * S), (0, 0));
    }

    #[test]
    fn reused_slot_is_reset() {
        let t0 = Instant::now();
        let mut w = Window::<4>::new(4 * S);
        w.add(t0, 9, 9);
        w.add(t0 + 4 * S, 1, 0); // same slot, next lap
        assert_eq!(w.totals(t0 + 4 * S), (1, 0));
    }

    #[test]
    fn earlier_now_counts_in_latest_bucket() {
        let t0 = Instant::now();
        let mut w = Window::<10>::new(10 * S);
        w.add(t0 + 5 * S, 1, 0);
        w.add(t0 + 2 * S, 1, 0);
        assert_eq!(w.totals(t0 + 14 * S), (2, 0));
        assert_eq!(w.totals(t0 + 15 * S), (0, 0));
    }

    #[test]
    fn zero_span_does_not_panic() {
        let t0 = Instant::now();
        let mut w = Window::<3>::new(Duration::ZERO);
        w.add(t0, 1, 1);
        assert_eq!(w.totals(t0), (1, 1));
    }
}
