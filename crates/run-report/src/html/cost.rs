//! The harness-cost panel: what the harness itself spent per variant (CPU of
//! its load path and of the system under test, late arrivals, arrival-schedule
//! lag), with a red note wherever [`HarnessCost::warnings`] has something to
//! say. Every report shows it, so a run whose load was not delivered as
//! planned can never pass for one that was.

use super::table::{head, row};
use crate::cost::{CostRole, HarnessCost, LAG_P99_LIMIT_MS, MACHINE_SHARE_LIMIT};
use crate::model::RunData;
use crate::xml::escape;
use std::fmt::Write;

/// The red banner at the top of the page when any variant's cost warns.
pub fn banner(h: &mut String, run: &RunData) {
    for v in &run.variants {
        let Some(c) = &v.harness_cost else { continue };
        let w = c.warnings();
        if w.is_empty() {
            continue;
        }
        let _ = writeln!(
            h,
            "<div class=\"banner\" id=\"harness-cost-warning\">HARNESS COST in {}: the harness may have \
             distorted this run (see <a style=\"color:#fff\" href=\"#harness-cost\">Harness cost</a>).<small>{}</small></div>",
            escape(&v.name),
            escape(&w.join("; "))
        );
    }
}

fn cpu(c: &HarnessCost, role: CostRole) -> String {
    if c.measured(role) {
        format!("{:.2}", c.cpu_of(role))
    } else {
        "n/a".into()
    }
}

fn opt_ms(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
}

/// The panel.
pub fn section(h: &mut String, run: &RunData) {
    let _ = write!(
        h,
        "<section id=\"harness-cost\">\n<h2>Harness cost</h2>\n<p class=\"muted\">CPU seconds from the load's \
         start to its end. The harness is warned about when it used more than {:.0}% of the machine \
         (its CPU seconds over wall time x CPUs) or when the p99 of its arrival-schedule lag (actual \
         minus planned first send) passed {LAG_P99_LIMIT_MS} ms. Latencies are measured from the planned \
         send time either way.</p>\n",
        MACHINE_SHARE_LIMIT * 100.0
    );
    if run.variants.iter().all(|v| v.harness_cost.is_none()) {
        h.push_str("<p>Not recorded: this run was made before the harness measured its own cost.</p>\n</section>\n");
        return;
    }
    head(
        h,
        &[
            "variant",
            "wall s",
            "load path CPU-s",
            "harness other CPU-s",
            "system under test CPU-s",
            "unattributed CPU-s",
            "harness share of machine",
            "arrivals sent",
            "late (in-flight cap)",
            "sent &gt; 5 ms late",
            "lag p50 ms",
            "lag p99 ms",
            "lag max ms",
        ],
    );
    for v in &run.variants {
        let Some(c) = &v.harness_cost else {
            row(h, "", &[escape(&v.name), "not recorded".into()]);
            continue;
        };
        let warn = !c.warnings().is_empty();
        row(
            h,
            if warn { "failed" } else { "" },
            &[
                escape(&v.name),
                format!("{:.1}", c.wall_s),
                cpu(c, CostRole::LoadPath),
                cpu(c, CostRole::Harness),
                cpu(c, CostRole::SystemUnderTest),
                cpu(c, CostRole::Unattributed),
                c.machine_share()
                    .map_or_else(|| "n/a".into(), |s| format!("{:.1}%", s * 100.0)),
                c.arrivals_sent.to_string(),
                c.late_arrivals.to_string(),
                c.behind_schedule.to_string(),
                opt_ms(c.lag_p50_ms),
                opt_ms(c.lag_p99_ms),
                opt_ms(c.lag_max_ms),
            ],
        );
    }
    h.push_str("</table>\n");
    for v in &run.variants {
        let Some(c) = &v.harness_cost else { continue };
        let _ = write!(
            h,
            "<h3>{}</h3>\n<p class=\"muted\">{} on {} CPU(s).",
            escape(&v.name),
            escape(&c.method),
            c.cpus
        );
        for u in &c.cpu {
            let _ = write!(
                h,
                " {} ({}): {:.2} CPU-s.",
                escape(&u.name),
                u.role.label(),
                u.cpu_s
            );
        }
        for n in &c.not_measured {
            let _ = write!(h, " Not measured: {}.", escape(n));
        }
        h.push_str("</p>\n");
        for w in c.warnings() {
            let _ = writeln!(h, "<p class=\"fail\">WARNING: {}</p>", escape(&w));
        }
    }
    h.push_str("</section>\n");
}
