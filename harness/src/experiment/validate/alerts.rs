//! `alerts:` the experiment's Prometheus rule files and the scrape and
//! evaluation intervals a real Prometheus runs them at (see `prometheus.rs`).
//!
//! Here only what the file itself can get wrong: intervals that are not
//! positive durations, an empty rule list, a rule file that cannot be read
//! or holds no alerting rule. Whether the rules are valid PromQL is
//! `promtool check rules`' call (`harness validate` runs it), not a second
//! parser's guess.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use serde_saphyr::Spanned;
use std::path::Path;

/// The validated `alerts:` section, `None` when the file has none.
pub(super) fn alerts(cx: &Ctx, raw: &RawExperiment) -> Result<Option<Alerts>, ExperimentError> {
    let Some(a) = &raw.alerts else {
        return Ok(None);
    };
    let a = &a.value;
    let interval =
        |s: &Option<Spanned<String>>, field: &str| -> Result<Duration, ExperimentError> {
            let Some(s) = s else {
                return Ok(Duration::from_secs(1));
            };
            let d = cx.duration(&s.referenced, field, &s.value)?;
            if d < Duration::from_millis(1) {
                return Err(cx.err(&s.referenced, field, "must be at least 1ms"));
            }
            if d > Duration::from_secs(60) {
                return Err(cx.err(
                    &s.referenced,
                    field,
                    "must be at most 1m: an experiment runs for minutes",
                ));
            }
            Ok(d)
        };
    let scrape_interval = interval(&a.scrape_interval, "alerts.scrape_interval")?;
    let evaluation_interval = interval(&a.evaluation_interval, "alerts.evaluation_interval")?;
    let at = &a.rules.referenced;
    if a.rules.value.is_empty() {
        return Err(cx.err(at, "alerts.rules", "needs at least one rule file"));
    }
    // Derived forms (sweep cells, threshold probes) are labelled
    // `FILE (sweep cell ...)`: their rule files are the file's.
    let file = cx.file.split(" (").next().unwrap_or(cx.file);
    let base = Path::new(file).parent().unwrap_or(Path::new("."));
    let mut rules = Vec::new();
    let mut rule_names = Vec::new();
    for (i, r) in a.rules.value.iter().enumerate() {
        let field = format!("alerts.rules[{i}]");
        let path = base.join(r);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| cx.err(at, &field, format!("cannot read {}: {e}", path.display())))?;
        let names = alert_names(&text).map_err(|e| {
            cx.err(
                at,
                &field,
                format!("{} is not a Prometheus rule file: {e}", path.display()),
            )
        })?;
        if names.is_empty() {
            return Err(cx.err(
                at,
                &field,
                format!("{} has no alerting rule (`alert:`)", path.display()),
            ));
        }
        for n in names {
            if rule_names.contains(&n) {
                return Err(cx.err(
                    at,
                    &field,
                    format!("alert {n:?} is defined twice; expectations name alerts, so names must be unique"),
                ));
            }
            rule_names.push(n);
        }
        // Absolute: Prometheus reads rule files relative to its own config's folder.
        rules.push(std::fs::canonicalize(&path).unwrap_or(path));
    }
    Ok(Some(Alerts {
        rules,
        rule_names,
        scrape_interval,
        evaluation_interval,
    }))
}

/// Why a file is not a Prometheus rule file.
#[derive(Debug, thiserror::Error)]
enum RuleFileError {
    #[error("{0}")]
    Yaml(#[from] serde_saphyr::Error),
    #[error("no `groups:` list")]
    NoGroups,
}

/// The `alert:` names of a rule file (`groups[].rules[].alert`), in file order.
fn alert_names(text: &str) -> Result<Vec<String>, RuleFileError> {
    let tree: serde_json::Value = serde_saphyr::from_str(text)?;
    let groups = tree
        .get("groups")
        .and_then(|g| g.as_array())
        .ok_or(RuleFileError::NoGroups)?;
    Ok(groups
        .iter()
        .filter_map(|g| g.get("rules").and_then(|r| r.as_array()))
        .flatten()
        .filter_map(|r| r.get("alert").and_then(|a| a.as_str()))
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_every_group() {
        let text = "groups:\n- name: a\n  rules:\n  - alert: One\n    expr: up\n  - record: r\n    expr: up\n- name: b\n  rules:\n  - alert: Two\n    expr: up\n";
        assert_eq!(alert_names(text).unwrap(), vec!["One", "Two"]);
        assert!(alert_names("rules: []\n").is_err());
    }
}
