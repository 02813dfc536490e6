//! How closely the emulated GPU kept to its model over a variant.
//!
//! Capacity in this system is modeled: a batch of `lanes` pages takes
//! `page_time / speed`, and loads are stated as shares of that capacity. The
//! scheduler keeps an absolute schedule (a queued batch starts at the
//! previous one's end) and measures the intervals between back-to-back
//! batches on it against `page_time / speed` alone: a batch held past its
//! modeled end by real compute, or started late because the loop woke more
//! than a batch after that end, makes them longer. When they ran slower, the
//! GPU delivered less than the capacity every figure is stated against, and
//! the report says so loudly, as it does for a CPU fallback.
//!
//! A zone whose pool the timeline froze, throttled or killed (a generic
//! fault on `pool-Z`) is left out: its GPU fell behind because the harness
//! held its process up on purpose, which says nothing about the model, and
//! counting it would make every such run look delivered off plan.

use serde::{Deserialize, Serialize};

/// A GPU slower than its model by more than this is reported.
pub const PACING_TOLERANCE: f64 = 0.02;
/// Fewer model seconds of back-to-back batches say nothing about the pace.
const MIN_MODEL_SECS: f64 = 1.0;

/// The back-to-back batch intervals of a variant (all zones together).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GpuPacing {
    /// Seconds they took.
    pub run_secs: f64,
    /// Seconds the model gives them.
    pub model_secs: f64,
    /// Zones not counted: the timeline held their pool's process up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out_zones: Vec<String>,
}

impl GpuPacing {
    /// How much slower than its model the GPU ran (0.25: batches took a
    /// quarter longer); `None` when it was rarely saturated.
    pub fn slower_by(&self) -> Option<f64> {
        (self.model_secs >= MIN_MODEL_SECS && self.run_secs.is_finite())
            .then(|| self.run_secs / self.model_secs - 1.0)
    }

    /// The warning to print and show, when the GPU ran measurably slow.
    pub fn warning(&self) -> Option<String> {
        let slower = self.slower_by().filter(|s| *s > PACING_TOLERANCE)?;
        Some(format!(
            "the emulated GPU ran {:.0} % slower than its model while saturated \
             ({:.1} s of back-to-back batches took {:.1} s): it delivered about {:.0} % of the \
             calibrated capacity, so loads stated as shares of that capacity were {:.0} % higher in fact",
            slower * 100.0,
            self.model_secs,
            self.run_secs,
            100.0 / (1.0 + slower),
            slower * 100.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_on_its_model_says_nothing_and_a_slow_one_says_by_how_much() {
        let on_time = GpuPacing {
            run_secs: 10.1,
            model_secs: 10.0,
            left_out_zones: Vec::new(),
        };
        assert!(on_time.warning().is_none());
        let slow = GpuPacing {
            run_secs: 12.8,
            model_secs: 10.0,
            left_out_zones: Vec::new(),
        };
        assert!((slow.slower_by().unwrap() - 0.28).abs() < 1e-9);
        let w = slow.warning().expect("28 % slow");
        assert!(
            w.contains("28 % slower") && w.contains("about 78 % of"),
            "{w}"
        );
    }

    #[test]
    fn too_few_saturated_seconds_are_no_figure() {
        let rare = GpuPacing {
            run_secs: 0.9,
            model_secs: 0.5,
            left_out_zones: Vec::new(),
        };
        assert_eq!(rare.slower_by(), None);
        assert!(rare.warning().is_none());
    }
}
