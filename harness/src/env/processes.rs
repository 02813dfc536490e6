//! `environment: processes`: the user's own service, started by the harness
//! for each variant from `system.processes` (`experiment/processes.rs`).
//!
//! Each process is a component of a [`ProcessSet`] named by its key: its
//! log in the variant's folder, its own process group and a tag in its
//! environment (so its workers die with it, and the fault ledger finds
//! them after a SIGKILL of the harness), `PR_SET_PDEATHSIG`. Ports are
//! chosen first (`auto`: a free loopback port), so `{port.OTHER}` can be
//! filled before anything starts; a process a `network` fault names gets a
//! fault proxy in front of its port, and its peers' `{port.NAME}` and the
//! load go through it. Processes start in the file's order, each waited
//! for until ready. Every generic fault applies (`faults::Injector`), kill
//! and restart on the same command and port. A process that exits by
//! itself is said at once and recorded in the variant's integrity.
//!
//! A process with `image:` is a container of that local image instead
//! (`images.rs`).
//!
//! Such a service has no admin API: the target carries no admin token, so
//! the run calls no `/admin/*`; its server-side metrics are read only where
//! `target.metrics` names them.

use super::components::{free_loopback_addr, Exited, Launch, ProcessSet, Ready};
use super::{EnvError, Target};
use crate::experiment::processes::{placeholders, substitute, ProcessSpec, ProcessesEnv};
use crate::experiment::{Experiment, Variant};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

mod images;
pub(crate) use images::Images;

/// How often a running variant looks for processes that exited.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// The processes that exited by themselves, as the watcher saw them, and
/// the watcher (stopped with the target, before the processes are).
pub(crate) struct ExitWatch {
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ExitWatch {
    /// One line per process that exited (name, status, log and its tail).
    pub(crate) fn lines(&self) -> Vec<String> {
        self.seen.lock().expect("exits lock").clone()
    }

    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for ExitWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The variant's processes, started and ready; the target's URL is the
/// target process's (through its fault proxy when a network fault names it).
pub(super) async fn start(
    exp: &Experiment,
    v: &Variant,
    env: &ProcessesEnv,
) -> Result<Target, EnvError> {
    let specs = env
        .variants
        .get(&v.name)
        .ok_or_else(|| EnvError::NoProcesses(v.name.clone()))?;
    let ledger = Arc::new(crate::env::ledger::Ledger::open()?);
    let set = Arc::new(ProcessSet::new(folder(&v.name), ledger.clone())?);
    let ports = choose_ports(specs)?;
    let mut faulted = BTreeMap::new();
    let mut peer = BTreeMap::new();
    for (name, addr) in &ports {
        let mut to = *addr;
        if exp.network_faulted().contains(name) {
            let p = super::faults::fault_proxy::FaultProxy::start(*addr)
                .await
                .map_err(EnvError::Io)?;
            to = p.addr;
            faulted.insert(name.clone(), Arc::new(p));
        }
        peer.insert(name.clone(), to);
    }
    let mut images = None;
    if let Err(e) = start_each(v, specs, (&set, &ledger), (&ports, &peer), &mut images).await {
        if let Some(i) = images {
            i.remove().await;
        }
        return Err(e);
    }
    let base_url = format!("http://{}", ports[&env.target]);
    let mut target = Target::elsewhere(base_url.clone(), None);
    if let Some(via) = faulted.get(&env.target) {
        target.load_via = Some(format!("http://{}", via.addr));
    }
    target.metrics_url = metrics_url(env, &base_url, &ports);
    target.no_metrics = target.metrics_url.is_none();
    if target.no_metrics {
        eprintln!("harness: {}: no `target.metrics`, so the service's own series are not read; the report's system figures read n/a", v.name);
    }
    let containers = images.as_ref().map(|i| i.ids.clone()).unwrap_or_default();
    let injector =
        super::faults::Injector::new(set.clone(), ledger, faulted).with_containers(containers);
    target.faults = Some(Arc::new(injector));
    let killable = exp
        .generic_faults()
        .filter(|f| f.kind() == "kill")
        .map(|f| f.component().to_string())
        .collect();
    let watched = Watched {
        set: set.clone(),
        containers: images.as_ref().map(|i| i.ids.clone()).unwrap_or_default(),
        killable,
    };
    target.exits = Some(watch_exits(watched, v.name.clone()));
    target.processes = Some(set);
    target.images = images;
    Ok(target)
}

/// Starts every process in the file's order, each until ready: a command
/// in `set`, an image as a container of `images` (created with the first).
async fn start_each(
    v: &Variant,
    specs: &[ProcessSpec],
    (set, ledger): (&ProcessSet, &Arc<crate::env::ledger::Ledger>),
    (ports, peer): (&BTreeMap<String, SocketAddr>, &BTreeMap<String, SocketAddr>),
    images: &mut Option<Images>,
) -> Result<(), EnvError> {
    let tag_base = tag_base();
    for s in specs {
        if s.image.is_some() {
            if images.is_none() {
                *images = Some(Images::network(&v.name, ledger.clone()).await?);
            }
            let i = images.as_mut().expect("created above");
            i.start(s, ports[&s.name]).await?;
            continue;
        }
        let launch = launch(set, s, ports, peer, &tag_base)?;
        let ready = Ready::Probe {
            http: match &s.ready {
                crate::experiment::processes::Ready::Http(p) => Some(p.clone()),
                crate::experiment::processes::Ready::Tcp => None,
            },
            timeout: s.ready_timeout,
        };
        set.start_user(&s.name, launch, ports[&s.name], ready)
            .await?;
    }
    Ok(())
}

/// The variant's folder for logs and config files; the prefix is the one
/// `components::sweep_leftover_dirs` removes after a SIGKILLed harness.
fn folder(variant: &str) -> std::path::PathBuf {
    static SETS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "harness-components-{}-p{}-{variant}",
        std::process::id(),
        SETS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    ))
}

