//! The `containers` environment: the system under test as real containers.
//!
//! Per variant, on one user-defined Docker network of its own: a Redis
//! container when the cache is Redis, one pool container per zone
//! (`sut --role pool`), and a gateway container (`sut --role gateway`) whose
//! port is published on 127.0.0.1 only. The harness talks to the gateway
//! alone, as to an embedded system: the same `/v1/extract`, admin API and
//! merged `/metrics`, so the same experiment file gives the same verdicts.
//! What differs is real: every hop between gateway and pools crosses a
//! network, and a `zone_outage` pauses the zone's container (its processes
//! freeze, connections hang) until `zone_restore` unpauses it.
//!
//! With `system.gateway.proxy` the gateway is HAProxy or nginx as a
//! container instead (`proxy.rs`), and the `sut --role gateway` container
//! is the control: it serves the admin API and merged metrics, no load. A
//! `network` fault on a pool puts a fault proxy of the harness in the path
//! into it: the gateway reaches the pool through it, on the network's
//! gateway address (this machine's side of the bridge).
//!
//! Images are built locally by `ci/images.sh` (no registry is needed); their
//! names come from the experiment's `containers:` section, then the
//! `HARNESS_SUT_IMAGE` / `HARNESS_REDIS_IMAGE` (`HARNESS_HAPROXY_IMAGE`,
//! `HARNESS_NGINX_IMAGE`) variables, then the defaults.
//! Containers and the network are removed when the variant ends (testcontainers
//! removes them on drop, also when the harness is interrupted); the network
//! is in the fault ledger from before the first container starts until
//! then, so after a SIGKILL the next start removes its containers and it.

mod error;
mod paths;
mod proxy;

use crate::env::faults::fault_proxy::FaultProxy;
use crate::experiment::images::ContainerImages;
pub use error::ContainerError;
use paths::PoolPath;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use sut::config::CacheBackend;
use sut::SystemConfig;
use testcontainers::bollard::models::{HostConfig, PortBinding};
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

/// The port every sut process listens on inside its container.
pub(crate) const SUT_PORT: u16 = 8080;
pub(crate) const REDIS_PORT: u16 = 6379;

/// The arguments the project's Redis container runs with, here and in the
/// rendered Kubernetes Deployment: protected mode off (only its private
/// network reaches it), no persistence, and the experiment's memory limit
/// and eviction policy (the cache's defect lives in those two).
pub(crate) fn redis_server_args(r: &sut::config::RedisCacheConfig) -> Vec<String> {
    // Reached over the variant's network, not loopback.
    let mut args = vec!["--protected-mode".to_string(), "no".to_string()];
    args.extend(sut::cache_server_args(REDIS_PORT, r.maxmemory_mb, r.policy));
    args
}

/// A sut process's command line in the split, in a container here and in a
/// pod of the rendered manifests: its configuration file, its role (`pool`
/// with its `zone`, or `gateway`, whose `--pool` arguments the caller adds),
/// listening on every interface of its own network namespace, and taking
/// admin commands from its peers (the gateway forwards zone commands).
pub(crate) fn sut_args(config: &str, role: &str, zone: Option<&str>) -> Vec<String> {
    let listen = format!("0.0.0.0:{SUT_PORT}");
    let mut args = vec!["--config", config, "--role", role];
    if let Some(zone) = zone {
        args.extend(["--zone", zone]);
    }
    args.extend(["--listen", &listen, "--admin-from-any-peer"]);
    args.into_iter().map(String::from).collect()
}

pub(crate) const STARTUP: Duration = Duration::from_secs(60);

/// `name:tag` split for testcontainers (a missing tag is `latest`).
pub(crate) fn split_image(image: &str) -> (String, String) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name.to_string(), tag.to_string()),
        _ => (image.to_string(), "latest".to_string()),
    }
}

