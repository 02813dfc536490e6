//! Why the variant's containers could not be set up.

use super::DockerError;
use crate::base::causes::Causes;

/// testcontainers' error, boxed: it is large.
pub(super) type Tc = Box<testcontainers::TestcontainersError>;

/// Why the variant's containers (Redis, pools, gateway, a proxy gateway, a
/// load agent) or the paths into them could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error(transparent)]
    Docker(#[from] DockerError),
    #[error("serializing the system configuration: {}", Causes(.0))]
    Config(serde_json::Error),
    #[error("starting the Redis container ({image}): {}", Causes(&**.error))]
    Redis { image: String, error: Tc },
    #[error("starting the pool container of zone {zone} ({image}): {}", Causes(&**.error))]
    Pool {
        zone: String,
        image: String,
        error: Tc,
    },
    #[error("starting the gateway container ({image}): {}", Causes(&**.error))]
    Gateway { image: String, error: Tc },
    #[error("the gateway container's published port: {}", Causes(&**.0))]
    Port(Tc),
    #[error("the gateway container published no port")]
    NoPort,
    #[error("inspecting the network {network}: {error}")]
    Inspect {
        network: String,
        error: crate::env::docker::DockerCallError,
    },
    #[error("the network {0} has no IPv4 gateway")]
    NoGateway(String),
    #[error("starting load agent {shard} as a container of {image} (does the image carry harness? rebuild it with ci/images.sh): {}", Causes(&**.error))]
    Agent {
        shard: u32,
        image: String,
        error: Tc,
    },
    #[error("the address of zone {zone}'s pool container: {}", Causes(&**.error))]
    PoolAddress { zone: String, error: Tc },
    /// A fault proxy in the path into a pool could not listen.
    #[error("{}", Causes(.0))]
    FaultProxy(std::io::Error),
    #[error("creating {}: {}", .dir.display(), Causes(.error))]
    Folder {
        dir: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    Proxy(#[from] crate::env::proxy_gateway::ProxyError),
    #[error(transparent)]
    Ledger(#[from] crate::env::ledger::LedgerError),
    #[error("starting the {kind} gateway container ({image}): {}", Causes(&**.error))]
    ProxyStart {
        kind: String,
        image: String,
        error: Tc,
    },
    #[error("the {kind} container's published port {port}: {}", Causes(&**.error))]
    ProxyPort { kind: String, port: u16, error: Tc },
    /// HAProxy exited or its exporter did not answer (`why`).
    #[error("the haproxy container ({id}) {why}; its log:\n{log}")]
    Haproxy {
        id: String,
        why: String,
        log: String,
    },
}
