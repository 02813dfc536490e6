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
//! Images are built locally by `ci/images.sh` (no registry is needed); their
//! names come from the experiment's `containers:` section, then the
//! `HARNESS_SUT_IMAGE` / `HARNESS_REDIS_IMAGE` variables, then the defaults.
//! Containers and the network are removed when the variant ends (testcontainers
//! removes them on drop, also when the harness is interrupted).

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use sut::config::CacheBackend;
use sut::SystemConfig;
use testcontainers::bollard::models::{HostConfig, PortBinding};
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

pub const DEFAULT_SUT_IMAGE: &str = "overload-harness/sut:local";
pub const DEFAULT_REDIS_IMAGE: &str = "overload-harness/redis:local";
/// The port every sut process listens on inside its container.
const SUT_PORT: u16 = 8080;
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
const STARTUP: Duration = Duration::from_secs(60);

/// Which images to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerImages {
    pub sut: String,
    pub redis: String,
}

impl ContainerImages {
    /// The experiment's choice, else the environment's, else the local defaults.
    pub fn resolve(sut: Option<String>, redis: Option<String>) -> ContainerImages {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        ContainerImages {
            sut: sut
                .or_else(|| var("HARNESS_SUT_IMAGE"))
                .unwrap_or_else(|| DEFAULT_SUT_IMAGE.into()),
            redis: redis
                .or_else(|| var("HARNESS_REDIS_IMAGE"))
                .unwrap_or_else(|| DEFAULT_REDIS_IMAGE.into()),
        }
    }
}

/// `name:tag` split for testcontainers (a missing tag is `latest`).
fn split_image(image: &str) -> (String, String) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name.to_string(), tag.to_string()),
        _ => (image.to_string(), "latest".to_string()),
    }
}

/// Is the Docker engine reachable? (For tests that skip without it.)
pub async fn docker_available() -> Result<(), String> {
    let docker = testcontainers::bollard::Docker::connect_with_local_defaults()
        .map_err(|e| format!("no Docker engine: {e}"))?;
    tokio::time::timeout(Duration::from_secs(5), docker.ping())
        .await
        .map_err(|_| "the Docker engine did not answer within 5 s".to_string())?
        .map_err(|e| format!("no Docker engine: {e}"))?;
    Ok(())
}

/// Checks that the images exist locally: nothing can be pulled here, and a
/// pull attempt would fail with a far less helpful message.
pub async fn check_images(images: &ContainerImages, need_redis: bool) -> Result<(), String> {
    docker_available().await?;
    let docker = testcontainers::bollard::Docker::connect_with_local_defaults()
        .map_err(|e| format!("no Docker engine: {e}"))?;
    let mut wanted = vec![&images.sut];
    if need_redis {
        wanted.push(&images.redis);
    }
    for image in wanted {
        if docker.inspect_image(image).await.is_err() {
            return Err(format!(
                "the image {image} is not in the local Docker engine; build it with `bash ci/images.sh` (or set containers.sut_image / containers.redis_image to images you have)"
            ));
        }
    }
    Ok(())
}

/// The zones' pool containers, for pausing and unpausing them.
pub struct ZoneContainers {
    zones: BTreeMap<String, Arc<ContainerAsync<GenericImage>>>,
}

impl ZoneContainers {
    pub async fn pause(&self, zone: &str) -> Result<String, String> {
        let c = self.get(zone)?;
        c.pause()
            .await
            .map_err(|e| format!("pausing {zone}: {e}"))?;
        Ok(format!(
            "container of zone {zone} paused ({})",
            short(c.id())
        ))
    }

    pub async fn unpause(&self, zone: &str) -> Result<String, String> {
        let c = self.get(zone)?;
        c.unpause()
            .await
            .map_err(|e| format!("unpausing {zone}: {e}"))?;
        Ok(format!(
            "container of zone {zone} unpaused ({})",
            short(c.id())
        ))
    }

