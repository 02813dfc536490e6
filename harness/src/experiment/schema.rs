//! The experiment file's JSON Schema (`harness schema`), derived from the
//! parser's own types (`raw.rs`, and the system's and retry policies'
//! configuration), so it cannot drift from what the harness accepts.
//!
//! Editors use it through the `# yaml-language-server: $schema=...` line of
//! each shipped experiment to complete and check keys; `.ci/run` checks every
//! experiment against it with `check-jsonschema`. It states the shape (keys,
//! types, enums); the validator still checks what a shape cannot say
//! (durations that parse, zones that exist, a trigger after the baseline)
//! and reports it with file, line and column.

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
