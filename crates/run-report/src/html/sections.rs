//! The sections of index.html, one function each. Every piece of text that
//! comes from the run (names, labels, messages, YAML) goes through [`escape`].

use super::table::{head, row};
use super::verdict::verdict_html;
use crate::analysis::{Analysis, ExpectationResult};
use crate::format::{ms, num, opt_num, opt_pct, pct};
use crate::metrics::{Metric, MetricRef};
use crate::model::{EventKind, LatencySummary, RunData};
use crate::xml::escape;
use std::fmt::Write;

pub fn header(h: &mut String, run: &RunData, analysis: &Analysis) {
    let failed = analysis.expectations.iter().filter(|e| e.failed()).count();
    let not_evaluated = analysis
        .expectations
        .iter()
        .filter(|e| e.not_evaluated.is_some())
        .count();
    let integrity_failed = analysis.variants.iter().filter(|v| !v.integrity_ok).count();
    let (class, text) = if analysis.all_passed {
        (
            "pass",
            if not_evaluated == 0 {
                format!(
                    "PASS — all {} expectation(s) met, integrity held",
                    analysis.expectations.len()
                )
            } else {
                format!(
                    "PASS — all {} evaluated expectation(s) met, integrity held; {not_evaluated} NOT EVALUATED (see the banner)",
                    analysis.expectations.len() - not_evaluated
                )
            },
        )
    } else {
        let mut why = vec![format!(
            "{failed} of {} expectation(s) failed",
            analysis.expectations.len()
        )];
        if integrity_failed > 0 {
            why.push(format!("integrity failed in {integrity_failed} variant(s)"));
        }
        ("fail", format!("FAIL — {}", why.join(", ")))
    };
    let _ = write!(
        h,
        "<header>\n<h1>{}</h1>\n<p class=\"desc\">{}</p>\n\
         <p class=\"meta\">{} · seed {} · {}{} environment · {}</p>\n\
         <div class=\"overall {class}\">{}</div>\n</header>\n",
        escape(&run.experiment),
        escape(&run.description),
        run_and_start(run),
        run.seed,
        if run.quick {
            "<b>QUICK run (scaled down)</b> · "
        } else {
            ""
        },
        escape(&run.environment.kind),
        clock_text(run),
        escape(&text)
    );
}

/// "run <b>ID</b> · started TIME"; a virtual-clock run's record holds the
/// epoch for both (it replays byte for byte), so it is named as such.
fn run_and_start(run: &RunData) -> String {
    if run.clock.is_real() {
        format!(
            "run <b>{}</b> · started {}",
            escape(&run.run_id),
            escape(&run.started_at)
        )
    } else {
        escape(&run.label())
    }
}

/// "real clock", or "<b>virtual clock</b> (98.1 s in 2.4 s of wall time, 41x)".
fn clock_text(run: &RunData) -> String {
    let name = format!("{} clock", run.clock.name());
    let name = if run.clock.is_real() {
        name
    } else {
        format!("<b>{name}</b>")
    };
    match &run.timing {
        Some(t) => format!(
            "{name} ({:.1} s in {:.1} s of wall time, {:.1}x)",
            t.clock_s,
            t.wall_s,
            t.ratio()
        ),
        None => name,
    }
}

