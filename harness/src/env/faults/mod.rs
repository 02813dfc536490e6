//! Generic faults: what breaks a component from the outside, with no admin
//! API: `cpu_limit` (a CPU quota), `pause` (frozen), `kill` (restarted at
//! the end of the entry's duration). They act on a component that is a
//! process of its own (`components.rs`); each one applied is written to the
//! fault ledger first (`ledger.rs`), undone at the end of its duration, when
//! the variant stops (its end, Ctrl-C, an error) or, after a SIGKILL, by the
//! next harness start (`ledger::recover`).
//!
//! `network` acts on the path into the component instead, through the
//! fault proxy the environment puts there (`fault_proxy.rs`).
//!
//! Each kind is declared once, as a row of [`GenericFault::row`]: what is
//! decided per fault (its check, where it can run, whether it holds up a
//! process, its Kubernetes mapping) is read from there; what it does is
//! [`Injector::apply`].
//!
//! `cgroup.rs` does the quota and the freezing, `ledger.rs` the state file.

mod docker;
pub(crate) mod fault_proxy;
use crate::experiment::faults::{ExternalComponent, GenericFault};

use crate::env::cgroup;
use crate::env::components::ProcessSet;
use crate::env::ledger::{Ledger, Record};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The process id of an external component now (a pidfile read).
fn external_pid(c: &ExternalComponent) -> Result<Option<u32>, FaultError> {
    Ok(match c {
        ExternalComponent::Pid(p) => Some(*p),
        ExternalComponent::Pidfile(f) => {
            let text = std::fs::read_to_string(f).map_err(|error| FaultError::Pidfile {
                file: f.clone(),
                error,
            })?;
            Some(text.trim().parse().map_err(|error| FaultError::NotPid {
                file: f.clone(),
                error,
            })?)
        }
        ExternalComponent::Container(_) => None,
    })
}

