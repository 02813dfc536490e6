//! The once-a-second sampler of a running variant: the recorder's second,
//! the offered rate and the system's counters since the previous scrape.

use crate::base::interrupt::StopSignal;
use crate::base::progress::Progress;
use crate::observe::recorder::Recorder;
use crate::observe::scrape::Scrape;
use run_report::Second;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Reads one row per second until the load and its drain are over (or the
/// run is told it is): the recorder's second, the offered rate, and the
/// system's counters since the previous scrape. Three failed scrapes in a
/// row stop the run: the system under test stopped answering.
pub(super) struct Sampler {
    /// What it scrapes; `None`: a target without metrics (a generic HTTP
    /// workload's), whose rows are the recorder's alone.
    pub(super) system: Option<crate::net::system_client::SystemClient>,
    pub(super) recorder: Arc<Recorder>,
    pub(super) stop: Arc<StopSignal>,
    pub(super) progress: Progress,
    pub(super) offered: crate::load::spike::Offered,
    /// The load's duration (the offered rate is known inside it only).
    pub(super) duration: Duration,
    /// With agents a second's events may still be on their way: rows are
    /// read without folding, and folded once every agent is done.
    pub(super) agents: bool,
    /// Whether three failed scrapes in a row stop the run.
    pub(super) stop_on_silence: bool,
    pub(super) start: Instant,
    pub(super) total_secs: usize,
}

impl Sampler {
    /// Samples from `baseline` on until `done`; the rows and the last scrape.
    pub(super) async fn run(
        self,
        baseline: Scrape,
        mut done: watch::Receiver<bool>,
    ) -> (Vec<Second>, Scrape) {
        let mut prev = baseline;
        let mut rows = Vec::new();
        let mut failures = 0;
        for t in 0..self.total_secs {
            let at = self.start + Duration::from_secs(t as u64 + 1);
            // biased: an unbiased select! draws its first branch from the
            // runtime's random seed, which a virtual run cannot replay.
            tokio::select! {
                biased;
                _ = tokio::time::sleep_until(at) => {},
                _ = done.wait_for(|d| *d) => {},
            }
            let mut row = self.row(t);
            // A target without metrics: the row is the recorder's alone.
            let scraped = match &self.system {
                Some(system) => Some(crate::observe::scrape::scrape(system).await),
                None => None,
            };
            match scraped {
                None => {}
                Some(Ok(now)) => {
                    failures = 0;
                    crate::observe::scrape::fill_second(&mut row, &now, &prev);
                    prev = now;
                }
                Some(Err(e)) => {
                    failures += 1;
                    tracing::warn!("scrape at {t}s failed: {e}");
                    if failures >= 3 && self.stop_on_silence {
                        self.stop.trigger(&format!(
                            "the system under test stopped answering /metrics: {e}"
                        ));
                    }
                }
            }
            self.progress.second(&row);
            rows.push(row);
            if *done.borrow() {
                break;
            }
        }
        (rows, prev)
    }

    /// Second `t` as recorded so far, with its offered rate.
    fn row(&self, t: usize) -> Second {
        let mut row = if self.agents {
            self.recorder.peek(t)
        } else {
            self.recorder.second(t)
        };
        let mid = Duration::from_millis(t as u64 * 1000 + 500);
        if mid < self.duration {
            row.offered_rate = self.offered.rate_at(mid);
        }
        row
    }
}