pub fn banners(h: &mut String, run: &RunData, analysis: &Analysis) {
    let env = &run.environment;
    let skipped: Vec<&ExpectationResult> = analysis
        .expectations
        .iter()
        .filter(|e| e.not_evaluated.is_some())
        .collect();
    if let Some(first) = skipped.first() {
        let _ = writeln!(
            h,
            "<div class=\"banner\" id=\"not-evaluated\">{} EXPECTATION(S) NOT EVALUATED: they are neither \
             passed nor failed, and the overall result does not count them.<small>{}</small></div>",
            skipped.len(),
            escape(first.not_evaluated.as_deref().unwrap_or_default())
        );
    }
    if env.gpu_fallback {
        let _ = writeln!(
            h,
            "<div class=\"banner\" id=\"gpu-fallback\">GPU FALLBACK: no GPU adapter was used — the CPU page \
             function ran instead. Capacities and latencies are NOT those of the GPU system.\
             <small>Reason: {} · adapter: {}</small></div>",
            escape(env.gpu_fallback_reason.as_deref().unwrap_or("not recorded")),
            escape(&env.gpu_adapter)
        );
    }
    for v in &run.variants {
        if let Some(w) = v.gpu_pacing.as_ref().and_then(|p| p.warning()) {
            let _ = writeln!(
                h,
                "<div class=\"banner\" id=\"gpu-pacing\">GPU SLOWER THAN ITS MODEL in {}: capacities and loads \
                 stated against the calibrated capacity are off.<small>{}</small></div>",
                escape(&v.name),
                escape(&w)
            );
        }
    }
    for v in run.variants.iter().filter(|v| v.interrupted) {
        let _ = writeln!(
            h,
            "<div class=\"banner\" id=\"interrupted\">VARIANT INTERRUPTED: {} was cut short — its series, \
             verdict and expectations cover only part of the experiment.<small>Reason: {}</small></div>",
            escape(&v.name),
            escape(v.interrupted_reason.as_deref().unwrap_or("not recorded"))
        );
    }
    for v in &run.variants {
        for a in v.lost_agents() {
            let _ = writeln!(
                h,
                "<div class=\"banner\" id=\"agent-lost\">DEGRADED: load agent {} (shard {} of {}) of {} was lost — \
                 {} of its {} documents count as pending (agent lost), and the run does not pass.<small>Reason: {}</small></div>",
                escape(&a.name),
                a.shard,
                a.of,
                escape(&v.name),
                a.pending_agent_lost,
                a.documents,
                escape(a.lost.as_deref().unwrap_or(""))
            );
        }
    }
    for v in run.variants.iter().filter(|v| !v.unmeasured.is_empty()) {
        // Grouped by why: a generic HTTP service lacks a dozen figures for
        // one reason, said once.
        let mut by_why: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for (m, why) in &v.unmeasured {
            by_why.entry(why).or_default().push(m.to_string());
        }
        let _ = writeln!(
            h,
            "<div class=\"banner\" id=\"unmeasured\">NOT MEASURED in {}: the target does not export every \
             series the report reads, so these figures read n/a.<small>{}</small></div>",
            escape(&v.name),
            escape(
                &by_why
                    .iter()
                    .map(|(why, ms)| format!("{why}: {}", ms.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        );
    }
    for a in analysis.variants.iter().filter(|a| !a.integrity_ok) {
        let _ = writeln!(
            h,
            "<div class=\"banner\" id=\"integrity\">INTEGRITY FAILED in {}: {}</div>",
            escape(&a.name),
            escape(&a.integrity_problems.join("; "))
        );
    }
}

pub fn summary(h: &mut String, run: &RunData, analysis: &Analysis) {
    h.push_str("<section id=\"summary\">\n<h2>Verdicts</h2>\n");
    head(
        h,
        &[
            "variant",
            "verdict",
            "waves",
            "peak failure ratio",
            "amplification peak (per second)",
            "attempts per document",
            "gateway amplification",
            "duplicate compute",
            "cache writes lost",
            "submitted",
            "completed",
            "given up",
            "pending",
            "incorrect",
            "integrity",
        ],
    );
    for v in &run.variants {
        let a = &*analysis.variant_for(v, &run.analysis);
        let i = &v.integrity;
        let x = |m| opt_num(a.metrics.get(m)).to_string();
        let integrity = if a.integrity_ok {
            "<span class=\"pass\">ok</span>".to_string()
        } else {
            format!(
                "<span class=\"fail\">{}</span>",
                escape(&a.integrity_problems.join("; "))
            )
        };
        row(
            h,
            if a.integrity_ok { "" } else { "failed" },
            &[
                format!(
                    "<b>{}</b>{}",
                    escape(&v.name),
                    if v.interrupted {
                        " <span class=\"fail\">(interrupted)</span>"
                    } else {
                        ""
                    }
                ),
                verdict_html(&a.verdict),
                a.waves.len().to_string(),
                opt_pct(a.metrics.get(Metric::PeakFailureRatio)),
                x(Metric::AmplificationPeak),
                x(Metric::AttemptsPerDocument),
                x(Metric::GatewayAmplification),
                opt_pct(a.metrics.get(Metric::DuplicateComputeShare)),
                x(Metric::CacheWritesLost),
                i.submitted.to_string(),
                i.completed.to_string(),
                i.given_up.to_string(),
                i.pending.to_string(),
                i.incorrect_results.to_string(),
                integrity,
            ],
        );
    }
    h.push_str("</table>\n");
    if let Some(ctx) = &run.campaign_context {
        let _ = write!(
            h,
            "<p class=\"muted\">In context: the experiment's campaign of {} ({} repeat(s), recorded {}).</p>\n<ul>",
            ctx.seeds_text(),
            ctx.repeats,
            escape(&ctx.recorded)
        );
        for line in ctx.place(analysis) {
            let _ = write!(h, "<li>{}</li>", escape(&line));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</section>\n");
}

pub fn expectations(h: &mut String, analysis: &Analysis) {
    h.push_str("<section id=\"expectations\">\n<h2>Expectations</h2>\n");
    if analysis.expectations.is_empty() {
        h.push_str("<p class=\"muted\">The experiment states no expectation.</p>\n</section>\n");
        return;
    }
    head(
        h,
        &[
            "result", "variant", "metric", "expected", "measured", "detail",
        ],
    );
    for e in &analysis.expectations {
        let result = match e.outcome() {
            "PASS" => "<span class=\"pass\">PASS</span>",
            "FAIL" => "<span class=\"fail\">FAIL</span>",
            _ => "<span class=\"muted\"><b>NOT EVALUATED</b></span>",
        };
        row(
            h,
            if e.failed() { "failed" } else { "" },
            &[
                result.to_string(),
                escape(&e.spec.variant),
                format!(
                    "<code>{}</code>",
                    escape(&MetricRef::of(&e.spec).to_string())
                ),
                format!("<code>{}</code>", escape(&e.spec.source)),
                opt_num(e.measured),
                escape(&e.message),
            ],
        );
    }
    h.push_str("</table>\n</section>\n");
}

pub fn fidelity(h: &mut String, analysis: &Analysis) {
    if analysis.fidelity.is_empty() {
        return;
    }
    h.push_str("<section id=\"fidelity\">\n<h2>Fidelity to the incident</h2>\n");
    head(
        h,
        &[
            "incident figure",
            "variant",
            "metric",
            "incident",
            "reproduced",
            "difference",
            "ratio",
        ],
    );
    for f in &analysis.fidelity {
        let measured = match (&f.measured, &f.note) {
            (Some(m), _) => num(*m),
            (None, Some(note)) => format!("— ({})", escape(note)),
            (None, None) => "—".to_string(),
        };
        row(
            h,
            "",
            &[
                escape(&f.label),
                escape(&f.variant),
                format!("<code>{}</code>", escape(&f.metric)),
                num(f.incident_value),
                measured,
                opt_num(f.difference),
                f.ratio.map_or("—".to_string(), |r| format!("{}x", num(r))),
            ],
        );
    }
    h.push_str("</table>\n</section>\n");
}

pub fn waves(h: &mut String, analysis: &Analysis) {
    h.push_str("<section id=\"waves\">\n<h2>Failure waves</h2>\n");
    head(
        h,
        &[
            "variant",
            "#",
            "start",
            "duration",
            "peak failure ratio",
            "mean failure ratio",
            "peak amplification",
        ],
    );
    for a in &analysis.variants {
        if a.waves.is_empty() {
            row(
                h,
                "",
                &[
                    escape(&a.name),
                    "—".into(),
                    "no wave".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            );
        }
        for (i, w) in a.waves.iter().enumerate() {
            row(
                h,
                "",
                &[
                    escape(&a.name),
                    (i + 1).to_string(),
                    format!("{} s", w.start_s),
                    format!("{} s", w.duration_s),
                    pct(w.peak_failure_ratio),
                    pct(w.mean_failure_ratio),
                    format!("{}x", num(w.peak_amplification)),
                ],
            );
        }
    }
    h.push_str("</table>\n</section>\n");
}

fn latency_cells(l: &LatencySummary) -> Vec<String> {
    [l.p50_ms, l.p90_ms, l.p99_ms, l.p999_ms, l.max_ms]
        .iter()
        .map(|x| ms(*x))
        .collect()
}

pub fn latency(h: &mut String, run: &RunData) {
    h.push_str("<section id=\"latency\">\n<h2>Latency percentiles</h2>\n<p class=\"muted\">Every attempt over the whole run.</p>\n");
    head(
        h,
        &["variant", "attempts", "p50", "p90", "p99", "p99.9", "max"],
    );
    for v in &run.variants {
        let mut cells = vec![escape(&v.name), v.latency.count.to_string()];
        cells.extend(latency_cells(&v.latency));
        row(h, "", &cells);
    }
    h.push_str("</table>\n");
    if run
        .variants
        .iter()
        .any(|v| !v.tenant_latency.is_empty() || !v.tenant_traffic.is_empty())
    {
        h.push_str("<p class=\"muted\">Per tenant: what its clients sent (attempts per submission is their own retry amplification) and the end-to-end latency of its completed documents (first send to final answer).</p>\n");
        head(
            h,
            &[
                "variant",
                "tenant",
                "submissions",
                "attempts",
                "attempts per submission",
                "documents completed",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "max",
            ],
        );
        for v in &run.variants {
            let names: std::collections::BTreeSet<&String> = v
                .tenant_latency
                .keys()
                .chain(v.tenant_traffic.keys())
                .collect();
            for t in names {
                let oversized = if v.oversized_tenants.contains(t) {
                    " <b>(oversized)</b>"
                } else {
                    ""
                };
                let traffic = v.tenant_traffic.get(t).copied().unwrap_or_default();
                let l = v.tenant_latency.get(t).cloned().unwrap_or_default();
                let mut cells = vec![
                    escape(&v.name),
                    format!("{}{oversized}", escape(t)),
                    traffic.submissions.to_string(),
                    traffic.attempts.to_string(),
                    traffic
                        .amplification()
                        .map_or("n/a".into(), |a| format!("{a:.2}")),
                    l.count.to_string(),
                ];
                if l.count == 0 {
                    cells.extend(std::iter::repeat_n("n/a".to_string(), 5));
                } else {
                    cells.extend(latency_cells(&l));
                }
                row(h, "", &cells);
            }
        }
        h.push_str("</table>\n");
    }
    h.push_str("</section>\n");
}

pub fn timeline(h: &mut String, run: &RunData) {
    h.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    head(
        h,
        &["variant", "at", "until", "kind", "label", "ok", "detail"],
    );
    for v in &run.variants {
        for e in &v.events {
            let kind = match e.kind {
                EventKind::Fault => "<span class=\"fail\">fault</span>",
                EventKind::Action => "<span class=\"pass\">action</span>",
                EventKind::FaultUndone => "fault undone",
            };
            row(
                h,
                if e.ok { "" } else { "failed" },
                &[
                    escape(&v.name),
                    format!("{} s", num(e.at_s)),
                    e.end_s.map_or("—".into(), |x| format!("{} s", num(x))),
                    kind.to_string(),
                    escape(&e.label),
                    if e.ok {
                        "ok".into()
                    } else {
                        "<span class=\"fail\">FAILED</span>".into()
                    },
                    escape(&e.detail),
                ],
            );
        }
    }
    h.push_str("</table>\n</section>\n");
}

pub fn integrity_examples(h: &mut String, run: &RunData) {
    let with: Vec<_> = run
        .variants
        .iter()
        .filter(|v| !v.integrity.incorrect_examples.is_empty())
        .collect();
    if with.is_empty() {
        return;
    }
    h.push_str("<section id=\"incorrect\">\n<h2>Incorrect results (examples)</h2>\n<ul>\n");
    for v in with {
        for ex in &v.integrity.incorrect_examples {
            let _ = writeln!(
                h,
                "<li><b>{}</b>: <code>{}</code></li>",
                escape(&v.name),
                escape(ex)
            );
        }
    }
    h.push_str("</ul>\n</section>\n");
}

pub fn environment(h: &mut String, run: &RunData) {
    let e = &run.environment;
    h.push_str("<section id=\"environment\">\n<h2>Environment</h2>\n<table>\n");
    let fallback = if e.gpu_fallback {
        format!(
            "<span class=\"fail\">YES — CPU page function ({})</span>",
            escape(
                e.gpu_fallback_reason
                    .as_deref()
                    .unwrap_or("reason not recorded")
            )
        )
    } else {
        "no".to_string()
    };
    let mut facts = vec![
        ("kind", escape(&e.kind)),
        ("GPU adapter", escape(&e.gpu_adapter)),
        ("GPU fallback", fallback),
        (
            "calibrated pages/s (one pool)",
            num(e.calibrated_pages_per_sec),
        ),
        ("calibrated documents/s", num(e.calibrated_docs_per_sec)),
        ("harness version", escape(&e.harness_version)),
        ("host", escape(&e.hostname)),
        ("CPUs", e.cpus.to_string()),
    ];
    for v in &run.variants {
        facts.push((
            "late arrivals (client in-flight cap)",
            format!("{}: {}", escape(&v.name), v.late_arrivals),
        ));
    }
    for (k, v) in &facts {
        let _ = writeln!(h, "<tr><th>{k}</th><td>{v}</td></tr>");
    }
    for (k, v) in &e.extra {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    h.push_str("</table>\n</section>\n");
}
