//! The system split into roles: as child processes on loopback (embedded,
//! when a generic fault or a proxy gateway needs processes of their own;
//! `components.rs`) or as containers (`containers/`), each with the
//! injector that applies generic faults to its components and the fault
//! proxies in the paths a `network` fault names.

use super::{own_redis, EnvError, Target};
use crate::experiment::{Experiment, Variant};
use std::sync::Arc;

/// The variant's containers (`containers/`); with a proxy gateway the
/// target holds its face, and with generic faults an injector acting
/// through `docker` and the fault proxies in the paths they name.
pub(super) async fn start_containers(
    exp: &Experiment,
    v: &Variant,
    images: &crate::experiment::images::ContainerImages,
) -> Result<Target, EnvError> {
    let network = exp.network_faulted();
    let mut set = crate::env::containers::start(&v.name, &v.system, images, &network)
        .await
        .map_err(|error| EnvError::Containers {
            variant: v.name.clone(),
            error: Box::new(error),
        })?;
    report_pool_executors(&set.base_url).await;
    let mut target = Target::elsewhere(set.base_url.clone(), Some(v.system.admin_token.clone()));
    if let Some(face) = set.face.take() {
        target.base_url = face.face_url.clone();
        target.proxy = Some(face);
    }
    if exp.needs_components() {
        let mut faulted = std::mem::take(&mut set.fault_proxies);
        fault_proxy_into_gateway(&mut target, &network, &mut faulted).await?;
        target.faults = Some(Arc::new(container_faults(&set, faulted)?));
    }
    target.containers = Some(set);
    Ok(target)
}

/// With a `network` fault on the gateway (in `network`), the load reaches
/// it through a fault proxy on loopback (added to `faulted`); the
/// harness's own scrapes and admin commands do not.
async fn fault_proxy_into_gateway(
    target: &mut Target,
    network: &std::collections::BTreeSet<String>,
    faulted: &mut FaultProxies,
) -> Result<(), EnvError> {
    if !network.contains("gateway") {
        return Ok(());
    }
    let to = target.load_url();
    let to: std::net::SocketAddr =
        to.trim_start_matches("http://")
            .parse()
            .map_err(|error| EnvError::GatewayAddress {
                to: to.clone(),
                error,
            })?;
    let p = crate::env::faults::fault_proxy::FaultProxy::start(to)
        .await
        .map_err(EnvError::Io)?;
    target.load_via = Some(format!("http://{}", p.addr));
    faulted.insert("gateway".to_string(), Arc::new(p));
    Ok(())
}

/// The fault proxy in the path into each component a `network` fault names.
type FaultProxies =
    std::collections::BTreeMap<String, Arc<crate::env::faults::fault_proxy::FaultProxy>>;

/// Generic faults on the variant's containers: `pool-Z` and `gateway`
/// mapped to their container ids, and the fault proxies `faulted`.
fn container_faults(
    set: &crate::env::containers::ContainerSet,
    faulted: FaultProxies,
) -> Result<crate::env::faults::Injector, EnvError> {
    // The set's own: one ledger per process file, or one would overwrite
    // the other's records.
    let ledger = set.ledger.clone();
    let map = set
        .ids()
        .into_iter()
        .filter_map(|(label, id)| {
            let name = match label.strip_prefix("container pool ") {
                Some(zone) => crate::experiment::components::pool_component(zone),
                None if label == "container gateway" => "gateway".to_string(),
                None => return None,
            };
            Some((name, id))
        })
        .collect();
    Ok(crate::env::faults::Injector::for_containers(
        ledger, map, faulted,
    ))
}

