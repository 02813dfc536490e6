//! The load path's HTTP/1.1 client: hyper's `client::conn::http1`
//! connections in a pool bounded by the load's in-flight cap.
//!
//! A general-purpose client costs several times wrk's CPU per request and
//! may open more connections than requests in flight; a harness that
//! expensive takes capacity from the system under test it shares the
//! machine with, and caps the overload it can reproduce (BENCHMARKS.md).
//! This client does only what an attempt needs:
//!
//! - the target is parsed once (`http://host:port`); requests carry a path,
//!   and bodies are `Bytes` serialised once per document by the caller;
//! - at most `max_connections` connections exist at a time: each
//!   connection's task holds a slot until the connection ends, and a request
//!   that finds no idle connection and no free slot waits for one (inside
//!   its timeout);
//! - every answer's body is read to its end before the connection goes back
//!   to the pool (an unread error body would cost a new connection per
//!   attempt in a retry storm);
//! - a request that a pooled connection closed before taking it (the server
//!   ended an idle keep-alive connection) is sent once more on a fresh
//!   connection, since it never reached the server.
//!
//! hyper does the HTTP; nothing here parses HTTP by hand. Only `http://` is
//! supported (no TLS).

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST, LOCATION, RETRY_AFTER};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// An answer's body larger than this is a broken answer (the service's are
/// a few hundred bytes); it bounds the memory a hostile target can take.
const MAX_BODY: usize = 16 << 20;

/// The system's millisecond Retry-After, as a header name built once: a
/// lookup by `&str` parses the name again on every answer.
const RETRY_AFTER_MS: HeaderName = HeaderName::from_static(sut::RETRY_AFTER_MS);

/// Why a target URL cannot be driven by this client.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("{0:?}: only http://host:port targets are supported (no TLS in the load path)")]
    Scheme(String),
    #[error("{0:?}: not a URL with a host")]
    Invalid(String),
}

/// A request that got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswer {
    /// The attempt's timeout passed first (waiting for a connection,
    /// connecting, sending, or waiting for the answer's head).
    Timeout,
    /// Connection refused or reset, a broken answer head.
    Transport,
}

/// The body of an answer, or why it could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    Timeout,
    Broken,
}

/// What an attempt needs from an answer: its status, the few headers the
/// clients act on, and the whole body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// `Retry-After-Ms`, else `Retry-After` in seconds.
    pub retry_after: Option<Duration>,
    pub location: Option<String>,
    pub body: Result<Bytes, BodyError>,
}

type Conn = SendRequest<Full<Bytes>>;

/// Where a new connection goes.
enum Dial {
    /// `host:port` over TCP, resolved at each connect (connections are few).
    Tcp(String),
    /// A pipe to a system served in this runtime (virtual time: `in_process.rs`).
    InProcess(crate::net::in_process::InProcess),
}

/// A bounded pool of HTTP/1.1 connections to one `http://host:port`, or to
/// a system in this process.
pub struct HttpClient {
    dial: Dial,
    host: HeaderValue,
    idle: Mutex<Vec<Conn>>,
    /// One permit per connection that may exist.
    slots: Arc<Semaphore>,
    /// Woken when a connection goes idle or a slot frees.
    freed: Arc<Notify>,
    opened: AtomicU64,
}

impl HttpClient {
    /// A client for `base_url` (`http://host:port`, any path ignored) with
    /// at most `max_connections` connections open at a time.
    pub fn new(base_url: &str, max_connections: usize) -> Result<HttpClient, UrlError> {
        let uri: Uri = base_url
            .parse()
            .map_err(|_| UrlError::Invalid(base_url.to_string()))?;
        if uri.scheme_str() != Some("http") {
            return Err(UrlError::Scheme(base_url.to_string()));
        }
        let host = uri
            .host()
            .ok_or_else(|| UrlError::Invalid(base_url.to_string()))?;
        let port = uri.port_u16().unwrap_or(80);
        let authority = match uri.authority() {
            Some(a) => a.as_str().to_string(),
            None => return Err(UrlError::Invalid(base_url.to_string())),
        };
        let host_header = HeaderValue::from_str(&authority)
            .map_err(|_| UrlError::Invalid(base_url.to_string()))?;
        // `[::1]` keeps its brackets for connect's "host:port" parsing.
        let authority = format!("{host}:{port}");
        Ok(Self::with_dial(
            Dial::Tcp(authority),
            host_header,
            max_connections,
        ))
    }