/// Why the containers environment cannot run, or cannot act on a zone's
/// container.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// No engine to connect to, or its ping failed.
    #[error("no Docker engine: {0}")]
    NoEngine(testcontainers::bollard::errors::Error),
    /// The engine did not answer its ping in time.
    #[error("the Docker engine did not answer within 5 s")]
    NoAnswer,
    /// An image the variant needs was never built here (nothing is pulled).
    #[error("the image {0} is not in the local Docker engine; build it with `bash ci/images.sh` (or set containers.sut_image / containers.redis_image, HARNESS_HAPROXY_IMAGE / HARNESS_NGINX_IMAGE, to images you have)")]
    MissingImage(String),
    /// A zone outage could not pause the zone's container.
    #[error("pausing {zone}: {error}")]
    Pause {
        zone: String,
        error: testcontainers::core::error::TestcontainersError,
    },
    /// A zone restore could not unpause it.
    #[error("unpausing {zone}: {error}")]
    Unpause {
        zone: String,
        error: testcontainers::core::error::TestcontainersError,
    },
    /// The timeline names a zone the variant has no container for.
    #[error("no container for zone {0:?}")]
    NoZone(String),
}

/// Is the Docker engine reachable? (For tests that skip without it.)
pub async fn docker_available() -> Result<(), DockerError> {
    crate::env::docker::ping().await.map_err(|e| match e {
        crate::env::docker::PingError::Engine(e) => DockerError::NoEngine(e),
        crate::env::docker::PingError::NoAnswer => DockerError::NoAnswer,
    })
}

/// Checks that the images exist locally: nothing can be pulled here, and a
/// pull attempt would fail with a far less helpful message.
pub async fn check_images(images: &ContainerImages, need_redis: bool) -> Result<(), DockerError> {
    let mut wanted = vec![images.sut.as_str()];
    if need_redis {
        wanted.push(&images.redis);
    }
    check_these(&wanted).await
}

/// Checks that each of `images` exists locally.
pub async fn check_these(images: &[&str]) -> Result<(), DockerError> {
    docker_available().await?;
    for image in images {
        if !crate::env::docker::image_exists(image).await {
            return Err(DockerError::MissingImage(image.to_string()));
        }
    }
    Ok(())
}

/// The zones' pool containers, for pausing and unpausing them.
pub struct ZoneContainers {
    zones: ZoneMap,
}

impl ZoneContainers {
    /// A zone outage: the zone's container is paused (its processes
    /// freeze, connections to it hang). Returns what the log says.
    pub async fn pause(&self, zone: &str) -> Result<String, DockerError> {
        let c = self.get(zone)?;
        c.pause().await.map_err(|error| DockerError::Pause {
            zone: zone.to_string(),
            error,
        })?;
        Ok(format!(
            "container of zone {zone} paused ({})",
            short(c.id())
        ))
    }

    /// A zone restore: the zone's container runs again.
    pub async fn unpause(&self, zone: &str) -> Result<String, DockerError> {
        let c = self.get(zone)?;
        c.unpause().await.map_err(|error| DockerError::Unpause {
            zone: zone.to_string(),
            error,
        })?;
        Ok(format!(
            "container of zone {zone} unpaused ({})",
            short(c.id())
        ))
    }

    fn get(&self, zone: &str) -> Result<&Arc<ContainerAsync<GenericImage>>, DockerError> {
        self.zones
            .get(zone)
            .ok_or_else(|| DockerError::NoZone(zone.to_string()))
    }
}

pub(crate) fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// One variant's running containers; dropped = removed.
pub struct ContainerSet {
    /// The `sut --role gateway` container's published port (with a proxy
    /// gateway, the control's: the face forwards to it).
    pub base_url: String,
    pub zones: Arc<ZoneContainers>,
    /// Held so they live as long as the variant (order: gateway first on drop).
    gateway: Option<ContainerAsync<GenericImage>>,
    redis: Option<ContainerAsync<GenericImage>>,
    /// A proxy gateway's container (`proxy.rs`).
    proxy: Option<proxy::ProxyContainer>,
    /// Its face, for the target to take: the load goes to its `load_url`,
    /// the rest to its `face_url`.
    pub(crate) face: Option<crate::env::proxy_gateway::ProxyGateway>,
    /// The fault proxy in the path into each pool a `network` fault names.
    pub(crate) fault_proxies: BTreeMap<String, Arc<FaultProxy>>,
    pub network: String,
    /// The fault ledger (shared with the variant's generic faults) and
    /// the network's record in it.
    pub(crate) ledger: Arc<crate::env::ledger::Ledger>,
    record: Option<u64>,
}

