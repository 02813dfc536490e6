//! When a zone failed and when it came back: the times ordered-event checks
//! compare (seed 003: which zone failed first, whether the other collapsed
//! only after the redirect, which recovered after which operator action). A
//! zone's second is failed when at least 5 requests reached it and its
//! failure ratio is at the wave threshold; a failure is a run of such
//! seconds at least as long as the shortest wave, as waves are counted.

/// One zone's seconds: `(t, failure ratio)`, the ratio absent below 5 requests.
pub(super) type ZoneSeries = [(u32, Option<f64>)];

fn failed(r: Option<f64>, threshold: f64) -> bool {
    r.is_some_and(|r| r >= threshold)
}

/// `[start, end]` of each run of at least `min_run` failed seconds.
fn failed_runs(z: &ZoneSeries, threshold: f64, min_run: u32) -> Vec<(u32, u32)> {
    let mut runs = Vec::new();
    let mut open: Option<(u32, u32)> = None;
    for &(t, r) in z {
        open = match (open, failed(r, threshold)) {
            (Some((a, b)), true) if t == b + 1 => Some((a, t)),
            (prev, true) => {
                runs.extend(prev);
                Some((t, t))
            }
            (prev, false) => {
                runs.extend(prev);
                None
            }
        };
    }
    runs.extend(open);
    runs.retain(|(a, b)| b - a + 1 >= min_run.max(1));
    runs
}

/// The first second of the zone's first failure.
pub(super) fn failed_from(z: &ZoneSeries, threshold: f64, min_run: u32) -> Option<u32> {
    failed_runs(z, threshold, min_run).first().map(|r| r.0)
}

/// The first second after its last failure in which the zone served at
/// least 5 requests below the threshold; `None` when it never failed, or
/// had not come back by the end (a zone with no traffic has not come back).
pub(super) fn recovered_from(z: &ZoneSeries, threshold: f64, min_run: u32) -> Option<u32> {
    let (_, end) = *failed_runs(z, threshold, min_run).last()?;
    z.iter()
        .find(|&&(t, r)| t > end && r.is_some_and(|r| r < threshold))
        .map(|&(t, _)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(ratios: &[Option<f64>]) -> Vec<(u32, Option<f64>)> {
        ratios
            .iter()
            .enumerate()
            .map(|(t, r)| (t as u32, *r))
            .collect()
    }

    #[test]
    fn a_failure_is_a_run_as_long_as_a_wave() {
        let (h, f, n) = (Some(0.0), Some(0.9), None);
        // t:          0  1  2  3  4  5  6  7  8  9
        let z = series(&[h, f, h, f, f, f, h, n, h, h]);
        assert_eq!(
            failed_from(&z, 0.5, 2),
            Some(3),
            "the lone second 1 is not a failure"
        );
        assert_eq!(recovered_from(&z, 0.5, 2), Some(6));
        assert_eq!(failed_from(&z, 0.5, 1), Some(1));
    }

    #[test]
    fn a_zone_without_traffic_after_failing_has_not_come_back() {
        let (h, f, n) = (Some(0.1), Some(0.7), None);
        let z = series(&[h, f, f, n, n]);
        assert_eq!(failed_from(&z, 0.5, 2), Some(1));
        assert_eq!(recovered_from(&z, 0.5, 2), None);
        let healthy = series(&[h, h, h]);
        assert_eq!(failed_from(&healthy, 0.5, 2), None);
        assert_eq!(recovered_from(&healthy, 0.5, 2), None);
    }

    #[test]
    fn the_last_failure_counts_for_recovery() {
        let (h, f) = (Some(0.0), Some(1.0));
        let z = series(&[f, f, h, h, f, f, f, h]);
        assert_eq!(failed_from(&z, 0.5, 2), Some(0));
        assert_eq!(recovered_from(&z, 0.5, 2), Some(7));
    }
}
