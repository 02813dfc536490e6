//! `junit.xml`: the verdicts in the format CI systems already display. One
//! `<testcase classname="<experiment>.<variant>" name="<metric> <source>">` per
//! expectation, plus one `integrity` test case per variant (no incorrect
//! result, every document accounted for) whose output also carries the
//! variant's verdict; each verdict class is a `verdict.<variant>` property.
//! Everything is XML-escaped.

use crate::analysis::Analysis;
use crate::metrics::MetricRef;
use crate::model::RunData;
use crate::xml::{escape, escape_attr};
use std::fmt::Write;

struct Case {
    classname: String,
    name: String,
    failure: Option<(String, String)>,
    /// Not evaluated (an alert metric on the virtual clock): `<skipped>`.
    skipped: Option<String>,
    out: Option<String>,
}

fn cases(run: &RunData, analysis: &Analysis) -> Vec<Case> {
    let class = |variant: &str| format!("{}.{}", run.experiment, variant);
    let mut cases: Vec<Case> = analysis
        .expectations
        .iter()
        .map(|e| Case {
            classname: class(&e.spec.variant),
            name: format!("{} {}", MetricRef::of(&e.spec), e.spec.source),
            failure: e
                .failed()
                .then(|| ("expectation".to_string(), e.message.clone())),
            skipped: e.not_evaluated.clone(),
            out: Some(e.message.clone()),
        })
        .collect();
    for v in &run.variants {
        let a = analysis.variant_for(v, &run.analysis);
        let i = &v.integrity;
        let summary = format!(
            "submitted {}, completed {}, given up {}, pending {}, checked {}, incorrect {}",
            i.submitted, i.completed, i.given_up, i.pending, i.results_checked, i.incorrect_results
        );
        let mut out = format!("{summary}\nverdict: {}", a.verdict.explanation());
        if v.interrupted {
            let why = v
                .interrupted_reason
                .as_deref()
                .unwrap_or("no reason recorded");
            let _ = write!(out, "\nvariant INTERRUPTED: {why}");
        }
        for ex in &i.incorrect_examples {
            let _ = write!(out, "\nincorrect: {ex}");
        }
        cases.push(Case {
            classname: class(&v.name),
            name: "integrity".to_string(),
            failure: (!a.integrity_ok)
                .then(|| ("integrity".to_string(), a.integrity_problems.join("; "))),
            skipped: None,
            out: Some(out),
        });
    }
    cases
}

/// The whole junit.xml document.
pub fn junit_xml(run: &RunData, analysis: &Analysis) -> String {
    let cases = cases(run, analysis);
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let skipped = cases.iter().filter(|c| c.skipped.is_some()).count();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"0\">",
        escape_attr(&run.experiment),
        cases.len()
    );
    x.push_str("  <properties>\n");
    let env = &run.environment;
    let mut props = vec![
        ("run_id".to_string(), run.run_id.clone()),
        ("started_at".to_string(), run.started_at.clone()),
        ("seed".to_string(), run.seed.to_string()),
        ("quick".to_string(), run.quick.to_string()),
        ("environment".to_string(), env.kind.clone()),
        ("gpu_adapter".to_string(), env.gpu_adapter.clone()),
        ("gpu_fallback".to_string(), env.gpu_fallback.to_string()),
        ("all_passed".to_string(), analysis.all_passed.to_string()),
    ];
    for a in &analysis.variants {
        props.push((format!("verdict.{}", a.name), a.verdict.class().to_string()));
    }
    for (k, v) in props {
        let _ = writeln!(
            x,
            "    <property name=\"{}\" value=\"{}\"/>",
            escape_attr(&k),
            escape_attr(&v)
        );
    }
    x.push_str("  </properties>\n");
    for c in &cases {
        let _ = write!(
            x,
            "  <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
            escape_attr(&c.classname),
            escape_attr(&c.name)
        );
        if let Some((kind, message)) = &c.failure {
            let _ = write!(
                x,
                "\n    <failure type=\"{kind}\" message=\"{}\">{}</failure>",
                escape_attr(message),
                escape(message)
            );
        }
        if let Some(why) = &c.skipped {
            let _ = write!(x, "\n    <skipped message=\"{}\"/>", escape_attr(why));
        }
        if let Some(out) = &c.out {
            let _ = write!(x, "\n    <system-out>{}</system-out>", escape(out));
        }
        x.push_str("\n  </testcase>\n");
    }
    x.push_str("</testsuite>\n");
    x
}
