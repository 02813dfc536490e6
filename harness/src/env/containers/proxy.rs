//! A real proxy as the gateway in the containers environment: Debian's
//! `haproxy` or `nginx` as a container of the local image `ci/images.sh`
//! builds (`overload-harness/haproxy:local`, `overload-harness/nginx:local`),
//! on the variant's network in front of the pool containers.
//!
//! The team's file is filled by the same `proxy_gateway::prepare` as in the
//! embedded environment, with the pools' container addresses (`IP:8080` on
//! the variant's network, or the fault proxy in the path into a pool) and
//! the proxy listening on `0.0.0.0:8080` inside its container, copied in.
//! Its port is published on 127.0.0.1 only, and so is HAProxy's exporter;
//! nginx writes its access log to a folder of this machine bind-mounted
//! into the container. The counters are read, and the admin API served, by
//! the same face as in the embedded environment, in front of the variant's
//! `sut --role gateway` container, which carries no load (the control).

use super::{publish_on_loopback, short, split_image, ContainerError, STARTUP, SUT_PORT};
use crate::env::proxy_gateway::{Placement, ProxyGateway, Source};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use sut::config::ProxyConfig;
use testcontainers::core::{IntoContainerPort, Mount, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

/// Where HAProxy's exporter listens inside its container.
const EXPORTER_PORT: u16 = 8404;
/// The folder nginx's access log goes to inside its container (the image
/// has it; the harness bind-mounts its own folder there).
const LOG_DIR: &str = "/var/log/harness";

/// The proxy's container.
pub(crate) struct ProxyContainer {
    pub container: ContainerAsync<GenericImage>,
    /// The bind-mounted folder of this machine (nginx's access log).
    pub dir: PathBuf,
}

/// Starts the proxy of `proxy` (image `image`) as `{network}-gateway` in
/// front of `pools`, and the face that reads it, in front of the control
/// container, whose port is published at `control`. `dir` is this
/// machine's folder for its access log.
pub(crate) async fn start(
    network: &str,
    image: &str,
    proxy: &ProxyConfig,
    pools: &[(String, SocketAddr)],
    control: SocketAddr,
    dir: &Path,
) -> Result<(ProxyContainer, ProxyGateway), ContainerError> {
    let kind = crate::experiment::proxy_binary(proxy);
    std::fs::create_dir_all(dir).map_err(|error| ContainerError::Folder {
        dir: dir.to_path_buf(),
        error,
    })?;
    let place = Placement {
        listen: SocketAddr::from(([0, 0, 0, 0], SUT_PORT)),
        exporter: SocketAddr::from(([0, 0, 0, 0], EXPORTER_PORT)),
        dir: PathBuf::from(format!("/etc/{kind}")),
        log_dir: PathBuf::from(LOG_DIR),
        error_log: "stderr notice".into(),
    };
    let p = crate::env::proxy_gateway::prepare(proxy, pools, &place)?;
    // What the proxy runs, beside its log: for whoever reads the run.
    let _ = std::fs::write(dir.join(format!("{kind}.conf")), &p.text);
    let (name, tag) = split_image(image);
    let ports = [SUT_PORT, EXPORTER_PORT];
    let container = GenericImage::new(name, tag)
        .with_wait_for(match proxy {
            // HAProxy says nothing when it is up: its exporter answers below.
            ProxyConfig::Haproxy { .. } => WaitFor::Nothing,
            ProxyConfig::Nginx { .. } => WaitFor::message_on_stderr("start worker process"),
        })
        .with_exposed_port(SUT_PORT.tcp())
        .with_exposed_port(EXPORTER_PORT.tcp())
        .with_network(network)
        .with_container_name(format!("{network}-gateway"))
        .with_copy_to(p.file.display().to_string(), p.text.into_bytes())
        .with_mount(Mount::bind_mount(dir.display().to_string(), LOG_DIR))
        .with_cmd(p.args)
        .with_host_config_modifier(move |hc| publish_on_loopback(hc, &ports))
        .with_startup_timeout(STARTUP)
        .start()
        .await
        .map_err(|error| ContainerError::ProxyStart {
            kind: kind.to_string(),
            image: image.to_string(),
            error: Box::new(error),
        })?;
    let port = |p: u16| {
        let c = &container;
        async move {
            c.get_host_port_ipv4(p)
                .await
                .map_err(|error| ContainerError::ProxyPort {
                    kind: kind.to_string(),
                    port: p,
                    error: Box::new(error),
                })
                .map(|h| SocketAddr::from(([127, 0, 0, 1], h)))
        }
    };
    let load = port(SUT_PORT).await?;
    let exporter = port(EXPORTER_PORT).await?;
    if let ProxyConfig::Haproxy { .. } = proxy {
        exporter_answers(exporter, &container).await?;
    }
    let source = Source::of(proxy, exporter, dir);
    let face = crate::env::proxy_gateway::face(control, source, format!("http://{load}")).await?;
    let dir = dir.to_path_buf();
    Ok((ProxyContainer { container, dir }, face))
}

/// Waits until HAProxy's exporter answers through its published port (the
/// port accepts before HAProxy listens: Docker's proxy takes it).
async fn exporter_answers(
    exporter: SocketAddr,
    container: &ContainerAsync<GenericImage>,
) -> Result<(), ContainerError> {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + STARTUP;
    loop {
        let r = http
            .get(format!("http://{exporter}/metrics"))
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        if r.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        let exited = !container.is_running().await.unwrap_or(false);
        if exited || Instant::now() > deadline {
            let logs = container.stderr_to_vec().await.unwrap_or_default();
            let why = if exited {
                "exited".to_string()
            } else {
                format!("did not answer on its exporter within {STARTUP:?}")
            };
            return Err(ContainerError::Haproxy {
                id: short(container.id()).to_string(),
                why,
                log: String::from_utf8_lossy(&logs).into_owned(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
