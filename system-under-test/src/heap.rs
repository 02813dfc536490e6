//! `Heap`: the memory a pool's requests hold while in flight, and a garbage
//! collector whose share of the CPU grows with it, as a JVM's does. It is
//! the system's capacity-degradation mechanism (Huang et al., OSDI'22, the
//! GC case): a load spike puts more requests in flight, their memory makes
//! the collector take more of the CPU, every request's work slows down, so
//! still more are in flight, and the memory stays held after the spike.
//!
//! The model. A request admitted to compute allocates `request_mb + page_mb
//! x pages` and holds it until its document's work has ended, also when its
//! caller has gone (a timed-out request's work keeps its memory). A
//! collection marks the live memory L, so it costs in proportion to L, and
//! collections come as often as allocation fills the free heap H - L: at
//! the allocation rate of the load, the collector's share of the CPU is
//! `collector_cost x L / (H - L)` (so `collector_cost` at a half-full
//! heap), at most [`MAX_COLLECTOR_SHARE`] (where a JVM gives up: "GC
//! overhead limit exceeded"). The workers run at `1 - share` of their
//! speed: the pool's CPU work, `split_time` per page, takes
//! `split_time / (1 - share)`. A request whose memory does not fit in the
//! heap fails at once (out of memory).
//!
//! Defect: admission does not look at memory (`admit_below` absent), so a
//! spike can fill the heap. Fix: `admit_below: S` admits a request only
//! while live memory with its own stays within S of the heap; the rest are
//! refused at once (503), so the share stays at most
//! `collector_cost x S / (1 - S)`.
//!
//! Off unless a pool's `heap:` is set; nothing else reads it.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The collector's share of the CPU at most (a JVM's GC overhead limit).
pub const MAX_COLLECTOR_SHARE: f64 = 0.98;

/// Memory is counted in KiB (whole numbers: the same sums on every replay).
const KIB_PER_MB: f64 = 1024.0;

/// A pool's heap and its collector (`pool.heap`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeapConfig {
    /// The heap's size, in MB.
    pub capacity_mb: f64,
    /// Memory a request holds while its work is in flight, in MB ...
    pub request_mb: f64,
    /// ... plus this much per page of its document.
    pub page_mb: f64,
    /// The collector's share of the CPU when the heap is half full; it
    /// grows as live / free memory.
    pub collector_cost: f64,
    /// Fix: admit a request only while live memory with its own stays
    /// within this share of the heap (refused at once otherwise). Absent:
    /// admission does not look at memory (the defect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admit_below: Option<f64>,
}

impl HeapConfig {
    /// Why these values cannot work: `(field, message)`.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        let finite_pos = |x: f64| x.is_finite() && x > 0.0;
        if !finite_pos(self.capacity_mb) {
            return Err(("capacity_mb", "must be > 0"));
        }
        for (field, v) in [("request_mb", self.request_mb), ("page_mb", self.page_mb)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err((field, "must be >= 0"));
            }
        }
        if self.request_mb + self.page_mb <= 0.0 {
            return Err(("request_mb", "request_mb + page_mb must be > 0"));
        }
        if !(finite_pos(self.collector_cost) && self.collector_cost <= 10.0) {
            return Err(("collector_cost", "must be in (0, 10]"));
        }
        if let Some(s) = self.admit_below {
            if !(s > 0.0 && s < 1.0) {
                return Err(("admit_below", "must be in (0, 1)"));
            }
        }
        Ok(())
    }
}

/// Why a request got no memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeapError {
    #[error("the request's memory does not fit in the heap (out of memory)")]
    OutOfMemory,
    #[error("admitting the request would take live memory over the admission bound")]
    OverBound,
}

/// One pool's heap.
#[derive(Clone)]
pub struct Heap {
    inner: Arc<HeapInner>,
}

struct HeapInner {
    cfg: HeapConfig,
    capacity_kib: u64,
    live_kib: AtomicU64,
}

/// Memory held by one request's work; dropping it frees the memory.
pub struct Allocation {
    heap: Arc<HeapInner>,
    kib: u64,
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.heap.live_kib.fetch_sub(self.kib, Ordering::AcqRel);
    }
}

impl Heap {
    pub fn new(cfg: HeapConfig) -> Self {
        let capacity_kib = (cfg.capacity_mb * KIB_PER_MB).round() as u64;
        Heap {
            inner: Arc::new(HeapInner {
                cfg,
                capacity_kib,
                live_kib: AtomicU64::new(0),
            }),
        }
    }

    /// The memory of a request for a document of `pages` pages, in KiB.
    fn request_kib(&self, pages: u32) -> u64 {
        let c = &self.inner.cfg;
        ((c.request_mb + c.page_mb * f64::from(pages)) * KIB_PER_MB).round() as u64
    }

