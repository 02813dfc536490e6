//! The harness's one Docker client: bollard, as testcontainers re-exports
//! it (testcontainers starts and removes the containers with it too).
//! Every other call the harness makes to the engine goes through here:
//! the engine's ping and the local images (`containers/`), a network's
//! gateway address, and the generic faults on containers (`faults/`):
//! pause, unpause, kill, start, and a CPU limit set and lifted.
//!
//! Each call is bounded (20 s; the ping 5 s) and fails with a
//! [`DockerCallError`] that reads like the `docker` command line the harness
//! once ran (`docker pause ID: Error response from daemon: ...`).
//!
//! [`blocking`] runs calls from synchronous code: the ledger's recovery at
//! start-up, a second Ctrl-C, an injector's drop. It runs them on a thread of
//! its own with a runtime of its own, so it may be called from inside an
//! async task too (a runtime there would panic if blocked on directly).

use std::future::Future;
use std::time::Duration;
use testcontainers::bollard::errors::Error as EngineError;
use testcontainers::bollard::models::ContainerUpdateBody;
use testcontainers::bollard::query_parameters::{
    ListContainersOptions, ListNetworksOptions, RemoveContainerOptions,
};
use testcontainers::bollard::Docker;

/// How long one call may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);
/// How long the engine's ping may take.
const PING_WITHIN: Duration = Duration::from_secs(5);

/// A call to the Docker engine that failed or did not answer; `call` is
/// written as the `docker` command line that does the same.
#[derive(Debug, thiserror::Error)]
#[error("docker {call}: {why}")]
pub struct DockerCallError {
    call: String,
    why: Why,
}

#[derive(Debug, thiserror::Error)]
enum Why {
    #[error("no answer within {} s", ANSWER_WITHIN.as_secs())]
    NoAnswer,
    #[error("{}", engine_message(.0))]
    Engine(EngineError),
    #[error("no runtime for the call: {0}")]
    Runtime(std::io::Error),
}

impl DockerCallError {
    /// The engine answered 404: no such container or network.
    fn not_found(&self) -> bool {
        matches!(
            self.why,
            Why::Engine(EngineError::DockerResponseServerError {
                status_code: 404,
                ..
            })
        )
    }
}

/// The engine's refusal as the `docker` command line prints it.
fn engine_message(e: &EngineError) -> String {
    match e {
        EngineError::DockerResponseServerError { message, .. } => {
            format!("Error response from daemon: {message}")
        }
        e => e.to_string(),
    }
}

/// Why the engine cannot be reached (`containers::DockerError` says it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PingError {
    #[error(transparent)]
    Engine(EngineError),
    #[error("no answer within {} s", PING_WITHIN.as_secs())]
    NoAnswer,
}

/// The client, as configured by the environment (`DOCKER_HOST`, else the
/// local socket). It connects lazily: this fails only on a bad address.
fn connect() -> Result<Docker, EngineError> {
    Docker::connect_with_local_defaults()
}

/// Runs `f` on a fresh client, bounded; `call` names it in an error.
async fn call<T, F, Fut>(call: impl Into<String>, f: F) -> Result<T, DockerCallError>
where
    F: FnOnce(Docker) -> Fut,
    Fut: Future<Output = Result<T, EngineError>>,
{
    let result = match connect() {
        Err(e) => Err(Why::Engine(e)),
        Ok(docker) => match tokio::time::timeout(ANSWER_WITHIN, f(docker)).await {
            Err(_) => Err(Why::NoAnswer),
            Ok(r) => r.map_err(Why::Engine),
        },
    };
    result.map_err(|why| DockerCallError {
        call: call.into(),
        why,
    })
}

/// Runs `fut` to its end from synchronous code, on a thread and a
/// current-thread runtime of its own (see the module doc); `what` names it
/// if no runtime can be built.
pub(crate) fn blocking<T, Fut>(what: &str, fut: Fut) -> Result<T, DockerCallError>
where
    T: Send,
    Fut: Future<Output = Result<T, DockerCallError>> + Send,
{
    std::thread::scope(|s| {
        let worker = s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| DockerCallError {
                    call: what.to_string(),
                    why: Why::Runtime(e),
                })?
                .block_on(fut)
        });
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Whether the engine answers its ping.
pub(crate) async fn ping() -> Result<(), PingError> {
    let docker = connect().map_err(PingError::Engine)?;
    tokio::time::timeout(PING_WITHIN, docker.ping())
        .await
        .map_err(|_| PingError::NoAnswer)?
        .map_err(PingError::Engine)?;
    Ok(())
}

