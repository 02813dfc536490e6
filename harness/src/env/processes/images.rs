//! The user's processes that are local images (`image:`), run as
//! containers through `env/docker.rs` (bollard): on a Docker network of
//! the variant's own, named `NETWORK-NAME`, each listening port published
//! on a loopback port the harness chose (kept across a `kill` and its
//! restart). The network is in the fault ledger before the first
//! container starts, so a SIGKILLed harness's containers and network are
//! removed by the next start (`Record::DockerNetwork`); at the variant's
//! end they are removed here. Generic faults act on them as on any
//! container (`faults::Injector`, `faults/docker.rs`).

use crate::env::docker::{self, UserContainer};
use crate::env::ledger::{Ledger, Record};
use crate::env::EnvError;
use crate::experiment::processes::{substitute, ProcessSpec, Ready};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A variant's containers of the user's images, removed with it.
pub(crate) struct Images {
    network: String,
    ledger: Arc<Ledger>,
    record: u64,
    /// Process name -> container id.
    pub(crate) ids: BTreeMap<String, String>,
}

impl Images {
    /// The variant's network, recorded in `ledger` and created.
    pub(crate) async fn network(variant: &str, ledger: Arc<Ledger>) -> Result<Images, EnvError> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let network = format!(
            "overload-{variant}-{}-p{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let record = ledger.add(Record::DockerNetwork {
            network: network.clone(),
        })?;
        let images = Images {
            network,
            ledger,
            record,
            ids: BTreeMap::new(),
        };
        if let Err(e) = docker::create_network(&images.network).await {
            images.remove().await;
            return Err(EnvError::Docker(e));
        }
        Ok(images)
    }

    /// Starts `spec`'s image, its port published on `host`, and waits
    /// until it is ready.
    pub(crate) async fn start(
        &mut self,
        spec: &ProcessSpec,
        host: SocketAddr,
    ) -> Result<(), EnvError> {
        let image = spec.image.as_deref().unwrap_or_default();
        if !docker::image_exists(image).await {
            return Err(EnvError::NoImage {
                process: spec.name.clone(),
                image: image.to_string(),
            });
        }
        let inner = spec.port.unwrap_or_default();
        let vals: BTreeMap<String, String> = [("port".to_string(), inner.to_string())].into();
        let name = format!("{}-{}", self.network, spec.name);
        let c = UserContainer {
            name: &name,
            image,
            cmd: (!spec.command.is_empty())
                .then(|| spec.command.iter().map(|a| substitute(a, &vals)).collect()),
            env: spec
                .env
                .iter()
                .map(|(k, v)| format!("{k}={}", substitute(v, &vals)))
                .collect(),
            network: &self.network,
            port: inner,
            host_port: host.port(),
        };
        let id = docker::run_container(&c).await.map_err(EnvError::Docker)?;
        self.ids.insert(spec.name.clone(), id.clone());
        ready(spec, &id, host).await
    }

    /// Removes the containers and the network, and their record.
    pub(crate) async fn remove(self) {
        match docker::remove_variant(&self.network).await {
            Ok(_) => self.ledger.remove(self.record),
            Err(e) => eprintln!("harness: {e} (the next start removes them)"),
        }
    }
}

/// Waits until `spec`'s container accepts on `host` (and answers its HTTP
/// probe below 500), or says why not: it exited, or its time ran out.
async fn ready(spec: &ProcessSpec, id: &str, host: SocketAddr) -> Result<(), EnvError> {
    let deadline = Instant::now() + spec.ready_timeout;
    let not_ready = |why: String| EnvError::ContainerNotReady {
        process: spec.name.clone(),
        why,
    };
    loop {
        if tokio::net::TcpStream::connect(host).await.is_ok() && answers(spec, host).await {
            return Ok(());
        }
        let (running, code) = docker::running(id).await.map_err(EnvError::Docker)?;
        if !running {
            let code = code.map(|c| c.to_string()).unwrap_or("?".into());
            return Err(not_ready(format!(
                "its container {id} exited (code {code})"
            )));
        }
        if Instant::now() > deadline {
            return Err(not_ready(format!(
                "its container {id} did not listen on {host} within {:?}",
                spec.ready_timeout
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the HTTP probe, if any, answers below 500.
async fn answers(spec: &ProcessSpec, host: SocketAddr) -> bool {
    let Ready::Http(path) = &spec.ready else {
        return true;
    };
    let url = format!("http://{host}{path}");
    let got = reqwest::Client::new()
        .get(url)
        .timeout(Duration::from_secs(1))
        .send()
        .await;
    got.is_ok_and(|r| r.status().as_u16() < 500)
}
