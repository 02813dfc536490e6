//! CPU quotas and freezing through the kernel's cgroups, for `cpu_limit`
//! and `pause` on a component that is a process of its own.
//!
//! A fault moves the process into a cgroup the harness creates beside the
//! one it lives in (`<its cgroup>/harness-fault-<tag>`), sets the quota or
//! freezes it there; undoing it lifts the quota or thaws, moves every task
//! back home and removes the directory. Nothing of the machine's own cgroups
//! is changed. cgroup v1 (the `cpu` and `freezer` controllers, as on these
//! machines) uses `cpu.cfs_quota_us` / `cpu.cfs_period_us` and
//! `freezer.state`; a pure v2 hierarchy uses `cpu.max` and `cgroup.freeze`
//! (v2 puts a process in one cgroup only, so one cgroup fault per process
//! at a time there). What was done is a [`Placement`], serialisable, so the
//! fault ledger can undo it after the harness was killed.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The CFS period the quota is a share of (100 ms, the kernel default).
const PERIOD_US: u64 = 100_000;

/// What a cgroup fault does to the processes in its cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Control {
    /// A CPU quota of `cpus` (0.2: a fifth of one CPU).
    CpuQuota { cpus: f64 },
    /// Every task frozen.
    Freeze,
}

/// Which cgroup hierarchy the machine mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Version {
    V1,
    V2,
}

/// A fault's cgroup: where it is, where its process came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Placement {
    pub version: Version,
    pub control: Control,
    /// The cgroup directory the harness created.
    pub dir: PathBuf,
    /// The process's cgroup before the fault (its tasks go back there).
    pub home: PathBuf,
    pub pid: u32,
}

/// Why a cgroup fault could not be applied or undone.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("no cgroup hierarchy with the {0} controller is mounted under /sys/fs/cgroup")]
    NoController(&'static str),
    #[error("process {pid} has no {controller} cgroup in /proc/{pid}/cgroup (has it exited?)")]
    NoProcess { pid: u32, controller: &'static str },
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

const ROOT: &str = "/sys/fs/cgroup";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError + '_ {
    move |error| CgroupError::Io {
        path: path.to_path_buf(),
        error,
    }
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    std::fs::write(path, value).map_err(io(path))
}

/// The hierarchy that offers `control`: v1 when its controller is mounted
/// (hybrid machines too), else a pure v2 hierarchy.
fn version_for(control: Control) -> Result<Version, CgroupError> {
    let controller = v1_controller(control);
    if Path::new(ROOT)
        .join(controller)
        .join("cgroup.procs")
        .exists()
    {
        return Ok(Version::V1);
    }
    if Path::new(ROOT).join("cgroup.controllers").exists() {
        return Ok(Version::V2);
    }
    Err(CgroupError::NoController(controller))
}

fn v1_controller(control: Control) -> &'static str {
    match control {
        Control::CpuQuota { .. } => "cpu",
        Control::Freeze => "freezer",
    }
}

/// The cgroup directory `pid` lives in for `control`.
fn home_of(pid: u32, version: Version, control: Control) -> Result<PathBuf, CgroupError> {
    let file = PathBuf::from(format!("/proc/{pid}/cgroup"));
    let text = std::fs::read_to_string(&file).map_err(io(&file))?;
    let controller = v1_controller(control);
    let rel = text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = match version {
            Version::V1 => ctrls.split(',').any(|c| c == controller),
            Version::V2 => ctrls.is_empty(),
        };
        wanted.then(|| path.trim_start_matches('/').to_string())
    });
    let rel = rel.ok_or(CgroupError::NoProcess { pid, controller })?;
    Ok(match version {
        Version::V1 => Path::new(ROOT).join(controller).join(rel),
        Version::V2 => Path::new(ROOT).join(rel),
    })
}

/// Where a fault tagged `tag` would put `pid` (nothing is changed yet, so
/// the ledger can record it first).
pub(crate) fn plan(pid: u32, control: Control, tag: &str) -> Result<Placement, CgroupError> {
    let version = version_for(control)?;
    let home = home_of(pid, version, control)?;
    Ok(Placement {
        version,
        control,
        dir: home.join(format!("harness-fault-{tag}")),
        home,
        pid,
    })
}