/// Whether `image` is in the local engine (`docker image inspect`).
pub(crate) async fn image_exists(image: &str) -> bool {
    call(format!("image inspect {image}"), |d| async move {
        d.inspect_image(image).await
    })
    .await
    .is_ok()
}

/// The IPv4 gateway addresses of `network` (`docker network inspect`).
pub(crate) async fn network_gateways(
    network: &str,
) -> Result<Vec<std::net::Ipv4Addr>, DockerCallError> {
    let n = call(format!("network inspect {network}"), |d| async move {
        d.inspect_network(network, None).await
    })
    .await?;
    Ok(n.ipam
        .and_then(|i| i.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.gateway)
        .filter_map(|g| g.parse().ok())
        .collect())
}

/// Whether container `id` still exists (`docker inspect`); any failure
/// counts as gone.
pub(crate) async fn exists(id: &str) -> bool {
    call(format!("inspect {id}"), |d| async move {
        d.inspect_container(id, None).await
    })
    .await
    .is_ok()
}

/// `docker pause ID`: the engine freezes the container's processes.
pub(crate) async fn pause(id: &str) -> Result<(), DockerCallError> {
    call(format!("pause {id}"), |d| async move {
        d.pause_container(id).await
    })
    .await
}

/// `docker unpause ID`.
pub(crate) async fn unpause(id: &str) -> Result<(), DockerCallError> {
    call(format!("unpause {id}"), |d| async move {
        d.unpause_container(id).await
    })
    .await
}

/// `docker kill ID` (SIGKILL, the engine's default).
pub(crate) async fn kill(id: &str) -> Result<(), DockerCallError> {
    call(format!("kill {id}"), |d| async move {
        d.kill_container(id, None).await
    })
    .await
}

/// `docker start ID`.
pub(crate) async fn start(id: &str) -> Result<(), DockerCallError> {
    call(format!("start {id}"), |d| async move {
        d.start_container(id, None).await
    })
    .await
}

/// `docker update --cpus CPUS ID`: a CPU limit of `cpus` CPUs; 0 lifts it.
/// `cpus` is what the experiment wrote, in the call's name as the command
/// line had it.
pub(crate) async fn update_cpus(id: &str, cpus: f64) -> Result<(), DockerCallError> {
    let body = ContainerUpdateBody {
        nano_cpus: Some(nano_cpus(cpus)),
        ..Default::default()
    };
    call(format!("update --cpus {cpus} {id}"), |d| async move {
        d.update_container(id, body).await
    })
    .await
}

/// `--cpus` in the engine's unit, billionths of a CPU.
fn nano_cpus(cpus: f64) -> i64 {
    (cpus * 1e9).round() as i64
}

/// What a containers variant on `network` left (a SIGKILLed harness):
/// every container named `NETWORK-...` removed with force (`docker rm -f`),
/// then the network (`docker network rm`); how many containers, and
/// whether the network was still there.
pub(crate) async fn remove_variant(network: &str) -> Result<(usize, bool), DockerCallError> {
    let prefix = format!("{network}-");
    let mut removed = 0;
    for name in container_names("ps -a", None).await? {
        if !name.starts_with(&prefix) {
            continue;
        }
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        let gone = call(format!("rm -f {name}"), |d| async move {
            d.remove_container(&name, Some(options)).await
        })
        .await;
        match gone {
            Ok(()) => removed += 1,
            Err(e) if e.not_found() => {}
            Err(e) => return Err(e),
        }
    }
    let net = call(format!("network rm {network}"), |d| async move {
        d.remove_network(network).await
    })
    .await;
    match net {
        Ok(()) => Ok((removed, true)),
        Err(e) if e.not_found() => Ok((removed, false)),
        Err(e) => Err(e),
    }
}

/// One container of a user's image (`environment: processes` with
/// `image:`): on `network`, its `port` published on 127.0.0.1:`host_port`.
pub(crate) struct UserContainer<'a> {
    pub(crate) name: &'a str,
    pub(crate) image: &'a str,
    pub(crate) cmd: Option<Vec<String>>,
    pub(crate) env: Vec<String>,
    pub(crate) network: &'a str,
    pub(crate) port: u16,
    pub(crate) host_port: u16,
}

