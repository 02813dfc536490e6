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

pub mod cgroup;
mod docker;
pub(crate) mod fault_proxy;
pub mod ledger;
mod network;

pub use network::NetworkFault;

use crate::env::components::ProcessSet;
use ledger::{Ledger, Record};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A generic fault on one component, as written in a timeline entry
/// (`fault: { cpu_limit: { component: pool-az1, cpus: 0.2 } }`).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GenericFault {
    /// A CPU quota of `cpus` CPUs (> 0) on the component's process.
    CpuLimit { component: String, cpus: f64 },
    /// The component's process frozen.
    Pause { component: String },
    /// The component's process killed (SIGKILL); restarted on its address at
    /// the end of the entry's duration.
    Kill { component: String },
    /// The path into the component impaired (its fault proxy).
    Network(NetworkFault),
}

/// Everything decided per generic fault, declared once in
/// [`GenericFault::row`], as `AdminCommand::row` does for the system's
/// commands: the validator, the virtual clock's refusal, the environments
/// and the Kubernetes rendering read it. No field has a default, so a new
/// fault's row must decide each one; the variant's doc comment is its
/// one-line description (the schema's and the docs'). What it does is
/// [`Injector::apply`] (and `docker.rs` for containers).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GenericRow<'a> {
    /// The YAML key of its kind (`cpu_limit`).
    pub kind: &'static str,
    /// The component it acts on.
    pub component: &'a str,
    /// The component's process, or the path into it.
    pub acts_on: ActsOn,
    /// Its label in the report.
    pub label: String,
    /// Impossible values, as `(field, why)`.
    pub check: Result<(), (&'static str, String)>,
    /// Whether the containers environment can carry it out, and why not.
    pub in_containers: Result<(), &'static str>,
    /// Whether it can be done to an external target's process (`pid`,
    /// `pidfile`), and why not.
    pub on_external_process: Result<(), &'static str>,
    /// Whether it can be done to an external target's container.
    pub on_external_container: Result<(), &'static str>,
    /// How it is carried out on a Kubernetes cluster (`harness render k8s`).
    pub k8s: sut::command_row::K8s,
}

/// What a generic fault acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ActsOn {
    /// The component's process (frozen, CPU limited, killed and
    /// restarted): a pool's GPU then falls behind its model because of the
    /// fault, which the GPU pacing must not count.
    Process,
    /// The path into the component: a fault proxy the environment puts
    /// there (`fault_proxy.rs`).
    Path,
}

const K8S_PROCESS: sut::command_row::K8s = sut::command_row::K8s {
    entry: "cpu_limit / pause / kill",
    how: "not rendered: the coordinator has no hold on a pod's cgroup. By hand: a CPU limit is the pod's `resources.limits.cpu`, a pause has no Kubernetes form (freeze the container with the runtime), a kill is `kubectl delete pod` (the Deployment restarts it)",
};
const K8S_NETWORK: sut::command_row::K8s = sut::command_row::K8s {
    entry: "network",
    how: "not rendered: the coordinator puts no fault proxy in a pod's path. By hand: a service mesh's fault injection (delay, abort), or `tc netem` in the pod's network namespace",
};

const NETWORK_EXTERNAL: &str = "network needs a fault proxy in the path into the component, which the harness can only insert for components it starts; not for an external target";

impl GenericFault {
    /// One of each kind, in the order they are declared, as a file writes
    /// them: the validator's examples, and [`GenericFault::kinds`]. A test
    /// checks they parse and name every kind of the schema.
    pub(crate) const EXAMPLES: [&'static str; 4] = [
        "cpu_limit: { component: pool-az1, cpus: 0.2 }",
        "pause: { component: gateway }",
        "kill: { component: pool-az1 }",
        "network: { component: pool-az1, delay: 50ms, loss: 5 }",
    ];

