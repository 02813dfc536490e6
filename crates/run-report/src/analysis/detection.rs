//! Detection: when the experiment's alert rules caught the trouble, measured
//! against when customers first saw it.
//!
//! The harness knows both sides of every request, so it can say not only
//! whether an alert fired but how early: the *lead time* of an alert is the
//! first customer-visible failure minus the alert's first firing (positive:
//! the alert caught the problem before customers did). The alert history
//! comes from a real Prometheus (recorded in [`VariantRun::alerts`]); the
//! customer side from the clients' own per-second counts.
//!
//! First customer-visible failure: the first second after the warm-up whose
//! client-visible failure ratio (seconds with at least 5 completed attempts)
//! is above `analysis.customer_failure_threshold`, or in which a document
//! was given up. Warm-up seconds are skipped for the same reason the verdict
//! skips them: a cold system's first second is not the incident.
//!
//! Both are counted on the documents no trigger injected. An injected
//! oversized document that cannot finish within its client's timeout fails
//! the moment it arrives: that is the trigger, not yet the overload, and no
//! rule on a cause could ever lead it. What the SRE asks is whether the
//! alerts fire before the trigger hurts everybody else (seed 000: the
//! workers "rejected unrelated requests"); the first failure of the injected
//! documents is reported beside it.

use crate::analysis::waves::detect_waves;
use crate::metrics::{Metric, Undefined};
use crate::model::{AlertHistory, AnalysisConfig, VariantRun};
use crate::series;

/// The first customer-visible failure and every alert's timing, for one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Seconds since the load started; `None`: customers saw no failure.
    pub first_customer_failure_s: Option<f64>,
    /// Why that second counts, in words.
    pub customer_failure_reason: String,
    /// The first second (after the warm-up) in which an attempt of a
    /// document a trigger injected failed, or one was given up; `None`: none did.
    pub first_injected_failure_s: Option<f64>,
    /// First second of the first wave after the warm-up; `None`: no wave.
    pub first_wave_s: Option<f64>,
    pub alerts: Vec<AlertTiming>,
}

/// One alert rule on one variant. Leads are in whole seconds: the reference
/// second minus the second the rule first fired in.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertTiming {
    pub name: String,
    pub first_pending_s: Option<f64>,
    pub first_firing_s: Option<f64>,
    /// End of the last firing interval; `None` when it never fired or was
    /// still firing when the history ends.
    pub resolved_s: Option<f64>,
    /// First customer-visible failure minus first firing.
    pub lead_s: Option<f64>,
    /// First wave's start minus first firing.
    pub wave_lead_s: Option<f64>,
}

impl AlertTiming {
    pub fn fired(&self) -> bool {
        self.first_firing_s.is_some()
    }
}

/// Detection of one variant.
pub fn detect(v: &VariantRun, cfg: &AnalysisConfig) -> Detection {
    let (first, reason) = first_customer_failure(v, cfg);
    let first_wave = detect_waves(&v.seconds, cfg)
        .iter()
        .map(|w| w.start_s)
        .find(|&t| t >= cfg.warmup_s)
        .map(f64::from);
    let alerts = v
        .alerts
        .iter()
        .map(|a| timing(a, first, first_wave))
        .collect();
    Detection {
        first_customer_failure_s: first,
        customer_failure_reason: reason,
        first_injected_failure_s: first_injected_failure(v, cfg),
        first_wave_s: first_wave,
        alerts,
    }
}

fn first_customer_failure(v: &VariantRun, cfg: &AnalysisConfig) -> (Option<f64>, String) {
    let end = v.load_end_s.unwrap_or(f64::INFINITY);
    for s in v
        .seconds
        .iter()
        .filter(|s| s.t >= cfg.warmup_s && f64::from(s.t) < end)
    {
        let given_up = s.documents_given_up.saturating_sub(s.injected_given_up);
        if given_up > 0 {
            return (
                Some(f64::from(s.t)),
                format!("{given_up} customer document(s) given up"),
            );
        }
        if let Some(r) = series::trusted_customer_failure_ratio(s) {
            if r > cfg.customer_failure_threshold {
                return (
                    Some(f64::from(s.t)),
                    format!(
                        "client-visible failure ratio of the customers' documents {:.0} % > {:.0} %",
                        r * 100.0,
                        cfg.customer_failure_threshold * 100.0
                    ),
                );
            }
        }
    }
    (None, "customers saw no failure".into())
}

fn first_injected_failure(v: &VariantRun, cfg: &AnalysisConfig) -> Option<f64> {
    let end = v.load_end_s.unwrap_or(f64::INFINITY);
    v.seconds
        .iter()
        .filter(|s| s.t >= cfg.warmup_s && f64::from(s.t) < end)
        .find(|s| s.injected_attempts_failed > 0 || s.injected_given_up > 0)
        .map(|s| f64::from(s.t))
}

