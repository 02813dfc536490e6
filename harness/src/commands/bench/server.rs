//! A fixed-answer HTTP/1.1 responder on 127.0.0.1:0: the "trivial endpoint".
//!
//! The benchmarks need an endpoint that costs next to nothing, so the number
//! measured is the client's (the harness's, or wrk's) and not the server's.
//! axum is not a dependency of the harness library, so this is a few dozen
//! lines of tokio: read requests (keep-alive, pipelining, `Content-Length`
//! bodies), answer each with the same prepared bytes. Without routing or
//! header maps it is *faster* than a bare axum handler, which makes it the
//! stricter baseline. It counts connections and requests, so the harness's
//! connection count can be handed to wrk.

use super::error::during;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Largest request head or body accepted; beyond it the connection is closed.
const MAX_REQUEST: usize = 1 << 20;

/// A running responder; dropping it stops accepting and closes its connections.
pub struct FixedServer {
    pub addr: SocketAddr,
    stats: Arc<Stats>,
    stop: watch::Sender<bool>,
}

#[derive(Default)]
struct Stats {
    connections: AtomicU64,
    requests: AtomicU64,
}

impl FixedServer {
    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.stats.connections.load(Ordering::Relaxed)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::Relaxed)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for FixedServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// The bytes of one complete response: status line, headers, body.
pub fn response(
    status: &str,
    headers: &[(&str, &str)],
    content_type: &str,
    body: &[u8],
) -> Arc<[u8]> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes.into()
}

/// Starts answering every request with `reply`; must run inside a tokio runtime.
pub async fn start(reply: Arc<[u8]>) -> Result<FixedServer, super::BenchError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(during("binding the benchmark endpoint on 127.0.0.1:0"))?;
    let addr = listener.local_addr().map_err(during("local address"))?;
    let (stop, stopped) = watch::channel(false);
    let stats = Arc::new(Stats::default());
    let st = stats.clone();
    tokio::spawn(async move {
        let mut stopped_accept = stopped.clone();
        loop {
            tokio::select! {
                r = listener.accept() => {
                    let Ok((sock, _)) = r else { continue };
                    st.connections.fetch_add(1, Ordering::Relaxed);
                    let (reply, st, mut stopped) = (reply.clone(), st.clone(), stopped.clone());
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = serve(sock, reply, &st) => {},
                            _ = stopped.wait_for(|s| *s) => {},
                        }
                    });
                }
                _ = stopped_accept.wait_for(|s| *s) => break,
            }
        }
    });
    Ok(FixedServer { addr, stats, stop })
}

async fn serve(mut sock: TcpStream, reply: Arc<[u8]>, stats: &Stats) {
    let _ = sock.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut out: Vec<u8> = Vec::with_capacity(reply.len());
    loop {
        let mut used = 0;
        while let Some(n) = request_len(&buf[used..]) {
            used += n;
            out.extend_from_slice(&reply);
            stats.requests.fetch_add(1, Ordering::Relaxed);
        }
        buf.drain(..used);
        if !out.is_empty() {
            if sock.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if buf.len() > MAX_REQUEST {
            return;
        }
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Length of the first complete request in `buf` (head and `Content-Length`
/// body), or None while it is incomplete.
pub(crate) fn request_len(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let body: usize = std::str::from_utf8(&buf[..head])
        .ok()?
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    (buf.len() >= head + body).then_some(head + body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_length_counts_head_and_body() {
        let get = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(request_len(get), Some(get.len()));
        let post = b"POST /v1/extract HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(request_len(post), Some(post.len()));
        assert_eq!(
            request_len(&post[..post.len() - 1]),
            None,
            "body incomplete"
        );
        assert_eq!(
            request_len(b"GET / HTTP/1.1\r\nhost"),
            None,
            "head incomplete"
        );
        let two = [&post[..], &get[..]].concat();
        assert_eq!(request_len(&two), Some(post.len()), "pipelined: first only");
    }

    #[tokio::test]
    async fn answers_each_request_with_the_fixed_reply() {
        let reply = response(
            "503 Service Unavailable",
            &[("retry-after-ms", "1")],
            "text/plain",
            b"busy",
        );
        let srv = start(reply).await.unwrap();
        let client = reqwest::Client::new();
        for _ in 0..3 {
            let r = client
                .post(srv.url("/v1/extract"))
                .body("{}")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 503);
            assert_eq!(r.headers()["retry-after-ms"], "1");
            assert_eq!(r.text().await.unwrap(), "busy");
        }
        assert_eq!(srv.requests(), 3);
        assert_eq!(srv.connections(), 1, "keep-alive reused the connection");
    }
}
