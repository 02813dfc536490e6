//! Editing an experiment's YAML tree by dotted paths, before validation.
//!
//! `sweep` and `threshold` change one value of a file (a load, a trigger's
//! size or duration) and validate the result exactly like a file a user
//! wrote, so every cell or probe is checked before anything runs. Numeric
//! segments index lists: `quick.timeline.1.fault.oversized_documents.count`.

use anyhow::Context;
use serde_json::Value;

/// Sets the existing value at a dotted `path` (numeric segments index lists).
/// A path that does not exist is an error naming the first missing segment.
pub fn set_path(tree: &mut Value, path: &str, value: Value) -> anyhow::Result<()> {
    set_path_in(tree, path, value, false)
}

/// As [`set_path`]; with `add_key`, the last segment may be a new key of an
/// existing mapping (`--set analysis.recovery_factor=2`).
pub fn set_path_in(
    tree: &mut Value,
    path: &str,
    value: Value,
    add_key: bool,
) -> anyhow::Result<()> {
    let mut node = tree;
    let mut walked: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('.').collect();
    for (i, &seg) in segs.iter().enumerate() {
        if add_key && i + 1 == segs.len() {
            if let Value::Object(map) = node {
                map.insert(seg.to_string(), value);
                return Ok(());
            }
        }
        let here = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("`{}`", walked.join("."))
        };
        node = match node {
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                map.get_mut(seg).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{path}: no key `{seg}` in {here} (it has: {})",
                        keys.join(", ")
                    )
                })?
            }
            Value::Array(list) => {
                let len = list.len();
                let i: usize = seg.parse().map_err(|_| {
                    anyhow::anyhow!("{path}: {here} is a list; `{seg}` is not an index")
                })?;
                list.get_mut(i).ok_or_else(|| {
                    anyhow::anyhow!("{path}: index {i} is outside {here} ({len} entries)")
                })?
            }
            _ => anyhow::bail!("{path}: {here} is a value, not a mapping or list"),
        };
        walked.push(seg);
    }
    *node = value;
    Ok(())
}

/// Parses `--set PATH=VALUE` (VALUE read as YAML).
pub fn parse_set(s: &str) -> anyhow::Result<(String, Value)> {
    let (p, v) = s.split_once('=').ok_or_else(|| {
        anyhow::anyhow!("--set {s:?}: write PATH=VALUE, e.g. quick.timeline.2.at=4s")
    })?;
    let p = p.trim();
    if p.is_empty() {
        anyhow::bail!("--set {s:?}: no path before '='");
    }
    let v: Value = serde_saphyr::from_str(v.trim())
        .map_err(|e| anyhow::anyhow!("--set {s:?}: the value is not YAML: {e}"))?;
    Ok((p.to_string(), v))
}

/// Parses every `--set PATH=VALUE`, in order.
pub fn parse_sets(sets: &[String]) -> anyhow::Result<Vec<(String, Value)>> {
    sets.iter().map(|s| parse_set(s)).collect()
}

/// An experiment file read for editing: its path as messages name it, the
/// experiment as written (valid first, so errors point at the file's own
/// lines) and its YAML tree.
pub struct Source {
    pub file: String,
    pub base: crate::experiment::Experiment,
    pub tree: Value,
}

impl Source {
    /// Reads and validates the file, in its quick form or its full one.
    pub fn read(path: &std::path::Path, quick: bool) -> anyhow::Result<Source> {
        let file = path.display().to_string();
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let base =
            crate::experiment::parse(&text, &file, quick).map_err(|e| anyhow::anyhow!("{e}"))?;
        let tree: Value =
            serde_saphyr::from_str(&text).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
        Ok(Source { file, base, tree })
    }

    /// The names of the file's variants, or only `only` (none when the file
    /// has no such variant).
    pub fn variants(&self, only: Option<&str>) -> Vec<String> {
        self.base
            .variants
            .iter()
            .map(|v| v.name.clone())
            .filter(|n| only.is_none_or(|w| w == n))
            .collect()
    }
}

/// The file's tree with `sets` applied (each may add a key), as YAML text.
pub fn with_sets(tree: &Value, sets: &[(String, Value)]) -> anyhow::Result<Value> {
    let mut t = tree.clone();
    for (p, v) in sets {
        set_path_in(&mut t, p, v.clone(), true).context("--set")?;
    }
    Ok(t)
}

/// The tree as YAML text, for validation.
pub fn to_yaml(tree: &Value) -> anyhow::Result<String> {
    serde_saphyr::to_string(tree).context("writing the experiment as YAML")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let mut t =
            json!({ "quick": { "timeline": [ {"at": "0s"}, {"fault": {"n": 4}} ] }, "x": 1 });
        set_path(&mut t, "quick.timeline.1.fault.n", json!(7)).unwrap();
        assert_eq!(t["quick"]["timeline"][1]["fault"]["n"], json!(7));
        set_path(&mut t, "x", json!(0.5)).unwrap();
        assert_eq!(t["x"], json!(0.5));
        let e = set_path(&mut t, "quick.timeline.5.fault", json!(1)).unwrap_err();
        assert!(
            e.to_string()
                .contains("index 5 is outside `quick.timeline` (2 entries)"),
            "{e}"
        );
        let e = set_path(&mut t, "quick.timelin.1", json!(1)).unwrap_err();
        assert!(e.to_string().contains("no key `timelin` in `quick`"), "{e}");
        let e = set_path(&mut t, "quick.timeline.x", json!(1)).unwrap_err();
        assert!(e.to_string().contains("not an index"), "{e}");
        let e = set_path(&mut t, "x.y", json!(1)).unwrap_err();
        assert!(e.to_string().contains("is a value"), "{e}");
        set_path_in(&mut t, "quick.added", json!(2), true).unwrap();
        assert_eq!(t["quick"]["added"], json!(2));
        assert!(set_path_in(&mut t, "nope.added", json!(2), true).is_err());
        // Nothing was changed by the failed attempts.
        assert_eq!(t["x"], json!(0.5));
        assert!(t.get("nope").is_none());
    }
}
