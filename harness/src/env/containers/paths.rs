//! How the gateway reaches each pool in the containers environment: by the
//! pool container's name or address on the variant's network, or, for a
//! pool a `network` fault names, through a fault proxy of the harness
//! (`faults/fault_proxy.rs`) that listens on the network's gateway address
//! (this machine's side of the bridge, which the containers reach) and
//! forwards to the pool. The fault proxy is a task of the harness: it stops
//! with the variant and dies with the harness.

use super::{network_gateway, ContainerError, Startup, ZoneMap, SUT_PORT};
use crate::env::faults::fault_proxy::FaultProxy;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;

/// How the gateway reaches a zone's pool.
pub(super) struct PoolPath {
    pub zone: String,
    /// The pool container's name on the variant's network.
    name: String,
    /// Its address there (`IP:8080`), or the fault proxy's in its path.
    pub addr: SocketAddr,
    /// Whether `addr` is a fault proxy's.
    faulted: bool,
}

impl PoolPath {
    /// The sut gateway's `--pool` URL: by name (Docker's DNS finds a pool
    /// restarted after a `kill` wherever it comes back), or the fault proxy.
    pub fn url(&self) -> String {
        if self.faulted {
            format!("http://{}", self.addr)
        } else {
            format!("http://{}:{SUT_PORT}", self.name)
        }
    }
}

impl Startup<'_> {
    /// Each pool's address on the variant's network, and for a pool that
    /// `faulted` names (`pool-Z`) a fault proxy of this process in the path
    /// into it: listening on the network's gateway address (this machine's
    /// side of the bridge, which the containers reach), forwarding to the
    /// pool's address.
    pub(super) async fn paths(
        &self,
        zones: &ZoneMap,
        faulted: &BTreeSet<String>,
    ) -> Result<(Vec<PoolPath>, BTreeMap<String, Arc<FaultProxy>>), ContainerError> {
        let mut paths = Vec::new();
        let mut proxies = BTreeMap::new();
        for (zone, c) in zones {
            let ip =
                c.get_bridge_ip_address()
                    .await
                    .map_err(|error| ContainerError::PoolAddress {
                        zone: zone.clone(),
                        error: Box::new(error),
                    })?;
            let mut addr = SocketAddr::new(ip, SUT_PORT);
            let component = crate::experiment::components::pool_component(zone);
            let through = faulted.contains(&component);
            if through {
                let host = network_gateway(&self.network).await?;
                let p = FaultProxy::start_on(host, addr)
                    .await
                    .map_err(ContainerError::FaultProxy)?;
                addr = p.addr;
                proxies.insert(component, Arc::new(p));
            }
            paths.push(PoolPath {
                zone: zone.clone(),
                name: format!("{}-pool-{zone}", self.network),
                addr,
                faulted: through,
            });
        }
        Ok((paths, proxies))
    }
}
