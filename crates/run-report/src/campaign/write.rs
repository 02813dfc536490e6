//! The campaign's files: `campaign.json` (the summary), `campaign.html`
//! (headline first, then the expectations over runs, the distributions and
//! every run with a link to its report) and `junit.xml` (one case per
//! expectation over runs and per errored run).

use super::{CampaignSummary, RunStatus};
use crate::error::ReportError;
use crate::format::num;
use crate::html::table::{head, row};
use crate::stats::Spread;
use crate::xml::{escape, escape_attr};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Writes the three files into `dir`; returns their paths.
pub fn write_campaign(dir: &Path, c: &CampaignSummary) -> Result<Vec<PathBuf>, ReportError> {
    let json = serde_json::to_vec_pretty(c)?;
    let html = campaign_html(c)?;
    let junit = campaign_junit(c);
    let recorded = dir
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let context = serde_json::to_vec_pretty(&super::context::CampaignContext::of(c, &recorded))?;
    crate::write::write_files(
        dir,
        &[
            ("context.json", &context),
            ("campaign.json", &json),
            ("campaign.html", html.as_bytes()),
            ("junit.xml", junit.as_bytes()),
        ],
    )
}

/// The self-contained page.
pub fn campaign_html(c: &CampaignSummary) -> Result<String, ReportError> {
    let p = &c.plan;
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<h1>Campaign: {}{}</h1>",
        escape(&p.experiment),
        if p.quick { " (quick form)" } else { "" }
    );
    let how = if p.parallel_start == 0 {
        "merged from recorded runs".to_string()
    } else {
        format!(
            "{} at once (at the end {}); {} s of wall time, estimated {} s; {} clock, {} s of modeled time ({}x the wall's)",
            p.parallel_start,
            p.parallel_end,
            num(p.wall_s),
            num(p.estimate_s),
            p.clock.name(),
            num(p.modeled_s),
            num(p.modeled_s / p.wall_s.max(1e-9))
        )
    };
    let _ = writeln!(
        h,
        "<p class=\"meta\">{} variant(s) × {} seed(s) × {} repeat(s) = {} runs; {how}.</p>",
        p.variants.len(),
        p.seeds.len(),
        p.repeats,
        c.runs.len(),
    );
    banners(&mut h, c);
    let overall = if c.all_passed { "pass" } else { "fail" };
    let _ = writeln!(
        h,
        "<div class=\"overall {overall}\">{}</div>",
        if c.all_passed {
            "every expectation over runs held, no run errored"
        } else {
            "FAILED: see below"
        }
    );
    h.push_str("<section id=\"headline\"><h2>The fix, over runs</h2>\n");
    for cmp in &c.comparisons {
        let _ = writeln!(h, "<p class=\"desc\"><b>{}</b></p>", escape(&cmp.sentence));
    }
    h.push_str("</section>\n");
    if let Some(s) = &c.sequential {
        super::sequential_page::section(&mut h, s);
    }
    if let Some(r) = &c.real_check {
        real_check(&mut h, r);
    }
    expectations(&mut h, c);
    verdicts(&mut h, c);
    figures(&mut h, c)?;
    per_run(&mut h, c);
    detection(&mut h, c);
    runs(&mut h, c);
    Ok(crate::html::page(
        &format!("Campaign: {}", p.experiment),
        &h,
    ))
}

/// The virtual campaign's real-time spot check: whether the clocks agree.
fn real_check(h: &mut String, r: &super::real_check::RealCheck) {
    let class = if r.agree { "pass" } else { "fail" };
    let _ = writeln!(
        h,
        "<section id=\"real-check\"><h2>Checked in real time</h2>\n<div class=\"overall {class}\">{}</div>",
        escape(&r.sentence)
    );
    let table = |title: &str, checks: &[super::agreement::Check]| {
        let md = super::agreement::markdown(checks, "virtual", "real");
        format!("<h3>{}</h3><pre>{}</pre>", escape(title), escape(&md))
    };
    h.push_str(&table("The verdicts (the decision)", &r.headline));
    h.push_str(&table("Every figure (information)", &r.checks));
    let _ = writeln!(
        h,
        "<p class=\"meta\">{} s of wall time in real time.</p></section>",
        num(r.wall_s)
    );
}

