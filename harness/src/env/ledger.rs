//! The fault ledger: a state file of every fault the harness has applied
//! and not yet undone, so that a harness killed with SIGKILL (no Ctrl-C
//! handler, no drop) leaves nothing behind for long: the next harness start
//! reads the ledgers of dead harnesses, undoes what they record and says so.
//!
//! One JSON file per harness process, `<dir>/<pid>.json`, rewritten
//! atomically (temporary file + rename) before a fault is applied and after
//! it is undone, removed when empty. `<dir>` is `$HARNESS_FAULT_DIR`, else
//! `/run/harness-faults` when `/run` is writable, else
//! `$XDG_RUNTIME_DIR/harness-faults`, else `/tmp/harness-faults`.
//! A ledger's owner is recognised by its pid *and* its start time, so a
//! reused pid does not keep a dead harness's faults alive.

use super::cgroup::{CgroupError, Placement};
use super::procfs::{is_zombie, process_start};
use crate::env::docker::{self, DockerCallError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One thing applied that must be undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Record {
    /// A process moved into a fault cgroup (CPU quota or frozen).
    Cgroup(Placement),
    /// A component process the harness started (killed if left running).
    Process { pid: u32, start: u64, name: String },
    /// A user's process (`environment: processes`) and everything it
    /// started, marked `HARNESS_PROCESS=tag` in their environment: each
    /// killed if left running (`procfs::tagged`).
    Tagged { tag: String, name: String },
    /// A containers variant's network: its containers (`NETWORK-...`) and
    /// the network removed if left (`docker::remove_variant`).
    DockerNetwork { network: String },
    /// A container paused (`docker pause`).
    DockerPaused { id: String, name: String },
    /// A container given a CPU limit (`docker update --cpus`).
    DockerCpus { id: String, name: String },
}

/// Why a record could not be undone (it stays in its ledger).
#[derive(Debug, thiserror::Error)]
pub(crate) enum UndoError {
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    #[error(transparent)]
    Docker(#[from] DockerCallError),
}

impl Record {
    /// Faults are lifted first (a frozen process dies only once thawed),
    /// then processes are killed, then a variant's containers removed.
    fn undo_order(r: &&Record) -> u8 {
        match r {
            Record::Process { .. } | Record::Tagged { .. } => 1,
            Record::DockerNetwork { .. } => 2,
            Record::Cgroup(_) | Record::DockerPaused { .. } | Record::DockerCpus { .. } => 0,
        }
    }

    /// Undoes what the record says; returns what was done.
    pub(crate) fn undo(&self) -> Result<String, UndoError> {
        match self {
            Record::Cgroup(p) => {
                if !p.is_left() {
                    return Ok(format!("{} (already gone)", p.dir.display()));
                }
                p.undo()?;
                Ok(format!("lifted: {}", p.describe()))
            }
            Record::Process { pid, start, name } => {
                if process_start(*pid) != Some(*start) || is_zombie(*pid) {
                    return Ok(format!("{name} (process {pid}) had already exited"));
                }
                // SAFETY: kill(2) with a pid checked to be ours (same start time).
                unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
                Ok(format!("killed {name} (process {pid}), left running"))
            }
            Record::Tagged { tag, name } => {
                let left = super::procfs::tagged(tag);
                for p in &left {
                    // SAFETY: kill(2) on a process carrying this harness's own tag.
                    unsafe { libc::kill(*p as i32, libc::SIGKILL) };
                }
                Ok(match left.len() {
                    0 => format!("{name}: no process left"),
                    n => format!("killed {name}: {n} process(es) left running ({left:?})"),
                })
            }
            Record::DockerNetwork { network } => {
                let (n, had) = docker::blocking("network rm", docker::remove_variant(network))?;
                Ok(match (n, had) {
                    (0, false) => format!("containers variant {network}: nothing left"),
                    _ => format!("removed {n} container(s) and the network {network}, left behind"),
                })
            }
            Record::DockerPaused { id, name } => {
                Ok(match unless_gone("unpause", id, docker::unpause(id))? {
                    false => format!("container {name} is gone"),
                    true => format!("unpaused container {name} ({id})"),
                })
            }
            Record::DockerCpus { id, name } => Ok(
                match unless_gone("update", id, docker::update_cpus(id, 0.0))? {
                    false => format!("container {name} is gone"),
                    true => format!("lifted the CPU limit of container {name} ({id})"),
                },
            ),
        }
    }
}

/// Runs `undo` on container `id` unless the container is gone (blocking);
/// whether it ran. `what` names it should no runtime be had for it.
fn unless_gone(
    what: &str,
    id: &str,
    undo: impl std::future::Future<Output = Result<(), DockerCallError>> + Send,
) -> Result<bool, DockerCallError> {
    docker::blocking(what, async {
        if !docker::exists(id).await {
            return Ok(false);
        }
        undo.await.map(|()| true)
    })
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    owner: u32,
    owner_start: u64,
    records: Vec<(u64, Record)>,
}

/// Why the ledger could not be written: a fault is then not applied.
#[derive(Debug, thiserror::Error)]
#[error("fault ledger {path}: {error}")]
pub struct LedgerError {
    path: PathBuf,
    error: std::io::Error,
}

/// Set once the process is exiting at once (a second Ctrl-C).
static CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Held while a ledger file is written, so `undo_own` reads a whole one.
static WRITING: Mutex<()> = Mutex::new(());

/// This harness's ledger.
pub(crate) struct Ledger {
    path: PathBuf,
    state: Mutex<(u64, File)>,
}

/// Where ledgers are kept (see the module doc).
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARNESS_FAULT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let run = Path::new("/run");
    // SAFETY: access(2) on a NUL-terminated constant path.
    if run.is_dir() && unsafe { libc::access(c"/run".as_ptr(), libc::W_OK) } == 0 {
        return run.join("harness-faults");
    }
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(x).join("harness-faults");
    }
    PathBuf::from("/tmp/harness-faults")
}

