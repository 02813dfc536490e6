//! `AdmissionGate`: the pool's worker slots and its bounded queue.
//!
//! A request needs a slot to be processed (or, with the seed-000 dedup defect,
//! to wait for a duplicate's result). When every slot is busy it may wait in a
//! queue of at most `queue` requests; beyond that it is rejected with 503
//! "Server overloaded". The gate also measures how long slots are held, which
//! is what an accurate Retry-After is estimated from.
//!
//! Bounds: at most `slots` holders and `queue` waiters; nothing else is stored.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Why a request got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    #[error("all slots busy and the queue is full")]
    Overloaded,
    #[error("deadline passed while queued for a slot")]
    DeadlineInQueue,
}

/// Worker slots plus a bounded queue.
#[derive(Clone)]
pub struct AdmissionGate {
    inner: Arc<GateInner>,
}

struct GateInner {
    slots: Arc<Semaphore>,
    /// Slots the operator has configured (permits may lag while shrinking).
    total: AtomicU32,
    queue_cap: u32,
    queued: AtomicU32,
    /// Exponentially weighted mean of how long a slot is held, in microseconds.
    hold_ewma_us: AtomicU64,
    /// Permits taken away while shrinking, waiting to be forgotten.
    shrink: Mutex<u32>,
}

/// A held slot; dropping it frees the slot and records how long it was held.
pub struct SlotPermit {
    _permit: OwnedSemaphorePermit,
    gate: Arc<GateInner>,
    acquired: Instant,
}

impl Drop for SlotPermit {
    fn drop(&mut self) {
        let held = self.acquired.elapsed().as_micros() as u64;
        // EWMA with alpha = 1/16: stable under bursts, still follows load changes within a second.
        let _ = self
            .gate
            .hold_ewma_us
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == 0 {
                    held
                } else {
                    old - old / 16 + held / 16
                })
            });
    }
}

impl AdmissionGate {
    pub fn new(slots: u32, queue: u32) -> Self {
        AdmissionGate {
            inner: Arc::new(GateInner {
                slots: Arc::new(Semaphore::new(slots as usize)),
                total: AtomicU32::new(slots),
                queue_cap: queue,
                queued: AtomicU32::new(0),
                hold_ewma_us: AtomicU64::new(0),
                shrink: Mutex::new(0),
            }),
        }
    }

    /// Takes a free slot at once, or waits in the queue until `deadline`.
    pub async fn acquire(&self, deadline: Instant) -> Result<SlotPermit, AdmissionError> {
        let g = &self.inner;
        if let Ok(p) = g.slots.clone().try_acquire_owned() {
            return Ok(self.permit(p));
        }
        // Reserve a queue place, or reject.
        let reserved = g
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                (q < g.queue_cap).then_some(q + 1)
            })
            .is_ok();
        if !reserved {
            return Err(AdmissionError::Overloaded);
        }
        let _leave = QueueLeave(g);
        match tokio::time::timeout_at(deadline, g.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(self.permit(p)),
            Ok(Err(_closed)) => Err(AdmissionError::Overloaded),
            Err(_elapsed) => Err(AdmissionError::DeadlineInQueue),
        }
    }

    fn permit(&self, p: OwnedSemaphorePermit) -> SlotPermit {
        SlotPermit {
            _permit: p,
            gate: self.inner.clone(),
            acquired: Instant::now(),
        }
    }

    /// Slots configured now.
    pub fn slots(&self) -> u32 {
        self.inner.total.load(Ordering::Relaxed)
    }

    /// Slots held right now.
    pub fn busy(&self) -> u32 {
        let g = &self.inner;
        let avail = g.slots.available_permits() as u32;
        let pending_shrink = *g.shrink.lock().expect("shrink lock");
        (g.total.load(Ordering::Relaxed) + pending_shrink).saturating_sub(avail)
    }

    /// Requests waiting for a slot right now.
    pub fn queued(&self) -> u32 {
        self.inner.queued.load(Ordering::Relaxed)
    }

    /// Mean time a slot is held, as measured (zero before the first release).
    pub fn mean_hold(&self) -> Duration {
        Duration::from_micros(self.inner.hold_ewma_us.load(Ordering::Relaxed))
    }

    /// Operator action: change the number of slots. Growing is immediate;
    /// shrinking takes slots away as their holders release them.
    pub fn set_slots(&self, slots: u32) {
        let g = &self.inner;
        let old = g.total.swap(slots, Ordering::AcqRel);
        if slots > old {
            let mut shrink = g.shrink.lock().expect("shrink lock");
            // Cancel pending shrinkage first.
            let mut add = slots - old;
            let cancel = add.min(*shrink);
            *shrink -= cancel;
            add -= cancel;
            g.slots.add_permits(add as usize);
        } else if slots < old {
            let take = old - slots;
            *g.shrink.lock().expect("shrink lock") += take;
            let inner = self.inner.clone();
            tokio::spawn(async move {
                for _ in 0..take {
                    // Stop if a later grow cancelled the pending shrinkage.
                    if *inner.shrink.lock().expect("shrink lock") == 0 {
                        break;
                    }
                    match inner.slots.clone().acquire_owned().await {
                        Ok(p) => {
                            let mut s = inner.shrink.lock().expect("shrink lock");
                            if *s > 0 {
                                *s -= 1;
                                p.forget();
                            }
                        }
                        Err(_) => break,
                    }
                }
            });
        }
    }
}

struct QueueLeave<'a>(&'a GateInner);
impl Drop for QueueLeave<'_> {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[tokio::test(start_paused = true)]
    async fn rejects_beyond_slots_and_queue() {
        let gate = AdmissionGate::new(2, 1);
        let a = gate.acquire(far()).await.unwrap();
        let _b = gate.acquire(far()).await.unwrap();
        assert_eq!(gate.busy(), 2);
        let g2 = gate.clone();
        let queued = tokio::spawn(async move { g2.acquire(far()).await.map(|_| ()) });
        tokio::task::yield_now().await;
        assert_eq!(gate.queued(), 1);
        assert_eq!(
            gate.acquire(far()).await.err(),
            Some(AdmissionError::Overloaded)
        );
        drop(a);
        assert!(queued.await.unwrap().is_ok());
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn queued_request_times_out_at_its_deadline() {
        let gate = AdmissionGate::new(1, 4);
        let _a = gate.acquire(far()).await.unwrap();
        let r = gate
            .acquire(Instant::now() + Duration::from_millis(100))
            .await;
        assert_eq!(r.err(), Some(AdmissionError::DeadlineInQueue));
        assert_eq!(gate.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn hold_time_is_measured() {
        let gate = AdmissionGate::new(1, 0);
        let p = gate.acquire(far()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(p);
        assert_eq!(gate.mean_hold(), Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn set_slots_grows_and_shrinks() {
        let gate = AdmissionGate::new(1, 0);
        let a = gate.acquire(far()).await.unwrap();
        gate.set_slots(3);
        let b = gate.acquire(far()).await.unwrap();
        let c = gate.acquire(far()).await.unwrap();
        assert_eq!(gate.busy(), 3);
        gate.set_slots(1);
        drop((a, b, c));
        tokio::time::sleep(Duration::from_millis(1)).await;
        let _x = gate.acquire(far()).await.unwrap();
        assert_eq!(
            gate.acquire(far()).await.err(),
            Some(AdmissionError::Overloaded)
        );
        assert_eq!(gate.slots(), 1);
    }
}