fn timing(a: &AlertHistory, first_failure: Option<f64>, first_wave: Option<f64>) -> AlertTiming {
    let first = |iv: &[(f64, f64)]| iv.iter().map(|x| x.0).reduce(f64::min);
    let first_firing_s = first(&a.firing);
    let last_end = a.firing.iter().map(|x| x.1).reduce(f64::max);
    let resolved_s = match (last_end, a.observed_until_s) {
        (Some(e), Some(until)) if e < until => Some(e),
        _ => None,
    };
    AlertTiming {
        name: a.name.clone(),
        first_pending_s: first(&a.pending),
        first_firing_s,
        resolved_s,
        // Both references are whole seconds of the per-second series, so the
        // firing is counted in the second it fell in: an alert firing at
        // 10.0001 s fired in the wave's first second (lead 0), not 0.0001 s
        // after it; the offset of Prometheus's evaluations to the variant's
        // clock is not a measurement.
        lead_s: first_failure
            .zip(first_firing_s)
            .map(|(c, f)| c - f.floor()),
        wave_lead_s: first_wave.zip(first_firing_s).map(|(w, f)| w - f.floor()),
    }
}

/// `alert_fired{NAME}`, `alert_lead_s{NAME}`, `alert_wave_lead_s{NAME}` and
/// `alerts_fired` for one variant.
pub fn alert_metric(
    v: &VariantRun,
    cfg: &AnalysisConfig,
    metric: Metric,
    rule: Option<&str>,
) -> Result<f64, Undefined> {
    if v.alerts.is_empty() {
        return Err("no alert rules were evaluated (the experiment has no `alerts:`)".into());
    }
    let d = detect(v, cfg);
    if metric == Metric::AlertsFired {
        return Ok(d.alerts.iter().filter(|a| a.fired()).count() as f64);
    }
    let rule =
        rule.ok_or_else(|| format!("`{metric}` needs a rule name, e.g. `{metric}{{NAME}}`"))?;
    let Some(a) = d.alerts.iter().find(|a| a.name == rule) else {
        let names: Vec<&str> = d.alerts.iter().map(|a| a.name.as_str()).collect();
        return Err(format!(
            "no alert rule `{rule}` in this variant (rules: {})",
            names.join(", ")
        )
        .into());
    };
    let never = || Undefined(format!("`{rule}` never fired"));
    match metric {
        Metric::AlertLeadS => a.lead_s.ok_or_else(|| match a.first_firing_s {
            None => never(),
            Some(_) => Undefined(d.customer_failure_reason.clone()),
        }),
        Metric::AlertWaveLeadS => a.wave_lead_s.ok_or_else(|| match a.first_firing_s {
            None => never(),
            Some(_) => "no wave after the warm-up".into(),
        }),
        Metric::AlertFired => Ok(if a.fired() { 1.0 } else { 0.0 }),
        other => Err(format!("`{other}` is not an alert metric (report bug)").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Second;

    fn run(fail_from: Option<u32>, alerts: Vec<AlertHistory>) -> VariantRun {
        let seconds = (0..30u32)
            .map(|t| {
                let bad = fail_from.is_some_and(|f| t >= f);
                Second {
                    t,
                    ok: if bad { 80 } else { 100 },
                    rejected: if bad { 20 } else { 1 },
                    ..Second::default()
                }
            })
            .collect();
        VariantRun {
            seconds,
            load_end_s: Some(30.0),
            alerts,
            ..VariantRun::default()
        }
    }

    fn alert(name: &str, pending: &[(f64, f64)], firing: &[(f64, f64)]) -> AlertHistory {
        AlertHistory {
            name: name.into(),
            pending: pending.to_vec(),
            firing: firing.to_vec(),
            observed_until_s: Some(30.0),
        }
    }

    #[test]
    fn lead_time_is_first_failure_minus_first_firing() {
        let v = run(
            Some(12),
            vec![
                alert("Early", &[(7.0, 9.0)], &[(9.0, 20.0)]),
                alert("Late", &[(13.0, 15.0)], &[(15.0, 30.0)]),
                alert("Quiet", &[], &[]),
            ],
        );
        let cfg = AnalysisConfig::default();
        let d = detect(&v, &cfg);
        assert_eq!(d.first_customer_failure_s, Some(12.0));
        assert_eq!(d.alerts[0].lead_s, Some(3.0));
        assert_eq!(d.alerts[0].first_pending_s, Some(7.0));
        assert_eq!(d.alerts[0].resolved_s, Some(20.0));
        assert_eq!(d.alerts[1].lead_s, Some(-3.0));
        // Still firing when the history ends: not resolved.
        assert_eq!(d.alerts[1].resolved_s, None);
        assert_eq!(alert_metric(&v, &cfg, Metric::AlertsFired, None), Ok(2.0));
        assert_eq!(
            alert_metric(&v, &cfg, Metric::AlertFired, Some("Quiet")),
            Ok(0.0)
        );
        assert!(alert_metric(&v, &cfg, Metric::AlertLeadS, Some("Quiet"))
            .unwrap_err()
            .0
            .contains("never fired"));
        assert!(alert_metric(&v, &cfg, Metric::AlertFired, Some("Nope"))
            .unwrap_err()
            .0
            .contains("Early, Late, Quiet"));
    }

    #[test]
    fn a_given_up_document_is_a_customer_failure_and_warmup_is_skipped() {
        let mut v = run(None, vec![alert("A", &[], &[(4.0, 6.0)])]);
        // A bad warm-up second does not count.
        v.seconds[1].rejected = 90;
        v.seconds[8].documents_given_up = 1;
        let cfg = AnalysisConfig::default();
        let d = detect(&v, &cfg);
        assert_eq!(d.first_customer_failure_s, Some(8.0));
        assert!(d.customer_failure_reason.contains("given up"));
        assert_eq!(d.alerts[0].lead_s, Some(4.0));
    }

    #[test]
    fn a_firing_is_counted_in_the_second_it_fell_in() {
        // Prometheus evaluates off the variant's clock: 10.0001 s and 9.9999 s
        // are seconds 10 and 9 of the series, whatever the phase.
        let v = run(
            Some(10),
            vec![
                alert("Phase", &[], &[(10.0001, 20.0)]),
                alert("Before", &[], &[(9.9999, 20.0)]),
            ],
        );
        let d = detect(&v, &AnalysisConfig::default());
        assert_eq!(d.alerts[0].lead_s, Some(0.0));
        assert_eq!(d.alerts[1].lead_s, Some(1.0));
    }

    #[test]
    fn an_alert_after_the_first_failure_can_still_lead_the_wave() {
        // Customers see a few failures from 8 s (the trigger's own heavy
        // tail, 20 %); the wave (60 % > 0.5) begins at 14 s.
        let mut v = run(
            Some(8),
            vec![alert("Cause", &[(9.0, 10.0)], &[(10.0, 25.0)])],
        );
        for s in v.seconds.iter_mut().filter(|s| (14..20).contains(&s.t)) {
            s.ok = 40;
            s.rejected = 60;
        }
        let cfg = AnalysisConfig::default();
        let d = detect(&v, &cfg);
        assert_eq!(d.first_customer_failure_s, Some(8.0));
        assert_eq!(d.first_wave_s, Some(14.0));
        assert_eq!(d.alerts[0].lead_s, Some(-2.0));
        assert_eq!(d.alerts[0].wave_lead_s, Some(4.0));
        assert_eq!(
            alert_metric(&v, &cfg, Metric::AlertWaveLeadS, Some("Cause")),
            Ok(4.0)
        );
        // Without a wave the lead over it is undefined, and says why.
        let calm = run(Some(8), vec![alert("Cause", &[], &[(10.0, 25.0)])]);
        assert!(
            alert_metric(&calm, &cfg, Metric::AlertWaveLeadS, Some("Cause"))
                .unwrap_err()
                .0
                .contains("no wave")
        );
    }

    #[test]
    fn the_triggers_own_documents_failing_is_not_yet_a_customer_failure() {
        // From 7 s an injected oversized document times out every second and
        // is given up at 9 s: the trigger. Customers' documents fail from 11 s.
        let mut v = run(Some(11), vec![alert("Cause", &[], &[(8.0, 25.0)])]);
        for s in v.seconds.iter_mut().filter(|s| (7..11).contains(&s.t)) {
            s.ok = 20;
            s.rejected = 0;
            s.timeouts = 5;
            s.injected_attempts_done = 5;
            s.injected_attempts_failed = 5;
        }
        v.seconds[9].documents_given_up = 1;
        v.seconds[9].injected_given_up = 1;
        let d = detect(&v, &AnalysisConfig::default());
        assert_eq!(d.first_injected_failure_s, Some(7.0));
        assert_eq!(d.first_customer_failure_s, Some(11.0));
        assert!(d.customer_failure_reason.contains("customers' documents"));
        assert_eq!(d.alerts[0].lead_s, Some(3.0));
        // The same failures on customers' documents count at once.
        for s in v.seconds.iter_mut() {
            s.injected_attempts_done = 0;
            s.injected_attempts_failed = 0;
            s.injected_given_up = 0;
        }
        assert_eq!(
            detect(&v, &AnalysisConfig::default()).first_customer_failure_s,
            Some(7.0)
        );
    }

    #[test]
    fn without_customer_failure_there_is_no_lead_time() {
        let v = run(None, vec![alert("A", &[], &[(4.0, 6.0)])]);
        let cfg = AnalysisConfig::default();
        assert_eq!(detect(&v, &cfg).first_customer_failure_s, None);
        assert!(alert_metric(&v, &cfg, Metric::AlertLeadS, Some("A")).is_err());
        assert_eq!(
            alert_metric(&v, &cfg, Metric::AlertFired, Some("A")),
            Ok(1.0)
        );
    }

    #[test]
    fn without_alerts_the_metrics_are_undefined() {
        let v = run(Some(3), vec![]);
        assert!(alert_metric(&v, &AnalysisConfig::default(), Metric::AlertsFired, None).is_err());
    }
}
