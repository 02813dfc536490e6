//! Generic faults in the containers environment, through the `docker`
//! CLI: `cpu_limit` is `docker update --cpus`, `pause` is `docker pause`
//! (the cgroup freezer, done by the engine), `kill` is `docker kill` and its
//! end `docker start` (a pool container keeps its name on the variant's
//! network, so the gateway reaches it again). Undoing a CPU limit is
//! `docker update --cpus 0` (no limit). Each command is bounded in time.

use std::time::Duration;

/// A `docker` command that failed or did not answer.
#[derive(Debug, thiserror::Error)]
#[error("docker {args}: {why}")]
pub(crate) struct DockerCliError {
    args: String,
    why: String,
}

/// Runs `docker ARGS`, bounded; its trimmed stdout.
pub(crate) async fn docker(args: &[&str]) -> Result<String, DockerCliError> {
    let err = |why: String| DockerCliError {
        args: args.join(" "),
        why,
    };
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new("docker")
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| err("no answer within 20 s".into()))?
    .map_err(|e| err(e.to_string()))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The same, blocking (for undoing from `Drop` and from a later start).
pub(crate) fn docker_blocking(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Whether container `id` still exists.
pub(crate) fn exists(id: &str) -> bool {
    std::process::Command::new("docker")
        .args(["inspect", "--format", "{{.Id}}", id])
        .output()
        .is_ok_and(|o| o.status.success())
}

use super::ledger::Record;
use super::{Active, FaultError, GenericFault, Injector};

/// How a container fault is undone.
#[derive(Debug, Clone, Copy)]
pub(super) enum ContainerUndo {
    Unpause,
    NoCpuLimit,
    Start,
}

impl Injector {
    /// Applies `f` to container `id` (component `name`).
    pub(super) async fn container_apply(
        &self,
        name: &str,
        id: &str,
        f: &GenericFault,
    ) -> Result<(Active, String), FaultError> {
        let short = &id[..id.len().min(12)];
        let (record, undo, detail) = match f {
            GenericFault::CpuLimit { cpus, .. } => {
                let cpus = format!("{cpus}");
                let rec = self.ledger.add(Record::DockerCpus {
                    id: id.into(),
                    name: name.into(),
                })?;
                let r = docker(&["update", "--cpus", &cpus, id]).await;
                (
                    Some(rec),
                    ContainerUndo::NoCpuLimit,
                    r.map(|_| format!("container {name} ({short}): docker update --cpus {cpus}")),
                )
            }
            GenericFault::Pause { .. } => {
                let rec = self.ledger.add(Record::DockerPaused {
                    id: id.into(),
                    name: name.into(),
                })?;
                let r = docker(&["pause", id]).await;
                (
                    Some(rec),
                    ContainerUndo::Unpause,
                    r.map(|_| format!("container {name} ({short}) paused")),
                )
            }
            GenericFault::Kill { .. } => {
                let r = docker(&["kill", id]).await;
                (
                    None,
                    ContainerUndo::Start,
                    r.map(|_| format!("container {name} ({short}) killed")),
                )
            }
            GenericFault::Network(_) => return Err(FaultError::NoFaultProxy(name.into())),
        };
        match detail {
            Ok(d) => Ok((
                Active::Container {
                    id: id.into(),
                    record,
                    undo,
                },
                d,
            )),
            Err(e) => {
                if let Some(r) = record {
                    self.ledger.remove(r);
                }
                Err(FaultError::Docker(e))
            }
        }
    }
}

/// Undoes a container fault (async: the timeline's end of a duration).
pub(super) async fn undo(id: &str, undo: ContainerUndo) -> Result<String, DockerCliError> {
    match undo {
        ContainerUndo::Unpause => docker(&["unpause", id]).await.map(|_| "unpaused".into()),
        ContainerUndo::NoCpuLimit => docker(&["update", "--cpus", "0", id])
            .await
            .map(|_| "CPU limit lifted".into()),
        ContainerUndo::Start => docker(&["start", id]).await.map(|_| "started again".into()),
    }
}

/// Undoes a container fault from a drop or the variant's end (blocking);
/// a killed container stays down, as the variant's containers go.
pub(super) fn undo_blocking(id: &str, undo: ContainerUndo) -> Result<(), String> {
    match undo {
        ContainerUndo::Unpause => docker_blocking(&["unpause", id]),
        ContainerUndo::NoCpuLimit => docker_blocking(&["update", "--cpus", "0", id]),
        ContainerUndo::Start => Ok(()),
    }
}
