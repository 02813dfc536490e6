//! How a component says it is ready: a `sut` logs where it listens, a
//! proxy accepts on the address its configuration names, a user's process
//! accepts on its port and answers its HTTP probe; each waited for with its
//! log's last lines in the error when it exits first or is late.

use super::{ComponentError, STARTUP};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits for `sut: listening on http://ADDR` in the log after `offset`.
pub(super) async fn wait_listening(
    child: &mut tokio::process::Child,
    log: &Path,
    offset: u64,
    name: &str,
) -> Result<SocketAddr, ComponentError> {
    let deadline = Instant::now() + STARTUP;
    loop {
        let text = std::fs::read(log).unwrap_or_default();
        let text = String::from_utf8_lossy(&text[(offset as usize).min(text.len())..]).into_owned();
        if let Some(addr) = text
            .lines()
            .find_map(|l| l.split_once("listening on http://").map(|(_, a)| a.trim()))
            .and_then(|a| a.parse().ok())
        {
            return Ok(addr);
        }
        if let Some(status) = child.try_wait().map_err(ComponentError::Io)? {
            return Err(ComponentError::Exited {
                name: name.to_string(),
                status,
                on: String::new(),
                log: log.to_path_buf(),
                tail: tail(&text),
            });
        }
        if Instant::now() > deadline {
            return Err(ComponentError::Late {
                name: name.to_string(),
                on: String::new(),
                startup: STARTUP,
                log: log.to_path_buf(),
                tail: tail(&text),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until something accepts connections on `addr` and, with a
/// `probe` (an HTTP path, and the time allowed instead of [`STARTUP`]),
/// answers a GET of the path below 500.
pub(super) async fn wait_accepting(
    child: &mut tokio::process::Child,
    log: &Path,
    addr: SocketAddr,
    name: &str,
    probe: Option<(Option<&str>, Duration)>,
) -> Result<SocketAddr, ComponentError> {
    let startup = probe.map(|(_, t)| t).unwrap_or(STARTUP);
    let deadline = Instant::now() + startup;
    loop {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            match probe.and_then(|(path, _)| path) {
                None => return Ok(addr),
                Some(path) if http_ready(addr, path).await => return Ok(addr),
                Some(_) => {}
            }
        }
        let text = || String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
        if let Some(status) = child.try_wait().map_err(ComponentError::Io)? {
            return Err(ComponentError::Exited {
                name: name.to_string(),
                status,
                on: on(addr, probe),
                log: log.to_path_buf(),
                tail: tail(&text()),
            });
        }
        if Instant::now() > deadline {
            return Err(ComponentError::Late {
                name: name.to_string(),
                on: on(addr, probe),
                startup,
                log: log.to_path_buf(),
                tail: tail(&text()),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// " on ADDR", and the probe that was not answered, for the error.
fn on(addr: SocketAddr, probe: Option<(Option<&str>, Duration)>) -> String {
    match probe.and_then(|(path, _)| path) {
        Some(path) => format!(" on {addr} (or answer GET {path} below 500)"),
        None => format!(" on {addr}"),
    }
}

/// Whether a GET of `path` on `addr` answers below 500 (within a second).
async fn http_ready(addr: SocketAddr, path: &str) -> bool {
    let client = reqwest::Client::new();
    let url = format!("http://{addr}{path}");
    let answer = client.get(url).timeout(Duration::from_secs(1)).send().await;
    answer.is_ok_and(|r| r.status().as_u16() < 500)
}

pub(super) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
