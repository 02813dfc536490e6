//! Components as processes of their own, for faults that act on a process
//! (`cpu_limit`, `pause`, `kill`) and for a real proxy as the gateway.
//!
//! The embedded environment normally runs the whole system in the
//! harness's process, where a cgroup cannot single out one zone's pool. When
//! the timeline has a generic fault (or the gateway is a real proxy), each
//! variant runs the containers environment's split instead, as child
//! processes of the `sut` binary on loopback: one `sut --role pool --zone Z`
//! per zone (component `pool-Z`) and, unless a proxy takes its place, one
//! `sut --role gateway` (component `gateway`). The binary is found beside
//! the harness's own (or its parent folder, for tests), or at
//! `$HARNESS_SUT_BIN`. Each child logs to a file in the variant's folder,
//! is killed when the set is dropped and when the harness dies
//! (`PR_SET_PDEATHSIG`), and is recorded in the fault ledger so a later
//! start kills one left running. `kill` and `restart` act on one component;
//! a restarted component listens on the address it had, so its peers reach
//! it again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

use crate::base::causes::Causes;
use crate::env::ledger::{Ledger, Record};
use crate::env::procfs::{descendants, process_start};

mod ready;
mod sut_program;
use ready::{tail, wait_accepting, wait_listening};
pub(crate) use sut_program::{sut_binary, SutProgram};