/// `docker network create NETWORK`.
pub(crate) async fn create_network(network: &str) -> Result<(), DockerCallError> {
    use testcontainers::bollard::models::NetworkCreateRequest;
    let create = NetworkCreateRequest {
        name: network.to_string(),
        ..Default::default()
    };
    call(format!("network create {network}"), |d| async move {
        d.create_network(create).await.map(|_| ())
    })
    .await
}

/// `docker run -d --name NAME --network NETWORK -p 127.0.0.1:HOST:PORT
/// IMAGE [CMD]`; the container's id.
pub(crate) async fn run_container(c: &UserContainer<'_>) -> Result<String, DockerCallError> {
    use testcontainers::bollard::models::{ContainerCreateBody, HostConfig, PortBinding};
    use testcontainers::bollard::query_parameters::CreateContainerOptions;
    let port = format!("{}/tcp", c.port);
    let binding = PortBinding {
        host_ip: Some("127.0.0.1".into()),
        host_port: Some(c.host_port.to_string()),
    };
    let body = ContainerCreateBody {
        image: Some(c.image.to_string()),
        cmd: c.cmd.clone(),
        env: Some(c.env.clone()),
        exposed_ports: Some(vec![port.clone()]),
        host_config: Some(HostConfig {
            network_mode: Some(c.network.to_string()),
            port_bindings: Some([(port, Some(vec![binding]))].into()),
            publish_all_ports: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptions {
        name: Some(c.name.to_string()),
        ..Default::default()
    };
    let what = format!("run --name {} {}", c.name, c.image);
    let id = call(what.clone(), |d| async move {
        d.create_container(Some(options), body).await.map(|r| r.id)
    })
    .await?;
    start(&id).await?;
    Ok(id)
}

/// Whether container `id` runs, and its exit code when it does not.
pub(crate) async fn running(id: &str) -> Result<(bool, Option<i64>), DockerCallError> {
    let c = call(format!("inspect {id}"), |d| async move {
        d.inspect_container(id, None).await
    })
    .await?;
    let state = c.state.unwrap_or_default();
    Ok((state.running.unwrap_or(false), state.exit_code))
}

/// The names of every container (running or not) and network whose name
/// starts with `prefix` (`docker ps -a`, `docker network ls`), for tests
/// that check what a run left. Blocking.
pub fn names_starting(prefix: &str) -> Result<Vec<String>, DockerCallError> {
    blocking("ps -a", async {
        let mut names = container_names("ps -a", None).await?;
        let networks = call("network ls", |d| async move {
            d.list_networks(None::<ListNetworksOptions>).await
        })
        .await?;
        names.extend(networks.into_iter().filter_map(|n| n.name));
        names.retain(|n| n.starts_with(prefix));
        Ok(names)
    })
}

/// The names of the paused containers (`docker ps -a --filter
/// status=paused`), for tests. Blocking.
pub fn paused_names() -> Result<Vec<String>, DockerCallError> {
    blocking("ps -a --filter status=paused", async {
        container_names("ps -a --filter status=paused", Some("paused")).await
    })
}

/// Every container's names (without the leading `/`), of those in `status`
/// when one is given.
async fn container_names(what: &str, status: Option<&str>) -> Result<Vec<String>, DockerCallError> {
    let options = ListContainersOptions {
        all: true,
        filters: status.map(|s| [("status".to_string(), vec![s.to_string()])].into()),
        ..Default::default()
    };
    let list = call(
        what,
        |d| async move { d.list_containers(Some(options)).await },
    )
    .await?;
    Ok(list
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .map(|n| n.trim_start_matches('/').to_string())
        .collect())
}

/// Whether container `id` is paused, and its CPU limit in billionths of a
/// CPU (0: none), for tests.
#[cfg(test)]
pub(crate) async fn paused_and_nano_cpus(id: &str) -> Result<(bool, i64), DockerCallError> {
    let c = call(format!("inspect {id}"), |d| async move {
        d.inspect_container(id, None).await
    })
    .await?;
    let paused = c.state.and_then(|s| s.paused).unwrap_or(false);
    let nano = c.host_config.and_then(|h| h.nano_cpus).unwrap_or(0);
    Ok((paused, nano))
}

/// What a SIGKILLed containers variant on `network` leaves, for the
/// ledger's test: the network and two containers on it named
/// `NETWORK-a`, `NETWORK-b` (created, not started), of an image of one
/// empty file imported here (no registry, no build).
#[cfg(test)]
pub(crate) async fn leave_variant(network: &str) -> Result<(), DockerCallError> {
    use testcontainers::bollard::models::{ContainerCreateBody, HostConfig, NetworkCreateRequest};
    use testcontainers::bollard::query_parameters::CreateContainerOptions;
    let image = "harness-ledger-test:latest";
    import("harness-ledger-test", one_file_tar("empty")).await?;
    let create = NetworkCreateRequest {
        name: network.to_string(),
        ..Default::default()
    };
    call(format!("network create {network}"), |d| async move {
        d.create_network(create).await.map(|_| ())
    })
    .await?;
    for n in ["a", "b"] {
        let body = ContainerCreateBody {
            image: Some(image.into()),
            cmd: Some(vec!["/empty".into()]),
            host_config: Some(HostConfig {
                network_mode: Some(network.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let options = CreateContainerOptions {
            name: Some(format!("{network}-{n}")),
            ..Default::default()
        };
        call(format!("create {network}-{n}"), |d| async move {
            d.create_container(Some(options), body).await.map(|_| ())
        })
        .await?;
    }
    Ok(())
}

/// Removes image `image` (`docker rmi -f`), for tests. Blocking.
pub fn remove_image(image: &str) -> Result<(), DockerCallError> {
    use testcontainers::bollard::query_parameters::RemoveImageOptions;
    blocking("rmi", async move {
        let options = RemoveImageOptions {
            force: true,
            ..Default::default()
        };
        call(format!("rmi -f {image}"), |d| async move {
            d.remove_image(image, Some(options), None).await.map(|_| ())
        })
        .await
    })
}

/// Imports an image `repo:latest` of one executable file `name` holding
/// `bytes` (`docker import`), for tests that need an image and no
/// registry. Blocking.
pub fn import_one_file_image(repo: &str, name: &str, bytes: &[u8]) -> Result<(), DockerCallError> {
    let tar = one_file_tar_with(name, bytes);
    blocking("import", async move { import(repo, tar).await })
}

/// `docker import - REPO:latest` of the archive `tar`.
async fn import(repo: &str, tar: Vec<u8>) -> Result<(), DockerCallError> {
    use testcontainers::bollard::query_parameters::CreateImageOptions;
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo.into()),
        tag: Some("latest".into()),
        ..Default::default()
    };
    call(format!("import - {repo}"), |d| async move {
        let body = testcontainers::bollard::body_full(tar.into());
        let mut progress = d.create_image(Some(options), Some(body), None);
        while let Some(step) = futures_util::StreamExt::next(&mut progress).await {
            step?;
        }
        Ok(())
    })
    .await
}

/// A tar archive of one empty file `name` (ustar).
#[cfg(test)]
fn one_file_tar(name: &str) -> Vec<u8> {
    one_file_tar_with(name, b"")
}

/// A tar archive (ustar) of one executable file `name` holding `bytes`.
fn one_file_tar_with(name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    for (at, field) in [(100, "0000755\0"), (108, "0000000\0"), (116, "0000000\0")] {
        h[at..at + 8].copy_from_slice(field.as_bytes());
    }
    h[124..136].copy_from_slice(format!("{:011o}\0", bytes.len()).as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(bytes);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend([0u8; 1024]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_in_billionths() {
        assert_eq!(nano_cpus(0.2), 200_000_000);
        assert_eq!(nano_cpus(1.5), 1_500_000_000);
        assert_eq!(nano_cpus(0.0), 0);
    }

    #[test]
    fn errors_read_like_the_command_line() {
        let e = DockerCallError {
            call: "unpause abc".into(),
            why: Why::Engine(EngineError::DockerResponseServerError {
                status_code: 409,
                message: "Container abc is not paused".into(),
            }),
        };
        assert_eq!(
            e.to_string(),
            "docker unpause abc: Error response from daemon: Container abc is not paused"
        );
    }

    /// A blocking call from inside a runtime does not panic (it runs on a
    /// thread of its own).
    #[tokio::test]
    async fn blocking_inside_a_runtime() {
        let r = blocking("nothing", async { Ok::<_, DockerCallError>(7) });
        assert_eq!(r.unwrap(), 7);
    }
}
