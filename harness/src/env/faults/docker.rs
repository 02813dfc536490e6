//! Generic faults in the containers environment, through the harness's
//! Docker client (`crate::env::docker`), each the engine call that the `docker`
//! command named here does: `cpu_limit` is `docker update --cpus`, `pause`
//! is `docker pause` (the cgroup freezer, done by the engine), `kill` is
//! `docker kill` and its end `docker start` (a pool container keeps its name
//! on the variant's network, so the gateway reaches it again). Undoing a CPU
//! limit is `docker update --cpus 0` (no limit). Each call is bounded in time.

use super::{Active, FaultError, GenericFault, Injector};
use crate::env::docker::{self, DockerCallError};
use crate::env::ledger::Record;

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
                let rec = self.ledger.add(Record::DockerCpus {
                    id: id.into(),
                    name: name.into(),
                })?;
                let r = docker::update_cpus(id, *cpus).await;
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
                let r = docker::pause(id).await;
                (
                    Some(rec),
                    ContainerUndo::Unpause,
                    r.map(|_| format!("container {name} ({short}) paused")),
                )
            }
            GenericFault::Kill { .. } => {
                let r = docker::kill(id).await;
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
pub(super) async fn undo(id: &str, undo: ContainerUndo) -> Result<String, DockerCallError> {
    match undo {
        ContainerUndo::Unpause => docker::unpause(id).await.map(|()| "unpaused".into()),
        ContainerUndo::NoCpuLimit => docker::update_cpus(id, 0.0)
            .await
            .map(|()| "CPU limit lifted".into()),
        ContainerUndo::Start => docker::start(id).await.map(|()| "started again".into()),
    }
}

/// Undoes a container fault from a drop or the variant's end (blocking);
/// a killed container stays down, as the variant's containers go.
pub(super) fn undo_blocking(id: &str, undo: ContainerUndo) -> Result<(), DockerCallError> {
    match undo {
        ContainerUndo::Unpause => docker::blocking("unpause", docker::unpause(id)),
        ContainerUndo::NoCpuLimit => docker::blocking("update", docker::update_cpus(id, 0.0)),
        ContainerUndo::Start => Ok(()),
    }
}