    /// A client of a system served in this runtime, over in-memory pipes,
    /// with at most `max_connections` connections open at a time.
    pub(crate) fn in_process(
        target: crate::net::in_process::InProcess,
        max_connections: usize,
    ) -> HttpClient {
        Self::with_dial(
            Dial::InProcess(target),
            HeaderValue::from_static("in-process"),
            max_connections,
        )
    }

    fn with_dial(dial: Dial, host: HeaderValue, max_connections: usize) -> HttpClient {
        let slots = max_connections.clamp(1, Semaphore::MAX_PERMITS);
        HttpClient {
            dial,
            host,
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(slots)),
            freed: Arc::new(Notify::new()),
            opened: AtomicU64::new(0),
        }
    }

    /// Connections opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Sends one request and reads its answer, all within `timeout`. A POST
    /// carries `body` as `application/json`; a GET sends no body.
    pub async fn request(
        &self,
        method: Method,
        path: Uri,
        body: Option<Bytes>,
        timeout: Duration,
    ) -> Result<Answer, NoAnswer> {
        let has_body = body.is_some();
        let mut req = Request::new(Full::new(body.unwrap_or_default()));
        *req.method_mut() = method;
        *req.uri_mut() = path;
        if has_body {
            req.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        self.send_request(req, timeout).await
    }

    /// Sends a request built by the caller (a generic HTTP workload's: its
    /// method, path, headers and body) and reads its answer, all within
    /// `timeout`; its `Host` is the target's.
    pub async fn send_request(
        &self,
        mut req: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<Answer, NoAnswer> {
        let deadline = Instant::now() + timeout;
        req.headers_mut().insert(HOST, self.host.clone());
        // One timer for the whole attempt (head and body), not one per
        // phase: each timer is registered in and removed from tokio's wheel.
        let expired = tokio::time::sleep_until(deadline);
        tokio::pin!(expired);
        let (resp, conn) = tokio::select! {
            biased;
            r = self.send(req) => match r {
                Ok(r) => r,
                Err(()) => return Err(NoAnswer::Transport),
            },
            _ = &mut expired => return Err(NoAnswer::Timeout),
        };
        let status = resp.status().as_u16();
        let h = resp.headers();
        let retry_after = retry_after(
            h.get(&RETRY_AFTER_MS).and_then(|v| v.to_str().ok()),
            h.get(RETRY_AFTER).and_then(|v| v.to_str().ok()),
        );
        let location = h
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = tokio::select! {
            biased;
            r = read_body(resp.into_body()) => match r {
                Err(()) => Err(BodyError::Broken),
                Ok(b) => {
                    // Read to its end: the connection can serve the next request.
                    self.put_back(conn);
                    Ok(b)
                }
            },
            _ = &mut expired => Err(BodyError::Timeout),
        };
        Ok(Answer {
            status,
            retry_after,
            location,
            body,
        })
    }

    /// Sends on an idle connection or a new one; the answer's head and the
    /// connection it came on (to be put back once its body is read).
    async fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Result<(hyper::Response<hyper::body::Incoming>, Conn), ()> {
        let mut req = req;
        let mut fresh_tries = 0;
        loop {
            let (mut conn, fresh) = self.checkout().await?;
            match conn.try_send_request(req).await {
                Ok(resp) => return Ok((resp, conn)),
                Err(mut e) => match e.take_message() {
                    // Never written: the connection had closed under us.
                    Some(back) if !fresh || fresh_tries == 0 => {
                        if fresh {
                            fresh_tries += 1;
                        }
                        req = back;
                    }
                    _ => return Err(()),
                },
            }
        }
    }

    /// A ready connection: an idle one, else a new one in a free slot, else
    /// the first that frees. `true` with a new connection.
    async fn checkout(&self) -> Result<(Conn, bool), ()> {
        // Most attempts find an idle connection: take it without joining
        // the waiters' list (a lock to join and another to leave).
        if let Some(c) = self.take_ready().await {
            return Ok((c, false));
        }
        loop {
            // Registered before looking, so a connection put back or a slot
            // freed in between wakes this waiter.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(c) = self.take_ready().await {
                return Ok((c, false));
            }
            if let Ok(slot) = self.slots.clone().try_acquire_owned() {
                // Boxed: connecting (resolve, TCP connect, handshake) is a
                // large future and happens at most once per slot; inline it
                // would make every attempt's future, and every journey's
                // task, that much larger to create and copy.
                return Box::pin(self.connect(slot)).await.map(|c| (c, true));
            }
            freed.await;
        }
    }

    /// An idle connection still able to send; closed ones are dropped.
    async fn take_ready(&self) -> Option<Conn> {
        while let Some(mut c) = self.pop_idle() {
            if c.ready().await.is_ok() {
                return Some(c);
            }
        }
        None
    }

    fn pop_idle(&self) -> Option<Conn> {
        self.idle.lock().expect("idle connections lock").pop()
    }

    fn put_back(&self, conn: Conn) {
        if conn.is_closed() {
            return;
        }
        self.idle.lock().expect("idle connections lock").push(conn);
        self.freed.notify_one();
    }

    /// Opens a connection that holds `slot` for as long as it lives.
    async fn connect(&self, slot: OwnedSemaphorePermit) -> Result<Conn, ()> {
        let failed = |slot: OwnedSemaphorePermit| -> Result<Conn, ()> {
            // The slot first, so the caller woken can take it.
            drop(slot);
            self.freed.notify_one();
            Err(())
        };
        let stream = match &self.dial {
            Dial::Tcp(authority) => match tokio::net::TcpStream::connect(authority).await {
                Ok(s) => s,
                Err(_) => return failed(slot),
            },
            Dial::InProcess(target) => {
                return self.handshake(target.connect(), slot).await.or_else(failed)
            }
        };
        let _ = stream.set_nodelay(true);
        self.handshake(stream, slot).await.or_else(failed)
    }

    /// HTTP/1.1 on `io`, its connection task holding `slot` until it ends;
    /// the slot back when the handshake failed.
    async fn handshake<T>(
        &self,
        io: T,
        slot: OwnedSemaphorePermit,
    ) -> Result<Conn, OwnedSemaphorePermit>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(io)).await {
            Ok(c) => c,
            Err(_) => return Err(slot),
        };
        self.opened.fetch_add(1, Ordering::Relaxed);
        let freed = self.freed.clone();
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
            freed.notify_one();
        });
        Ok(sender)
    }
}

