//! Work amplification: how much more work the system did than the documents
//! asked for. Retries multiply client attempts, gateway retries multiply them
//! again, and lost cache writes make pages be computed twice. Each ratio is
//! `None` when its denominator is zero (nothing to amplify).

use crate::model::Second;
use crate::series::{self, ratio, sum};

/// Largest per-second attempts / max(distinct documents, 1), over seconds with at
/// least [`series::MIN_ATTEMPTS`] attempts sent.
pub fn amplification_peak(seconds: &[&Second]) -> Option<f64> {
    series::max_finite(seconds.iter().filter_map(|s| series::amplification(s)))
}

/// Whole run: total client attempts / total arrivals (new documents).
pub fn attempts_per_document(seconds: &[&Second]) -> Option<f64> {
    ratio(sum(seconds, |s| s.attempts), sum(seconds, |s| s.arrivals))
}

/// In a window: attempts / distinct documents, both summed over the window's
/// seconds (arrivals in a window say little about retries of older documents).
pub fn amplification_mean_window(seconds: &[&Second]) -> Option<f64> {
    ratio(
        sum(seconds, |s| s.attempts),
        sum(seconds, |s| s.distinct_documents),
    )
}

/// Gateway attempts to pools / client attempts.
pub fn gateway_amplification(seconds: &[&Second]) -> Option<f64> {
    ratio(
        sum(seconds, |s| s.gateway_attempts),
        sum(seconds, |s| s.attempts),
    )
}

/// Pages computed that had been computed before / pages computed.
pub fn duplicate_compute_share(seconds: &[&Second]) -> Option<f64> {
    ratio(
        sum(seconds, |s| s.pages_recomputed),
        sum(seconds, |s| s.pages_computed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(t: u32, arrivals: u64, attempts: u64, distinct: u64) -> Second {
        Second {
            t,
            arrivals,
            attempts,
            distinct_documents: distinct,
            gateway_attempts: attempts * 3,
            pages_computed: 10,
            pages_recomputed: t as u64,
            ..Second::default()
        }
    }

    #[test]
    fn peak_skips_seconds_with_few_attempts_and_zero_distinct() {
        let s = [
            sec(0, 10, 10, 10),
            sec(1, 0, 4, 1),  // 4 attempts: ignored
            sec(2, 0, 30, 0), // distinct 0 counts as 1
            sec(3, 10, 40, 10),
        ];
        let refs: Vec<&Second> = s.iter().collect();
        assert_eq!(amplification_peak(&refs), Some(30.0));
        assert_eq!(amplification_peak(&refs[1..2]), None);
    }

    #[test]
    fn means_and_shares() {
        let s = [sec(0, 10, 10, 10), sec(1, 10, 30, 10)];
        let refs: Vec<&Second> = s.iter().collect();
        assert_eq!(attempts_per_document(&refs), Some(2.0));
        assert_eq!(amplification_mean_window(&refs[1..]), Some(3.0));
        assert_eq!(gateway_amplification(&refs), Some(3.0));
        assert_eq!(duplicate_compute_share(&refs), Some(0.05));
    }

    #[test]
    fn zero_denominators_are_undefined() {
        let s = [Second::default()];
        let refs: Vec<&Second> = s.iter().collect();
        assert_eq!(amplification_peak(&refs), None);
        assert_eq!(attempts_per_document(&refs), None);
        assert_eq!(amplification_mean_window(&[]), None);
        assert_eq!(gateway_amplification(&refs), None);
        assert_eq!(duplicate_compute_share(&refs), None);
    }
}
