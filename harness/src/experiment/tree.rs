//! Editing an experiment's YAML tree by dotted paths, before validation.
//!
//! `sweep` and `threshold` change one value of a file (a load, a trigger's
//! size or duration) and validate the result exactly like a file a user
//! wrote, so every cell or probe is checked before anything runs. Numeric
//! segments index lists: `quick.timeline.1.fault.oversized_documents.count`.

use serde_json::Value;

use crate::experiment::ExperimentError;

/// Why an experiment's tree could not be read, edited by a dotted path or
/// `--set`, or written back as YAML (before validation).
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The path names a key the mapping lacks.
    #[error("{path}: no key `{seg}` in {here} (it has: {keys})")]
    NoKey {
        path: String,
        seg: String,
        here: String,
        keys: String,
    },
    /// The path's segment into a list is not a number.
    #[error("{path}: {here} is a list; `{seg}` is not an index")]
    NotIndex {
        path: String,
        here: String,
        seg: String,
    },
    /// The path's index is past the list's end.
    #[error("{path}: index {index} is outside {here} ({len} entries)")]
    Outside {
        path: String,
        index: usize,
        here: String,
        len: usize,
    },
    /// The path goes on below a scalar.
    #[error("{path}: {here} is a value, not a mapping or list")]
    Scalar { path: String, here: String },
    /// A `--set` without `=`.
    #[error("--set {0:?}: write PATH=VALUE, e.g. quick.timeline.2.at=4s")]
    SetSyntax(String),
    /// A `--set` with nothing before `=`.
    #[error("--set {0:?}: no path before '='")]
    SetNoPath(String),
    /// A `--set` whose value is not YAML.
    #[error("--set {set:?}: the value is not YAML: {error}")]
    SetValue {
        set: String,
        error: Box<serde_saphyr::Error>,
    },
    /// A `--set` whose path does not fit the file.
    #[error("--set: {0}")]
    Set(Box<TreeError>),
    /// The experiment file could not be read.
    #[error("reading {}: {error}", path.display())]
    Read {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    /// The experiment file is not a valid experiment.
    #[error("{0}")]
    Invalid(ExperimentError),
    /// The experiment file is not a YAML tree.
    #[error("{file}: {error}")]
    Yaml {
        file: String,
        error: Box<serde_saphyr::Error>,
    },
    /// The edited tree could not be written as YAML.
    #[error("writing the experiment as YAML: {0}")]
    Write(serde_saphyr::SerializeError),
}

/// Sets the existing value at a dotted `path` (numeric segments index lists).
/// A path that does not exist is an error naming the first missing segment.
pub fn set_path(tree: &mut Value, path: &str, value: Value) -> Result<(), TreeError> {
    set_path_in(tree, path, value, false)
}

/// As [`set_path`]; with `add_key`, the last segment may be a new key of an
/// existing mapping (`--set analysis.recovery_factor=2`).
pub fn set_path_in(
    tree: &mut Value,
    path: &str,
    value: Value,
    add_key: bool,
) -> Result<(), TreeError> {
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
                map.get_mut(seg).ok_or_else(|| TreeError::NoKey {
                    path: path.to_string(),
                    seg: seg.to_string(),
                    here: here.clone(),
                    keys: keys.join(", "),
                })?
            }
            Value::Array(list) => {
                let len = list.len();
                let i: usize = seg.parse().map_err(|_| TreeError::NotIndex {
                    path: path.to_string(),
                    here: here.clone(),
                    seg: seg.to_string(),
                })?;
                list.get_mut(i).ok_or_else(|| TreeError::Outside {
                    path: path.to_string(),
                    index: i,
                    here: here.clone(),
                    len,
                })?
            }
            _ => {
                return Err(TreeError::Scalar {
                    path: path.to_string(),
                    here,
                })
            }
        };
        walked.push(seg);
    }
    *node = value;
    Ok(())
}

/// Parses `--set PATH=VALUE` (VALUE read as YAML).
pub fn parse_set(s: &str) -> Result<(String, Value), TreeError> {
    let (p, v) = s
        .split_once('=')
        .ok_or_else(|| TreeError::SetSyntax(s.to_string()))?;
    let p = p.trim();
    if p.is_empty() {
        return Err(TreeError::SetNoPath(s.to_string()));
    }
    let v: Value = serde_saphyr::from_str(v.trim()).map_err(|error| TreeError::SetValue {
        set: s.to_string(),
        error: Box::new(error),
    })?;
    Ok((p.to_string(), v))
}

/// Parses every `--set PATH=VALUE`, in order.
pub fn parse_sets(sets: &[String]) -> Result<Vec<(String, Value)>, TreeError> {
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
    pub fn read(path: &std::path::Path, quick: bool) -> Result<Source, TreeError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| TreeError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let base = crate::experiment::parse(&text, &file, quick).map_err(TreeError::Invalid)?;
        let tree: Value = serde_saphyr::from_str(&text).map_err(|error| TreeError::Yaml {
            file: file.clone(),
            error: Box::new(error),
        })?;
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
pub fn with_sets(tree: &Value, sets: &[(String, Value)]) -> Result<Value, TreeError> {
    let mut t = tree.clone();
    for (p, v) in sets {
        set_path_in(&mut t, p, v.clone(), true).map_err(|e| TreeError::Set(Box::new(e)))?;
    }
    Ok(t)
}

/// The tree as YAML text, for validation.
pub fn to_yaml(tree: &Value) -> Result<String, TreeError> {
    serde_saphyr::to_string(tree).map_err(TreeError::Write)
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
