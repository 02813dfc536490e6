//! The generic faults as an experiment states them, and their table: what
//! breaks a component from the outside, with no admin API (`cpu_limit`,
//! `pause`, `kill`, and `network` on the path into it). Each kind is
//! declared once, as a row of [`GenericFault::row`]: what is decided per
//! fault (its check, where it can run, whether it holds up a process, its
//! Kubernetes mapping) is read from there by the validator, the virtual
//! clock's refusal, the environments and the Kubernetes rendering. What a
//! fault does is the environment's (`env/faults/`: the injector, its
//! cgroups, the fault proxy and the fault ledger).

mod network;

pub use network::NetworkFault;

use serde::Deserialize;

/// A generic fault on one component, as written in a timeline entry
/// (`fault: { cpu_limit: { component: pool-az1, cpus: 0.2 } }`).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GenericFault {
    /// A CPU quota of `cpus` CPUs (> 0) on the component's process.
    CpuLimit {
        /// The component it acts on: `gateway`, `pool-ZONE`, a process of
        /// `system.processes` or a `target.components` name.
        component: String,
        /// CPUs it may use (> 0), e.g. `0.2`.
        cpus: f64,
    },
    /// The component's process frozen.
    Pause {
        /// The component it acts on: `gateway`, `pool-ZONE`, a process of
        /// `system.processes` or a `target.components` name.
        component: String,
    },
    /// The component's process killed (SIGKILL); restarted on its address at
    /// the end of the entry's duration.
    Kill {
        /// The component it acts on: `gateway`, `pool-ZONE`, a process of
        /// `system.processes` or a `target.components` name.
        component: String,
    },
    /// The path into the component impaired (its fault proxy).
    Network(NetworkFault),
}

/// Everything decided per generic fault, declared once in
/// [`GenericFault::row`], as `AdminCommand::row` does for the system's
/// commands: the validator, the virtual clock's refusal, the environments
/// and the Kubernetes rendering read it. No field has a default, so a new
/// fault's row must decide each one; the variant's doc comment is its
/// one-line description (the schema's and the docs'). What it does is
/// `env::faults::Injector::apply` (and `env/docker.rs` for containers).
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
    pub fn in_containers(&self) -> Result<(), &'static str> {
        self.row().in_containers
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
    /// A process, by its id.
    Pid(u32),
    /// A process whose id this file holds (read when the variant starts).
    Pidfile(std::path::PathBuf),
    /// A Docker container, by name.
    Container(String),
}

impl ExternalComponent {
    /// Whether `f` can be done to it, and why not.
    pub fn takes(&self, f: &GenericFault) -> Result<(), &'static str> {
        let row = f.row();
        match self {
            ExternalComponent::Pid(_) | ExternalComponent::Pidfile(_) => row.on_external_process,
            ExternalComponent::Container(_) => row.on_external_container,
        }
    }
}
