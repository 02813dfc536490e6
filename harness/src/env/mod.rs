//! Where the system under test runs, and how fast its GPU is on this machine.
//!
//! `embedded` (the default) starts the whole system in this process, serving
//! HTTP on a fresh 127.0.0.1 port for each variant, so the load crosses a real
//! socket and the admin API is the same one an external target offers.
//! `containers` runs the same system as containers (see `containers.rs`).
//! `external` drives a URL given in the experiment and changes nothing there
//! except through its admin API.

use crate::base::causes::Causes;
use crate::experiment::{Arrival, Environment, Experiment, LoadSpike, Rate, TimelineOp, Variant};
use crate::load::Capacity;
use gpu_executor::PageExecutor;
use std::sync::Arc;
use sut::System;

pub mod cgroup;
pub mod components;
pub mod containers;
pub mod docker;
pub mod faults;
mod in_process;
pub mod ledger;
pub(crate) mod processes;
pub(crate) mod procfs;
pub(crate) mod proxy_gateway;
mod split;
pub(crate) mod timeline;
use split::{start_components, start_containers};

/// A running system under test.
pub struct Target {
    pub base_url: String,
    pub admin_token: Option<String>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// Our own redis-server, stopped with the target.
    redis: Option<sut::RedisServer>,
    /// The variant's containers, removed with the target.
    containers: Option<crate::env::containers::ContainerSet>,
    /// The embedded system's own runtime (threads named `sut`), shut down
    /// with the target.
    runtime: Option<tokio::runtime::Runtime>,
    /// The components as child processes (`components.rs`), stopped with
    /// the target.
    processes: Option<Arc<crate::env::components::ProcessSet>>,
    /// Generic faults on those processes, undone with the target.
    faults: Option<Arc<crate::env::faults::Injector>>,
    /// A real proxy as the gateway: the load goes to it, the rest to its
    /// face (`proxy_gateway.rs`, whose URL is then `base_url`).
    proxy: Option<crate::env::proxy_gateway::ProxyGateway>,
    /// A fault proxy in front of the gateway: the load goes through it.
    load_via: Option<String>,
    /// An external target's own metrics URL (`target.metrics`), which the
    /// sampler scrapes instead of `{base_url}/metrics`.
    metrics_url: Option<String>,
    /// A service without server-side metrics (`environment: processes`
    /// without `target.metrics`): nothing is scraped.
    no_metrics: bool,
    /// The user's processes that exit by themselves (`processes.rs`).
    exits: Option<processes::ExitWatch>,
    /// The user's processes that are containers of local images, removed
    /// with the target.
    images: Option<processes::Images>,
    /// Virtual time: the system on the caller's runtime, reached in process
    /// (no socket), stopped with the target.
    in_process: Option<(crate::net::in_process::InProcess, Arc<System>)>,
}

