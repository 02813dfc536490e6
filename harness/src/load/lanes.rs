//! The load path's lanes: one thread per core, each a single-threaded tokio
//! runtime that drives its shard of the arrivals over connections of its
//! own.
//!
//! On tokio's multi-threaded runtime an attempt wakes two tasks (its journey
//! and hyper's connection task), often on different workers, and each such
//! wake-up is an eventfd write or a futex call in the kernel: with the spin
//! locks and context switches around them, a large share of the load path's
//! CPU. wrk runs one event loop per thread; so do the lanes. A journey, its connections and their
//! tasks live on one thread, where waking one another is a push on that
//! thread's queue. The lanes share the recorder, the clients' retry
//! policies (`client_policies::ClientPolicies`) and goose's reports, each behind a
//! lock, not a wake-up; goose's user is woken once per batch of reports.
//!
//! Document k of the plan goes to lane k mod L, as load agents shard
//! (`agent/shard.rs`), and each lane gets its share of the in-flight cap for
//! its connections and its arrivals alike: the lanes together open at most
//! `max_in_flight` connections, and an arrival that finds its lane at its
//! share waits and is counted late.
//!
//! The lanes' threads live as long as the process and are named
//! `harness-load` (their blocking threads too), so the CPU they use stays in
//! the per-thread accounts that the cost panel and `harness bench` read
//! (`cpu.rs`): a thread that ended would take its CPU time with it.

use crate::base::interrupt::StopSignal;
use crate::load::journey::{self, JourneyContext};
use crate::load::workload::Document;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Most lanes, whatever the core count: past a few, lanes only split the
/// in-flight cap finer.
const MAX_LANES: usize = 16;

/// One lane's work: its documents, its share of the cap, and the context
/// its journeys share (its own connection pool inside).
pub(crate) struct LanePlan {
    /// Sorted by planned time.
    pub documents: Vec<Document>,
    pub max_in_flight: u64,
    pub start: Instant,
    /// Arrivals stop here.
    pub load_end: Instant,
    pub stop: Arc<StopSignal>,
    pub ctx: Arc<JourneyContext>,
}

/// A lane's journeys in flight, and the wake-up of its arrivals waiting at
/// the cap or for the last journey. Journeys and arrivals run on the lane's
/// one thread, so the wake-up is a push on that thread's queue. (A poll
/// every 5 ms instead left the lane idle while answers came back: 1,500
/// waits in a 6-s ceiling run, a third of the machine idle. A `JoinSet`
/// instead took a lock per journey spawned and per journey ended.)
struct InFlight {
    count: AtomicU64,
    cap: u64,
    ended: Notify,
}

/// One journey of a lane in flight, until dropped (ended, or unwound by a
/// panic: the lane's drain would otherwise wait for it forever).
struct Flying(Arc<InFlight>);

impl Flying {
    fn new(lane: &Arc<InFlight>) -> Flying {
        lane.count.fetch_add(1, Ordering::Relaxed);
        Flying(lane.clone())
    }
}

impl Drop for Flying {
    fn drop(&mut self) {
        let before = self.0.count.fetch_sub(1, Ordering::Relaxed);
        // Only arrivals at the cap, or a drain waiting for the last
        // journey, can be waiting: other ends wake nobody.
        if before >= self.0.cap || before == 1 {
            self.0.ended.notify_one();
        }
    }
}

/// What a lane did: journeys spawned and connections opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaneOutcome {
    pub spawned: u64,
    pub connections: u64,
}

/// Overrides the lane count (one per core by default).
pub(crate) const LANES_VAR: &str = "HARNESS_LOAD_LANES";

/// Why the load's lanes cannot run (kept, and cloned to every later
/// caller, since the lanes start once per process).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LanesError {
    #[error("{LANES_VAR}={0:?}: a whole number of lanes from 1 to {MAX_LANES}")]
    BadCount(String),
    #[error("starting a load lane: {0}")]
    Start(String),
}

/// How many lanes: `var` (1..=16) when set, else one per core.
fn lane_count(var: Option<&str>) -> Result<usize, LanesError> {
    match var {
        None => Ok(std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, MAX_LANES)),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_LANES).contains(&n) => Ok(n),
            _ => Err(LanesError::BadCount(v.to_string())),
        },
    }
}

/// The process's lanes, started at the first load.
#[derive(Clone, Copy)]
pub(crate) struct Lanes(&'static [Handle]);

impl Lanes {
    /// The lanes, started on the first call: one per core, or
    /// `HARNESS_LOAD_LANES` of them (a diagnostic: the virtual clock runs
    /// one lane, and comparing the clocks needs real time with one too).
    pub(crate) fn get() -> Result<Lanes, LanesError> {
        static LANES: OnceLock<Result<Vec<Handle>, LanesError>> = OnceLock::new();
        LANES
            .get_or_init(|| {
                let n = lane_count(std::env::var(LANES_VAR).ok().as_deref())?;
                (0..n)
                    .map(|_| start_lane().map_err(|e| LanesError::Start(e.to_string())))
                    .collect()
            })
            .as_deref()
            .map(Lanes)
            .map_err(Clone::clone)
    }

    /// How many lanes a load with this in-flight cap runs on: one per
    /// core, and never more than the cap (each lane needs a share of one).
    pub(crate) fn count(self, max_in_flight: u64) -> usize {
        self.0.len().min(max_in_flight.max(1) as usize)
    }

    /// Runs `lane`'s arrivals on lane thread `i`.
    pub(crate) fn spawn(self, i: usize, lane: LanePlan) -> JoinHandle<LaneOutcome> {
        self.0[i % self.0.len()].spawn(arrivals(lane))
    }
}

/// A single-threaded runtime on a thread of its own that runs whatever is
/// spawned on its handle, for the life of the process.
fn start_lane() -> std::io::Result<Handle> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .thread_name(crate::base::cpu::LOAD_THREADS)
        .thread_keep_alive(Duration::from_secs(3600))
        .enable_all()
        .build()?;
    let handle = rt.handle().clone();
    std::thread::Builder::new()
        .name(crate::base::cpu::LOAD_THREADS.into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))?;
    Ok(handle)
}

