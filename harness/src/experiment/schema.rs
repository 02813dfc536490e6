//! The experiment file's JSON Schema (`harness schema`), derived from the
//! parser's own types (`raw.rs`, and the system's and retry policies'
//! configuration), so it cannot drift from what the harness accepts.
//!
//! Editors use it through the `# yaml-language-server: $schema=...` line of
//! each shipped experiment to complete and check keys; `.ci/run` checks every
//! experiment against it with `check-jsonschema`. It states the shape (keys,
//! types, enums) and each key's meaning and default; the validator still
//! checks what a shape cannot say (durations that parse, zones that exist, a
//! trigger after the baseline) and reports it with file, line and column.
//! `ci/docs_reference.py` turns it into docs/reference/experiment-file.md.

use super::raw::RawExperiment;

/// Where the committed copy lives, relative to the repository root; the
/// shipped experiments name it as `$schema`.
pub const COMMITTED: &str = "experiments/experiment.schema.json";

/// The schema as pretty JSON, ending in a newline.
pub fn json() -> String {
    let mut schema = schemars::schema_for!(RawExperiment);
    schema.insert("title".into(), "overload-harness experiment file".into());
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::json;
    use crate::experiment::{parse, Environment, Popularity, Submission, TimelineOp};
    use serde_json::Value;
    use std::time::Duration;

    /// The schema's default for `def.key`.
    fn default(def: &str, key: &str) -> Value {
        let schema: Value = serde_json::from_str(&json()).unwrap();
        schema["$defs"][def]["properties"][key]["default"].clone()
    }

    fn duration(v: Value) -> Duration {
        humantime::parse_duration(v.as_str().unwrap()).unwrap()
    }

    fn secs(v: Value) -> u32 {
        duration(v).as_secs() as u32
    }

    const DOCUMENTS: &str = "name: d\nduration: 20s\n\
        workload:\n  arrival: { constant: { rate: 5 } }\n  documents: { pages: { fixed: 1 }, tenants: 2, population: { size: 10 } }\n  client: { timeout: 1s, retry: { max_attempts: 1 } }\n\
        variants: { a: {} }\n";

    #[test]
    fn the_defaults_shown_are_the_ones_a_file_without_the_key_gets() {
        let e = parse(DOCUMENTS, "d.yaml", false).unwrap();
        let a = &e.analysis;
        assert_eq!(default("RawAnalysis", "wave_threshold"), a.wave_threshold);
        assert_eq!(
            secs(default("RawAnalysis", "wave_merge_gap")),
            a.wave_merge_gap_s
        );
        assert_eq!(
            secs(default("RawAnalysis", "wave_min_duration")),
            a.wave_min_duration_s
        );
        assert_eq!(default("RawAnalysis", "recovery_factor"), a.recovery_factor);
        assert_eq!(
            secs(default("RawAnalysis", "recovery_window")),
            a.recovery_window_s
        );
        assert_eq!(secs(default("RawAnalysis", "warmup")), a.warmup_s);
        assert_eq!(
            secs(default("RawAnalysis", "min_baseline")),
            a.min_baseline_s
        );
        assert_eq!(
            default("RawAnalysis", "customer_failure_threshold"),
            a.customer_failure_threshold
        );
        assert_eq!(
            default("RawWorkload", "max_in_flight"),
            e.workload.max_in_flight
        );
        assert_eq!(default("RawClient", "mode"), "sync");
        assert_eq!(e.variants[0].client.submission, Submission::Sync);
        assert_eq!(default("RawPopulation", "popularity"), "uniform");
        assert_eq!(
            e.workload.population.unwrap().popularity,
            Popularity::Uniform
        );
        let schema: Value = serde_json::from_str(&json()).unwrap();
        assert_eq!(schema["properties"]["environment"]["default"], "embedded");
        assert_eq!(e.environment, Environment::Embedded);
        for key in ["timeline", "incident", "target_series"] {
            assert_eq!(
                schema["properties"][key]["default"],
                serde_json::json!([]),
                "{key}"
            );
        }
        assert!(e.timeline.is_empty() && e.incident.is_empty() && e.target_series.is_empty());
        assert!(e.expectations.is_empty());
    }

    #[test]
    fn the_alerts_intervals_shown_are_the_applied_ones() {
        let dir = std::env::temp_dir().join(format!("schema-defaults-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rules = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: vector(1)\n";
        std::fs::write(dir.join("r.yml"), rules).unwrap();
        let text = format!("{DOCUMENTS}alerts: {{ rules: [r.yml] }}\n");
        let file = dir.join("d.yaml");
        let e = parse(&text, file.to_str().unwrap(), false).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let alerts = e.alerts.unwrap();
        let scrape = duration(default("RawAlerts", "scrape_interval"));
        assert_eq!(scrape, alerts.scrape_interval);
        let evaluation = duration(default("RawAlerts", "evaluation_interval"));
        assert_eq!(evaluation, alerts.evaluation_interval);
    }

    #[test]
    fn the_http_and_process_defaults_shown_are_the_applied_ones() {
        let text = "name: h\nduration: 20s\nenvironment: processes\n\
            system:\n  processes:\n    app: { command: [python3, -m, http.server, \"{port}\"] }\n\
            workload:\n  arrival: { constant: { rate: 5 } }\n  client: { timeout: 1s, retry: { max_attempts: 1 } }\n\
            \x20 http:\n    classes: [{ name: read, share: 1, path: /x }]\n    success: { status: [200] }\n\
            timeline:\n  - { at: 10s, fault: { requests: { class: read, count: 3 } } }\n\
            variants: { a: {} }\n";
        let e = parse(text, "h.yaml", false).unwrap();
        let http = e.workload.http.as_ref().unwrap();
        assert_eq!(default("RawHttpWorkload", "tenants"), e.workload.tenants);
        assert_eq!(
            default("RawHttpClass", "method"),
            http.classes[0].method.as_str()
        );
        let later: Vec<u16> = serde_json::from_value(default("RawSuccess", "retry_later")).unwrap();
        assert_eq!(later, http.success.retry_later);
        let TimelineOp::OversizedDocuments(burst) = &e.timeline[0].op else {
            panic!("{:?}", e.timeline[0].op)
        };
        assert_eq!(default("RawRequests", "tenant"), burst.tenant.as_str());
        let Environment::Processes(p) = &e.environment else {
            panic!("{:?}", e.environment)
        };
        let ready = duration(default("RawReady", "timeout"));
        assert_eq!(ready, p.variants["a"][0].ready_timeout);
    }
}