/// Why a component process could not be started, killed or restarted.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    #[error("finding the harness executable: {}", Causes(.0))]
    Exe(std::io::Error),
    #[error("the harness executable's folder")]
    ExeFolder,
    #[error("no `harness` or `sut` binary beside {} (build it: cargo build -p harness, or set HARNESS_SUT_BIN)", .0.display())]
    NoSut(PathBuf),
    #[error("creating {}: {}", .dir.display(), Causes(.error))]
    Folder { dir: PathBuf, error: std::io::Error },
    #[error("opening {}: {}", .path.display(), Causes(.error))]
    Log {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("log file: {}", Causes(.0))]
    LogFile(std::io::Error),
    #[error("starting {name} ({}): {}", .program.display(), Causes(.error))]
    Spawn {
        name: String,
        program: PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    Ledger(#[from] crate::env::ledger::LedgerError),
    /// Waiting on the child, or reading a bound socket's address.
    #[error("{}", Causes(.0))]
    Io(std::io::Error),
    #[error("no such component")]
    NoSuch,
    #[error("already killed")]
    AlreadyKilled,
    #[error("killing {name}: {}", Causes(.error))]
    Kill { name: String, error: std::io::Error },
    #[error("{0} is running")]
    Running(String),
    /// The component exited before it listened (`on`: " on ADDR" or "").
    #[error("{name} exited ({status}) before listening{on}; its log {}:\n{tail}", .log.display())]
    Exited {
        name: String,
        status: std::process::ExitStatus,
        on: String,
        log: PathBuf,
        tail: String,
    },
    /// The component did not listen in time (`on`: " on ADDR" or "").
    #[error("{name} did not listen{on} within {startup:?}; its log {}:\n{tail}", .log.display())]
    Late {
        name: String,
        on: String,
        startup: Duration,
        log: PathBuf,
        tail: String,
    },
    #[error("binding a loopback port: {}", Causes(.0))]
    Bind(std::io::Error),
}

/// How long a component may take to listen.
const STARTUP: Duration = Duration::from_secs(60);

/// Removes the component folders (configuration, logs) that harnesses no
/// longer running left in the temporary folder (a SIGKILL skips the
/// removal); a folder whose pid runs again, possibly another program, is
/// left alone. Returns how many were removed.
pub fn sweep_leftover_dirs() -> usize {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("harness-components-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if process_start(pid).is_none() && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// How a component says it is ready, and where it listens.
#[derive(Clone)]
pub(crate) enum Ready {
    /// A `sut` process: given `--listen ADDR`, it logs where it listens.
    Logged,
    /// A proxy whose configuration names its address: ready once it accepts.
    Accepts,
    /// A user's process (`processes.rs`): ready once it accepts on its
    /// address, and with `http` once a GET of that path answers below 500,
    /// within `timeout`.
    Probe {
        http: Option<String>,
        timeout: Duration,
    },
}

/// What starts a component: its program and arguments (a `sut` process's
/// without `--listen`) and, for a user's process, its environment, folder
/// and tag.
#[derive(Clone, Default)]
pub(crate) struct Launch {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
    /// A process group of its own, and `procfs::TAG_VAR=tag` in its
    /// environment: it and everything it starts (gunicorn's workers) are
    /// killed together, and found by the ledger after a SIGKILL.
    pub(crate) tag: Option<String>,
}

/// A component that exited by itself while the variant ran.
#[derive(Debug, Clone)]
pub(crate) struct Exited {
    pub(crate) name: String,
    pub(crate) status: String,
    pub(crate) log: PathBuf,
    pub(crate) tail: String,
}

/// One running (or killed) component.
struct Proc {
    launch: Launch,
    addr: SocketAddr,
    ready: Ready,
    child: Option<tokio::process::Child>,
    /// Its ledger records: the process and the children it had started
    /// (nginx's workers, which a SIGKILL of the master leaves running).
    ledger_ids: Vec<u64>,
}

/// The variant's component processes.
pub(crate) struct ProcessSet {
    dir: PathBuf,
    ledger: Arc<Ledger>,
    procs: Mutex<BTreeMap<String, Proc>>,
}

impl ProcessSet {
    /// An empty set whose files (configuration, logs) go to `dir`.
    pub(crate) fn new(dir: PathBuf, ledger: Arc<Ledger>) -> Result<ProcessSet, ComponentError> {
        std::fs::create_dir_all(&dir).map_err(|error| ComponentError::Folder {
            dir: dir.clone(),
            error,
        })?;
        Ok(ProcessSet {
            dir,
            ledger,
            procs: Mutex::new(BTreeMap::new()),
        })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts component `name` (`program args --listen 127.0.0.1:0`) and
    /// waits until its log says where it listens.
    pub(crate) async fn start_sut(
        &self,
        name: &str,
        sut: &SutProgram,
        args: Vec<String>,
    ) -> Result<SocketAddr, ComponentError> {
        let listen: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        let launch = Launch {
            program: sut.program.clone(),
            args: sut.args(args),
            ..Launch::default()
        };
        self.start(name, launch, listen, Ready::Logged).await
    }

    /// Starts component `name` (`program args`), whose configuration makes
    /// it listen on `addr`, and waits until it accepts connections there.
    pub(crate) async fn start_listening_on(
        &self,
        name: &str,
        program: &Path,
        args: Vec<String>,
        addr: SocketAddr,
    ) -> Result<SocketAddr, ComponentError> {
        let launch = Launch {
            program: program.to_path_buf(),
            args,
            ..Launch::default()
        };
        self.start(name, launch, addr, Ready::Accepts).await
    }

    /// Starts a user's process `name` as `launch` says, which listens on
    /// `addr` (its command was given the port), and waits until `ready`.
    pub(crate) async fn start_user(
        &self,
        name: &str,
        launch: Launch,
        addr: SocketAddr,
        ready: Ready,
    ) -> Result<SocketAddr, ComponentError> {
        self.start(name, launch, addr, ready).await
    }

    async fn start(
        &self,
        name: &str,
        launch: Launch,
        listen: SocketAddr,
        ready: Ready,
    ) -> Result<SocketAddr, ComponentError> {
        let (child, addr, ledger_ids) = self.spawn_recorded(name, &launch, listen, &ready).await?;
        self.procs.lock().await.insert(
            name.to_string(),
            Proc {
                launch,
                addr,
                ready,
                child: Some(child),
                ledger_ids,
            },
        );
        Ok(addr)
    }

    /// Spawns `launch` and waits until ready, recorded in the ledger: a
    /// user's process's tag before it runs (a SIGKILL while it starts
    /// leaves nothing unrecorded), its process and children once ready.
    async fn spawn_recorded(
        &self,
        name: &str,
        launch: &Launch,
        listen: SocketAddr,
        ready: &Ready,
    ) -> Result<(tokio::process::Child, SocketAddr, Vec<u64>), ComponentError> {
        let mut ids = Vec::new();
        if let Some(tag) = &launch.tag {
            ids.push(self.ledger.add(Record::Tagged {
                tag: tag.clone(),
                name: name.to_string(),
            })?);
        }
        let spawned = match self.spawn(name, launch, listen, ready).await {
            Ok(s) => s,
            Err(e) => {
                self.forget(&mut ids);
                return Err(e);
            }
        };
        ids.extend(self.record(name, &spawned.0)?);
        Ok((spawned.0, spawned.1, ids))
    }

    /// Records the component's process and its children in the ledger.
    fn record(
        &self,
        name: &str,
        child: &tokio::process::Child,
    ) -> Result<Vec<u64>, ComponentError> {
        let Some(pid) = child.id() else {
            return Ok(Vec::new());
        };
        let mut ids = Vec::new();
        for p in std::iter::once(pid).chain(descendants(pid)) {
            ids.push(self.ledger.add(Record::Process {
                pid: p,
                start: process_start(p).unwrap_or(0),
                name: name.to_string(),
            })?);
        }
        Ok(ids)
    }

    fn forget(&self, ids: &mut Vec<u64>) {
        for id in ids.drain(..) {
            self.ledger.remove(id);
        }
    }

    fn log_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    async fn spawn(
        &self,
        name: &str,
        launch: &Launch,
        listen: SocketAddr,
        ready: &Ready,
    ) -> Result<(tokio::process::Child, SocketAddr), ComponentError> {
        let program = launch.program.as_path();
        let log_path = self.log_path(name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|error| ComponentError::Log {
                path: log_path.clone(),
                error,
            })?;
        let offset = log.metadata().map(|m| m.len()).unwrap_or(0);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&launch.args);
        if let Ready::Logged = ready {
            cmd.arg("--listen").arg(listen.to_string());
        }
        cmd.envs(launch.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &launch.cwd {
            cmd.current_dir(dir);
        }
        if let Some(tag) = &launch.tag {
            cmd.env(crate::env::procfs::TAG_VAR, tag).process_group(0);
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(log.try_clone().map_err(ComponentError::LogFile)?)
            .stderr(log)
            .kill_on_drop(true);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|error| ComponentError::Spawn {
            name: name.to_string(),
            program: program.to_path_buf(),
            error,
        })?;
        let addr = match ready {
            Ready::Logged => wait_listening(&mut child, &log_path, offset, name).await,
            Ready::Accepts => wait_accepting(&mut child, &log_path, listen, name, None).await,
            Ready::Probe { http, timeout } => {
                let probe = Some((http.as_deref(), *timeout));
                wait_accepting(&mut child, &log_path, listen, name, probe).await
            }
        };
        match addr {
            Ok(addr) => Ok((child, addr)),
            Err(e) => {
                // Not ready: nothing of it may outlive the error.
                kill_tree(&mut child, launch.tag.is_some());
                if let Some(tag) = &launch.tag {
                    kill_tagged(tag);
                }
                let _ = child.kill().await;
                Err(e)
            }
        }
    }

    /// The address component `name` listens on.
    pub(crate) async fn addr(&self, name: &str) -> Option<SocketAddr> {
        self.procs.lock().await.get(name).map(|p| p.addr)
    }

    /// The pid of component `name`, while it runs.
    pub(crate) async fn pid(&self, name: &str) -> Option<u32> {
        self.procs
            .lock()
            .await
            .get(name)
            .and_then(|p| p.child.as_ref())
            .and_then(|c| c.id())
    }

    /// SIGKILLs component `name` and reaps it.
    pub(crate) async fn kill(&self, name: &str) -> Result<u32, ComponentError> {
        let mut procs = self.procs.lock().await;
        let p = procs.get_mut(name).ok_or(ComponentError::NoSuch)?;
        let mut child = p.child.take().ok_or(ComponentError::AlreadyKilled)?;
        let pid = child.id().unwrap_or(0);
        // Its own children too (nginx's workers outlive a killed master).
        kill_tree(&mut child, p.launch.tag.is_some());
        if let Some(tag) = &p.launch.tag {
            kill_tagged(tag);
        }
        child.kill().await.map_err(|error| ComponentError::Kill {
            name: name.to_string(),
            error,
        })?;
        self.forget(&mut p.ledger_ids);
        Ok(pid)
    }

    /// Starts a killed component again on its address.
    pub(crate) async fn restart(&self, name: &str) -> Result<u32, ComponentError> {
        let mut procs = self.procs.lock().await;
        let p = procs.get_mut(name).ok_or(ComponentError::NoSuch)?;
        if p.child.is_some() {
            return Err(ComponentError::Running(name.to_string()));
        }
        let (child, _, ids) = self
            .spawn_recorded(name, &p.launch, p.addr, &p.ready)
            .await?;
        p.ledger_ids = ids;
        let pid = child.id().unwrap_or(0);
        p.child = Some(child);
        Ok(pid)
    }

    /// Stops every component (SIGTERM, then SIGKILL after `grace`).
    pub(crate) async fn stop(&self, grace: Duration) {
        let mut procs = self.procs.lock().await;
        for p in procs.values_mut() {
            if let Some(pid) = p.child.as_ref().and_then(|c| c.id()) {
                // SAFETY: kill(2) on our own child, not yet reaped (with a
                // group of its own: the group, its workers too).
                unsafe {
                    match p.launch.tag {
                        Some(_) => libc::killpg(pid as i32, libc::SIGTERM),
                        None => libc::kill(pid as i32, libc::SIGTERM),
                    }
                };
            }
        }
        for p in procs.values_mut() {
            if let Some(mut c) = p.child.take() {
                if tokio::time::timeout(grace, c.wait()).await.is_err() {
                    kill_tree(&mut c, p.launch.tag.is_some());
                    let _ = c.kill().await;
                }
            }
            if let Some(tag) = &p.launch.tag {
                kill_tagged(tag);
            }
            self.forget(&mut p.ledger_ids);
        }
    }

    /// The components that exited by themselves since the last call
    /// (reaped, their ledger records forgotten); a killed one is not.
    pub(crate) async fn exited(&self) -> Vec<Exited> {
        let mut out = Vec::new();
        let mut procs = self.procs.lock().await;
        for (name, p) in procs.iter_mut() {
            let Some(c) = p.child.as_mut() else { continue };
            let Ok(Some(status)) = c.try_wait() else {
                continue;
            };
            p.child = None;
            if let Some(tag) = &p.launch.tag {
                kill_tagged(tag);
            }
            let log = self.log_path(name);
            let text =
                String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
            out.push(Exited {
                name: name.clone(),
                status: status.to_string(),
                tail: tail(&text),
                log,
            });
            let mut ids = std::mem::take(&mut p.ledger_ids);
            self.forget(&mut ids);
        }
        out
    }
}

impl Drop for ProcessSet {
    fn drop(&mut self) {
        // What `stop` did not stop: killed with its children (kill_on_drop
        // alone would leave nginx's workers), and forgotten in the ledger.
        if let Ok(mut procs) = self.procs.try_lock() {
            for p in procs.values_mut() {
                if let Some(c) = p.child.as_mut() {
                    kill_tree(c, p.launch.tag.is_some());
                }
                if let Some(tag) = &p.launch.tag {
                    kill_tagged(tag);
                }
                for id in p.ledger_ids.drain(..) {
                    self.ledger.remove(id);
                }
            }
        }
    }
}

/// SIGKILLs the descendants of `child` and, when it leads a process
/// group of its own (`group`), that group (its own kill follows).
fn kill_tree(child: &mut tokio::process::Child, group: bool) {
    if let Some(pid) = child.id() {
        for d in descendants(pid) {
            // SAFETY: kill(2) on a descendant of our own child.
            unsafe { libc::kill(d as i32, libc::SIGKILL) };
        }
        if group {
            // SAFETY: killpg(2) on the group our own unreaped child leads.
            unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
        }
    }
}

/// SIGKILLs every process still carrying a user's process's `tag` (one
/// that left its group: a daemon, a worker of a killed master).
fn kill_tagged(tag: &str) {
    for p in crate::env::procfs::tagged(tag) {
        // SAFETY: kill(2) on a process carrying this harness's own tag.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
}

/// The child dies with the harness, even by SIGKILL.
pub(crate) fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: prctl and getppid are async-signal-safe; nothing else runs
    // between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() == 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A free loopback port (bound, read, released), for a proxy's listen or
/// metrics address.
pub(crate) fn free_loopback_addr() -> Result<SocketAddr, ComponentError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(ComponentError::Bind)?;
    l.local_addr().map_err(ComponentError::Io)
}