impl ContainerSet {
    /// `(label, full id)` of every container of the variant, for its CPU account.
    pub fn ids(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .zones
            .zones
            .iter()
            .map(|(z, c)| (format!("container pool {z}"), c.id().to_string()))
            .collect();
        // With a proxy gateway, the proxy is the component `gateway`.
        let control = if self.proxy.is_some() {
            "container control"
        } else {
            "container gateway"
        };
        if let Some(g) = &self.gateway {
            out.push((control.into(), g.id().to_string()));
        }
        if let Some(p) = &self.proxy {
            out.push(("container gateway".into(), p.container.id().to_string()));
        }
        if let Some(r) = &self.redis {
            out.push(("container redis".into(), r.id().to_string()));
        }
        out
    }

    /// Stops the gateway first (it holds connections to the pools), then the rest.
    pub async fn stop(mut self) {
        if let Some(p) = self.proxy.take() {
            let _ = p.container.rm().await;
            let _ = std::fs::remove_dir_all(&p.dir);
        }
        if let Some(g) = self.gateway.take() {
            let _ = g.rm().await;
        }
        // The pools and Redis go when their last handle drops.
        drop(self.redis.take());
        if let Some(id) = self.record.take() {
            self.ledger.remove(id);
        }
    }
}

/// Starts Redis (if the cache asks for it), the pools and the gateway (a
/// proxy gateway's container and its control), with a fault proxy in the
/// path into each pool `network_faulted` names (`pool-Z`).
pub async fn start(
    variant: &str,
    config: &SystemConfig,
    images: &ContainerImages,
    network_faulted: &BTreeSet<String>,
) -> Result<ContainerSet, ContainerError> {
    check_images(images, needs_redis(config)).await?;
    if let Some(p) = &config.gateway.proxy {
        check_these(&[images.proxy(p)]).await?;
    }
    let startup = Startup::new(variant, config.clone(), images);
    let ledger = Arc::new(crate::env::ledger::Ledger::open()?);
    let record = ledger.add(crate::env::ledger::Record::DockerNetwork {
        network: startup.network.clone(),
    })?;
    let set = start_recorded(startup, config, images, network_faulted, ledger.clone()).await;
    match set {
        Ok(mut set) => {
            set.record = Some(record);
            Ok(set)
        }
        Err(e) => {
            // What started is removed as its handles drop.
            ledger.remove(record);
            Err(e)
        }
    }
}

/// [`start`] once the network is in the ledger.
async fn start_recorded(
    mut startup: Startup<'_>,
    config: &SystemConfig,
    images: &ContainerImages,
    network_faulted: &BTreeSet<String>,
    ledger: Arc<crate::env::ledger::Ledger>,
) -> Result<ContainerSet, ContainerError> {
    let redis = if needs_redis(config) {
        Some(startup.redis().await?)
    } else {
        None
    };
    // Serialized after Redis started: the pools are told its URL.
    let config_json = serde_json::to_vec_pretty(&startup.config).map_err(ContainerError::Config)?;
    let zones = startup.pools(&config_json).await?;
    let (paths, fault_proxies) = startup.paths(&zones, network_faulted).await?;
    let (gateway, port) = startup.gateway(config_json, &paths).await?;
    let (proxy, face) = match &config.gateway.proxy {
        None => (None, None),
        Some(p) => {
            let pools: Vec<_> = paths.iter().map(|p| (p.zone.clone(), p.addr)).collect();
            let dir = std::env::temp_dir().join(format!(
                "harness-components-{}-{}",
                std::process::id(),
                startup.network
            ));
            let control = SocketAddr::from(([127, 0, 0, 1], port));
            let image = images.proxy(p);
            let (c, f) = proxy::start(&startup.network, image, p, &pools, control, &dir).await?;
            (Some(c), Some(f))
        }
    };
    Ok(ContainerSet {
        base_url: format!("http://127.0.0.1:{port}"),
        zones: Arc::new(ZoneContainers { zones }),
        gateway: Some(gateway),
        redis,
        proxy,
        face,
        fault_proxies,
        network: startup.network,
        ledger,
        record: None,
    })
}