    /// Allocates a request's memory, or says why not (nothing is taken then).
    pub fn allocate(&self, pages: u32) -> Result<Allocation, HeapError> {
        let g = &self.inner;
        let kib = self.request_kib(pages);
        let bound = match g.cfg.admit_below {
            Some(s) => (s * g.capacity_kib as f64) as u64,
            None => g.capacity_kib,
        };
        g.live_kib
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |live| {
                (live + kib <= bound).then_some(live + kib)
            })
            .map_err(|live| {
                if live + kib > g.capacity_kib {
                    HeapError::OutOfMemory
                } else {
                    HeapError::OverBound
                }
            })?;
        Ok(Allocation {
            heap: g.clone(),
            kib,
        })
    }

    /// Live memory now, in MB.
    pub fn live_mb(&self) -> f64 {
        self.inner.live_kib.load(Ordering::Acquire) as f64 / KIB_PER_MB
    }

    pub fn capacity_mb(&self) -> f64 {
        self.inner.capacity_kib as f64 / KIB_PER_MB
    }

    /// The collector's share of the CPU at the live memory now.
    pub fn collector_share(&self) -> f64 {
        let live = self.inner.live_kib.load(Ordering::Acquire) as f64;
        let free = self.inner.capacity_kib as f64 - live;
        if free <= 0.0 {
            return MAX_COLLECTOR_SHARE;
        }
        (self.inner.cfg.collector_cost * live / free).min(MAX_COLLECTOR_SHARE)
    }

    /// How long `work` of a worker's CPU takes while the collector takes its share.
    pub fn dilate(&self, work: Duration) -> Duration {
        work.div_f64(1.0 - self.collector_share())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heap(admit_below: Option<f64>) -> Heap {
        Heap::new(HeapConfig {
            capacity_mb: 100.0,
            request_mb: 2.0,
            page_mb: 1.0,
            collector_cost: 0.1,
            admit_below,
        })
    }

    fn assert_close(d: Duration, secs: f64) {
        assert!(
            (d.as_secs_f64() - secs).abs() < 1e-6,
            "{d:?} against {secs} s"
        );
    }

    #[test]
    fn memory_is_held_until_the_allocation_drops() {
        let h = heap(None);
        let a = h.allocate(8).unwrap();
        assert_eq!(h.live_mb(), 10.0);
        let b = h.allocate(3).unwrap();
        assert_eq!(h.live_mb(), 15.0);
        drop(a);
        assert_eq!(h.live_mb(), 5.0);
        drop(b);
        assert_eq!(h.live_mb(), 0.0);
        assert_eq!(h.collector_share(), 0.0);
    }

    #[test]
    fn the_collector_share_grows_with_live_memory_and_slows_the_work() {
        let h = heap(None);
        let _half = h.allocate(48).unwrap(); // 50 of 100 MB
        assert!((h.collector_share() - 0.1).abs() < 1e-9);
        assert_close(h.dilate(Duration::from_millis(90)), 0.1);
        let _more = h.allocate(38).unwrap(); // 90 MB: 0.1 x 90 / 10
        assert!((h.collector_share() - 0.9).abs() < 1e-9);
        let _full = h.allocate(8).unwrap(); // 100 MB: the cap
        assert_eq!(h.collector_share(), MAX_COLLECTOR_SHARE);
        assert_close(h.dilate(Duration::from_millis(20)), 1.0);
    }

    #[test]
    fn a_request_that_does_not_fit_is_out_of_memory_and_takes_nothing() {
        let h = heap(None);
        let _a = h.allocate(90).unwrap(); // 92 MB
        assert_eq!(h.allocate(7).err(), Some(HeapError::OutOfMemory));
        assert_eq!(h.live_mb(), 92.0);
        assert!(h.allocate(6).is_ok());
    }

    #[test]
    fn the_fix_admits_only_within_its_share_of_the_heap() {
        let h = heap(Some(0.5));
        let _a = h.allocate(40).unwrap(); // 42 MB
        assert_eq!(h.allocate(7).err(), Some(HeapError::OverBound));
        assert!(h.allocate(6).is_ok()); // 50 MB exactly
        assert!(h.collector_share() <= 0.1 + 1e-9);
    }

    #[test]
    fn bad_values_are_named() {
        let mut c = heap(None).inner.cfg.clone();
        c.admit_below = Some(1.0);
        assert_eq!(c.check().unwrap_err().0, "admit_below");
        c.admit_below = None;
        c.collector_cost = 0.0;
        assert_eq!(c.check().unwrap_err().0, "collector_cost");
    }
}
