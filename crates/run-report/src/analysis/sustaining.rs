//! The sustaining effect: what kept a system degraded after its trigger had
//! gone. Metastable failures (Bronson et al., HotOS'21; Huang et al.,
//! OSDI'22) persist because the system does more work than the offered load
//! asks for: retries multiply attempts, internal layers multiply them again,
//! the GPU computes pages nobody receives (duplicates, orphans of failed
//! submissions, zombie work for callers that have gone), slots are held by
//! waiters, and cache writes are lost so finished work is redone. Or the
//! system has less capacity than before at the same load: a garbage
//! collector whose share of the CPU grows with the memory of the requests
//! in flight keeps taking it while they stay many (capacity degradation).
//!
//! [`figures`] measures each of those over some seconds; [`SustainingEffect`]
//! compares the seconds after a residue with the baseline and names the
//! effects that stand out, e.g. "retries: 3.4 attempts per new document
//! (baseline 1.0); zombie work 61 % of GPU pages (baseline 0 %)".

use crate::model::Second;
use crate::series::{ratio, sum};
use serde::{Deserialize, Serialize};

/// Work-amplification figures over a set of seconds (`None`: no denominator).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EffectFigures {
    /// Client attempts sent / new documents submitted.
    pub attempts_per_new_document: Option<f64>,
    /// Gateway attempts to pools / client attempts.
    pub gateway_attempts_per_attempt: Option<f64>,
    /// GPU pages computed / pages of the documents completed.
    pub gpu_pages_per_page_delivered: Option<f64>,
    /// Shares of the GPU pages computed: recomputations, orphans, zombie work.
    pub duplicate_share: Option<f64>,
    pub orphan_share: Option<f64>,
    pub zombie_share: Option<f64>,
    /// Mean worker slots held by requests waiting for a duplicate.
    pub slots_held_by_waiters: Option<f64>,
    /// Cache writes acknowledged and lost, per second.
    pub cache_writes_lost_per_s: Option<f64>,
    /// GPU pages computed, per second (the work being done).
    pub gpu_pages_per_s: Option<f64>,
    /// Result cache reads that hit / all reads: a cache that stays cold makes
    /// every repeat cost a computation (the look-aside cache case).
    #[serde(default)]
    pub cache_hit_ratio: Option<f64>,
    /// The garbage collector's mean share of the CPU (a system with a heap):
    /// capacity taken from the workers, not work added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector_share: Option<f64>,
}

/// The figures over `seconds`.
pub fn figures(seconds: &[&Second]) -> EffectFigures {
    let n = seconds.len() as f64;
    let per_s = |total: u64| (n > 0.0).then(|| total as f64 / n);
    let pages = sum(seconds, |s| s.pages_computed);
    EffectFigures {
        attempts_per_new_document: ratio(
            sum(seconds, |s| s.attempts),
            sum(seconds, |s| s.arrivals),
        ),
        gateway_attempts_per_attempt: ratio(
            sum(seconds, |s| s.gateway_attempts),
            sum(seconds, |s| s.attempts),
        ),
        gpu_pages_per_page_delivered: ratio(pages, sum(seconds, |s| s.pages_delivered)),
        duplicate_share: ratio(sum(seconds, |s| s.pages_recomputed), pages),
        orphan_share: ratio(sum(seconds, |s| s.orphan_pages), pages),
        zombie_share: ratio(sum(seconds, |s| s.zombie_pages), pages),
        slots_held_by_waiters: (n > 0.0)
            .then(|| seconds.iter().map(|s| s.slots_held_by_waiters).sum::<f64>() / n),
        cache_writes_lost_per_s: per_s(sum(seconds, |s| s.cache_writes_lost)),
        gpu_pages_per_s: per_s(pages),
        cache_hit_ratio: ratio(
            sum(seconds, |s| s.cache_hits),
            sum(seconds, |s| s.cache_hits + s.cache_misses),
        ),
        collector_share: crate::series::mean_finite(
            seconds.iter().filter_map(|s| s.collector_share),
        ),
    }
}

/// What was measured over the degraded seconds after a residue, against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SustainingEffect {
    /// The seconds measured, `[from, to)`.
    pub from_s: u32,
    pub to_s: u32,
    pub measured: EffectFigures,
    pub baseline: EffectFigures,
    /// The effects that stood out, each in words with its baseline.
    pub named: Vec<String>,
}