/// Unique to this harness process (pid and start time) and set.
fn tag_base() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let pid = std::process::id();
    format!(
        "{pid}-{}-{}",
        crate::env::procfs::process_start(pid).unwrap_or(0),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// Each process's address on this machine: its fixed port (free now, or
/// its readiness would be another program's), or a free loopback port (an
/// image's: where its port inside is published).
fn choose_ports(specs: &[ProcessSpec]) -> Result<BTreeMap<String, SocketAddr>, EnvError> {
    let mut out = BTreeMap::new();
    for s in specs {
        let addr = match s.port.filter(|_| s.image.is_none()) {
            Some(p) => {
                let addr = SocketAddr::from(([127, 0, 0, 1], p));
                if let Err(error) = std::net::TcpListener::bind(addr) {
                    return Err(EnvError::PortInUse {
                        process: s.name.clone(),
                        port: p,
                        error,
                    });
                }
                addr
            }
            None => free_loopback_addr()?,
        };
        out.insert(s.name.clone(), addr);
    }
    Ok(out)
}

/// The placeholders' values for `spec`: its own port, its peers' (through
/// a fault proxy where there is one) and its config file's path.
fn values(
    spec: &ProcessSpec,
    ports: &BTreeMap<String, SocketAddr>,
    peer: &BTreeMap<String, SocketAddr>,
    config: Option<&std::path::Path>,
) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    v.insert("port".to_string(), ports[&spec.name].port().to_string());
    for (n, a) in peer {
        let a = if *n == spec.name { ports[n] } else { *a };
        v.insert(format!("port.{n}"), a.port().to_string());
    }
    if let Some(c) = config {
        v.insert("config".to_string(), c.display().to_string());
    }
    v
}

/// What starts `spec`: its config file written, placeholders filled.
fn launch(
    set: &ProcessSet,
    spec: &ProcessSpec,
    ports: &BTreeMap<String, SocketAddr>,
    peer: &BTreeMap<String, SocketAddr>,
    tag_base: &str,
) -> Result<Launch, EnvError> {
    let config = spec.config.as_ref().map(|(n, _)| set.dir().join(n));
    let vals = values(spec, ports, peer, config.as_deref());
    if let (Some(path), Some((_, text))) = (&config, &spec.config) {
        std::fs::write(path, substitute(text, &vals)).map_err(|error| EnvError::Write {
            path: path.clone(),
            error,
        })?;
    }
    let mut argv = spec.command.iter().map(|a| substitute(a, &vals));
    let program = argv.next().unwrap_or_default();
    debug_assert!(spec
        .command
        .iter()
        .all(|a| placeholders(&substitute(a, &vals)).is_empty()));
    Ok(Launch {
        program: program.into(),
        args: argv.collect(),
        env: spec
            .env
            .iter()
            .map(|(k, v)| (k.clone(), substitute(v, &vals)))
            .collect(),
        cwd: Some(spec.cwd.clone()),
        tag: Some(format!("{tag_base}-{}", spec.name)),
    })
}

/// `target.metrics` as a URL: a path on the target process, or a URL with
/// its ports filled; `None` without one.
fn metrics_url(
    env: &ProcessesEnv,
    base_url: &str,
    ports: &BTreeMap<String, SocketAddr>,
) -> Option<String> {
    let m = env.metrics.as_ref()?;
    if m.starts_with('/') {
        return Some(format!("{base_url}{m}"));
    }
    let mut vals: BTreeMap<String, String> = ports
        .iter()
        .map(|(n, a)| (format!("port.{n}"), a.port().to_string()))
        .collect();
    vals.insert("port".into(), ports[&env.target].port().to_string());
    Some(substitute(m, &vals))
}

/// Looks for processes that exited by themselves every [`WATCH_EVERY`],
/// says each at once and keeps its line for the report.
fn watch_exits(mut w: Watched, variant: String) -> ExitWatch {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let mut lines: Vec<String> = w.set.exited().await.iter().map(exit_line).collect();
            lines.extend(w.containers_exited().await);
            for line in lines {
                eprintln!("\n!!! {variant}: the system under test's process {line}\n");
                into.lock().expect("exits lock").push(line);
            }
        }
    });
    ExitWatch { seen, task }
}

/// What the exit watcher looks at: the command processes, and the
/// containers of image processes (by process name) not yet seen exited;
/// `killable`: those a `kill` fault of the timeline may stop (their exit
/// code 137 is the fault's, not theirs).
struct Watched {
    set: Arc<ProcessSet>,
    containers: BTreeMap<String, String>,
    killable: std::collections::BTreeSet<String>,
}

impl Watched {
    /// The image processes whose container stopped by itself since the
    /// last call, one line each (then no longer watched).
    async fn containers_exited(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let mut gone = Vec::new();
        for (name, id) in &self.containers {
            let Ok((false, code)) = crate::env::docker::running(id).await else {
                continue;
            };
            if code == Some(137) && self.killable.contains(name) {
                continue;
            }
            let code = code.map(|c| c.to_string()).unwrap_or("?".into());
            out.push(format!(
                "{name} (container {id}) exited by itself during the run (exit code {code})"
            ));
            gone.push(name.clone());
        }
        for n in gone {
            self.containers.remove(&n);
        }
        out
    }
}

fn exit_line(e: &Exited) -> String {
    let tail: Vec<&str> = e.tail.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!(
        "{} exited by itself during the run ({}); its log {} ends: {}",
        e.name,
        e.status,
        e.log.display(),
        tail.join(" | ")
    )
}
