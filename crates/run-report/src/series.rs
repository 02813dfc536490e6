//! Per-second primitives shared by every analysis: completed attempts, the
//! failure ratio of one second, window selection and NaN-proof reductions.
//!
//! Kept in one place so that "failure ratio" or "a second with enough data"
//! means exactly the same thing in the wave detector, the metrics and the
//! recovery verdict.

use crate::model::{Second, ZoneSecond};

/// A second needs at least this many completed attempts (or zone requests)
/// before its failure ratio is trusted: with 1-4 attempts a single timeout
/// reads as a 25-100 % failure ratio.
pub const MIN_ATTEMPTS: u64 = 5;

/// Attempts that completed in this second, whatever their outcome.
pub fn completed(s: &Second) -> u64 {
    s.ok.saturating_add(s.rejected)
        .saturating_add(s.timeouts)
        .saturating_add(s.errors)
}

/// Attempts that completed in this second and failed (rejected, timed out or errored).
pub fn failed(s: &Second) -> u64 {
    s.rejected
        .saturating_add(s.timeouts)
        .saturating_add(s.errors)
}

/// `(rejected + timeouts + errors) / completed`; `None` when nothing completed.
pub fn failure_ratio(s: &Second) -> Option<f64> {
    let done = completed(s);
    (done > 0).then(|| failed(s) as f64 / done as f64)
}

/// The failure ratio, but only for seconds with at least [`MIN_ATTEMPTS`] completed attempts.
pub fn trusted_failure_ratio(s: &Second) -> Option<f64> {
    (completed(s) >= MIN_ATTEMPTS)
        .then(|| failure_ratio(s))
        .flatten()
}

/// The failure ratio of the attempts of documents no trigger injected (the
/// customers' own documents), for seconds with at least [`MIN_ATTEMPTS`] of
/// them completed. An injected oversized document failing is the trigger
/// itself; this is what the overload did to everybody else.
pub fn trusted_customer_failure_ratio(s: &Second) -> Option<f64> {
    let done = completed(s).saturating_sub(s.injected_attempts_done);
    let failed = failed(s).saturating_sub(s.injected_attempts_failed);
    (done >= MIN_ATTEMPTS).then(|| failed as f64 / done as f64)
}

/// A zone's failure ratio in one second, for seconds with at least [`MIN_ATTEMPTS`] requests.
pub fn zone_trusted_failure_ratio(z: &ZoneSecond) -> Option<f64> {
    (z.requests >= MIN_ATTEMPTS).then(|| z.failures.min(z.requests) as f64 / z.requests as f64)
}

/// Attempts sent per distinct document in one second, for seconds with at least
/// [`MIN_ATTEMPTS`] attempts sent.
pub fn amplification(s: &Second) -> Option<f64> {
    (s.attempts >= MIN_ATTEMPTS).then(|| s.attempts as f64 / s.distinct_documents.max(1) as f64)
}

/// Whether second `t` lies in the half-open window `[from, to)` (no window: every second).
pub fn in_window(t: u32, window: Option<(f64, f64)>) -> bool {
    match window {
        None => true,
        Some((from, to)) => {
            let t = f64::from(t);
            t >= from && t < to
        }
    }
}

/// The seconds of `seconds` that lie in `window`.
pub fn select(seconds: &[Second], window: Option<(f64, f64)>) -> Vec<&Second> {
    seconds.iter().filter(|s| in_window(s.t, window)).collect()
}

/// Largest finite value; `None` when there is none.
pub fn max_finite(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(None, |m, v| Some(m.map_or(v, |m: f64| m.max(v))))
}

/// Mean of the finite values; `None` when there is none.
pub fn mean_finite(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((0.0, 0u64), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// `num / den`, `None` when `den` is zero.
pub fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Sum of a counter over seconds.
pub fn sum(seconds: &[&Second], f: impl Fn(&Second) -> u64) -> u64 {
    seconds.iter().fold(0u64, |acc, s| acc.saturating_add(f(s)))
}

/// Every zone name that appears in any second, sorted.
pub fn zone_names(seconds: &[Second]) -> Vec<String> {
    let mut names: Vec<String> = seconds
        .iter()
        .flat_map(|s| s.zones.keys().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every zone name that appears in any variant of a run, sorted.
pub fn run_zone_names(run: &crate::model::RunData) -> Vec<String> {
    let mut names: Vec<String> = run
        .variants
        .iter()
        .flat_map(|v| zone_names(&v.seconds))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(t: u32, ok: u64, failed: u64) -> Second {
        Second {
            t,
            ok,
            rejected: failed,
            ..Second::default()
        }
    }

    #[test]
    fn failure_ratio_needs_completed_attempts() {
        assert_eq!(failure_ratio(&sec(0, 0, 0)), None);
        assert_eq!(failure_ratio(&sec(0, 1, 3)), Some(0.75));
        assert_eq!(trusted_failure_ratio(&sec(0, 1, 3)), None);
        assert_eq!(trusted_failure_ratio(&sec(0, 2, 3)), Some(0.6));
    }

    #[test]
    fn windows_are_half_open() {
        assert!(in_window(40, Some((40.0, 70.0))));
        assert!(!in_window(70, Some((40.0, 70.0))));
        assert!(in_window(7, None));
    }

    #[test]
    fn reductions_ignore_nan() {
        assert_eq!(max_finite([1.0, f64::NAN, 3.0]), Some(3.0));
        assert_eq!(max_finite([f64::NAN]), None);
        assert_eq!(mean_finite([1.0, f64::INFINITY, 3.0]), Some(2.0));
        assert_eq!(mean_finite(Vec::<f64>::new()), None);
    }

    #[test]
    fn zone_ratio_caps_failures_at_requests() {
        let z = ZoneSecond {
            requests: 5,
            failures: 9,
            ..ZoneSecond::default()
        };
        assert_eq!(zone_trusted_failure_ratio(&z), Some(1.0));
    }
}