fn banners(h: &mut String, c: &CampaignSummary) {
    if c.plan.interrupted {
        h.push_str("<div class=\"banner\">INTERRUPTED: the statistics cover the runs that finished</div>\n");
    }
    for v in &c.variants {
        for (what, list) in [
            ("ERRORED", &v.errored),
            ("LEFT OUT (load not as planned)", &v.excluded),
        ] {
            if !list.is_empty() {
                let names: Vec<String> =
                    list.iter().map(|(r, why)| format!("{r}: {why}")).collect();
                let _ = writeln!(
                    h,
                    "<div class=\"banner\">{what} in {}: {} run(s)<small>{}</small></div>",
                    escape(&v.variant),
                    list.len(),
                    escape(&names.join("; "))
                );
            }
        }
    }
}

fn expectations(h: &mut String, c: &CampaignSummary) {
    h.push_str("<section id=\"expectations\"><h2>Expectations over runs</h2>\n");
    if c.expectations.is_empty() {
        h.push_str("<p class=\"muted\">The experiment states none (its <code>campaign.expect</code>).</p></section>\n");
        return;
    }
    head(
        h,
        &[
            "result",
            "variant",
            "expectation",
            "measured",
            "runs against it",
        ],
    );
    for e in &c.expectations {
        row(
            h,
            if e.passed { "" } else { "failed" },
            &[
                pass_fail(e.passed),
                escape(&e.spec.variant),
                format!("<code>{}</code>", escape(&e.spec.source)),
                escape(&e.message),
                escape(&e.against.join(", ")),
            ],
        );
    }
    h.push_str("</table></section>\n");
}

fn pass_fail(ok: bool) -> String {
    if ok {
        "<span class=\"pass\">PASS</span>".into()
    } else {
        "<span class=\"fail\">FAIL</span>".into()
    }
}

fn verdicts(h: &mut String, c: &CampaignSummary) {
    h.push_str("<section id=\"verdicts\"><h2>Verdicts (exact 95 % intervals)</h2>\n");
    head(
        h,
        &["variant", "counted runs", "verdicts", "runs with a wave"],
    );
    for v in &c.variants {
        let classes: Vec<String> = v
            .verdicts
            .iter()
            .map(|(k, s)| format!("{} {s}", crate::analysis::class_words(k)))
            .collect();
        row(
            h,
            "",
            &[
                format!("<b>{}</b>", escape(&v.variant)),
                format!("{} of {}", v.counted, v.planned),
                escape(&classes.join(" · ")),
                escape(&v.with_waves.to_string()),
            ],
        );
    }
    h.push_str("</table></section>\n");
}

fn spread_text(s: &Option<Spread>) -> String {
    match s {
        None => "—".into(),
        Some(s) => format!(
            "{} [{}–{}] ({}–{}), n={}",
            num(s.median),
            num(s.q1),
            num(s.q3),
            num(s.min),
            num(s.max),
            s.n
        ),
    }
}

fn figures(h: &mut String, c: &CampaignSummary) -> Result<(), ReportError> {
    h.push_str("<section id=\"figures\"><h2>Figures over runs</h2>\n<p class=\"muted\">median [quartiles] (range)</p>\n");
    let Some(first) = c.variants.first() else {
        h.push_str("</section>\n");
        return Ok(());
    };
    let mut cols = vec!["figure".to_string()];
    cols.extend(c.variants.iter().map(|v| escape(&v.variant)));
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    head(h, &cols);
    for f in &first.figures {
        let mut cells = vec![format!("<code>{}</code>", escape(&f.metric.to_string()))];
        cells.extend(
            c.variants
                .iter()
                .map(|v| spread_text(&v.figure(&f.metric).and_then(|x| x.spread))),
        );
        row(h, "", &cells);
    }
    h.push_str("</table>\n");
    let svg = super::strip::strip_svg(&c.variants)?;
    let _ = writeln!(h, "<div>{svg}</div>");
    h.push_str("</section>\n");
    Ok(())
}

