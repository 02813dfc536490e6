//! The scheduling loop: one batch at a time, like one GPU.
//!
//! Each batch is computed for real on the executor (on a blocking thread, so the
//! runtime keeps serving requests) and then held until its modeled end time
//! `start + page_time / speed_factor` (or until the real compute ended, when
//! that was later). Using tokio's clock for that makes capacity the configured
//! one on any machine, and lets tests run under `tokio::time::pause()`
//! deterministically: the end time is absolute, and on the current-thread
//! runtime tokio does not auto-advance paused time while a `spawn_blocking`
//! task runs.
//!
//! The schedule is absolute: a batch whose pages were already queued when the
//! previous batch ended starts at that end, not when the loop got round to
//! it. The loop wakes after `sleep_until(end)` late (tokio rounds each wake-up
//! up to its 1-ms tick, and the host may be busy); starting each batch at the
//! wake-up would let that lag add up batch after batch and the GPU deliver
//! less than its model. So the lag delays when a batch's results are handed
//! out, never the next batch's start.
//!
//! The loop also measures its own pacing (`paced_secs` against
//! `paced_target_secs`, see [`SchedulerStats`](super::SchedulerStats)): the
//! schedule as kept, against `page_time / speed` alone. It shows real compute
//! slower than the model and a loop that woke more than a batch late (time
//! lost for good, see `start_of`); the report warns when they add up.

use super::state::InFlight;
use super::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::time::Instant as Clock;

/// The previous batch, as scheduled.
#[derive(Clone, Copy)]
struct Previous {
    start: Clock,
    /// When it ended: its modeled end, or the real compute's end when later.
    end: Clock,
    /// `page_time / speed` when it ran.
    modeled: Duration,
}

/// A batch taken from the queue.
struct Next {
    pages: Vec<InFlight>,
    modeled: Duration,
    /// The loop found the queue empty (or no lanes) and waited for work.
    waited: bool,
    /// When the queue last went from empty to non-empty.
    queued_since: Clock,
}

/// When a batch taken at `now` starts on the modeled GPU, and whether it
/// followed the previous one back to back (its pages were queued when that
/// one ended).
///
/// A batch the loop had to wait for starts now. Otherwise it starts when the
/// GPU was free and its pages were there: at the previous end, or when the
/// queue filled again if that was later (pages that arrived while the loop
/// was waking up). Catch-up is bounded to one batch: if that start lies more
/// than the batch's own modeled time in the past, the batch starts now and
/// the time is lost. Starting it in the past would end it at once, and every
/// batch after it too until the schedule caught up: a burst of pages faster
/// than the modeled GPU could compute, after a stall of the host (not of the
/// modeled GPU), which is the kind of burst these experiments are sensitive
/// to. Within one batch a late wake-up is absorbed (the batch is held for
/// what remains of its modeled time), which is all tokio's tick needs.
fn start_of(
    previous: Option<Previous>,
    waited: bool,
    queued_since: Clock,
    now: Clock,
    modeled: Duration,
) -> (Clock, bool) {
    let Some(previous) = previous.filter(|_| !waited) else {
        return (now, false);
    };
    let back_to_back = queued_since <= previous.end;
    let start = previous.end.max(queued_since).min(now);
    if now.saturating_duration_since(start) > modeled {
        (now, back_to_back)
    } else {
        (start, back_to_back)
    }
}

/// Runs until shutdown (explicit, or every `GpuScheduler` clone dropped).
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut previous: Option<Previous> = None;
    loop {
        let Some(next) = next_batch(&shared).await else {
            return;
        };
        let (batch, modeled) = (next.pages, next.modeled);
        let taken = Clock::now();
        let (start, back_to_back) =
            start_of(previous, next.waited, next.queued_since, taken, modeled);
        // Back-to-back batches, as scheduled: from the previous start to this
        // one, against the previous batch's modeled time alone.
        let paced = previous
            .filter(|_| back_to_back)
            .map(|p| (start.saturating_duration_since(p.start), p.modeled));
        let specs: Vec<_> = batch.iter().map(|b| b.spec).collect();
        let executor = shared.executor.clone();
        let compute = move || {
            let t = Instant::now();
            let r = executor.compute(&specs);
            (r, t.elapsed())
        };
        let computed = match shared.compute {
            super::Compute::Blocking => tokio::task::spawn_blocking(compute).await,
            // On a paused clock the batch takes no modeled time: its real
            // compute is not the GPU's (and would make the run's counters
            // differ from one replay to the next).
            super::Compute::Inline => Ok((compute().0, Duration::ZERO)),
        };
        // The GPU cannot hand out a batch before it was computed.
        let end = start.checked_add(modeled).map(|end| end.max(Clock::now()));
        match end {
            Some(end) => tokio::time::sleep_until(end).await,
            None => tokio::time::sleep(modeled).await,
        }
        previous = end.map(|end| Previous {
            start,
            end,
            modeled,
        });
        let mut st = shared.lock();
        st.stats.busy = false;
        if let Some((took, target)) = paced {
            st.stats.paced_secs += took.as_secs_f64();
            st.stats.paced_target_secs += target.as_secs_f64();
        }
        if st.shutdown {
            return;
        }
        match computed {
            Ok((Ok(values), real)) if values.len() == batch.len() => {
                st.stats.real_compute_secs += real.as_secs_f64();
                st.deliver(&batch, &values);
            }
            Ok((Ok(values), real)) => {
                st.stats.real_compute_secs += real.as_secs_f64();
                let msg = format!(
                    "executor returned {} results for {} pages",
                    values.len(),
                    batch.len()
                );
                st.fail(&batch, &msg);
            }
            Ok((Err(e), real)) => {
                st.stats.real_compute_secs += real.as_secs_f64();
                st.fail(&batch, &e.to_string());
            }
            Err(join) => st.fail(&batch, &format!("executor panicked: {join}")),
        }
    }
}