/// Whether the variant runs a Redis container of its own.
fn needs_redis(config: &SystemConfig) -> bool {
    matches!(&config.cache.backend, CacheBackend::Redis(r) if r.url.is_none())
}

/// One variant's containers while they start, in order: Redis, the pools,
/// the gateway. Holds what each phase hands the next: the network they all
/// join (and name themselves after) and the configuration the sut
/// processes read, which learns the Redis URL once Redis runs.
struct Startup<'a> {
    images: &'a ContainerImages,
    config: SystemConfig,
    network: String,
}

impl<'a> Startup<'a> {
    /// Names the variant's network: unique per process, start time and
    /// start, so parallel variants and leftovers of earlier runs never meet.
    fn new(variant: &str, config: SystemConfig, images: &'a ContainerImages) -> Startup<'a> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        // Two variants of one process can start within the same millisecond
        // (parallel tests do): the sequence number keeps their names apart.
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nth = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let network = format!("overload-{variant}-{}-{stamp}-{nth}", std::process::id());
        Startup {
            images,
            config,
            network,
        }
    }

    /// Starts the variant's Redis and points the cache configuration at it
    /// (by container name, on the variant's network).
    async fn redis(&mut self) -> Result<ContainerAsync<GenericImage>, ContainerError> {
        let CacheBackend::Redis(r) = &mut self.config.cache.backend else {
            unreachable!("checked above")
        };
        let name = format!("{}-redis", self.network);
        let (image, tag) = split_image(&self.images.redis);
        let container = GenericImage::new(image, tag)
            .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
            .with_network(&self.network)
            .with_container_name(&name)
            .with_cmd(redis_server_args(r))
            .with_startup_timeout(STARTUP)
            .start()
            .await
            .map_err(|error| ContainerError::Redis {
                image: self.images.redis.clone(),
                error: Box::new(error),
            })?;
        r.url = Some(format!("redis://{name}:{REDIS_PORT}"));
        Ok(container)
    }

    /// A sut container of the variant, not yet started: waits for the
    /// process's "listening" line and exposes its port.
    fn sut(&self) -> GenericImage {
        let (sut_image, sut_tag) = split_image(&self.images.sut);
        GenericImage::new(sut_image, sut_tag)
            .with_wait_for(WaitFor::message_on_stderr("sut: listening on"))
            .with_exposed_port(SUT_PORT.tcp())
    }

    /// Starts one pool container per zone; returns them by zone.
    async fn pools(&self, config_json: &[u8]) -> Result<ZoneMap, ContainerError> {
        let network = &self.network;
        let mut zones = BTreeMap::new();
        for zone in &self.config.zones {
            let name = format!("{network}-pool-{zone}");
            let container = self
                .sut()
                .with_network(network)
                .with_container_name(&name)
                .with_copy_to("/etc/sut.json", config_json.to_vec())
                .with_env_var("XDG_RUNTIME_DIR", "/tmp")
                .with_cmd(sut_args("/etc/sut.json", "pool", Some(zone)))
                .with_startup_timeout(STARTUP)
                .start()
                .await
                .map_err(|error| ContainerError::Pool {
                    zone: zone.clone(),
                    image: self.images.sut.clone(),
                    error: Box::new(error),
                })?;
            zones.insert(zone.clone(), Arc::new(container));
        }
        Ok(zones)
    }

    /// Starts the gateway in front of the pools, its port published on
    /// loopback; returns it and that host port. With a proxy gateway it is
    /// the control (named so: the proxy takes the gateway's name).
    async fn gateway(
        &self,
        config_json: Vec<u8>,
        paths: &[PoolPath],
    ) -> Result<(ContainerAsync<GenericImage>, u16), ContainerError> {
        let mut args = sut_args("/etc/sut.json", "gateway", None);
        for p in paths {
            args.extend(["--pool".to_string(), format!("{}={}", p.zone, p.url())]);
        }
        let role = match self.config.gateway.proxy {
            Some(_) => "control",
            None => "gateway",
        };
        let gateway = self
            .sut()
            .with_network(&self.network)
            .with_container_name(format!("{}-{role}", self.network))
            .with_copy_to("/etc/sut.json", config_json)
            .with_cmd(args)
            // Published on loopback only: nothing outside this machine reaches it.
            .with_host_config_modifier(|hc| publish_on_loopback(hc, &[SUT_PORT]))
            .with_startup_timeout(STARTUP)
            .start()
            .await
            .map_err(|error| ContainerError::Gateway {
                image: self.images.sut.clone(),
                error: Box::new(error),
            })?;
        let port = gateway
            .get_host_port_ipv4(SUT_PORT)
            .await
            .map_err(|e| ContainerError::Port(Box::new(e)))?;
        if port == 0 {
            return Err(ContainerError::NoPort);
        }
        Ok((gateway, port))
    }
}

