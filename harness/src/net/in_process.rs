//! The system under test reached in process, without sockets: the network
//! of a run on the virtual clock (`--clock virtual`, `clock.rs`).
//!
//! tokio's paused clock advances whenever every task is idle. Over real
//! loopback sockets, bytes in the kernel leave every task idle, so the clock
//! jumps to the next timer (a client's timeout, a deadline) while an answer
//! is on its way, and the order in which the kernel reports sockets ready is
//! not the seed's. Here the load path's connections are `tokio::io::duplex`
//! pipes: [`InProcess::connect`] hands the client one end and serves the
//! other with hyper's HTTP/1.1 server and the system's axum router, so the
//! load path keeps the same client (`http.rs`), the same HTTP/1 framing,
//! keep-alive, and a dropped connection that the server sees end, exactly
//! as over TCP; only the wire is a buffer in memory whose wake-ups are
//! tokio's own. The control plane (admin commands, /metrics, the work
//! query: `system_client.rs`) calls the router as a tower `Service`
//! ([`InProcess::call`]): one request, no connection to keep.
//!
//! The admin API answers loopback peers only; every request here carries a
//! loopback peer address, as the embedded environment's socket would.

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use tower::ServiceExt;

/// Bytes a pipe holds in each direction before its writer waits: well
/// above any request or answer of the service (a few hundred bytes).
const PIPE_BYTES: usize = 64 << 10;

/// The peer address every in-process request carries (a loopback client).
pub(super) const PEER: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 1);

/// A system's router, served in this runtime; cheap to clone.
#[derive(Clone)]
pub(crate) struct InProcess {
    router: Router,
}

impl InProcess {
    pub(crate) fn new(router: Router) -> InProcess {
        InProcess { router }
    }

    /// A new connection to the system: the client's end of a pipe whose
    /// other end a task of this runtime serves with hyper, until either
    /// side closes it.
    pub(crate) fn connect(&self) -> tokio::io::DuplexStream {
        let (client, server) = tokio::io::duplex(PIPE_BYTES);
        let router = self.router.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let mut req = req.map(axum::body::Body::new);
            req.extensions_mut().insert(ConnectInfo(PEER));
            router.clone().oneshot(req)
        });
        tokio::spawn(async move {
            // A connection's end, clean or not, is the client's business,
            // as with a socket the client closed.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(server), service)
                .await;
        });
        client
    }

    /// One request handled by the router, as a tower `Service`.
    pub(crate) async fn call(
        &self,
        mut req: axum::http::Request<axum::body::Body>,
    ) -> axum::response::Response {
        req.extensions_mut().insert(ConnectInfo(PEER));
        match self.router.clone().oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use axum::routing::get;

    pub(in crate::net) fn echo_peer() -> InProcess {
        InProcess::new(Router::new().route(
            "/peer",
            get(|ConnectInfo(p): ConnectInfo<SocketAddr>| async move { p.to_string() }),
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn a_service_call_reaches_the_router() {
        let r = echo_peer()
            .call(
                axum::http::Request::get("/peer")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status(), 200);
    }
}
