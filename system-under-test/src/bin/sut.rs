//! `sut`: runs the system under test as its own process.
//!
//! `sut --config system.yaml --listen 127.0.0.1:8080` runs the whole service.
//! The roles can also run apart, one process per zone's pool and one gateway:
//!
//! ```text
//! sut --config system.yaml --role pool --zone az1 --listen 0.0.0.0:8080
//! sut --config system.yaml --role gateway --pool az1=http://pool-az1:8080 ...
//! ```
//!
//! Ctrl-C (or SIGTERM) stops accepting and drains in-flight requests.

use anyhow::Context;
use clap::Parser;
use sut::{Role, StartOptions, System, SystemConfig};

#[derive(Parser)]
#[command(about = "The document-extraction service the harness tests")]
struct Args {
    /// YAML system configuration (the `system:` section of an experiment, on its own). Defaults if absent.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    /// Which part of the service to run: all, pool (one zone) or gateway.
    #[arg(long, default_value = "all")]
    role: String,
    /// The zone of `--role pool`.
    #[arg(long)]
    zone: Option<String>,
    /// `ZONE=URL` of each zone's pool process, for `--role gateway`.
    #[arg(long = "pool")]
    pools: Vec<String>,
    /// Accept admin requests from any peer (the token is still required):
    /// for processes in containers, whose callers are other hosts.
    #[arg(long)]
    admin_from_any_peer: bool,
}

fn main() -> anyhow::Result<()> {
    // Before the runtime's threads: the Vulkan loader's spurious "error:" line otherwise.
    gpu_executor::ensure_runtime_dir();
    tokio::runtime::Runtime::new()
        .context("starting the tokio runtime")?
        .block_on(serve())
}

async fn serve() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            SystemConfig::from_yaml(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => SystemConfig::default(),
    };
    let role = Role::from_args(&args.role, args.zone.as_deref(), &args.pools)?;
    let opts = StartOptions {
        role,
        admin_from_any_peer: args.admin_from_any_peer,
        deterministic: None,
    };
    let system = System::start_with(config, opts, None)
        .await
        .context("starting the system under test")?;
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
        .with_context(|| format!("binding {}", args.listen))?;
    eprintln!("sut: listening on http://{}", listener.local_addr()?);
    let shutdown = async {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        eprintln!("sut: shutting down, draining in-flight requests");
    };
    sut::server::run(listener, system, shutdown).await?;
    Ok(())
}