/// The variant's system as component processes on loopback (see
/// `components.rs`): a pool process per zone, then the gateway process, or
/// with a proxy gateway a control process (admin, merged metrics; no load)
/// and the proxy (`proxy_gateway.rs`).
pub(super) async fn start_components(
    v: &Variant,
    network: &std::collections::BTreeSet<String>,
) -> Result<Target, EnvError> {
    use crate::env::components::{sut_binary, ProcessSet};
    // One folder per started set: variants of the same name in one process
    // (tests, campaigns in threads) must not share logs or files.
    static SETS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let ledger = Arc::new(crate::env::ledger::Ledger::open()?);
    let mut config = v.system.clone();
    let redis = own_redis(&mut config, &v.name)?;
    let dir = std::env::temp_dir().join(format!(
        "harness-components-{}-{}-{}",
        std::process::id(),
        SETS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        v.name
    ));
    let set = Arc::new(ProcessSet::new(dir, ledger.clone())?);
    let sut = sut_binary()?;
    let file = set.dir().join("system.json");
    let json = serde_json::to_vec_pretty(&config).map_err(EnvError::Json)?;
    std::fs::write(&file, json).map_err(|error| EnvError::Write {
        path: file.clone(),
        error,
    })?;
    let file = file.display().to_string();
    let mut faulted = std::collections::BTreeMap::new();
    let pools = start_pools(&set, &sut, &file, &config.zones, network, &mut faulted).await?;
    let mut gateway = vec![
        "--config".to_string(),
        file,
        "--role".into(),
        "gateway".into(),
    ];
    for (z, addr) in &pools {
        gateway.extend(["--pool".to_string(), format!("{z}=http://{addr}")]);
    }
    let (base_url, proxy) = match &config.gateway.proxy {
        None => {
            let addr = set.start_sut("gateway", &sut, gateway).await?;
            (format!("http://{addr}"), None)
        }
        Some(p) => {
            let control = set.start_sut("control", &sut, gateway).await?;
            let g = crate::env::proxy_gateway::start(&set, p, &pools, control).await?;
            (g.face_url.clone(), Some(g))
        }
    };
    let mut target = Target::elsewhere(base_url, Some(v.system.admin_token.clone()));
    target.proxy = proxy;
    fault_proxy_into_gateway(&mut target, network, &mut faulted).await?;
    target.redis = redis;
    let injector = crate::env::faults::Injector::new(set.clone(), ledger, faulted);
    target.faults = Some(Arc::new(injector));
    target.processes = Some(set);
    Ok(target)
}

/// A pool process per zone; `(zone, address its peers use)`: the fault
/// proxy's for a pool a network fault names (added to `faulted`).
async fn start_pools(
    set: &crate::env::components::ProcessSet,
    sut: &crate::env::components::SutProgram,
    file: &str,
    zones: &[String],
    network: &std::collections::BTreeSet<String>,
    faulted: &mut FaultProxies,
) -> Result<Vec<(String, std::net::SocketAddr)>, EnvError> {
    let mut pools = Vec::new();
    for z in zones {
        let args = ["--config", file, "--role", "pool", "--zone", z.as_str()];
        let name = crate::experiment::components::pool_component(z);
        let mut addr = set
            .start_sut(&name, sut, args.iter().map(|a| a.to_string()).collect())
            .await?;
        if network.contains(&name) {
            let p = crate::env::faults::fault_proxy::FaultProxy::start(addr)
                .await
                .map_err(EnvError::Io)?;
            addr = p.addr;
            faulted.insert(name, Arc::new(p));
        }
        pools.push((z.clone(), addr));
    }
    Ok(pools)
}

/// Says which executor the pool containers run, loudly when it is the CPU
/// fallback (an image built without the Vulkan driver, say).
async fn report_pool_executors(base_url: &str) {
    let client = crate::net::system_client::SystemClient::Http {
        client: reqwest::Client::new(),
        base_url: base_url.to_string(),
        metrics_url: None,
    };
    let Ok(m) = crate::observe::scrape::scrape(&client).await else {
        return;
    };
    let adapter = m
        .label(sut::metric_names::EXECUTOR_INFO.name, "adapter")
        .unwrap_or_default();
    if m.label(sut::metric_names::EXECUTOR_INFO.name, "fallback")
        .as_deref()
        == Some("true")
    {
        eprintln!(
            "\n!!! NO GPU ADAPTER IN THE POOL CONTAINERS: their pages run on the CPU reference implementation ({adapter}).\n"
        );
    } else {
        tracing::info!("pool containers run pages on {adapter}");
    }
}
