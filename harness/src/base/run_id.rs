//! One name for every run's folder, and the `latest` link beside it.
//!
//! A run, a sweep and a threshold search each write one folder named by its
//! start time and seed, `20261201T222158Z-seed42`, under a folder of its own
//! (`reports/<experiment>/`, `reports/<experiment>-sweep/`, ...), and point
//! `latest` there at the newest.

use std::path::{Path, PathBuf};

/// The folder of one run under its kind's folder, e.g.
/// `reports/retry-storm-sweep/20261201T222158Z-seed42`.
pub struct RunFolder {
    /// The kind's folder, which holds `latest`.
    pub root: PathBuf,
    pub id: String,
    pub dir: PathBuf,
}

impl RunFolder {
    /// A folder for a run starting now under `out/<kind>`.
    pub fn now(out: &Path, kind: &str, seed: u64) -> RunFolder {
        let root = out.join(kind);
        let id = run_id(chrono::Utc::now(), seed);
        RunFolder {
            dir: root.join(&id),
            root,
            id,
        }
    }

    /// Points the kind's `latest` here.
    pub fn link_latest(&self) {
        link_latest(&self.root, &self.id);
    }
}

/// `<UTC start, to the second>-seed<seed>`.
pub fn run_id(started: chrono::DateTime<chrono::Utc>, seed: u64) -> String {
    format!("{}-seed{seed}", started.format("%Y%m%dT%H%M%SZ"))
}

/// Points `<dir>/latest` at `<dir>/<id>` (best effort: a missing link never fails a run).
pub fn link_latest(dir: &Path, id: &str) {
    let latest = dir.join("latest");
    let _ = std::fs::remove_file(&latest);
    #[cfg(unix)]
    let _ = std::os::unix::fs::symlink(id, &latest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ids_and_links() {
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 12, 1, 22, 21, 58)
            .unwrap();
        assert_eq!(run_id(t, 42), "20261201T222158Z-seed42");
        let dir = std::env::temp_dir().join(format!("run-id-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        link_latest(&dir, "a");
        link_latest(&dir, "b");
        assert_eq!(
            std::fs::read_link(dir.join("latest")).unwrap(),
            Path::new("b")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