impl Placement {
    /// Creates the cgroup, sets its control and moves the process in.
    pub(crate) fn apply(&self) -> Result<(), CgroupError> {
        if self.version == Version::V2 {
            if let Control::CpuQuota { .. } = self.control {
                // The parent must hand the cpu controller down; the
                // kernel refuses that for a cgroup with processes of its
                // own (other than the root), an error said as it is.
                write(&self.home.join("cgroup.subtree_control"), "+cpu")?;
            }
        }
        match std::fs::create_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(&self.dir)(e)),
        }
        self.set(true)?;
        // The process and its children (nginx's workers were forked
        // before, so they do not follow the master by themselves).
        write(&self.dir.join("cgroup.procs"), &self.pid.to_string())?;
        for child in crate::env::procfs::descendants(self.pid) {
            // One that exited in between is not an error.
            let _ = std::fs::write(self.dir.join("cgroup.procs"), child.to_string());
        }
        Ok(())
    }

    /// Sets (`on`) or lifts the control on the fault's cgroup.
    fn set(&self, on: bool) -> Result<(), CgroupError> {
        let (file, value) = match (self.version, self.control, on) {
            (Version::V1, Control::CpuQuota { cpus }, true) => {
                write(&self.dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                ("cpu.cfs_quota_us", quota_us(cpus).to_string())
            }
            (Version::V1, Control::CpuQuota { .. }, false) => ("cpu.cfs_quota_us", "-1".into()),
            (Version::V1, Control::Freeze, true) => ("freezer.state", "FROZEN".into()),
            (Version::V1, Control::Freeze, false) => ("freezer.state", "THAWED".into()),
            (Version::V2, Control::CpuQuota { cpus }, true) => {
                ("cpu.max", format!("{} {PERIOD_US}", quota_us(cpus)))
            }
            (Version::V2, Control::CpuQuota { .. }, false) => {
                ("cpu.max", format!("max {PERIOD_US}"))
            }
            (Version::V2, Control::Freeze, true) => ("cgroup.freeze", "1".into()),
            (Version::V2, Control::Freeze, false) => ("cgroup.freeze", "0".into()),
        };
        write(&self.dir.join(file), &value)
    }

    /// Whether the fault's cgroup is still there (not undone).
    pub(crate) fn is_left(&self) -> bool {
        self.dir.exists()
    }

    /// Lifts the control, moves every task back home and removes the
    /// cgroup. Safe to call again, or on a cgroup never created.
    pub(crate) fn undo(&self) -> Result<(), CgroupError> {
        if !self.dir.exists() {
            return Ok(());
        }
        self.set(false)?;
        let procs = self.dir.join("cgroup.procs");
        // A task that died in between is not an error (ESRCH).
        let tasks = std::fs::read_to_string(&procs).unwrap_or_default();
        for pid in tasks.split_whitespace() {
            let _ = std::fs::write(self.home.join("cgroup.procs"), pid);
        }
        // A task killed while frozen leaves once thawed: wait briefly.
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(io(&self.dir)(last.expect("at least one attempt")))
    }

    /// What the fault does, for the log.
    pub(crate) fn describe(&self) -> String {
        let what = match self.control {
            Control::CpuQuota { cpus } => format!(
                "CPU quota {} us per {PERIOD_US} us ({cpus} CPUs)",
                quota_us(cpus)
            ),
            Control::Freeze => "frozen".into(),
        };
        format!("process {} {what} in {}", self.pid, self.dir.display())
    }
}

/// The quota of `cpus` CPUs per period (the kernel's minimum is 1 ms).
fn quota_us(cpus: f64) -> u64 {
    ((cpus * PERIOD_US as f64).round() as u64).max(1_000)
}

/// Cgroups of the harness's faults under `/sys/fs/cgroup` (every
/// hierarchy's top two levels), for the tests' "nothing left" checks.
pub fn leftover_fault_cgroups() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut walk = vec![(PathBuf::from(ROOT), 0)];
    while let Some((dir, depth)) = walk.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if !p.is_dir() || p.is_symlink() {
                continue;
            }
            if e.file_name()
                .to_string_lossy()
                .starts_with("harness-fault-")
            {
                out.push(p);
            } else if depth < 3 {
                walk.push((p, depth + 1));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_is_a_share_of_the_period_with_the_kernels_floor() {
        assert_eq!(quota_us(0.2), 20_000);
        assert_eq!(quota_us(1.5), 150_000);
        assert_eq!(quota_us(0.001), 1_000);
    }
}
