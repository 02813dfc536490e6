//! Running the system under test as its own process: the arguments and the
//! serving loop behind `sut ...` and `harness sut ...` (one binary carries
//! both the harness and the service's roles, so every shipped experiment
//! runs after one build).
//!
//! `--config system.yaml --listen 127.0.0.1:8080` runs the whole service.
//! The roles can also run apart, one process per zone's pool and one
//! gateway:
//!
//! ```text
//! sut --config system.yaml --role pool --zone az1 --listen 0.0.0.0:8080
//! sut --config system.yaml --role gateway --pool az1=http://pool-az1:8080 ...
//! ```
//!
//! Ctrl-C (or SIGTERM) stops accepting and drains in-flight requests.

use crate::{Role, RoleError, StartError, StartOptions, System, SystemConfig};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The service's command line.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// YAML system configuration (the `system:` section of an experiment, on its own). Defaults if absent.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Which part of the service to run: all, pool (one zone) or gateway.
    #[arg(long, default_value = "all")]
    pub role: String,
    /// The zone of `--role pool`.
    #[arg(long)]
    pub zone: Option<String>,
    /// `ZONE=URL` of each zone's pool process, for `--role gateway`.
    #[arg(long = "pool")]
    pub pools: Vec<String>,
    /// Accept admin requests from any peer (the token is still required):
    /// for processes in containers, whose callers are other hosts.
    #[arg(long)]
    pub admin_from_any_peer: bool,
}

/// Why the service could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("starting the tokio runtime: {0}")]
    Runtime(std::io::Error),
    #[error("reading {}: {error}", .path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error}", .path.display())]
    Config {
        path: PathBuf,
        /// Boxed: it is far larger than the other variants.
        error: Box<crate::config::SystemConfigFileError>,
    },
    #[error(transparent)]
    Role(#[from] RoleError),
    #[error("starting the system under test: {0}")]
    Start(#[from] StartError),
    #[error("binding {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(std::io::Error),
}

/// Runs the service until Ctrl-C or SIGTERM, on its own runtime.
pub fn main(args: ServeArgs) -> Result<(), ServeError> {
    // Before the runtime's threads: the Vulkan loader's spurious "error:" line otherwise.
    gpu_executor::ensure_runtime_dir();
    tokio::runtime::Runtime::new()
        .map_err(ServeError::Runtime)?
        .block_on(serve(args))
}

async fn serve(args: ServeArgs) -> Result<(), ServeError> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| ServeError::Read {
                path: path.clone(),
                error,
            })?;
            SystemConfig::from_yaml(&text).map_err(|error| ServeError::Config {
                path: path.clone(),
                error: Box::new(error),
            })?
        }
        None => SystemConfig::default(),
    };
    let role = Role::from_args(&args.role, args.zone.as_deref(), &args.pools)?;
    let opts = StartOptions {
        role,
        admin_from_any_peer: args.admin_from_any_peer,
        deterministic: None,
    };
    let system = System::start_with(config, opts, None).await?;
    let info = system.executor_info();
    eprintln!("sut: role: {}", system.role);
    eprintln!(
        "sut: page executor: {}{}",
        info.adapter,
        if info.fallback {
            " (CPU FALLBACK: no GPU adapter)"
        } else {
            ""
        }
    );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|error| ServeError::Bind {
            addr: args.listen,
            error,
        })?;
    match listener.local_addr() {
        Ok(addr) => eprintln!("sut: listening on http://{addr}"),
        Err(error) => return Err(ServeError::Serve(error)),
    }
    crate::server::run(listener, system, shutdown_signal())
        .await
        .map_err(ServeError::Serve)
}

/// Ctrl-C, or SIGTERM (how a supervisor, a container engine or the
/// harness stops a process).
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    eprintln!("sut: shutting down, draining in-flight requests");
}
