//! `StopSignal`: how a run learns it must end early.
//!
//! Ctrl-C, or a system under test that stopped answering, sets it. Arrivals
//! stop, in-flight journeys are cut off (counted as pending), and the run
//! still writes everything it measured, marked as interrupted. A second
//! Ctrl-C exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

pub struct StopSignal {
    flag: AtomicBool,
    tx: watch::Sender<bool>,
    reason: Mutex<Option<String>>,
}

impl Default for StopSignal {
    fn default() -> Self {
        StopSignal {
            flag: AtomicBool::new(false),
            tx: watch::channel(false).0,
            reason: Mutex::new(None),
        }
    }
}

impl StopSignal {
    /// Sets the signal; the first reason given is kept.
    pub fn trigger(&self, reason: &str) {
        let mut r = self.reason.lock().expect("stop reason lock");
        if r.is_none() {
            *r = Some(reason.to_string());
        }
        self.flag.store(true, Ordering::Release);
        self.tx.send_replace(true);
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    pub fn reason(&self) -> Option<String> {
        self.reason.lock().expect("stop reason lock").clone()
    }

    /// Resolves when the signal is set.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// What must be undone before the process exits at a second Ctrl-C,
/// registered by the layer that changes the machine (the fault ledger, when
/// it opens), which this module stands below and may not name.
static ON_FORCED_EXIT: std::sync::OnceLock<fn() -> Vec<String>> = std::sync::OnceLock::new();

/// Registers `undo` (it returns a line per thing undone) to run when a
/// second Ctrl-C exits at once. The first registration stands.
pub fn on_forced_exit(undo: fn() -> Vec<String>) {
    let _ = ON_FORCED_EXIT.set(undo);
}

/// Installs the process's Ctrl-C handler (before goose tries to install its own,
/// which then leaves ours in place), and its SIGTERM watcher.
pub fn install_ctrl_c(stop: Arc<StopSignal>) {
    let stop_for_term = stop.clone();
    let result = ctrlc::set_handler(move || {
        if stop.is_set() {
            eprintln!("\nsecond Ctrl-C: exiting without a report");
            // Faults in force are undone even so (the ledger says which).
            for line in ON_FORCED_EXIT.get().map(|undo| undo()).unwrap_or_default() {
                eprintln!("harness: {line}");
            }
            std::process::exit(130);
        }
        eprintln!("\nCtrl-C: stopping the load and writing what was measured (Ctrl-C again to exit at once)");
        stop.trigger("interrupted by Ctrl-C");
    });
    if let Err(e) = result {
        tracing::warn!("could not install the Ctrl-C handler: {e}");
    }
    watch_sigterm(stop_for_term);
}

/// SIGTERM (`timeout`, a CI runner, Kubernetes stopping a pod) stops the
/// run as Ctrl-C does: the load stops, what was measured is written, the
/// faults in force are undone, and the exit code is 143 (`exit.rs`). A
/// second SIGTERM exits at once, undoing the faults first. The watcher is a
/// thread of its own, started once: it touches no runtime, so a run on the
/// virtual clock replays the same.
fn watch_sigterm(stop: Arc<StopSignal>) {
    static STARTED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if STARTED.set(()).is_err() {
        return;
    }
    let mut signals = match signal_hook::iterator::Signals::new([libc::SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("could not install the SIGTERM handler: {e}");
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("sigterm".into())
        .spawn(move || {
            for _ in signals.forever() {
                crate::base::exit::note_sigterm();
                if stop.is_set() {
                    eprintln!("\nsecond SIGTERM: exiting without a report");
                    for line in ON_FORCED_EXIT.get().map(|undo| undo()).unwrap_or_default() {
                        eprintln!("harness: {line}");
                    }
                    std::process::exit(143);
                }
                eprintln!("\nSIGTERM: stopping the load and writing what was measured");
                stop.trigger("terminated by SIGTERM");
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("could not start the SIGTERM watcher: {e}");
    }
}

/// [`runtime_with_ctrl_c`] for a command: its failure is a setup error.
pub fn cli_runtime(
) -> Result<(tokio::runtime::Runtime, Arc<StopSignal>), crate::base::exit::CliError> {
    runtime_with_ctrl_c().map_err(crate::base::exit::CliError::new)
}

/// [`cli_runtime`] for runs on `clock` (one paused thread in virtual time).
pub fn clock_runtime(
    clock: crate::base::clock::ClockKind,
) -> Result<(tokio::runtime::Runtime, Arc<StopSignal>), crate::base::exit::CliError> {
    let stop = Arc::new(StopSignal::default());
    install_ctrl_c(stop.clone());
    clock
        .runtime()
        .map(|rt| (rt, stop))
        .map_err(|e| crate::base::exit::CliError::new(RuntimeError(e)))
}

/// The runtime of a harness command, with the Ctrl-C handler installed first
/// (so goose's own handler leaves ours in place). Errors say what failed.
pub fn runtime_with_ctrl_c() -> Result<(tokio::runtime::Runtime, Arc<StopSignal>), RuntimeError> {
    let stop = Arc::new(StopSignal::default());
    install_ctrl_c(stop.clone());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map(|rt| (rt, stop))
        .map_err(RuntimeError)
}

/// The command's async runtime could not start (threads, the I/O driver).
#[derive(Debug, thiserror::Error)]
#[error("starting the async runtime: {0}")]
pub struct RuntimeError(std::io::Error);
