//! `RedisServer`: a `redis-server` of our own on a free loopback port.
//!
//! The embedded environment and the tests start one per run, configured with
//! the experiment's `maxmemory` and eviction policy, and stop it when done
//! (the process is killed when this value is dropped). Persistence is off: the
//! cache's contents are part of the experiment, not data to keep.

use crate::config::RedisPolicy;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why `redis-server` could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RedisStartError {
    #[error("finding a free port: {0}")]
    Port(std::io::Error),
    #[error("redis-server is not installed; install it with `apt-get install -y redis-server`")]
    NotInstalled,
    #[error("starting redis-server: {0}")]
    Spawn(std::io::Error),
    #[error("redis-server on port {port} did not answer within 5 s")]
    NoAnswer { port: u16 },
}

pub struct RedisServer {
    child: Child,
    pub port: u16,
}

/// The `redis-server` arguments that make a cache of the experiment, for a
/// process here and for a container alike: its memory limit and eviction
/// policy (the cache defect lives in these two) and no persistence.
pub fn cache_server_args(port: u16, maxmemory_mb: f64, policy: RedisPolicy) -> Vec<String> {
    let maxmemory = format!("{}", (maxmemory_mb * 1024.0 * 1024.0) as u64);
    let port = port.to_string();
    [
        "--port",
        &port,
        "--save",
        "",
        "--appendonly",
        "no",
        "--maxmemory",
        &maxmemory,
        "--maxmemory-policy",
        policy.as_redis(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl RedisServer {
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts `redis-server` and waits (up to 5 s) until it answers.
    pub fn start(maxmemory_mb: f64, policy: RedisPolicy) -> Result<RedisServer, RedisStartError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(RedisStartError::Port)?
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1"])
            .args(cache_server_args(port, maxmemory_mb, policy))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => RedisStartError::NotInstalled,
                _ => RedisStartError::Spawn(e),
            })?;
        let server = RedisServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                use std::io::{Read, Write};
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 16];
                if s.write_all(b"PING\r\n").is_ok()
                    && s.read(&mut buf)
                        .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
                {
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                return Err(RedisStartError::NoAnswer { port });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Is `redis-server` on this machine?
    pub fn available() -> bool {
        Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