/// Lane `i`'s share of `total` over `n` lanes: the shares differ by at
/// most one and sum to `total`.
pub(crate) fn share(total: u64, i: usize, n: usize) -> u64 {
    let (i, n) = (i as u64, n as u64);
    total / n + u64::from(i < total % n)
}

/// The plan's documents dealt to `n` lanes: document k to lane k mod n,
/// each lane's in the plan's order.
pub(crate) fn deal(plan: Vec<Document>, n: usize) -> Vec<Vec<Document>> {
    let n = n.max(1);
    let mut lanes: Vec<Vec<Document>> = (0..n)
        .map(|_| Vec::with_capacity(plan.len() / n + 1))
        .collect();
    for (k, d) in plan.into_iter().enumerate() {
        lanes[k % n].push(d);
    }
    lanes
}

/// The lane's open-loop arrivals: each document's journey spawned at its
/// planned time, then every journey waited for (each ends by the hard stop).
pub(crate) async fn arrivals(lane: LanePlan) -> LaneOutcome {
    let ctx = lane.ctx;
    // One task cuts every journey of the lane off at the variant's end.
    let end = tokio::spawn({
        let ctx = ctx.clone();
        async move { ctx.watch_end().await }
    });
    let cap = lane.max_in_flight;
    let in_flight = Arc::new(InFlight {
        count: AtomicU64::new(0),
        cap,
        ended: Notify::new(),
    });
    let mut spawned = 0u64;
    for doc in lane.documents {
        let due = lane.start + doc.planned;
        if due >= lane.load_end || lane.stop.is_set() {
            break;
        }
        // An arrival already due (the lane is behind) takes no timer.
        if due > Instant::now() {
            tokio::time::sleep_until(due).await;
        }
        // Open loop with a safety cap: if the lane's share of journeys is
        // in flight the arrival waits for one to end, and is counted late.
        if in_flight.count.load(Ordering::Relaxed) >= cap {
            ctx.recorder.late();
            while in_flight.count.load(Ordering::Relaxed) >= cap && !lane.stop.is_set() {
                // biased: an unbiased select! draws its first branch from
                // the runtime's random seed, which a virtual run cannot replay.
                tokio::select! {
                    biased;
                    _ = in_flight.ended.notified() => {},
                    _ = lane.stop.wait() => {},
                }
            }
        }
        let (ctx, flying) = (ctx.clone(), Flying::new(&in_flight));
        // Boxed: the journey's future is a few KB (its attempt's HTTP
        // request inside); tokio copies a task's future into its cell when
        // spawned and its stage again when it finishes. A box is copied
        // once and those moves copy a pointer.
        tokio::spawn(Box::pin(async move {
            journey::run(ctx, doc, due).await;
            drop(flying);
        }));
        spawned += 1;
        // Behind schedule nothing above waits: give the thread back now and
        // then, as the timer did, so the journeys spawned here get to run.
        tokio::task::consume_budget().await;
    }
    // Every journey ends by the hard stop on its own.
    while in_flight.count.load(Ordering::Relaxed) > 0 {
        in_flight.ended.notified().await;
    }
    end.abort();
    LaneOutcome {
        spawned,
        connections: ctx.http.connections_opened(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lane_count_is_one_per_core_or_the_variables() {
        assert!(lane_count(None).unwrap() >= 1);
        assert_eq!(lane_count(Some("1")), Ok(1));
        assert_eq!(lane_count(Some(" 3 ")), Ok(3));
        for bad in ["0", "17", "two", ""] {
            let e = lane_count(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(LANES_VAR), "{e}");
        }
    }

    #[test]
    fn the_shares_of_the_cap_sum_to_it_and_differ_by_at_most_one() {
        for total in [1u64, 2, 3, 7, 512, 513] {
            for n in 1..=5usize {
                let shares: Vec<u64> = (0..n).map(|i| share(total, i, n)).collect();
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {n}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{total} over {n}: {shares:?}");
            }
        }
    }

    #[test]
    fn every_document_goes_to_exactly_one_lane_in_order() {
        let plan: Vec<Document> = (0..10u64)
            .map(|id| Document {
                id,
                planned: Duration::from_millis(id * 10),
                class: None,
                pages: 1,
                tenant: "t1".into(),
            })
            .collect();
        for n in 1..=4usize {
            let mut ids: Vec<u64> = Vec::new();
            for (i, lane) in deal(plan.clone(), n).into_iter().enumerate() {
                assert!(lane.windows(2).all(|w| w[0].planned <= w[1].planned));
                assert!(lane.iter().all(|d| d.id as usize % n == i));
                ids.extend(lane.iter().map(|d| d.id));
            }
            ids.sort_unstable();
            assert_eq!(ids, (0..10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_cap_below_the_core_count_takes_fewer_lanes() {
        let lanes = Lanes::get().unwrap();
        assert_eq!(lanes.count(1), 1);
        assert!(lanes.count(512) >= 1);
    }
}