    /// The fault's row of the table: every decision made per generic fault.
    /// One arm per fault and no `_`, so a new fault is a compile error here
    /// until its row is written.
    pub(crate) fn row(&self) -> GenericRow<'_> {
        match self {
            GenericFault::CpuLimit { component, cpus } => GenericRow {
                kind: "cpu_limit",
                component,
                acts_on: ActsOn::Process,
                label: format!("{component} limited to {cpus} CPUs"),
                check: if !(cpus.is_finite() && *cpus > 0.0) {
                    Err((
                        "cpus",
                        format!("must be > 0 (a share of CPUs, e.g. 0.2), not {cpus}"),
                    ))
                } else if *cpus > 1024.0 {
                    Err(("cpus", format!("{cpus} CPUs is no limit")))
                } else {
                    Ok(())
                },
                in_containers: Ok(()),
                on_external_process: Ok(()),
                on_external_container: Ok(()),
                k8s: K8S_PROCESS,
            },
            GenericFault::Pause { component } => GenericRow {
                kind: "pause",
                component,
                acts_on: ActsOn::Process,
                label: format!("{component} paused"),
                check: Ok(()),
                in_containers: Ok(()),
                on_external_process: Ok(()),
                on_external_container: Ok(()),
                k8s: K8S_PROCESS,
            },
            GenericFault::Kill { component } => GenericRow {
                kind: "kill",
                component,
                acts_on: ActsOn::Process,
                label: format!("{component} killed"),
                check: Ok(()),
                in_containers: if component == "gateway" {
                    Err("kill of the gateway container: its port is published on a random loopback port, which `docker start` would change; kill a pool, or run it embedded")
                } else {
                    Ok(())
                },
                on_external_process: Err("kill of an external process: the harness did not start it and cannot restart it; give the component as a container, or leave kill out"),
                on_external_container: Ok(()),
                k8s: K8S_PROCESS,
            },
            GenericFault::Network(n) => GenericRow {
                kind: "network",
                component: &n.component,
                acts_on: ActsOn::Path,
                label: format!("network into {}", n.component),
                check: n.check(),
                in_containers: Ok(()),
                on_external_process: Err(NETWORK_EXTERNAL),
                on_external_container: Err(NETWORK_EXTERNAL),
                k8s: K8S_NETWORK,
            },
        }
    }

    /// One fault of each kind: [`GenericFault::EXAMPLES`], parsed.
    pub(crate) fn every() -> Vec<GenericFault> {
        Self::EXAMPLES
            .iter()
            .map(|e| serde_saphyr::from_str(e).expect("each example is a generic fault"))
            .collect()
    }

    /// Every [`kind`](Self::kind): the keys a timeline entry's `fault`
    /// names a generic fault by (validation and the virtual clock's
    /// refusal read them).
    pub(crate) fn kinds() -> Vec<&'static str> {
        Self::every().iter().map(GenericFault::kind).collect()
    }

    pub fn component(&self) -> &str {
        self.row().component
    }

    /// The zone whose pool's process this fault holds up (see
    /// [`ActsOn::Process`]); none for a fault on the path into it.
    pub(crate) fn held_up_pool_zone(&self) -> Option<&str> {
        let row = self.row();
        match row.acts_on {
            ActsOn::Process => crate::experiment::components::pool_zone(row.component),
            ActsOn::Path => None,
        }
    }

    /// The YAML key of its kind.
    pub fn kind(&self) -> &'static str {
        self.row().kind
    }

    /// Its label in the report.
    pub fn label(&self) -> String {
        self.row().label
    }

    /// Whether the containers environment can carry it out, and why not.
    pub fn in_containers(&self) -> Result<(), String> {
        self.row().in_containers.map_err(String::from)
    }

    /// Impossible values, as `(field, why)`.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        self.row().check
    }
}

/// A part of an external target generic faults may act on
/// (`target.components`): `{ pid: N }`, `{ pidfile: PATH }` (read when the
/// variant starts) or `{ container: NAME }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ExternalComponent {
    Pid(u32),
    Pidfile(std::path::PathBuf),
    Container(String),
}

impl ExternalComponent {
    /// Whether `f` can be done to it, and why not.
    pub fn takes(&self, f: &GenericFault) -> Result<(), String> {
        let row = f.row();
        match self {
            ExternalComponent::Pid(_) | ExternalComponent::Pidfile(_) => row.on_external_process,
            ExternalComponent::Container(_) => row.on_external_container,
        }
        .map_err(String::from)
    }

    /// The process id now (a pidfile read).
    fn pid(&self) -> anyhow::Result<Option<u32>> {
        Ok(match self {
            ExternalComponent::Pid(p) => Some(*p),
            ExternalComponent::Pidfile(f) => {
                let text = std::fs::read_to_string(f)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", f.display()))?;
                Some(
                    text.trim()
                        .parse()
                        .map_err(|e| anyhow::anyhow!("{}: not a process id ({e})", f.display()))?,
                )
            }
            ExternalComponent::Container(_) => None,
        })
    }
}

/// Why a generic fault could not be applied or undone.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FaultError {
    #[error("no component {0:?} runs in this variant")]
    NoComponent(String),
    #[error("{0} is not running (killed?)")]
    NotRunning(String),
    #[error("{0} already has a {1} fault")]
    Overlap(String, &'static str),
    #[error(transparent)]
    Cgroup(#[from] cgroup::CgroupError),
    #[error(transparent)]
    Ledger(#[from] ledger::LedgerError),
    #[error("{0:#}")]
    Process(anyhow::Error),
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
    ) -> anyhow::Result<Injector> {
        let mut pids = BTreeMap::new();
        let mut containers = BTreeMap::new();
        for (name, c) in components {
            match (c.pid()?, c) {
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
        let on_path = f.row().acts_on == ActsOn::Path;
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
                p.set(n.impairment());
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
