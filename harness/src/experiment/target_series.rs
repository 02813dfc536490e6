//! An external target's own series as the experiment names them
//! (`target_series: [{ name, expr }]`): validated PromQL expressions, each
//! with the place in the file where it is written, so that promtool's
//! errors point there. `observe/target_series.rs` evaluates them.

/// One validated `target_series:` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSeriesExpr {
    /// Unique in the file; the report's column `target_<name>`.
    pub name: String,
    /// The PromQL expression, trimmed.
    pub expr: String,
    /// Where `expr` is written, for promtool's errors.
    pub site: Site,
}

/// A place in the experiment file.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub field: String,
}