fn per_run(h: &mut String, c: &CampaignSummary) {
    h.push_str("<section id=\"per-run\"><h2>Per-run expectations</h2>\n");
    head(h, &["variant", "expectation", "held in", "failed in"]);
    for v in &c.variants {
        for e in &v.expectations {
            let flaky = if e.flaky() {
                " <span class=\"fail\">FLAKY</span>"
            } else {
                ""
            };
            row(
                h,
                if e.held < e.of { "failed" } else { "" },
                &[
                    escape(&v.variant),
                    format!("<code>{}</code>{flaky}", escape(&e.expectation)),
                    format!("{} of {}", e.held, e.of),
                    escape(&e.failed_in.join(", ")),
                ],
            );
        }
    }
    h.push_str("</table></section>\n");
}

fn detection(h: &mut String, c: &CampaignSummary) {
    if c.detection.is_empty() {
        return;
    }
    h.push_str("<section id=\"detection\"><h2>Alert rules over runs</h2>\n<p class=\"muted\">Lead: first customer-visible failure minus the first firing (positive: before customers).</p>\n");
    head(
        h,
        &[
            "variant",
            "rule",
            "fired in",
            "by verdict (fired/runs)",
            "lead (s)",
            "false alarms",
        ],
    );
    for a in &c.detection {
        let by: Vec<String> = a
            .by_verdict
            .iter()
            .map(|(k, (f, n))| format!("{k} {f}/{n}"))
            .collect();
        row(
            h,
            if a.false_alarms.is_empty() {
                ""
            } else {
                "failed"
            },
            &[
                escape(&a.variant),
                format!("<code>{}</code>", escape(&a.rule)),
                escape(&a.fired.to_string()),
                escape(&by.join(", ")),
                spread_text(&a.lead_s),
                escape(&a.false_alarms.join(", ")),
            ],
        );
    }
    h.push_str("</table></section>\n");
}

fn runs(h: &mut String, c: &CampaignSummary) {
    h.push_str("<section id=\"runs\"><h2>Every run</h2>\n");
    head(h, &["variant", "run", "outcome", "report"]);
    for r in &c.runs {
        let outcome = match &r.status {
            RunStatus::Judged(j) => escape(&j.verdict),
            RunStatus::Errored { reason } => {
                format!("<span class=\"fail\">errored</span>: {}", escape(reason))
            }
            RunStatus::Excluded { reason, judged } => format!(
                "{} <span class=\"fail\">left out</span>: {}",
                escape(&judged.verdict),
                escape(reason)
            ),
        };
        let link = r.report.as_deref().map_or("—".into(), |p| {
            format!(
                "<a href=\"{}/index.html\">{}</a>",
                escape_attr(p),
                escape(p)
            )
        });
        row(
            h,
            "",
            &[escape(&r.variant), escape(&r.label()), outcome, link],
        );
    }
    h.push_str("</table></section>\n");
}

/// One test case per expectation over runs, per per-run expectation (held
/// in every run), per errored run and per integrity failure.
pub fn campaign_junit(c: &CampaignSummary) -> String {
    let mut cases: Vec<(String, String, Option<String>)> = Vec::new();
    for e in &c.expectations {
        let fail = (!e.passed).then(|| e.message.clone());
        cases.push((e.spec.variant.clone(), e.spec.source.clone(), fail));
    }
    for v in &c.variants {
        for e in &v.expectations {
            let fail = (e.held < e.of).then(|| {
                format!(
                    "held in {} of {} runs; failed in {}",
                    e.held,
                    e.of,
                    e.failed_in.join(", ")
                )
            });
            cases.push((
                v.variant.clone(),
                format!("every run: {}", e.expectation),
                fail,
            ));
        }
        for (run, why) in &v.errored {
            cases.push((v.variant.clone(), format!("{run} ran"), Some(why.clone())));
        }
        for run in &v.integrity_failed {
            cases.push((
                v.variant.clone(),
                format!("{run} integrity"),
                Some("integrity failed".into()),
            ));
        }
    }
    let failures = cases.iter().filter(|c| c.2.is_some()).count();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuite name=\"campaign {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{}\">",
        escape_attr(&c.plan.experiment),
        cases.len(),
        c.plan.wall_s
    );
    for (class, name, fail) in cases {
        let _ = write!(
            x,
            "  <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
            escape_attr(&class),
            escape_attr(&name)
        );
        if let Some(f) = fail {
            let _ = write!(x, "<failure message=\"{}\"/>", escape_attr(&f));
        }
        x.push_str("</testcase>\n");
    }
    x.push_str("</testsuite>\n");
    x
}