/// An answer's whole body, at most [`MAX_BODY`] bytes. The service's answers
/// arrive in one data frame, kept as it is; `BodyExt::collect` put every
/// frame in a fresh queue and a map of trailers first, an allocation and its
/// growth per attempt (measured with callgrind; BENCHMARKS.md, step 6).
async fn read_body(mut body: hyper::body::Incoming) -> Result<Bytes, ()> {
    let mut whole = Bytes::new();
    // Only an answer in several frames is copied into one buffer.
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| ())?.into_data() else {
            continue; // trailers: not part of the body
        };
        let so_far = joined.as_ref().map_or(whole.len(), BytesMut::len);
        if so_far + data.len() > MAX_BODY {
            return Err(());
        }
        if let Some(j) = joined.as_mut() {
            j.extend_from_slice(&data);
        } else if whole.is_empty() {
            whole = data;
        } else {
            let mut j = BytesMut::with_capacity(whole.len() + data.len());
            j.extend_from_slice(&whole);
            j.extend_from_slice(&data);
            joined = Some(j);
        }
    }
    Ok(joined.map_or(whole, BytesMut::freeze))
}

/// The Retry-After of an answer: the system's millisecond header, else the
/// standard one in whole seconds.
pub fn retry_after(ms: Option<&str>, secs: Option<&str>) -> Option<Duration> {
    let ms = ms
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis);
    let secs = secs
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_secs);
    ms.or(secs)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn only_plain_http_targets_are_accepted() {
        assert!(HttpClient::new("http://127.0.0.1:8080", 4).is_ok());
        assert!(HttpClient::new("http://localhost", 4).is_ok());
        assert!(matches!(
            HttpClient::new("https://127.0.0.1:8443", 4),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            HttpClient::new("not a url", 4),
            Err(UrlError::Invalid(_)) | Err(UrlError::Scheme(_))
        ));
    }

    #[test]
    fn the_millisecond_header_wins() {
        assert_eq!(
            retry_after(Some("250"), Some("1")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(Some("x"), None), None);
    }

    /// A server that answers every request on a connection with a 503 and a
    /// body, and counts the connections it accepted.
    async fn busy_server() -> (String, Arc<AtomicU64>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let accepted = Arc::new(AtomicU64::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                count.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut pending = Vec::new();
                    loop {
                        let n = match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        pending.extend_from_slice(&buf[..n]);
                        // Requests end with their (small, known) body after the head.
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&pending[..end]).to_lowercase();
                            let len = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if pending.len() < end + 4 + len {
                                break;
                            }
                            pending.drain(..end + 4 + len);
                            let reply = b"HTTP/1.1 503 Service Unavailable\r\nretry-after-ms: 7\r\ncontent-length: 4\r\n\r\nbusy";
                            if s.write_all(reply).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    /// A listener that accepts connections and never answers: its URL.
    pub(crate) async fn silent_server() -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move {
            let mut keep = Vec::new();
            loop {
                keep.push(l.accept().await.unwrap());
            }
        });
        url
    }

    #[tokio::test]
    async fn error_bodies_are_read_and_connections_reused_within_the_bound() {
        let (url, accepted) = busy_server().await;
        let client = Arc::new(HttpClient::new(&url, 4).unwrap());
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..16 {
            let c = client.clone();
            tasks.spawn(async move {
                for _ in 0..20 {
                    let a = c
                        .request(
                            Method::POST,
                            Uri::from_static("/v1/extract"),
                            Some(Bytes::from_static(b"{}")),
                            Duration::from_secs(5),
                        )
                        .await
                        .expect("answered");
                    assert_eq!(a.status, 503);
                    assert_eq!(a.retry_after, Some(Duration::from_millis(7)));
                    assert_eq!(a.body.unwrap(), Bytes::from_static(b"busy"));
                }
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
        // 16 concurrent callers, 320 requests, never more than 4 connections.
        assert!(
            client.connections_opened() <= 4,
            "{}",
            client.connections_opened()
        );
        assert_eq!(
            accepted.load(Ordering::Relaxed),
            client.connections_opened()
        );
    }

    /// The answer to one GET from a server that answers it with `reply`
    /// (raw bytes on the wire) and closes.
    async fn answer_to(reply: &'static [u8]) -> Answer {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(reply).await;
        });
        let client = HttpClient::new(&url, 1).unwrap();
        let path = Uri::from_static("/");
        let five_s = Duration::from_secs(5);
        client
            .request(Method::GET, path, None, five_s)
            .await
            .expect("answered")
    }

    #[tokio::test]
    async fn a_body_in_several_chunks_is_read_whole_and_trailers_are_not_body() {
        let a = answer_to(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
            3\r\nabc\r\n4\r\ndefg\r\n2\r\nhi\r\n0\r\nx-check: 1\r\n\r\n",
        )
        .await;
        assert_eq!(a.status, 200);
        assert_eq!(a.body.unwrap(), Bytes::from_static(b"abcdefghi"));
    }

    #[tokio::test]
    async fn a_body_cut_short_is_broken() {
        let a = answer_to(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc").await;
        assert_eq!(a.body, Err(BodyError::Broken));
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_transport_failure_and_a_silent_one_times_out() {
        // A port nothing listens on.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        drop(l);
        let c = HttpClient::new(&url, 2).unwrap();
        let r = c
            .request(
                Method::GET,
                Uri::from_static("/"),
                None,
                Duration::from_secs(2),
            )
            .await;
        assert_eq!(r.unwrap_err(), NoAnswer::Transport);
        let url = silent_server().await;
        let c = HttpClient::new(&url, 2).unwrap();
        let r = c
            .request(
                Method::GET,
                Uri::from_static("/"),
                None,
                Duration::from_millis(200),
            )
            .await;
        assert_eq!(r.unwrap_err(), NoAnswer::Timeout);
    }
}