/// The zones' pool containers by zone name.
type ZoneMap = BTreeMap<String, Arc<ContainerAsync<GenericImage>>>;

/// Binds each of `ports` to an ephemeral port of 127.0.0.1 alone (not every
/// interface, and no other exposed port).
fn publish_on_loopback(hc: &mut HostConfig, ports: &[u16]) {
    let mut bindings = std::collections::HashMap::new();
    for port in ports {
        bindings.insert(
            format!("{port}/tcp"),
            Some(vec![PortBinding {
                host_ip: Some("127.0.0.1".into()),
                host_port: Some(String::new()),
            }]),
        );
    }
    hc.port_bindings = Some(bindings);
    hc.publish_all_ports = Some(false);
}

/// The variant network's gateway address: where containers reach this host
/// (the coordinator of load agents listens there, not on every interface).
pub async fn network_gateway(network: &str) -> Result<std::net::IpAddr, ContainerError> {
    crate::env::docker::network_gateways(network)
        .await
        .map_err(|error| ContainerError::Inspect {
            network: network.to_string(),
            error,
        })?
        .first()
        .map(|g| std::net::IpAddr::V4(*g))
        .ok_or_else(|| ContainerError::NoGateway(network.to_string()))
}

/// Where an agent container finds the experiment file.
pub const AGENT_EXPERIMENT: &str = "/etc/experiment/experiment.yaml";

/// A load agent as a container of the sut image (which carries `harness`),
/// on the variant's network: `harness agent` with the experiment file copied in.
pub async fn start_agent(
    image: &str,
    network: &str,
    experiment: &str,
    files: &[(String, Vec<u8>)],
    args: Vec<String>,
    shard: u32,
) -> Result<ContainerAsync<GenericImage>, ContainerError> {
    let (name, tag) = split_image(image);
    let mut cmd = vec!["agent".to_string(), AGENT_EXPERIMENT.to_string()];
    cmd.extend(args);
    let mut request = GenericImage::new(name, tag)
        .with_entrypoint("/usr/local/bin/harness")
        .with_network(network)
        .with_container_name(format!("{network}-agent-{shard}"))
        .with_copy_to(AGENT_EXPERIMENT, experiment.as_bytes().to_vec())
        .with_env_var("XDG_RUNTIME_DIR", "/tmp")
        .with_cmd(cmd)
        .with_startup_timeout(STARTUP);
    for (path, bytes) in files {
        request = request.with_copy_to(path.clone(), bytes.clone());
    }
    request
        .start()
        .await
        .map_err(|error| ContainerError::Agent {
            shard,
            image: image.to_string(),
            error: Box::new(error),
        })
}

/// The URL of the gateway as containers on the variant's network see it.
pub fn gateway_url_inside(network: &str) -> String {
    format!("http://{network}-gateway:{SUT_PORT}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_image_names() {
        assert_eq!(
            split_image("overload-harness/sut:local"),
            ("overload-harness/sut".into(), "local".into())
        );
        assert_eq!(split_image("redis"), ("redis".into(), "latest".into()));
        assert_eq!(
            split_image("registry:5000/redis"),
            ("registry:5000/redis".into(), "latest".into())
        );
        assert_eq!(
            split_image("registry:5000/redis:7"),
            ("registry:5000/redis".into(), "7".into())
        );
    }

    #[test]
    fn experiment_images_win_over_defaults() {
        let i = ContainerImages::resolve(Some("a:1".into()), Some("redis:7".into()));
        assert_eq!((i.sut.as_str(), i.redis.as_str()), ("a:1", "redis:7"));
    }
}

#[cfg(test)]
mod ledger_tests;
