//! Each second's part in its variant's verdict, for `timeseries.csv` and
//! the wave chart.
//!
//! The verdict names the seconds it was decided on only in words ("still
//! degraded 9 s after the residue"). A user who checks it, or plots it next
//! to the raw series, needs the same judgement second by second. This
//! module labels each second from the judgement itself (the variant's
//! [`VariantAnalysis`]: its baseline and episodes), with the health each
//! episode was judged on ([`super::episode_health`]), so the CSV, the chart
//! and the verdict cannot disagree.

use super::{episode_health, whole};
use crate::analysis::VariantAnalysis;
use crate::model::{AnalysisConfig, VariantRun};

/// What the verdict made of one second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondRole {
    /// Before the warm-up ended: not judged.
    Warmup,
    /// Before the first trigger: the healthy behaviour measured.
    Baseline,
    /// A trigger or its residue was present: not judged.
    Residue,
    /// Judged after a residue, and healthy.
    Healthy,
    /// Judged after a residue, and degraded; or before the first trigger,
    /// degraded against the healthy seconds and left out of the baseline.
    Degraded,
    /// After the judged end (the drain after the load): not judged.
    Drain,
}

impl SecondRole {
    pub fn as_str(self) -> &'static str {
        match self {
            SecondRole::Warmup => "warmup",
            SecondRole::Baseline => "baseline",
            SecondRole::Residue => "residue",
            SecondRole::Healthy => "healthy",
            SecondRole::Degraded => "degraded",
            SecondRole::Drain => "drain",
        }
    }
}

/// The role of each of `v.seconds`, in order, as its analysis `a` judged
/// them; all `None` when nothing was judged (no trigger, or no baseline).
pub fn second_roles(
    v: &VariantRun,
    a: &VariantAnalysis,
    cfg: &AnalysisConfig,
) -> Vec<Option<SecondRole>> {
    let (episodes, judged_end_s) = (&a.episodes, a.judged_end_s);
    let (Some(b), Some(first)) = (a.baseline.as_ref(), episodes.first()) else {
        return vec![None; v.seconds.len()];
    };
    let first_start = whole(first.start_s.floor());
    let healths: Vec<_> = episodes.iter().map(|e| episode_health(v, b, e)).collect();
    v.seconds
        .iter()
        .map(|s| {
            let t = s.t;
            Some(if t >= judged_end_s {
                SecondRole::Drain
            } else if t < cfg.warmup_s {
                SecondRole::Warmup
            } else if t < first_start && b.excluded_s.binary_search(&t).is_ok() {
                // Degraded against the healthy seconds, so left out of the baseline.
                SecondRole::Degraded
            } else if t < first_start {
                SecondRole::Baseline
            } else {
                // The last episode started by `t` (they are in order).
                let i = episodes
                    .iter()
                    .rposition(|e| whole(e.start_s.floor()) <= t)
                    .unwrap_or(0);
                let judged_from = episodes[i]
                    .residue_end_s
                    .map_or(u32::MAX, |r| whole(r.ceil()));
                if t < judged_from {
                    SecondRole::Residue
                } else if healths[i].is_healthy(t) {
                    SecondRole::Healthy
                } else {
                    SecondRole::Degraded
                }
            })
        })
        .collect()
}

/// 30 s of 30 completed attempts a second; `failed` of them failed in
/// each of the seconds `bad`; one trigger at 10 s whose residue ended at
/// 13.5 s; the load ended at 28 s (a fixture of this module's and the wave
/// chart's tests).
#[cfg(test)]
pub(crate) fn one_trigger_run(bad: std::ops::Range<u32>, failed: u64) -> VariantRun {
    use crate::model::{Second, TriggerSpan};
    VariantRun {
        name: "v".into(),
        seconds: (0..30)
            .map(|t| Second {
                t,
                ok: if bad.contains(&t) { 30 - failed } else { 30 },
                rejected: if bad.contains(&t) { failed } else { 0 },
                ..Second::default()
            })
            .collect(),
        triggers: vec![TriggerSpan {
            label: "trigger".into(),
            start_s: 10.0,
            end_s: Some(12.0),
            residue_end_s: Some(13.5),
            residue: "test".into(),
        }],
        load_end_s: Some(28.0),
        ..VariantRun::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyse_variant;

    fn roles(v: &VariantRun) -> Vec<&'static str> {
        let cfg = AnalysisConfig::default();
        second_roles(v, &analyse_variant(v, &cfg), &cfg)
            .into_iter()
            .map(|r| r.map_or("", SecondRole::as_str))
            .collect()
    }

    #[test]
    fn each_second_is_labelled_as_the_verdict_judged_it() {
        let cfg = AnalysisConfig::default();
        let r = roles(&one_trigger_run(14..18, 20));
        let w = cfg.warmup_s as usize;
        assert!(r[..w].iter().all(|x| *x == "warmup"), "{r:?}");
        assert!(r[w..10].iter().all(|x| *x == "baseline"), "{r:?}");
        // From the trigger's start to its residue's end, rounded up.
        assert!(r[10..14].iter().all(|x| *x == "residue"), "{r:?}");
        assert!(r[14..17].iter().all(|x| *x == "degraded"), "{r:?}");
        assert!(r[19..28].iter().all(|x| *x == "healthy"), "{r:?}");
        assert!(r[28..].iter().all(|x| *x == "drain"), "{r:?}");
    }

    #[test]
    fn a_residue_that_never_ended_is_never_judged() {
        let mut v = one_trigger_run(0..0, 0);
        v.triggers[0].residue_end_s = None;
        let r = roles(&v);
        assert!(r[10..28].iter().all(|x| *x == "residue"), "{r:?}");
    }

    #[test]
    fn nothing_is_labelled_without_a_trigger() {
        let mut v = one_trigger_run(0..0, 0);
        v.triggers.clear();
        assert!(roles(&v).iter().all(|x| x.is_empty()));
    }
}
