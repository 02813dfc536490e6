//! A real proxy as the gateway: Debian's `haproxy` or `nginx`, started by
//! the harness in front of the pools (`system.gateway.proxy`), with the
//! team's own configuration: as a child process on loopback in front of the
//! pool processes (embedded, here), or as a container of a local image in
//! front of the pool containers (`containers/proxy.rs`, which fills the file
//! and reads the counters with the same [`prepare`] and [`face`]).
//!
//! The configuration file carries placeholders the harness fills in:
//! `{{listen}}` (the address the load goes to), `{{pool:ZONE}}` (each
//! zone's pool, `IP:PORT`) and, for nginx, `{{access_log}}` (a `log_format`
//! and `access_log` with `$upstream_status`). HAProxy gets one frontend
//! appended, its built-in Prometheus exporter on another port; nginx runs
//! with `daemon off` and its pid and error log in its own folder (so the
//! file must not set `daemon` or `pid`).
//!
//! The proxy is the retry layer, so gateway amplification is read from it:
//! HAProxy's `haproxy_backend_http_requests_total` are its requests and
//! `haproxy_server_sessions_total` over every server its attempts (each try
//! is a stream handed to a server; `retry_warnings` counted four per
//! request at `retries 2` on HAProxy 2.6, so it is not used); nginx's access log has one line per request and one
//! `$upstream_status` entry per upstream try. The rest of the system is
//! read and driven through a *face*: a small HTTP server here whose
//! `/metrics` is a `sut --role gateway` control process's (every pool's
//! series, merged; it carries no load) with the gateway's request and
//! attempt counters replaced by the proxy's, and which forwards every other
//! path (the admin API) to that process, so the timeline, the residue
//! watcher, the sampler and Prometheus work as with the system's own
//! gateway.

use crate::base::causes::Causes;
use crate::env::components::{free_loopback_addr, ComponentError, ProcessSet};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use sut::config::ProxyConfig;
use sut::metric_names::{GATEWAY_ATTEMPTS_TOTAL, GATEWAY_REQUESTS_TOTAL};

/// Why a proxy gateway (HAProxy or nginx, as a process) or its face could
/// not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("reading {}: {}", .path.display(), Causes(.error))]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("`{0}` is not installed")]
    NotInstalled(String),
    #[error(transparent)]
    Component(#[from] ComponentError),
    #[error("writing {}: {}", .path.display(), Causes(.error))]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("starting {binary} with {}: {error}", .config.display())]
    Start {
        binary: String,
        config: PathBuf,
        error: Box<ComponentError>,
    },
    /// The face's listening socket.
    #[error("{}", Causes(.0))]
    Face(std::io::Error),
}

/// Where the proxy's request and attempt counts come from.
pub(crate) enum Source {
    /// HAProxy's Prometheus exporter.
    Exporter(SocketAddr),
    /// nginx's access log: how far it was read, and the totals so far.
    Log {
        path: PathBuf,
        read: Mutex<(u64, Counts)>,
    },
}

impl Source {
    /// Where the harness reads `proxy`'s counters: HAProxy's exporter at
    /// `exporter`, nginx's access log in `log_dir` (both as this process
    /// reaches them: a child's loopback port and folder, or a container's
    /// published port and bind-mounted folder).
    pub(crate) fn of(proxy: &ProxyConfig, exporter: SocketAddr, log_dir: &Path) -> Source {
        match proxy {
            ProxyConfig::Haproxy { .. } => Source::Exporter(exporter),
            ProxyConfig::Nginx { .. } => Source::Log {
                path: log_dir.join(ACCESS_LOG),
                read: Mutex::new((0, Counts::default())),
            },
        }
    }
}

/// The file nginx's access log is written to, in [`Placement::log_dir`].
const ACCESS_LOG: &str = "nginx-upstream.log";

/// Requests the proxy took and attempts it made upstream (retries included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Counts {
    pub requests: f64,
    pub attempts: f64,
}

/// A started proxy gateway: the load goes to `load_url`, everything else to
/// `face_url`.
pub(crate) struct ProxyGateway {
    pub load_url: String,
    pub face_url: String,
    face: tokio::task::JoinHandle<()>,
}

impl Drop for ProxyGateway {
    fn drop(&mut self) {
        self.face.abort();
    }
}