impl Ledger {
    /// This process's ledger in `dir()`, empty.
    pub(crate) fn open() -> Result<Ledger, LedgerError> {
        let dir = dir();
        std::fs::create_dir_all(&dir).map_err(|error| LedgerError {
            path: dir.clone(),
            error,
        })?;
        // A second Ctrl-C exits at once: what this process applied is undone first.
        crate::base::interrupt::on_forced_exit(undo_own);
        let pid = std::process::id();
        Ok(Ledger {
            path: dir.join(format!("{pid}.json")),
            state: Mutex::new((
                0,
                File {
                    owner: pid,
                    owner_start: process_start(pid).unwrap_or(0),
                    records: Vec::new(),
                },
            )),
        })
    }

    /// Records `r` (written before the fault is applied); its id.
    pub(crate) fn add(&self, r: Record) -> Result<u64, LedgerError> {
        let mut s = self.state.lock().expect("ledger lock");
        s.0 += 1;
        let id = s.0;
        s.1.records.push((id, r));
        self.save(&s.1).map(|()| id)
    }

    /// Forgets record `id` (after it was undone).
    pub(crate) fn remove(&self, id: u64) {
        let mut s = self.state.lock().expect("ledger lock");
        s.1.records.retain(|(i, _)| *i != id);
        if let Err(e) = self.save(&s.1) {
            tracing::warn!("{e}");
        }
    }

    fn save(&self, f: &File) -> Result<(), LedgerError> {
        let _guard = WRITING.lock();
        if CLOSED.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let err = |error| LedgerError {
            path: self.path.clone(),
            error,
        };
        if f.records.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(err(e)),
                _ => Ok(()),
            };
        }
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(f).expect("a ledger serialises");
        std::fs::write(&tmp, text).map_err(err)?;
        std::fs::rename(&tmp, &self.path).map_err(err)
    }
}

/// Undoes what this process's own ledger records (a second Ctrl-C exits at
/// once, without the drops that would undo them); returns what was done.
pub fn undo_own() -> Vec<String> {
    // From here on the process is exiting: nothing may write the ledger
    // again (a drop racing with this would bring records back).
    CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
    let _guard = WRITING.lock();
    let path = dir().join(format!("{}.json", std::process::id()));
    let Ok(file) = std::fs::read_to_string(&path).map(|t| serde_json::from_str::<File>(&t)) else {
        return Vec::new();
    };
    let Ok(file) = file else {
        return Vec::new();
    };
    let mut records: Vec<&Record> = file.records.iter().map(|(_, r)| r).collect();
    records.sort_by_key(Record::undo_order);
    let lines = records
        .into_iter()
        .map(|r| {
            r.undo()
                .unwrap_or_else(|why| format!("could not undo {r:?}: {why}"))
        })
        .collect();
    let _ = std::fs::remove_file(&path);
    lines
}

/// Undoes what the ledgers of harnesses no longer running recorded, removes
/// those ledgers and returns one line per thing undone (or that failed).
pub fn recover() -> Vec<String> {
    let dir = dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(file) = serde_json::from_str::<File>(&text) else {
            lines.push(format!("{}: unreadable, left alone", path.display()));
            continue;
        };
        if process_start(file.owner) == Some(file.owner_start) {
            continue; // its harness still runs and undoes its own faults
        }
        // Cgroups first: a killed harness's frozen child dies once thawed,
        // then any component process still running is killed.
        let mut records: Vec<&Record> = file.records.iter().map(|(_, r)| r).collect();
        records.sort_by_key(Record::undo_order);
        let mut failed = false;
        for r in records {
            match r.undo() {
                Ok(done) => lines.push(format!("harness {}: {done}", file.owner)),
                Err(why) => {
                    failed = true;
                    lines.push(format!(
                        "harness {}: could not undo {r:?}: {why}",
                        file.owner
                    ))
                }
            }
        }
        if !failed {
            let _ = std::fs::remove_file(&path);
        }
    }
    lines
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn reads_this_process_start_time() {
        let me = std::process::id();
        assert!(process_start(me).is_some());
        assert_eq!(process_start(me), process_start(me));
        assert_eq!(process_start(u32::MAX - 1), None);
    }

    /// Container records as ledgers have always written them.
    pub(in crate::env) const PAUSED: &str = r#"{"docker_paused":{"id":"ID","name":"pool-az1"}}"#;
    pub(in crate::env) const CPUS: &str = r#"{"docker_cpus":{"id":"ID","name":"pool-az1"}}"#;

    #[test]
    fn container_records_keep_their_format() {
        let paused = Record::DockerPaused {
            id: "ID".into(),
            name: "pool-az1".into(),
        };
        assert_eq!(serde_json::to_string(&paused).unwrap(), PAUSED);
        let cpus: Record = serde_json::from_str(CPUS).unwrap();
        assert_eq!(
            cpus,
            Record::DockerCpus {
                id: "ID".into(),
                name: "pool-az1".into()
            }
        );
    }
}