    fn get(&self, zone: &str) -> Result<&Arc<ContainerAsync<GenericImage>>, String> {
        self.zones
            .get(zone)
            .ok_or_else(|| format!("no container for zone {zone:?}"))
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// One variant's running containers; dropped = removed.
pub struct ContainerSet {
    pub base_url: String,
    pub zones: Arc<ZoneContainers>,
    /// Held so they live as long as the variant (order: gateway first on drop).
    gateway: Option<ContainerAsync<GenericImage>>,
    redis: Option<ContainerAsync<GenericImage>>,
    pub network: String,
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
        if let Some(g) = &self.gateway {
            out.push(("container gateway".into(), g.id().to_string()));
        }
        if let Some(r) = &self.redis {
            out.push(("container redis".into(), r.id().to_string()));
        }
        out
    }

    /// Stops the gateway first (it holds connections to the pools), then the rest.
    pub async fn stop(mut self) {
        if let Some(g) = self.gateway.take() {
            let _ = g.rm().await;
        }
        // The pools and Redis go when their last handle drops.
        drop(self.redis.take());
    }
}

/// Starts Redis (if the cache asks for it), the pools and the gateway.
pub async fn start(
    variant: &str,
    config: &SystemConfig,
    images: &ContainerImages,
) -> anyhow::Result<ContainerSet> {
    let mut config = config.clone();
    let needs_redis = matches!(&config.cache.backend, CacheBackend::Redis(r) if r.url.is_none());
    check_images(images, needs_redis)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    // Two variants of one process can start within the same millisecond
    // (parallel tests do): the sequence number keeps their names apart.
    static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nth = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let network = format!("overload-{variant}-{}-{stamp}-{nth}", std::process::id());

    let redis = if needs_redis {
        let CacheBackend::Redis(r) = &mut config.cache.backend else {
            unreachable!("checked above")
        };
        let name = format!("{network}-redis");
        let (image, tag) = split_image(&images.redis);
        let container = GenericImage::new(image, tag)
            .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
            .with_network(&network)
            .with_container_name(&name)
            .with_cmd(redis_server_args(r))
            .with_startup_timeout(STARTUP)
            .start()
            .await
            .with_context(|| format!("starting the Redis container ({})", images.redis))?;
        r.url = Some(format!("redis://{name}:{REDIS_PORT}"));
        Some(container)
    } else {
        None
    };

    let config_json =
        serde_json::to_vec_pretty(&config).context("serializing the system configuration")?;
    let (sut_image, sut_tag) = split_image(&images.sut);
    let sut = || {
        GenericImage::new(sut_image.clone(), sut_tag.clone())
            .with_wait_for(WaitFor::message_on_stderr("sut: listening on"))
            .with_exposed_port(SUT_PORT.tcp())
    };
    let listen = format!("0.0.0.0:{SUT_PORT}");

    let mut zones = BTreeMap::new();
    let mut pool_args = Vec::new();
    for zone in &config.zones {
        let name = format!("{network}-pool-{zone}");
        let container = sut()
            .with_network(&network)
            .with_container_name(&name)
            .with_copy_to("/etc/sut.json", config_json.clone())
            .with_env_var("XDG_RUNTIME_DIR", "/tmp")
            .with_cmd([
                "--config",
                "/etc/sut.json",
                "--role",
                "pool",
                "--zone",
                zone,
                "--listen",
                &listen,
                "--admin-from-any-peer",
            ])
            .with_startup_timeout(STARTUP)
            .start()
            .await
            .with_context(|| {
                format!(
                    "starting the pool container of zone {zone} ({})",
                    images.sut
                )
            })?;
        zones.insert(zone.clone(), Arc::new(container));
        pool_args.push("--pool".to_string());
        pool_args.push(format!("{zone}=http://{name}:{SUT_PORT}"));
    }

    let mut args: Vec<String> = [
        "--config",
        "/etc/sut.json",
        "--role",
        "gateway",
        "--listen",
        &listen,
        "--admin-from-any-peer",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(pool_args);
    let gateway = sut()
        .with_network(&network)
        .with_container_name(format!("{network}-gateway"))
        .with_copy_to("/etc/sut.json", config_json)
        .with_cmd(args)
        // Published on loopback only: nothing outside this machine reaches it.
        .with_host_config_modifier(|hc: &mut HostConfig| {
            let mut bindings = std::collections::HashMap::new();
            bindings.insert(
                format!("{SUT_PORT}/tcp"),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".into()),
                    host_port: Some(String::new()),
                }]),
            );
            hc.port_bindings = Some(bindings);
            hc.publish_all_ports = Some(false);
        })
        .with_startup_timeout(STARTUP)
        .start()
        .await
        .with_context(|| format!("starting the gateway container ({})", images.sut))?;
    let port = gateway
        .get_host_port_ipv4(SUT_PORT)
        .await
        .context("the gateway container's published port")?;
    if port == 0 {
        bail!("the gateway container published no port");
    }
    Ok(ContainerSet {
        base_url: format!("http://127.0.0.1:{port}"),
        zones: Arc::new(ZoneContainers { zones }),
        gateway: Some(gateway),
        redis,
        network,
    })
}

/// The variant network's gateway address: where containers reach this host
/// (the coordinator of load agents listens there, not on every interface).
pub async fn network_gateway(network: &str) -> anyhow::Result<std::net::IpAddr> {
    let docker = testcontainers::bollard::Docker::connect_with_local_defaults()
        .context("no Docker engine")?;
    let n = docker
        .inspect_network(network, None)
        .await
        .with_context(|| format!("inspecting the network {network}"))?;
    n.ipam
        .and_then(|i| i.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.gateway)
        .find_map(|g| g.parse::<std::net::Ipv4Addr>().ok())
        .map(std::net::IpAddr::V4)
        .with_context(|| format!("the network {network} has no IPv4 gateway"))
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
) -> anyhow::Result<ContainerAsync<GenericImage>> {
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
        .with_context(|| format!("starting load agent {shard} as a container of {image} (does the image carry harness? rebuild it with ci/images.sh)"))
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
