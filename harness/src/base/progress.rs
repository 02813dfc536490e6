//! The progress bar of a running variant (indicatif), silent with `--quiet`.

use indicatif::{ProgressBar, ProgressStyle};
use run_report::Second;
use std::time::Duration;

#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(variant: &str, duration: Duration, quiet: bool) -> Self {
        if quiet {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new(duration.as_secs());
        bar.set_style(
            ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos:>3}/{len}s {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(variant.to_string());
        Progress { bar: Some(bar) }
    }

    /// One second sampled.
    pub fn second(&self, s: &Second) {
        if let Some(b) = &self.bar {
            let done = s.ok + s.rejected + s.timeouts + s.errors;
            let fail = if done == 0 {
                0.0
            } else {
                (done - s.ok) as f64 / done as f64
            };
            b.set_position(u64::from(s.t) + 1);
            b.set_message(format!(
                "{:>5} attempts/s  {:>4} docs/s  failure {:>5.1}%  slots {:>3}/{:<3} in flight {}",
                s.attempts,
                s.distinct_documents,
                fail * 100.0,
                s.slots_busy,
                s.slots_total,
                s.in_flight
            ));
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish();
        }
    }
}