impl SustainingEffect {
    /// Compares `seconds` (those `[from, to)` after a residue) with the baseline.
    pub fn measure(
        seconds: &[&Second],
        from_s: u32,
        to_s: u32,
        baseline: &EffectFigures,
    ) -> SustainingEffect {
        let measured = figures(seconds);
        let named = name_effects(&measured, baseline);
        SustainingEffect {
            from_s,
            to_s,
            measured,
            baseline: baseline.clone(),
            named,
        }
    }

    /// One line: the named effects, or a note that none stood out.
    pub fn summary(&self) -> String {
        if self.named.is_empty() {
            "no work amplification above the baseline was measured (retries, gateway attempts, \
             wasted GPU pages, slots held by waiters, lost cache writes, a cold cache), nor a \
             collector taking more of the CPU"
                .into()
        } else {
            self.named.join("; ")
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// The effects that stand out against the baseline. The margins decide what
/// the sentence mentions, and whether anything is named at all decides
/// between a metastable verdict and an unexplained (inconclusive) one.
fn name_effects(m: &EffectFigures, b: &EffectFigures) -> Vec<String> {
    let mut named: Vec<(f64, String)> = Vec::new();
    let base = |x: Option<f64>, default: f64| x.filter(|v| v.is_finite()).unwrap_or(default);
    if let Some(a) = m.attempts_per_new_document {
        let ab = base(b.attempts_per_new_document, 1.0);
        if a >= (ab * 1.5).max(ab + 0.5) {
            named.push((
                a / ab.max(1e-9),
                format!("retries: {a:.1} attempts per new document (baseline {ab:.1})"),
            ));
        }
    } else if m.gpu_pages_per_s.is_some_and(|p| p > 0.0) {
        // No new document at all, yet the GPU works: retries of old ones.
        named.push((
            10.0,
            "retries: attempts continue with no new document submitted".into(),
        ));
    }
    if let Some(g) = m.gateway_attempts_per_attempt {
        let gb = base(b.gateway_attempts_per_attempt, 1.0);
        if g >= gb + 0.25 {
            named.push((
                g / gb.max(1e-9),
                format!("internal retries: {g:.2} gateway attempts per client attempt (baseline {gb:.2})"),
            ));
        }
    }
    let shares = [
        ("recomputation", m.duplicate_share, b.duplicate_share),
        ("orphan pages", m.orphan_share, b.orphan_share),
        ("zombie work", m.zombie_share, b.zombie_share),
    ];
    for (what, x, xb) in shares {
        if let Some(x) = x {
            let xb = base(xb, 0.0);
            if x >= xb + 0.10 {
                named.push((
                    1.0 + 10.0 * (x - xb),
                    format!("{what} {} of GPU pages (baseline {})", pct(x), pct(xb)),
                ));
            }
        }
    }
    match (m.gpu_pages_per_page_delivered, m.gpu_pages_per_s) {
        (Some(w), _) => {
            let wb = base(b.gpu_pages_per_page_delivered, 1.0);
            if w >= (wb * 1.5).max(wb + 0.5) {
                named.push((
                    w / wb.max(1e-9),
                    format!("{w:.1} GPU pages computed per page delivered (baseline {wb:.1})"),
                ));
            }
        }
        (None, Some(p)) if p > 0.0 => named.push((
            10.0,
            format!("{p:.0} GPU pages/s computed and no page delivered"),
        )),
        _ => {}
    }
    if let Some(w) = m.slots_held_by_waiters {
        let wb = base(b.slots_held_by_waiters, 0.0);
        if w >= wb + 1.0 {
            named.push((
                1.0 + w - wb,
                format!("{w:.1} slots held by waiting duplicates on average (baseline {wb:.1})"),
            ));
        }
    }
    if let Some(l) = m.cache_writes_lost_per_s {
        let lb = base(b.cache_writes_lost_per_s, 0.0);
        if l >= (lb * 1.5).max(lb + 1.0) {
            named.push((
                1.0 + (l - lb) / 10.0,
                format!("{l:.0} cache writes lost per second (baseline {lb:.0})"),
            ));
        }
    }
    if let (Some(h), Some(hb)) = (m.cache_hit_ratio, b.cache_hit_ratio) {
        if hb >= 0.10 && h <= hb - 0.20 {
            named.push((
                1.0 + 10.0 * (hb - h),
                format!("cold cache: {} of reads hit (baseline {})", pct(h), pct(hb)),
            ));
        }
    }
    if let Some(g) = m.collector_share {
        let gb = base(b.collector_share, 0.0);
        if g >= gb + 0.20 {
            // Capacity taken is work multiplied: at a share g every request's
            // CPU work takes 1 / (1 - g) as long, a factor as comparable with
            // the others as attempts per document are.
            let slower = (1.0 - gb) / (1.0 - g).max(1e-9);
            named.push((
                slower,
                format!(
                    "capacity degradation: the garbage collector took {} of the CPU (baseline {}), \
                     so the workers' CPU work took {slower:.0}x as long, held there by the memory \
                     of the requests in flight",
                    pct(g),
                    pct(gb)
                ),
            ));
        }
    }
    named.sort_by(|a, b| b.0.total_cmp(&a.0));
    named.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(
        arrivals: u64,
        attempts: u64,
        gw: u64,
        pages: u64,
        delivered: u64,
        zombie: u64,
    ) -> Second {
        Second {
            arrivals,
            attempts,
            gateway_attempts: gw,
            pages_computed: pages,
            pages_delivered: delivered,
            zombie_pages: zombie,
            ..Second::default()
        }
    }

    #[test]
    fn names_retries_and_zombie_work_against_the_baseline() {
        let base = [sec(20, 20, 20, 80, 80, 0), sec(20, 21, 21, 80, 80, 0)];
        let after = [sec(20, 70, 200, 90, 30, 55), sec(20, 66, 190, 90, 28, 55)];
        let b = figures(&base.iter().collect::<Vec<_>>());
        let e = SustainingEffect::measure(&after.iter().collect::<Vec<_>>(), 30, 32, &b);
        let text = e.summary();
        assert!(
            text.contains("retries: 3.4 attempts per new document (baseline 1.0)"),
            "{text}"
        );
        assert!(
            text.contains("zombie work 61 % of GPU pages (baseline 0 %)"),
            "{text}"
        );
        assert!(
            text.contains("gateway attempts per client attempt"),
            "{text}"
        );
        assert!(
            text.contains("GPU pages computed per page delivered"),
            "{text}"
        );
    }

    #[test]
    fn nothing_named_when_the_figures_match_the_baseline() {
        let s = [sec(20, 21, 21, 80, 80, 0)];
        let f = figures(&s.iter().collect::<Vec<_>>());
        let e = SustainingEffect::measure(&s.iter().collect::<Vec<_>>(), 0, 1, &f);
        assert!(e.named.is_empty());
        assert!(e.summary().starts_with("no work amplification"));
    }

    #[test]
    fn work_without_new_documents_or_deliveries_is_named() {
        let s = [sec(0, 50, 50, 100, 0, 0)];
        let e = SustainingEffect::measure(
            &s.iter().collect::<Vec<_>>(),
            0,
            1,
            &EffectFigures::default(),
        );
        let text = e.summary();
        assert!(text.contains("no new document"), "{text}");
        assert!(text.contains("no page delivered"), "{text}");
    }

    #[test]
    fn a_collector_that_keeps_the_cpu_is_named_first() {
        let gc = |share: f64, attempts: u64| Second {
            collector_share: Some(share),
            ..sec(20, attempts, attempts, 40, 40, 0)
        };
        let b = figures(&[&gc(0.05, 20), &gc(0.07, 20)]);
        let after = [gc(0.97, 30), gc(0.95, 30)];
        let text = SustainingEffect::measure(&after.iter().collect::<Vec<_>>(), 0, 2, &b).summary();
        assert!(
            text.starts_with(
                "capacity degradation: the garbage collector took 96 % of the CPU (baseline 6 %)"
            ),
            "{text}"
        );
        assert!(text.contains("retries: 1.5 attempts"), "{text}");
        // A collector no busier than in the baseline is not an effect.
        let same = [gc(0.15, 20)];
        assert!(
            SustainingEffect::measure(&same.iter().collect::<Vec<_>>(), 0, 1, &b)
                .named
                .is_empty()
        );
    }

    #[test]
    fn a_cache_that_stays_cold_is_named() {
        let warm = Second {
            cache_hits: 60,
            cache_misses: 40,
            ..sec(20, 20, 20, 40, 40, 0)
        };
        let cold = Second {
            cache_hits: 5,
            cache_misses: 95,
            ..sec(20, 20, 20, 40, 40, 0)
        };
        let b = figures(&[&warm]);
        let text = SustainingEffect::measure(&[&cold], 0, 1, &b).summary();
        assert!(
            text.contains("cold cache: 5 % of reads hit (baseline 60 %)"),
            "{text}"
        );
        // A cache that never held anything is not a sustaining effect.
        let none = figures(&[&Second {
            cache_misses: 100,
            ..Second::default()
        }]);
        assert!(SustainingEffect::measure(&[&cold], 0, 1, &none)
            .named
            .is_empty());
    }
}