struct Face {
    control: String,
    source: Source,
    http: reqwest::Client,
}

/// Where a proxy runs, as the proxy itself sees it: a child process on
/// loopback with the variant's folder, or a container with its own ports
/// and paths. One [`prepare`] fills the team's file for either.
pub(crate) struct Placement {
    /// `{{listen}}`: where the load arrives.
    pub listen: SocketAddr,
    /// Where HAProxy's exporter frontend binds.
    pub exporter: SocketAddr,
    /// The proxy's folder: its filled file, and nginx's prefix and pid.
    pub dir: PathBuf,
    /// The folder nginx's access log goes to.
    pub log_dir: PathBuf,
    /// nginx's `error_log` (a file, or `stderr notice` in a container,
    /// whose log says when nginx is ready).
    pub error_log: String,
}

/// A proxy's filled configuration: the file (where the proxy reads it), its
/// text, and the proxy's command line.
pub(crate) struct Prepared {
    pub file: PathBuf,
    pub text: String,
    pub args: Vec<String>,
}

/// The team's file of `proxy` with the placeholders filled for `pools` at
/// `place`, and the proxy's command line.
pub(crate) fn prepare(
    proxy: &ProxyConfig,
    pools: &[(String, SocketAddr)],
    place: &Placement,
) -> Result<Prepared, ProxyError> {
    let text = std::fs::read_to_string(proxy.config()).map_err(|error| ProxyError::Read {
        path: proxy.config().to_path_buf(),
        error,
    })?;
    let text = fill(&text, place.listen, pools);
    Ok(match proxy {
        ProxyConfig::Haproxy { .. } => haproxy(&text, place),
        ProxyConfig::Nginx { .. } => nginx(&text, place),
    })
}

/// Starts the proxy (component `gateway`) in front of `pools` as a child
/// process, and the face in front of the control process at `control`.
pub(crate) async fn start(
    set: &ProcessSet,
    proxy: &ProxyConfig,
    pools: &[(String, SocketAddr)],
    control: SocketAddr,
) -> Result<ProxyGateway, ProxyError> {
    let binary = crate::experiment::proxy_binary(proxy);
    let program = crate::experiment::which(binary)
        .ok_or_else(|| ProxyError::NotInstalled(binary.to_string()))?;
    let dir = set.dir();
    let place = Placement {
        listen: free_loopback_addr()?,
        exporter: free_loopback_addr()?,
        dir: dir.to_path_buf(),
        log_dir: dir.to_path_buf(),
        error_log: dir.join("nginx-error.log").display().to_string(),
    };
    let p = prepare(proxy, pools, &place)?;
    std::fs::write(&p.file, &p.text).map_err(|error| ProxyError::Write {
        path: p.file.clone(),
        error,
    })?;
    set.start_listening_on("gateway", &program, p.args, place.listen)
        .await
        .map_err(|error| ProxyError::Start {
            binary: binary.to_string(),
            config: proxy.config().to_path_buf(),
            error: Box::new(error),
        })?;
    let source = Source::of(proxy, place.exporter, dir);
    face(control, source, format!("http://{}", place.listen)).await
}

