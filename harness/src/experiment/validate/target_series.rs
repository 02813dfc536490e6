//! `target_series:` an external target's own series as PromQL, and
//! the `target.metrics` URL they are read from.
//!
//! Here what the file itself can get wrong: expressions on a system the
//! harness measures itself (not an external target), expressions with no
//! metrics URL to read, a metrics URL nothing reads, names that are empty,
//! unusable as a column or given twice, and empty expressions. Whether an
//! expression is valid PromQL is `promtool`'s call
//! ([`crate::observe::target_series::check`], before anything runs), not a second
//! parser's guess.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use crate::experiment::target_series::{Site, TargetSeriesExpr};

/// The validated `target_series:` list (empty when the file has none).
pub(super) fn target_series(
    cx: &Ctx,
    raw: &RawExperiment,
    environment: &Environment,
) -> Result<Vec<TargetSeriesExpr>, ExperimentError> {
    let metrics = match environment {
        Environment::External { metrics, .. } => metrics.as_ref(),
        Environment::Embedded | Environment::Containers { .. } | Environment::Processes(_) => None,
    };
    // The processes environment's sampler reads its `target.metrics`.
    let processes = matches!(environment, Environment::Processes(_));
    if let (Some(m), true) = (
        raw.target.as_ref().and_then(|t| t.metrics.as_ref()),
        raw.target_series.is_empty() && raw.alerts.is_none() && !processes,
    ) {
        return Err(cx.err(&m.referenced, "target.metrics", "nothing reads it: it is scraped for `target_series:` expressions and `alerts:` rules; add one or remove it"));
    }
    let Some(first) = raw.target_series.first() else {
        return Ok(Vec::new());
    };
    if !matches!(environment, Environment::External { .. }) {
        return Err(cx.err(&first.referenced, "target_series", format!("is for `environment: external` only; in the {} environment the harness measures its own system's sustaining effects itself (the verdict's sustaining effect)", environment.kind())));
    }
    if metrics.is_none() {
        return Err(cx.err(&first.referenced, "target_series", "needs `target.metrics`: the URL of the target's Prometheus metrics, which the run's Prometheus scrapes and evaluates these expressions on (e.g. the target's own http://127.0.0.1:8080/metrics)"));
    }
    let mut out: Vec<TargetSeriesExpr> = Vec::new();
    for (i, entry) in raw.target_series.iter().enumerate() {
        out.push(entry_of(cx, i, &entry.value, &out)?);
    }
    Ok(out)
}

/// One entry, checked against the ones before it.
fn entry_of(
    cx: &Ctx,
    i: usize,
    e: &RawTargetSeries,
    before: &[TargetSeriesExpr],
) -> Result<TargetSeriesExpr, ExperimentError> {
    let name = e.name.value.trim();
    let name_field = format!("target_series[{i}].name");
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(cx.err(&e.name.referenced, &name_field, "must be non-empty ASCII letters, digits, '_' or '-' (it names the report's column target_<name>)"));
    }
    if before.iter().any(|b| b.name == name) {
        return Err(cx.err(
            &e.name.referenced,
            &name_field,
            format!("{name:?} is given twice; names must be unique"),
        ));
    }
    let expr = e.expr.value.trim();
    let expr_field = format!("target_series[{i}].expr");
    if expr.is_empty() {
        return Err(cx.err(&e.expr.referenced, &expr_field, "is empty; write a PromQL expression giving one series, e.g. sum(rate(sut_pages_recomputed_total[5s]))"));
    }
    Ok(TargetSeriesExpr {
        name: name.to_string(),
        expr: expr.to_string(),
        site: Site {
            file: cx.file().to_string(),
            line: e.expr.referenced.line(),
            column: e.expr.referenced.column(),
            field: expr_field,
        },
    })
}

#[cfg(test)]
mod tests {
    use crate::experiment::{parse, ExperimentError};

    /// An external experiment with `target` and `target_series` as given.
    fn file(target: &str, series: &str) -> String {
        format!(
            "name: t\nduration: 10s\nenvironment: external\ntarget: {target}\n\
             workload:\n  arrival: {{ constant: {{ rate: 10 }} }}\n  \
             documents: {{ pages: {{ fixed: 2 }}, tenants: 2 }}\n  \
             client: {{ timeout: 1s, retry: {{ max_attempts: 2 }} }}\n\
             {series}variants:\n  a: {{}}\n"
        )
    }

    const TARGET: &str = "{ url: \"http://127.0.0.1:9\", metrics: \"http://127.0.0.1:9/metrics\" }";

    fn err(text: &str) -> ExperimentError {
        parse(text, "exp.yaml", false).expect_err(text)
    }

    fn located(e: &ExperimentError, line: u64, column: u64, field: &str, says: &str) {
        let msg = e.to_string();
        assert_eq!((e.line, e.column), (line, column), "{msg}");
        assert_eq!(e.field, field, "{msg}");
        assert!(msg.contains(says), "{msg}");
    }

    #[test]
    fn valid_entries_keep_name_expr_and_place() {
        let text = file(
            TARGET,
            "target_series:\n  - { name: dup, expr: \" sum(x) \" }\n",
        );
        let e = parse(&text, "exp.yaml", false).unwrap();
        assert_eq!(e.target_series.len(), 1);
        assert_eq!(
            (
                e.target_series[0].name.as_str(),
                e.target_series[0].expr.as_str()
            ),
            ("dup", "sum(x)")
        );
        assert_eq!(e.target_series[0].site.line, 10);
        assert_eq!(e.target_series[0].site.field, "target_series[0].expr");
    }

    #[test]
    fn names_must_be_unique_and_usable_and_exprs_non_empty() {
        let twice = "target_series:\n  - { name: dup, expr: x }\n  - { name: dup, expr: y }\n";
        located(
            &err(&file(TARGET, twice)),
            11,
            13,
            "target_series[1].name",
            "given twice",
        );
        let bad = "target_series:\n  - { name: \"a b\", expr: x }\n";
        located(
            &err(&file(TARGET, bad)),
            10,
            13,
            "target_series[0].name",
            "target_<name>",
        );
        let empty = "target_series:\n  - { name: a, expr: \"  \" }\n";
        located(
            &err(&file(TARGET, empty)),
            10,
            22,
            "target_series[0].expr",
            "is empty",
        );
        let unknown = "target_series:\n  - { name: a, expr: x, window: 5s }\n";
        assert!(err(&file(TARGET, unknown)).to_string().contains("window"));
    }

    #[test]
    fn only_an_external_target_with_a_metrics_url() {
        let one = "target_series:\n  - { name: a, expr: x }\n";
        let no_url = file("{ url: \"http://127.0.0.1:9\" }", one);
        located(
            &err(&no_url),
            10,
            5,
            "target_series",
            "needs `target.metrics`",
        );
        let embedded = file(TARGET, one).replace("environment: external\n", "");
        located(&err(&embedded), 9, 5, "target_series", "external` only");
        let unread = file(TARGET, "");
        located(&err(&unread), 4, 47, "target.metrics", "nothing reads it");
        let remote = file(
            "{ url: \"http://127.0.0.1:9\", metrics: \"http://10.0.0.1/m\" }",
            one,
        );
        located(&err(&remote), 4, 47, "target.metrics", "not a loopback");
        let allowed = remote.replace("metrics:", "allow_remote: true, metrics:");
        assert!(parse(&allowed, "exp.yaml", false).is_ok());
    }
}