/// Why a generic fault could not be applied or undone.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    #[error("no component {0:?} runs in this variant")]
    NoComponent(String),
    #[error("{0} is not running (killed?)")]
    NotRunning(String),
    #[error("{0} already has a {1} fault")]
    Overlap(String, &'static str),
    #[error(transparent)]
    Cgroup(#[from] cgroup::CgroupError),
    #[error(transparent)]
    Ledger(#[from] crate::env::ledger::LedgerError),
    #[error(transparent)]
    Process(crate::env::components::ComponentError),
    #[error("reading {}: {error}", .file.display())]
    Pidfile {
        file: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error("{}: not a process id ({error})", .file.display())]
    NotPid {
        file: std::path::PathBuf,
        error: std::num::ParseIntError,
    },
    #[error("no fault proxy in the path into {0} (the environment puts one there only for components a network fault names)")]
    NoFaultProxy(String),
    #[error(transparent)]
    Docker(#[from] crate::env::docker::DockerCallError),
}

/// A fault in force: what undoes it.
enum Active {
    Cgroup {
        placement: cgroup::Placement,
        ledger_id: u64,
    },
    Killed,
    Network(Arc<fault_proxy::FaultProxy>),
    /// A fault on a container (containers environment).
    Container {
        id: String,
        record: Option<u64>,
        undo: docker::ContainerUndo,
    },
}

/// Applies and undoes generic faults on a variant's component processes
/// (embedded) or containers (containers environment).
pub(crate) struct Injector {
    processes: Option<Arc<ProcessSet>>,
    /// Component name -> container id (containers environment).
    containers: BTreeMap<String, String>,
    /// Component name -> process id (an external target's processes).
    pids: BTreeMap<String, u32>,
    ledger: Arc<Ledger>,
    /// The fault proxy in the path into each component a network fault names.
    proxies: BTreeMap<String, Arc<fault_proxy::FaultProxy>>,
    active: Mutex<BTreeMap<(String, &'static str), Active>>,
}

impl Injector {
    pub(crate) fn new(
        processes: Arc<ProcessSet>,
        ledger: Arc<Ledger>,
        proxies: BTreeMap<String, Arc<fault_proxy::FaultProxy>>,
    ) -> Injector {
        Injector {
            processes: Some(processes),
            containers: BTreeMap::new(),
            pids: BTreeMap::new(),
            ledger,
            proxies,
            active: Mutex::new(BTreeMap::new()),
        }
    }

    /// The same, with `containers` (component name -> container id) too:
    /// the user's processes that are images (`env/processes/images.rs`).
    pub(crate) fn with_containers(mut self, containers: BTreeMap<String, String>) -> Injector {
        self.containers = containers;
        self
    }

    /// For the containers environment: `containers` maps each component
    /// (`gateway`, `pool-Z`) to its container id, `proxies` each component a
    /// `network` fault names to the fault proxy in the path into it.
    pub(crate) fn for_containers(
        ledger: Arc<Ledger>,
        containers: BTreeMap<String, String>,
        proxies: BTreeMap<String, Arc<fault_proxy::FaultProxy>>,
    ) -> Injector {
        Injector {
            processes: None,
            containers,
            pids: BTreeMap::new(),
            ledger,
            proxies,
            active: Mutex::new(BTreeMap::new()),
        }
    }

    /// For an external target: its named processes and containers.
    pub(crate) fn for_external(
        ledger: Arc<Ledger>,
        components: &BTreeMap<String, ExternalComponent>,
    ) -> Result<Injector, FaultError> {
        let mut pids = BTreeMap::new();
        let mut containers = BTreeMap::new();
        for (name, c) in components {
            match (external_pid(c)?, c) {
                (Some(pid), _) => {
                    pids.insert(name.clone(), pid);
                }
                (None, ExternalComponent::Container(id)) => {
                    containers.insert(name.clone(), id.clone());
                }
                (None, ExternalComponent::Pid(_) | ExternalComponent::Pidfile(_)) => {}
            }
        }
        Ok(Injector {
            processes: None,
            containers,
            pids,
            ledger,
            proxies: BTreeMap::new(),
            active: Mutex::new(BTreeMap::new()),
        })
    }

    fn processes(&self, name: &str) -> Result<&Arc<ProcessSet>, FaultError> {
        self.processes
            .as_ref()
            .ok_or_else(|| FaultError::NoComponent(name.into()))
    }

    fn key(f: &GenericFault) -> (String, &'static str) {
        (f.component().to_string(), f.kind())
    }

    /// Applies `f`; what was done, for the timeline's log.
    pub(crate) async fn apply(&self, f: &GenericFault) -> Result<String, FaultError> {
        let key = Self::key(f);
        if self.active.lock().expect("faults lock").contains_key(&key) {
            return Err(FaultError::Overlap(key.0, key.1));
        }
        let name = f.component();
        // `network` acts on the path into a container, not on the container.
        let on_path = f.row().acts_on == crate::experiment::faults::ActsOn::Path;
        if let Some(id) = self.containers.get(name).filter(|_| !on_path) {
            let (active, detail) = self.container_apply(name, id, f).await?;
            self.active.lock().expect("faults lock").insert(key, active);
            return Ok(detail);
        }
        let known = match &self.processes {
            Some(p) => p.addr(name).await.is_some(),
            None => self.pids.contains_key(name),
        };
        if !known && !self.proxies.contains_key(name) {
            return Err(FaultError::NoComponent(name.into()));
        }
        let (active, detail) = match f {
            GenericFault::CpuLimit { cpus, .. } => {
                self.cgroup(name, cgroup::Control::CpuQuota { cpus: *cpus })
                    .await?
            }
            GenericFault::Pause { .. } => self.cgroup(name, cgroup::Control::Freeze).await?,
            GenericFault::Kill { .. } => {
                let pid = self
                    .processes(name)?
                    .kill(name)
                    .await
                    .map_err(FaultError::Process)?;
                (Active::Killed, format!("{name} (process {pid}) killed"))
            }
            GenericFault::Network(n) => {
                let p = self
                    .proxies
                    .get(name)
                    .ok_or_else(|| FaultError::NoFaultProxy(name.into()))?;
                p.set(fault_proxy::Impairment::of(n));
                let detail = format!("fault proxy {} into {name}: {:?}", p.addr, p.current());
                (Active::Network(p.clone()), detail)
            }
        };
        self.active.lock().expect("faults lock").insert(key, active);
        Ok(detail)
    }

    async fn cgroup(
        &self,
        name: &str,
        control: cgroup::Control,
    ) -> Result<(Active, String), FaultError> {
        let pid = match self.pids.get(name) {
            Some(pid) => Some(*pid),
            None => self.processes(name)?.pid(name).await,
        }
        .ok_or_else(|| FaultError::NotRunning(name.into()))?;
        let tag = format!("{}-{name}-{pid}", std::process::id());
        let placement = cgroup::plan(pid, control, &tag)?;
        // Recorded before it is done: a SIGKILL in between leaves a record
        // whose undo is harmless.
        let ledger_id = self.ledger.add(Record::Cgroup(placement.clone()))?;
        if let Err(e) = placement.apply() {
            let _ = placement.undo();
            self.ledger.remove(ledger_id);
            return Err(e.into());
        }
        let detail = format!("{name}: {}", placement.describe());
        Ok((
            Active::Cgroup {
                placement,
                ledger_id,
            },
            detail,
        ))
    }

    /// Undoes `f` (lifts the quota, thaws, restarts); what was done.
    pub(crate) async fn undo(&self, f: &GenericFault) -> Result<String, FaultError> {
        let key = Self::key(f);
        let Some(active) = self.active.lock().expect("faults lock").remove(&key) else {
            return Ok(format!("{} {}: nothing in force", key.0, key.1));
        };
        match active {
            Active::Cgroup {
                placement,
                ledger_id,
            } => {
                placement.undo()?;
                self.ledger.remove(ledger_id);
                Ok(format!("{}: lifted", key.0))
            }
            Active::Killed => {
                let pid = self
                    .processes(&key.0)?
                    .restart(&key.0)
                    .await
                    .map_err(FaultError::Process)?;
                Ok(format!("{} restarted (process {pid})", key.0))
            }
            Active::Network(p) => {
                p.clear();
                Ok(format!(
                    "fault proxy {} into {}: forwarding untouched",
                    p.addr, key.0
                ))
            }
            Active::Container { id, record, undo } => {
                let done = docker::undo(&id, undo).await?;
                if let Some(r) = record {
                    self.ledger.remove(r);
                }
                Ok(format!("container {}: {done}", key.0))
            }
        }
    }

    /// Undoes every cgroup fault still in force (the variant's end, Ctrl-C,
    /// an error, a drop); killed components stay down, as the set stops.
    pub(crate) fn undo_all(&self) -> Vec<String> {
        // The fault proxies stop with the injector; until then they forward.
        let active = std::mem::take(&mut *self.active.lock().expect("faults lock"));
        let mut lines = Vec::new();
        for ((name, kind), a) in active {
            match a {
                Active::Cgroup {
                    placement,
                    ledger_id,
                } => match placement.undo() {
                    Ok(()) => {
                        self.ledger.remove(ledger_id);
                        lines.push(format!("{kind} on {name} undone at the variant's end"));
                    }
                    Err(e) => lines.push(format!("{kind} on {name} NOT undone: {e}")),
                },
                Active::Killed => {}
                Active::Container { id, record, undo } => match docker::undo_blocking(&id, undo) {
                    Ok(()) => {
                        if let Some(r) = record {
                            self.ledger.remove(r);
                        }
                        lines.push(format!("{kind} on {name} undone at the variant's end"));
                    }
                    Err(e) => lines.push(format!("{kind} on {name} NOT undone: {e}")),
                },
                Active::Network(p) => {
                    p.clear();
                    lines.push(format!(
                        "network fault into {name} undone at the variant's end"
                    ));
                }
            }
        }
        lines
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        for line in self.undo_all() {
            tracing::info!("{line}");
        }
    }
}
