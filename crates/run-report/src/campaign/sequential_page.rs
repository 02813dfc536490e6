//! The campaign page's section for a sequential campaign: per claim its
//! decision, the runs it took and the boundary it crossed, and the time to
//! proof against a fixed-size campaign. Kept apart from `write.rs` so the
//! page of a fixed campaign is unchanged.

use super::sequential::{Outcome, SequentialSummary};
use crate::format::num;
use crate::xml::escape;
use std::fmt::Write;

/// Appends the section (after the headline).
pub(crate) fn section(h: &mut String, s: &SequentialSummary) {
    h.push_str("<section id=\"sequential\"><h2>Claims, decided as the runs came in</h2>\n");
    let t = &s.time_to_proof;
    let _ = writeln!(
        h,
        "<p class=\"desc\"><b>Time to proof:</b> {} s of wall time, {} runs, where a fixed-size campaign would have made {}. {}</p>",
        num(t.wall_s),
        t.runs_used,
        t.fixed_runs,
        if s.settled {
            "Every claim is settled.".to_string()
        } else {
            format!(
                "NOT SETTLED within {} seeds: {}.",
                s.max_seeds,
                escape(s.suggestion.as_deref().unwrap_or(""))
            )
        }
    );
    h.push_str("<table><tr><th>decision</th><th>claim</th><th>H0 / H1</th><th>alpha, beta</th><th>runs</th><th>boundary crossed</th><th>seen</th></tr>\n");
    for c in &s.claims {
        let class = match c.outcome {
            Outcome::Holds => "pass",
            Outcome::Refuted | Outcome::NotSettled => "fail",
        };
        let _ = writeln!(
            h,
            "<tr><td><span class=\"{class}\">{}</span></td><td><code>{}</code></td><td>{} / {}</td><td>{}, {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.outcome.word().to_uppercase(),
            escape(&c.claim),
            escape(&c.h0),
            escape(&c.h1),
            num(c.alpha),
            num(c.beta),
            c.runs,
            escape(c.boundary.as_deref().unwrap_or("none: between B and A")),
            escape(&c.message),
        );
    }
    h.push_str("</table>\n<p class=\"muted\">Wald's SPRT per claim: it proves the claim when the log-likelihood ratio reaches A = ln((1 - beta)/alpha) and refutes it at B = ln(beta/(1 - alpha)); a decided claim's variant is not run again.</p></section>\n");
}