/// Serves the face on a fresh loopback port: `/metrics` from the control
/// process at `control` with the gateway counters read from `source`, every
/// other path forwarded to the control process; the load goes to `load_url`.
pub(crate) async fn face(
    control: SocketAddr,
    source: Source,
    load_url: String,
) -> Result<ProxyGateway, ProxyError> {
    let face = Arc::new(Face {
        control: format!("http://{control}"),
        source,
        http: reqwest::Client::new(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(ProxyError::Face)?;
    let face_addr = listener.local_addr().map_err(ProxyError::Face)?;
    let app = axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .fallback(forward)
        .with_state(face);
    let face = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(ProxyGateway {
        load_url,
        face_url: format!("http://{face_addr}"),
        face,
    })
}

/// The placeholders filled: `{{listen}}` and every `{{pool:ZONE}}`.
pub(crate) fn fill(text: &str, listen: SocketAddr, pools: &[(String, SocketAddr)]) -> String {
    let mut pairs = vec![("{{listen}}".to_string(), listen.to_string())];
    pairs.extend(
        pools
            .iter()
            .map(|(zone, addr)| (format!("{{{{pool:{zone}}}}}"), addr.to_string())),
    );
    replace_live(text, &pairs)
}

/// `text` with each `(from, to)` replaced outside `#` comment lines (both
/// proxies' comment syntax), so a config may mention its placeholders.
fn replace_live(text: &str, pairs: &[(String, String)]) -> String {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with('#') {
                return line.to_string();
            }
            pairs
                .iter()
                .fold(line.to_string(), |l, (from, to)| l.replace(from, to))
        })
        .flat_map(|l| [l, "\n".to_string()])
        .collect()
}

/// HAProxy's file (the exporter frontend appended) and command line.
fn haproxy(text: &str, place: &Placement) -> Prepared {
    let metrics = place.exporter;
    let text = format!(
        "{text}\n# Added by the harness: gateway amplification is read here.\nfrontend harness-metrics\n    mode http\n    bind {metrics}\n    http-request use-service prometheus-exporter\n"
    );
    let file = place.dir.join("haproxy.cfg");
    let args = vec!["-f".into(), file.display().to_string(), "-db".into()];
    Prepared { file, text, args }
}

/// nginx's file (`{{access_log}}` filled) and command line.
fn nginx(text: &str, place: &Placement) -> Prepared {
    let log = place.log_dir.join(ACCESS_LOG);
    let text = replace_live(
        text,
        &[(
            "{{access_log}}".to_string(),
            format!(
                "log_format harness_upstream '$status|$upstream_status';\n    access_log {} harness_upstream;",
                log.display()
            ),
        )],
    );
    let file = place.dir.join("nginx.conf");
    let d = place.dir.display();
    let args = vec![
        "-c".into(),
        file.display().to_string(),
        "-p".into(),
        format!("{d}/"),
        "-g".into(),
        format!(
            "daemon off; pid {d}/nginx.pid; error_log {};",
            place.error_log
        ),
    ];
    Prepared { file, text, args }
}

/// Requests and attempts in HAProxy's exporter text.
pub(crate) fn haproxy_counts(text: &str) -> Counts {
    let s = crate::observe::scrape::parse(text);
    Counts {
        requests: s.sum("haproxy_backend_http_requests_total", &[]),
        attempts: s.sum("haproxy_server_sessions_total", &[]),
    }
}

/// Requests and attempts in lines of the nginx log (`status|upstream
/// statuses`, tries separated by `,` and, across internal redirects, `:`).
pub(crate) fn nginx_counts(lines: &str) -> Counts {
    let mut c = Counts::default();
    for line in lines.lines() {
        let Some((_, upstream)) = line.split_once('|') else {
            continue;
        };
        c.requests += 1.0;
        c.attempts += upstream
            .split([',', ':'])
            .filter(|s| !s.trim().is_empty() && s.trim() != "-")
            .count() as f64;
    }
    c
}

impl Face {
    async fn counts(&self) -> Result<Counts, reqwest::Error> {
        match &self.source {
            Source::Exporter(addr) => {
                let text = self
                    .http
                    .get(format!("http://{addr}/metrics"))
                    .timeout(std::time::Duration::from_secs(2))
                    .send()
                    .await?
                    .text()
                    .await?;
                Ok(haproxy_counts(&text))
            }
            Source::Log { path, read } => {
                let bytes = std::fs::read(path).unwrap_or_default();
                let mut r = read.lock().expect("log lock");
                let start = (r.0 as usize).min(bytes.len());
                // Whole lines only: a line being written is read next time.
                let end = bytes[start..]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(start, |i| start + i + 1);
                let more = nginx_counts(&String::from_utf8_lossy(&bytes[start..end]));
                r.0 = end as u64;
                r.1.requests += more.requests;
                r.1.attempts += more.attempts;
                Ok(r.1)
            }
        }
    }
}

/// The control process's `/metrics`, the gateway counters the proxy's.
async fn metrics(State(face): State<Arc<Face>>) -> Response {
    let control = face
        .http
        .get(format!("{}/metrics", face.control))
        .timeout(std::time::Duration::from_secs(2))
        .send()
        .await;
    let text = match control {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let counts = match face.counts().await {
        Ok(c) => c,
        Err(e) => {
            let why = format!("reading the proxy's counters: {e}");
            return (axum::http::StatusCode::BAD_GATEWAY, why).into_response();
        }
    };
    replace_gateway_counters(&text, counts).into_response()
}

/// `text` without its gateway request and attempt series, with the proxy's.
pub(crate) fn replace_gateway_counters(text: &str, c: Counts) -> String {
    let names = [GATEWAY_REQUESTS_TOTAL.name, GATEWAY_ATTEMPTS_TOTAL.name];
    let mut out: String = text
        .lines()
        .filter(|l| {
            let name = l
                .trim_start_matches("# HELP ")
                .trim_start_matches("# TYPE ")
                .split(['{', ' '])
                .next()
                .unwrap_or("");
            !names.contains(&name)
        })
        .flat_map(|l| [l, "\n"])
        .collect();
    for (name, v, what) in [
        (names[0], c.requests, "Requests the proxy gateway took."),
        (
            names[1],
            c.attempts,
            "Attempts the proxy gateway made upstream, retries included.",
        ),
    ] {
        out.push_str(&format!(
            "# HELP {name} {what}\n# TYPE {name} counter\n{name} {v}\n"
        ));
    }
    out
}

/// Every other path, forwarded to the control process as it came.
async fn forward(State(face): State<Arc<Face>>, req: axum::extract::Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return (axum::http::StatusCode::BAD_REQUEST, "body too large").into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let mut r = face
        .http
        .request(parts.method, format!("{}{path}", face.control))
        .timeout(std::time::Duration::from_secs(10))
        .body(body);
    for h in [
        axum::http::header::AUTHORIZATION,
        axum::http::header::CONTENT_TYPE,
    ] {
        if let Some(v) = parts.headers.get(&h) {
            r = r.header(h, v);
        }
    }
    match r.send().await {
        Ok(resp) => {
            let status = resp.status();
            let ct = resp
                .headers()
                .get(axum::http::header::CONTENT_TYPE)
                .cloned();
            let bytes = resp.bytes().await.unwrap_or_default();
            let mut out = (status, bytes).into_response();
            if let Some(ct) = ct {
                out.headers_mut()
                    .insert(axum::http::header::CONTENT_TYPE, ct);
            }
            out
        }
        Err(e) => (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haproxy_attempts_are_streams_handed_to_servers() {
        let c = haproxy_counts(
            "haproxy_backend_http_requests_total{proxy=\"pools\"} 5\nhaproxy_backend_retry_warnings_total{proxy=\"pools\"} 15\nhaproxy_server_sessions_total{proxy=\"pools\",server=\"a\"} 12\nhaproxy_server_sessions_total{proxy=\"pools\",server=\"b\"} 8\n",
        );
        assert_eq!(
            c,
            Counts {
                requests: 5.0,
                attempts: 20.0
            }
        );
    }

    #[test]
    fn nginx_counts_each_upstream_try() {
        let c = nginx_counts("200|200\n503|503, 503, 503\n200|504, 200 : 200\n502|-\n");
        assert_eq!(c.requests, 4.0);
        assert_eq!(c.attempts, 1.0 + 3.0 + 3.0);
    }

    #[test]
    fn gateway_counters_are_replaced() {
        let text = "# HELP sut_gateway_attempts_total x\n# TYPE sut_gateway_attempts_total counter\nsut_gateway_attempts_total{process=\"a\"} 9\nsut_pool_slots{zone=\"a\"} 4\n";
        let out = replace_gateway_counters(
            text,
            Counts {
                requests: 2.0,
                attempts: 3.0,
            },
        );
        let s = crate::observe::scrape::parse(&out);
        assert_eq!(s.sum("sut_gateway_attempts_total", &[]), 3.0);
        assert_eq!(s.sum("sut_gateway_requests_total", &[]), 2.0);
        assert_eq!(s.sum("sut_pool_slots", &[]), 4.0);
    }

    #[test]
    fn placeholders_are_filled() {
        let pools = vec![("az1".to_string(), "127.0.0.1:9001".parse().unwrap())];
        let out = fill(
            "bind {{listen}}\nserver a {{pool:az1}}\n",
            "127.0.0.1:80".parse().unwrap(),
            &pools,
        );
        assert_eq!(out, "bind 127.0.0.1:80\nserver a 127.0.0.1:9001\n");
    }
}
