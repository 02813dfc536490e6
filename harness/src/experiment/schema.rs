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

use super::raw::{RawExperiment, RawLoadSpike};
use super::OversizedDocuments;

/// Where the committed copy lives, relative to the repository root; the
/// shipped experiments name it as `$schema`.
pub const COMMITTED: &str = "experiments/experiment.schema.json";

/// A timeline entry's `fault` or `action` as `validate/timeline.rs` reads
/// it: a harness-side trigger, a generic fault on a component (`faults/`),
/// or one of the system's admin commands.
/// Schema only: the validator parses the value itself to locate its errors.
#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum TimelineOp {
    Harness(HarnessOp),
    Generic(crate::experiment::faults::GenericFault),
    Admin(sut::AdminCommand),
}

/// The triggers the harness itself makes (extra documents), not the system.
#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HarnessOp {
    /// Very large documents from one tenant (seed 000's trigger).
    OversizedDocuments(OversizedDocuments),
    /// Extra arrivals on top of the workload for the entry's duration.
    LoadSpike(RawLoadSpike),
}

/// The schema as pretty JSON, ending in a newline.
pub fn json() -> String {
    let mut schema = schemars::schema_for!(RawExperiment);
    schema.insert("title".into(), "overload-harness experiment file".into());
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
    text.push('\n');
    text
}