impl Drop for Target {
    fn drop(&mut self) {
        // Dropping a runtime inside async code panics; its tasks (a system
        // left running by an error path) are cancelled in the background.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Target {
    /// A system this process did not start in itself (external, deployed,
    /// or containers, which the caller then adds).
    fn elsewhere(base_url: String, admin_token: Option<String>) -> Target {
        Target {
            base_url,
            admin_token,
            shutdown: None,
            server: None,
            redis: None,
            containers: None,
            runtime: None,
            processes: None,
            faults: None,
            proxy: None,
            load_via: None,
            metrics_url: None,
            no_metrics: false,
            exits: None,
            images: None,
            in_process: None,
        }
    }

    /// The system in this runtime, reached without a socket (virtual time).
    pub(crate) fn in_process(&self) -> Option<&crate::net::in_process::InProcess> {
        self.in_process.as_ref().map(|(p, _)| p)
    }

    /// The control plane's way to the system: in process, else `http` to
    /// the base URL.
    pub(crate) fn control(
        &self,
        http: &reqwest::Client,
    ) -> crate::net::system_client::SystemClient {
        match self.in_process() {
            Some(p) => crate::net::system_client::SystemClient::InProcess(p.clone()),
            None => crate::net::system_client::SystemClient::Http {
                client: http.clone(),
                base_url: self.base_url.clone(),
                metrics_url: self.metrics_url.clone(),
            },
        }
    }

    /// Whether the target has server-side metrics to scrape.
    pub(crate) fn has_metrics(&self) -> bool {
        !self.no_metrics
    }

    /// The user's processes that exited by themselves so far, one line each.
    pub(crate) fn exited_processes(&self) -> Vec<String> {
        self.exits.as_ref().map(|e| e.lines()).unwrap_or_default()
    }

    /// Where the load goes: the proxy gateway, else `base_url`.
    pub(crate) fn load_url(&self) -> String {
        if let Some(via) = &self.load_via {
            return via.clone();
        }
        match &self.proxy {
            Some(p) => p.load_url.clone(),
            None => self.base_url.clone(),
        }
    }

    /// The target's own metrics URL (`target.metrics`), when given.
    pub(crate) fn metrics_url(&self) -> Option<&str> {
        self.metrics_url.as_deref()
    }

    /// What applies generic faults to this target's components.
    pub(crate) fn faults(&self) -> Option<Arc<crate::env::faults::Injector>> {
        self.faults.clone()
    }

    /// The zones' containers, for real zone outages (containers environment).
    /// `(label, full id)` of the variant's containers (none outside the
    /// containers environment), for the harness-cost panel.
    pub fn container_ids(&self) -> Vec<(String, String)> {
        self.containers
            .as_ref()
            .map(|c| c.ids())
            .unwrap_or_default()
    }

    /// Whether this process started a redis-server for the system under test.
    pub fn runs_redis_child(&self) -> bool {
        self.redis.is_some()
    }

    /// Whether the system under test runs on threads of its own in this
    /// process (they can be measured).
    pub fn on_own_threads(&self) -> bool {
        self.runtime.is_some()
    }

    pub fn zone_containers(&self) -> Option<Arc<crate::env::containers::ZoneContainers>> {
        self.containers.as_ref().map(|c| c.zones.clone())
    }

    /// The variant's Docker network (containers environment).
    pub fn network(&self) -> Option<&str> {
        self.containers.as_ref().map(|c| c.network.as_str())
    }

    /// Stops an embedded system (drains in-flight requests, bounded) or
    /// removes the variant's containers.
    pub async fn stop(mut self) {
        // Stopping them is not their exiting by themselves.
        if let Some(e) = self.exits.take() {
            e.stop();
        }
        if let Some(c) = self.containers.take() {
            c.stop().await;
        }
        drop(self.proxy.take());
        if let Some(f) = self.faults.take() {
            for line in f.undo_all() {
                eprintln!("harness: {line}");
            }
        }
        if let Some(p) = self.processes.take() {
            p.stop(sut::server::DRAIN_TIMEOUT).await;
            let _ = std::fs::remove_dir_all(p.dir());
        }
        if let Some(i) = self.images.take() {
            i.remove().await;
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Its GPU loops end; requests still in flight end at their deadlines.
        if let Some((_, system)) = self.in_process.take() {
            system.shutdown();
        }
        if let Some(h) = self.server.take() {
            if tokio::time::timeout(sut::server::DRAIN_TIMEOUT, h)
                .await
                .is_err()
            {
                tracing::warn!(
                    "the embedded system did not drain within {:?}",
                    sut::server::DRAIN_TIMEOUT
                );
            }
        }
        // After the system: it holds connections to it.
        drop(self.redis.take());
    }
}

/// Why a variant's system could not be started or reached: the page
/// executor, calibration, the embedded system, its processes or containers,
/// an external target's page function.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("selecting the page executor: {}", Causes(.0))]
    Select(gpu_executor::ExecError),
    #[error("arrival rates relative to capacity need the embedded environment; give `rate:` (a load spike `extra_rate:`) in documents/s for an external target")]
    Relative,
    #[error("calibrating the page executor: {}", Causes(.0))]
    Calibrate(gpu_executor::ExecError),
    #[error("embedded environment without a page executor")]
    NoExecutor,
    #[error(transparent)]
    Ledger(#[from] crate::env::ledger::LedgerError),
    #[error(transparent)]
    Fault(#[from] crate::env::faults::FaultError),
    #[error(transparent)]
    Component(#[from] crate::env::components::ComponentError),
    #[error(transparent)]
    Proxy(#[from] crate::env::proxy_gateway::ProxyError),
    #[error("starting the system under test's runtime: {}", Causes(.0))]
    Runtime(std::io::Error),
    #[error("the system under test's start task: {}", Causes(.0))]
    StartTask(tokio::task::JoinError),
    #[error("variant {variant}: {error}")]
    Redis {
        variant: String,
        error: sut::RedisStartError,
    },
    #[error("starting the system under test for {name}: {}", Causes(.error))]
    Sut {
        name: String,
        error: sut::StartError,
    },
    #[error("binding a loopback port: {}", Causes(.0))]
    Bind(std::io::Error),
    #[error("no processes for variant {0} (environment processes)")]
    NoProcesses(String),
    #[error(transparent)]
    Docker(crate::env::docker::DockerCallError),
    #[error("process {process}: the image {image} is not on this machine (a local image: build or load it first)")]
    NoImage { process: String, image: String },
    #[error("process {process} is not ready: {why}")]
    ContainerNotReady { process: String, why: String },
    #[error("process {process}: port {port} is not free on 127.0.0.1 ({}); stop what listens there, or use `port: auto`", Causes(.error))]
    PortInUse {
        process: String,
        port: u16,
        error: std::io::Error,
    },
    /// A socket's address, or a fault proxy that could not listen.
    #[error("{}", Causes(.0))]
    Io(std::io::Error),
    #[error("asking {url}/admin/info: {}", Causes(.error))]
    Ask { url: String, error: reqwest::Error },
    #[error("{url}/admin/info: {}", Causes(.error))]
    Status { url: String, error: reqwest::Error },
    #[error("reading {url}/admin/info: {}", Causes(.error))]
    Info { url: String, error: reqwest::Error },
    #[error("the target's page function is {{ words: {words}, rounds: {rounds} }} but the experiment's system.page is {{ words: {want_words}, rounds: {want_rounds} }}: set system.page to match, or every result would be judged incorrect")]
    PageFunction {
        words: String,
        rounds: String,
        want_words: u32,
        want_rounds: u32,
    },
    #[error("starting the containers of {variant}: {error}")]
    Containers {
        variant: String,
        error: Box<crate::env::containers::ContainerError>,
    },
    #[error("the gateway's address {to}: {error}")]
    GatewayAddress {
        to: String,
        error: std::net::AddrParseError,
    },
    #[error("{}", Causes(.0))]
    Json(serde_json::Error),
    #[error("writing {}: {}", .path.display(), Causes(.error))]
    Write {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

/// The page executor every embedded variant shares (one device), or None for an external target.
pub fn executor(exp: &Experiment) -> Result<Option<Arc<dyn PageExecutor>>, EnvError> {
    match exp.environment {
        // Containers: the pools run on this machine too, so calibrate here.
        Environment::Embedded | Environment::Containers { .. } => {
            let e =
                gpu_executor::select_executor(exp.executor_choice()).map_err(EnvError::Select)?;
            let info = e.info();
            if info.fallback {
                eprintln!(
                    "\n!!! NO GPU ADAPTER: every page runs on the CPU reference implementation ({}).\n!!! Results are still verified, but this is not the wgpu path; the report says so too.\n",
                    info.fallback_reason.as_deref().unwrap_or("no reason given")
                );
            }
            Ok(Some(e))
        }
        Environment::External { .. } | Environment::Processes(_) => Ok(None),
    }
}

/// Measures one pool's page throughput here, so `capacity`-relative rates mean the same on any machine.
pub fn calibrate(
    exp: &Experiment,
    executor: Option<&dyn PageExecutor>,
) -> Result<Capacity, EnvError> {
    let uses_capacity = |r: &Rate| matches!(r, Rate::Capacity(_));
    let relative = match &exp.workload.arrival {
        Arrival::Constant(r) => uses_capacity(r),
        Arrival::Ramp { from, to } => uses_capacity(from) || uses_capacity(to),
        Arrival::Steps(s) => s.iter().any(|(_, r)| uses_capacity(r)),
    } || exp.timeline.iter().any(|e| match &e.op {
        TimelineOp::LoadSpike(LoadSpike::Extra(r)) => uses_capacity(r),
        TimelineOp::LoadSpike(LoadSpike::Factor(_))
        | TimelineOp::Admin(_)
        | TimelineOp::Generic(_)
        | TimelineOp::OversizedDocuments(_) => false,
    });
    let Some(executor) = executor else {
        if relative {
            return Err(EnvError::Relative);
        }
        return Ok(Capacity {
            pages_per_sec: 0.0,
            docs_per_sec: 0.0,
        });
    };
    let sys = &exp.variants[0].system;
    let c = gpu_executor::calibrate(executor, &sys.gpu, sys.page.words, sys.page.rounds)
        .map_err(EnvError::Calibrate)?;
    Ok(Capacity {
        pages_per_sec: c.pages_per_sec,
        docs_per_sec: c.pages_per_sec / exp.mean_pages().max(1e-9),
    })
}

/// Starts the variant's system under test (embedded) or points at the external one.
pub async fn start(
    exp: &Experiment,
    v: &Variant,
    executor: Option<Arc<dyn PageExecutor>>,
    clock: crate::base::clock::ClockKind,
) -> Result<Target, EnvError> {
    match (&exp.environment, executor) {
        (Environment::Embedded, Some(executor)) if clock.is_virtual() => {
            in_process::start(v, executor, exp.seed).await
        }
        (Environment::Embedded, Some(_)) if exp.needs_components() => {
            start_components(v, &exp.network_faulted()).await
        }
        (Environment::Embedded, Some(executor)) => start_embedded(v, executor).await,
        (Environment::Containers { images }, _) => start_containers(exp, v, images).await,
        (
            Environment::External {
                url,
                admin_token,
                components,
                metrics,
            },
            _,
        ) => {
            // A generic HTTP workload's target has no page function.
            if exp.workload.http.is_none() {
                check_external_page_function(url, admin_token.as_deref(), &v.system.page).await?;
            }
            let mut target = Target::elsewhere(url.clone(), admin_token.clone());
            target.metrics_url = metrics.clone();
            if exp.needs_components() {
                let ledger = Arc::new(crate::env::ledger::Ledger::open()?);
                target.faults = Some(Arc::new(crate::env::faults::Injector::for_external(
                    ledger, components,
                )?));
            }
            Ok(target)
        }
        (Environment::Processes(p), _) => processes::start(exp, v, p).await,
        (Environment::Embedded, None) => Err(EnvError::NoExecutor),
    }
}

/// The variant's whole system in this process, on its own runtime (with
/// its own redis-server when its Redis cache has no URL), serving HTTP on a
/// fresh loopback port.
async fn start_embedded(v: &Variant, executor: Arc<dyn PageExecutor>) -> Result<Target, EnvError> {
    let mut config = v.system.clone();
    let redis = own_redis(&mut config, &v.name)?;
    // Its own runtime, with named threads, so the harness-cost panel
    // can tell its CPU from the harness's (cpu.rs).
    let runtime = crate::base::cpu::named_runtime(crate::base::cpu::SUT_THREADS)
        .map_err(EnvError::Runtime)?;
    let (addr, tx, server) = runtime
        .spawn(serve(config, executor, v.name.clone()))
        .await
        .map_err(EnvError::StartTask)??;
    Ok(Target {
        base_url: format!("http://{addr}"),
        admin_token: Some(v.system.admin_token.clone()),
        shutdown: Some(tx),
        server: Some(server),
        redis,
        containers: None,
        runtime: Some(runtime),
        processes: None,
        faults: None,
        proxy: None,
        load_via: None,
        metrics_url: None,
        no_metrics: false,
        exits: None,
        images: None,
        in_process: None,
    })
}

/// A Redis cache without a URL: our own redis-server for this variant,
/// its URL set in `config`.
fn own_redis(
    config: &mut sut::SystemConfig,
    variant: &str,
) -> Result<Option<sut::RedisServer>, EnvError> {
    Ok(match &mut config.cache.backend {
        sut::config::CacheBackend::Redis(r) if r.url.is_none() => {
            let server = sut::RedisServer::start(r.maxmemory_mb, r.policy).map_err(|error| {
                EnvError::Redis {
                    variant: variant.to_string(),
                    error,
                }
            })?;
            r.url = Some(server.url());
            Some(server)
        }
        _ => None,
    })
}

/// What serving an embedded system hands back: its address, the sender that
/// shuts it down, and the server task.
type Serving = (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
);

/// Starts the system of variant `name` and serves it on a fresh loopback
/// port until told to shut down (run on the system's own runtime).
async fn serve(
    config: sut::SystemConfig,
    executor: Arc<dyn PageExecutor>,
    name: String,
) -> Result<Serving, EnvError> {
    let system = System::start_with_executor(config, executor)
        .await
        .map_err(|error| EnvError::Sut {
            name: name.clone(),
            error,
        })?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(EnvError::Bind)?;
    let addr = listener.local_addr().map_err(EnvError::Io)?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(sut::server::run(listener, system, async {
        let _ = rx.await;
    }));
    Ok((addr, tx, server))
}

/// A variant's system someone else started from this file (`--deployed`,
/// e.g. the Deployments of `harness render k8s`): driven with the variant's
/// admin token, its page function checked like an external target's.
pub async fn deployed(url: &str, system: &sut::SystemConfig) -> Result<Target, EnvError> {
    check_external_page_function(url, Some(&system.admin_token), &system.page).await?;
    Ok(Target::elsewhere(
        url.trim_end_matches('/').to_string(),
        Some(system.admin_token.clone()),
    ))
}

/// An external target's results are verified with the page function of the
/// experiment's `system.page`; with an admin token, check the target agrees
/// before sending anything, or every result would be judged incorrect.
async fn check_external_page_function(
    url: &str,
    token: Option<&str>,
    page: &sut::config::PageConfig,
) -> Result<(), EnvError> {
    let Some(token) = token else {
        eprintln!(
            "harness: no admin token for {url}: results are verified with system.page {{ words: {}, rounds: {} }} from the experiment, which must match the target",
            page.words, page.rounds
        );
        return Ok(());
    };
    let info: serde_json::Value = reqwest::Client::new()
        .get(format!("{url}/admin/info"))
        .bearer_auth(token)
        .timeout(std::time::Duration::from_secs(5))
        .send()
        .await
        .map_err(|error| EnvError::Ask {
            url: url.to_string(),
            error,
        })?
        .error_for_status()
        .map_err(|error| EnvError::Status {
            url: url.to_string(),
            error,
        })?
        .json()
        .await
        .map_err(|error| EnvError::Info {
            url: url.to_string(),
            error,
        })?;
    let words = info.pointer("/page/words").and_then(|v| v.as_u64());
    let rounds = info.pointer("/page/rounds").and_then(|v| v.as_u64());
    if words != Some(u64::from(page.words)) || rounds != Some(u64::from(page.rounds)) {
        return Err(EnvError::PageFunction {
            words: words.map(|w| w.to_string()).unwrap_or("?".into()),
            rounds: rounds.map(|r| r.to_string()).unwrap_or("?".into()),
            want_words: page.words,
            want_rounds: page.rounds,
        });
    }
    Ok(())
}

/// The page executor of a virtual run: the CPU reference, computed in line.
pub(crate) fn virtual_executor() -> Arc<dyn PageExecutor> {
    Arc::new(gpu_executor::CpuExecutor::new())
}

/// One pool's capacity in virtual time: the GPU model's own, `lanes`
/// pages per `page_time` (computing a batch takes no modeled time there).
pub(crate) fn modeled_capacity(exp: &Experiment) -> Capacity {
    let gpu = &exp.variants[0].system.gpu;
    let pages_per_sec = f64::from(gpu.lanes.max(1)) / gpu.page_time.as_secs_f64().max(1e-9);
    Capacity {
        pages_per_sec,
        docs_per_sec: pages_per_sec / exp.mean_pages().max(1e-9),
    }
}
