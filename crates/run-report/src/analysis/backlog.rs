//! The backlog a system holds (requests in flight, requests queued, GPU
//! pages queued), averaged over some seconds: the baseline records the
//! healthy one, and a slow recovery says how much of it drained. It sits
//! below both so neither has to reach into the other.

use crate::model::Second;
use serde::{Deserialize, Serialize};

/// The backlog gauges, averaged over some seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Backlog {
    pub in_flight: f64,
    pub queue_depth: f64,
    pub gpu_queue_pages: f64,
}

impl Backlog {
    /// The mean of each gauge over `seconds` (zero when there are none).
    pub fn mean<'a>(seconds: impl IntoIterator<Item = &'a Second>) -> Backlog {
        let (mut sum, mut n) = (Backlog::default(), 0.0);
        for s in seconds {
            sum.in_flight += s.in_flight as f64;
            sum.queue_depth += s.queue_depth;
            sum.gpu_queue_pages += s.gpu_queue_pages;
            n += 1.0;
        }
        let n = f64::max(n, 1.0);
        Backlog {
            in_flight: sum.in_flight / n,
            queue_depth: sum.queue_depth / n,
            gpu_queue_pages: sum.gpu_queue_pages / n,
        }
    }

    pub(crate) fn named(&self) -> [(&'static str, &'static str, f64); 3] {
        [
            ("requests in flight", "", self.in_flight),
            ("requests queued", "", self.queue_depth),
            ("GPU page queue", " pages", self.gpu_queue_pages),
        ]
    }
}
