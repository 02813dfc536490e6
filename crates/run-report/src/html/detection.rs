//! The "Detection" section: for each variant, when customers first saw a
//! failure and when each of the experiment's alert rules went pending,
//! fired and resolved, with its lead time. The question it answers for an
//! SRE: would these rules have caught the incident, how early, and do they
//! stay quiet on the fixed system? Absent when the experiment has no
//! `alerts:`.

use super::table::{head, row};
use crate::analysis::detection::detect;
use crate::model::RunData;
use crate::xml::escape;
use std::fmt::Write;

fn secs(x: Option<f64>) -> String {
    x.map_or("—".into(), |s| format!("{s:.0} s"))
}

/// A lead time in words: positive caught it before `what` (customers, the wave).
fn lead(x: Option<f64>, fired: bool, reference: Option<f64>, what: &str, absent: &str) -> String {
    match (x, fired, reference) {
        (Some(l), _, _) if l > 0.0 => {
            format!("<span class=\"pass\">{l:+.0} s</span> (before {what})")
        }
        (Some(l), _, _) => format!("<span class=\"fail\">{l:+.0} s</span> (after {what})"),
        (None, false, Some(_)) => "<span class=\"fail\">missed</span> (never fired)".into(),
        (None, true, None) => format!("— ({absent})"),
        (None, _, _) => "—".into(),
    }
}

pub(crate) fn section(h: &mut String, run: &RunData) {
    if run.variants.iter().all(|v| v.alerts.is_empty()) {
        return;
    }
    h.push_str(
        "<section id=\"detection\">\n<h2>Detection</h2>\n<p class=\"muted\">The experiment's alert rules, \
         evaluated by a real Prometheus on every variant (the system's <code>/metrics</code> and the \
         harness's client-side series). Lead time = first customer-visible failure − the second of the first firing; \
         positive means the rule caught the problem before customers saw it. Lead over the wave = the \
         first wave's first second − first firing: whether the rule recognised the overload before the \
         majority of requests failed. First customer-visible \
         failure: the first second after the warm-up whose client-visible failure ratio of the customers' \
         documents (those no trigger injected: an injected oversized document that cannot finish within \
         its client's timeout fails as it lands, which is the trigger, not yet the overload) is above ",
    );
    let _ = writeln!(
        h,
        "{:.0} % (<code>analysis.customer_failure_threshold</code>) or in which one of them was given up.</p>",
        run.analysis.customer_failure_threshold * 100.0
    );
    for v in &run.variants {
        if v.alerts.is_empty() {
            continue;
        }
        let d = detect(v, &run.analysis);
        let fired = d.alerts.iter().filter(|a| a.fired()).count();
        let _ = write!(
            h,
            "<h3>{}</h3>\n<p>First customer-visible failure: <b>{}</b>{}.{} First wave: <b>{}</b>. Alerts fired: <b>{fired}</b> of {}.</p>\n",
            escape(&v.name),
            secs(d.first_customer_failure_s),
            if d.first_customer_failure_s.is_some() {
                format!(" ({})", escape(&d.customer_failure_reason))
            } else {
                String::new()
            },
            match d.first_injected_failure_s {
                Some(t) => format!(" The trigger's own documents first failed at {}.", secs(Some(t))),
                None => String::new(),
            },
            secs(d.first_wave_s),
            d.alerts.len()
        );
        head(
            h,
            &[
                "alert",
                "first pending",
                "first firing",
                "resolved",
                "lead time",
                "lead over the wave",
            ],
        );
        for a in &d.alerts {
            let resolved = match (a.first_firing_s, a.resolved_s) {
                (None, _) => "—".into(),
                (Some(_), None) => "still firing at the end".into(),
                (Some(_), r) => secs(r),
            };
            row(
                h,
                "",
                &[
                    format!("<code>{}</code>", escape(&a.name)),
                    secs(a.first_pending_s),
                    secs(a.first_firing_s),
                    resolved,
                    lead(
                        a.lead_s,
                        a.fired(),
                        d.first_customer_failure_s,
                        "customers",
                        "customers saw no failure",
                    ),
                    lead(
                        a.wave_lead_s,
                        a.fired(),
                        d.first_wave_s,
                        "the wave",
                        "no wave",
                    ),
                ],
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("</section>\n");
}
