//! The scheduling loop: one batch at a time, like one GPU.
//!
//! Each batch is computed for real on the executor (on a blocking thread, so the
//! runtime keeps serving requests) and then held until its modeled end time
//! `start + page_time / speed_factor`. Using tokio's clock for that makes
//! capacity the configured one on any machine, and lets tests run under
//! `tokio::time::pause()` deterministically: the end time is absolute, and on
//! the current-thread runtime tokio does not auto-advance paused time while a
//! `spawn_blocking` task runs.
//!
//! The loop also measures its own pacing (`paced_secs` against
//! `paced_target_secs`): a batch starts when the loop wakes after the one
//! before, and tokio's timer rounds each wake-up up to its 1-ms tick, so on a
//! real clock back-to-back batches take longer than the model says; the
//! report shows by how much.

use super::state::InFlight;
use super::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs until shutdown (explicit, or every `GpuScheduler` clone dropped).
pub(crate) async fn run(shared: Arc<Shared>) {
    // The previous batch's start and its duration in the model.
    let mut previous: Option<(tokio::time::Instant, Duration)> = None;
    loop {
        let Some((batch, modeled, waited)) = next_batch(&shared).await else {
            return;
        };
        let start = tokio::time::Instant::now();
        let paced = previous
            .filter(|_| !waited)
            .map(|(previous_start, target)| (start - previous_start, target));
        let specs: Vec<_> = batch.iter().map(|b| b.spec).collect();
        let executor = shared.executor.clone();
        let computed = tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let r = executor.compute(&specs);
            (r, t.elapsed())
        })
        .await;
        let computed_in = start.elapsed();
        match start.checked_add(modeled) {
            Some(end) => tokio::time::sleep_until(end).await,
            None => tokio::time::sleep(modeled).await,
        }
        previous = Some((start, modeled.max(computed_in)));
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
/// duration, and whether the loop had to wait for it (an idle GPU).
async fn next_batch(shared: &Shared) -> Option<(Vec<InFlight>, Duration, bool)> {
    let mut waited = false;
    loop {
        {
            let mut st = shared.lock();
            if st.shutdown {
                return None;
            }
            let batch = st.take_batch();
            if !batch.is_empty() {
                st.stats.busy = true;
                let modeled = modeled_batch_time(shared.page_time, st.speed_factor);
                return Some((batch, modeled, waited));
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
}