/// Waits for queued pages (and lanes > 0); returns the batch, its modeled
/// duration, whether the loop had to wait for it (an idle GPU), and since
/// when pages have been queued.
async fn next_batch(shared: &Shared) -> Option<Next> {
    let mut waited = false;
    loop {
        {
            let mut st = shared.lock();
            if st.shutdown {
                return None;
            }
            let queued_since = st.queued_since;
            let pages = st.take_batch();
            if !pages.is_empty() {
                st.stats.busy = true;
                let modeled = modeled_batch_time(shared.page_time, st.speed_factor);
                return Some(Next {
                    pages,
                    modeled,
                    waited,
                    queued_since,
                });
            }
        }
        // notify_one stores a permit, so a wake-up between the check and here is not lost.
        shared.notify.notified().await;
        waited = true;
    }
}

/// `page_time / speed_factor`, saturating instead of panicking on extreme factors.
pub(crate) fn modeled_batch_time(page_time: Duration, speed_factor: f64) -> Duration {
    Duration::try_from_secs_f64(page_time.as_secs_f64() / speed_factor).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modeled_time_scales_and_saturates() {
        let t = Duration::from_millis(100);
        assert_eq!(modeled_batch_time(t, 0.5), Duration::from_millis(200));
        assert_eq!(modeled_batch_time(t, 2.0), Duration::from_millis(50));
        assert_eq!(modeled_batch_time(t, 0.0), Duration::MAX);
    }

    const BATCH: Duration = Duration::from_millis(4);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A previous batch that ran 0-4 ms on a clock starting at `t0`.
    fn ran_until_4ms(t0: Clock) -> Option<Previous> {
        Some(Previous {
            start: t0,
            end: t0 + BATCH,
            modeled: BATCH,
        })
    }

    #[test]
    fn a_batch_queued_at_the_previous_end_starts_there_however_late_the_loop_woke() {
        let t0 = Clock::now();
        let prev = ran_until_4ms(t0);
        // Woke 1 ms late (tokio's tick): the batch starts at the previous end.
        assert_eq!(
            start_of(prev, false, t0, t0 + ms(5), BATCH),
            (t0 + BATCH, true)
        );
        // On time, and up to a whole batch late: the same.
        assert_eq!(
            start_of(prev, false, t0, t0 + BATCH, BATCH),
            (t0 + BATCH, true)
        );
        assert_eq!(
            start_of(prev, false, t0, t0 + ms(8), BATCH),
            (t0 + BATCH, true)
        );
    }

    #[test]
    fn more_than_a_batch_late_restarts_the_schedule_now_and_counts_the_loss() {
        let t0 = Clock::now();
        // 5 ms after the previous end: catching up would end this batch at
        // once; it starts now, and stays back to back so the pace shows it.
        let now = t0 + ms(9);
        assert_eq!(
            start_of(ran_until_4ms(t0), false, t0, now, BATCH),
            (now, true)
        );
    }

    #[test]
    fn an_idle_gpu_starts_a_batch_when_its_pages_came() {
        let t0 = Clock::now();
        let prev = ran_until_4ms(t0);
        // The loop waited for work: now, and not back to back.
        assert_eq!(
            start_of(prev, true, t0 + ms(6), t0 + ms(6), BATCH),
            (t0 + ms(6), false)
        );
        // Pages that arrived after the previous end, while the loop was
        // waking up: they start when they came, not before.
        assert_eq!(
            start_of(
                prev,
                false,
                t0 + ms(4) + Duration::from_micros(300),
                t0 + ms(5),
                BATCH
            ),
            (t0 + ms(4) + Duration::from_micros(300), false)
        );
        // The first batch ever.
        assert_eq!(
            start_of(None, false, t0, t0 + ms(1), BATCH),
            (t0 + ms(1), false)
        );
    }
}
