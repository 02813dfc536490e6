//! The section on an external target's own series: each
//! `target_series:` expression's figures per variant, placed after "why each
//! verdict" where the harness's own sustaining effects stand. What could
//! not be measured is said in the row (or, for an external target without
//! expressions, in one sentence), never shown as 0.

use super::table::{head, row};
use crate::format::opt_num;
use crate::model::RunData;
use crate::target_series::figures;
use crate::xml::escape;
use std::fmt::Write;

/// Said when an external target's run names no expressions.
const NONE_NAMED: &str = "Not measured: the experiment names no <code>target.metrics</code> \
     and <code>target_series:</code> expressions, so what kept the target degraded (its own \
     retries, queues, duplicate work) was not read; the verdict rests on the client-side figures.";

/// The section, when the run drove an external target or has any series.
pub(super) fn section(h: &mut String, run: &RunData) {
    let any = run.variants.iter().any(|v| !v.target_series.is_empty());
    if !any && run.environment.kind != "external" {
        return;
    }
    h.push_str("<section id=\"target-series\">\n<h2>The target's own series</h2>\n");
    if !any {
        let _ = writeln!(h, "<p>{NONE_NAMED}</p>\n</section>");
        return;
    }
    h.push_str(
        "<p class=\"muted\">From the target's own metrics: each <code>target_series:</code> \
         expression as the run's Prometheus evaluated it, one value per second. Before: the \
         mean before the first trigger; after the residue: the mean from the last trigger's \
         residue end to the load's end, the effect still there once the trigger had gone.</p>\n",
    );
    head(
        h,
        &[
            "variant",
            "name",
            "expression",
            "before trigger",
            "after residue",
            "mean",
            "peak",
            "seconds with data",
        ],
    );
    for v in &run.variants {
        for s in &v.target_series {
            let mut cells = vec![
                escape(&v.name),
                escape(&s.name),
                format!("<code>{}</code>", escape(&s.expr)),
            ];
            if let Some(why) = &s.unmeasured {
                let _ = writeln!(
                    h,
                    "<tr class=\"failed\"><td>{}</td><td colspan=\"5\">NOT MEASURED: {}</td></tr>",
                    cells.join("</td><td>"),
                    escape(why)
                );
                continue;
            }
            let f = figures(s, v);
            let after = match f.after_residue_from_s {
                Some(from) => format!("{} (from {from:.0} s)", opt_num(f.after_residue)),
                None => "— (no trigger)".into(),
            };
            cells.extend([
                opt_num(f.before_trigger),
                after,
                opt_num(f.mean),
                opt_num(f.max),
                format!("{} of {}", f.samples, s.values.len()),
            ]);
            row(h, "", &cells);
        }
    }
    h.push_str("</table>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TargetSeries;
    use crate::model::VariantRun;

    #[test]
    fn says_what_was_not_measured() {
        let mut run = RunData::default();
        run.environment.kind = "external".into();
        run.variants.push(VariantRun::default());
        let mut h = String::new();
        section(&mut h, &run);
        assert!(h.contains("Not measured"), "{h}");
        run.variants[0].target_series = vec![
            TargetSeries {
                name: "dup".into(),
                expr: "sum(rate(x[5s]))".into(),
                values: vec![Some(2.0), Some(4.0)],
                unmeasured: None,
            },
            TargetSeries {
                name: "queue".into(),
                expr: "y".into(),
                values: vec![None, None],
                unmeasured: Some("the expression returned no data over the run".into()),
            },
        ];
        let mut h = String::new();
        section(&mut h, &run);
        assert!(
            h.contains("<td class=\"num\">3</td>"),
            "mean of 2 and 4: {h}"
        );
        assert!(
            h.contains("NOT MEASURED: the expression returned no data"),
            "{h}"
        );
        let mut h = String::new();
        run.environment.kind = "embedded".into();
        run.variants[0].target_series.clear();
        section(&mut h, &run);
        assert!(h.is_empty());
    }
}
