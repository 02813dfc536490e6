//! The HTTP face of the system: `POST /v1/extract`, `GET /metrics`, the admin
//! API, and in the pool role `POST /v1/pool/extract` (a gateway's hop to this
//! zone's pool: the pool's `Reply` as JSON, no gateway retries on this side).
//!
//! Each extraction runs in its own task, detached from the connection: a client
//! that times out and disconnects does not cancel the work, just as the
//! incident's services kept working for callers that had given up. The number
//! of requests handled at once is bounded (`max_concurrent_requests`), and
//! `run` stops accepting on the shutdown signal and drains what is in flight.

use crate::admin::{AdminCommand, AdminError, WorkQuery, WORK_PATH};
use crate::api::{
    ErrorBody, ExtractRequest, ExtractResponse, JobAccepted, JobPending, RejectReason, Reply,
    EXTRACT_PATH, JOBS_PATH,
};
use crate::jobs::JobView;
use crate::retry_after::RETRY_AFTER_MS;
use crate::system::System;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// The router of the service (exposed for in-process tests).
pub fn router(system: Arc<System>) -> Router {
    let limit = system.config.max_concurrent_requests;
    Router::new()
        .route(EXTRACT_PATH, post(extract))
        .route("/v1/pool/extract", post(pool_extract))
        .route(JOBS_PATH, post(submit_job))
        .route(&format!("{JOBS_PATH}/{{id}}"), get(read_job))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/admin/command", post(admin_command))
        .route("/admin/info", get(admin_info))
        .route(WORK_PATH, post(admin_work))
        .layer(tower::limit::ConcurrencyLimitLayer::new(limit))
        .with_state(system)
}

/// Serves until `shutdown` resolves, then drains in-flight requests.
pub async fn run(
    listener: TcpListener,
    system: Arc<System>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(system.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let r = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    system.shutdown();
    r
}

/// Parses and checks an extraction request body; a 400 with why, else.
fn parse_request(body: &[u8]) -> Result<ExtractRequest, (StatusCode, String)> {
    let req: ExtractRequest = serde_json::from_slice(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid request: {e}\n")))?;
    if req.pages == 0 || req.tenant.is_empty() {
        return Err((
            StatusCode::BAD_REQUEST,
            "pages must be >= 1 and tenant non-empty\n".into(),
        ));
    }
    Ok(req)
}

async fn extract(State(sys): State<Arc<System>>, body: axum::body::Bytes) -> Response {
    let req = match parse_request(&body) {
        Ok(r) => r,
        Err(bad) => return bad.into_response(),
    };
    let task = {
        let sys = sys.clone();
        let req = req.clone();
        tokio::spawn(async move {
            sys.gateway
                .handle(&req.tenant, req.document, req.pages)
                .await
        })
    };
    let out = match task.await {
        Ok(out) => out,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("handler failed: {e}\n"),
            )
                .into_response()
        }
    };
    reply_response(req.document, req.pages, out.reply, out.zone)
}

/// `POST /v1/jobs`: accepted at once (202) unless the job table is full
/// (503); the document then runs the synchronous path, detached.
async fn submit_job(State(sys): State<Arc<System>>, body: axum::body::Bytes) -> Response {
    let req = match parse_request(&body) {
        Ok(r) => r,
        Err(bad) => return bad.into_response(),
    };
    let Ok(id) = sys.jobs.submit(req.document, req.pages) else {
        sys.jobs_rejected.inc();
        let full = Reply::Overloaded {
            retry_after: sys.config.gateway.fallback_retry_after,
            reason: RejectReason::JobTableFull,
        };
        return reply_response(req.document, req.pages, full, String::new());
    };
    sys.jobs_submitted.inc();
    let worker = sys.clone();
    tokio::spawn(async move {
        let out = worker
            .gateway
            .handle(&req.tenant, req.document, req.pages)
            .await;
        worker.jobs.finish(id, out.reply, out.zone);
    });
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&format!("{JOBS_PATH}/{id}")) {
        headers.insert(header::LOCATION, v);
    }
    (StatusCode::ACCEPTED, headers, Json(JobAccepted { job: id })).into_response()
}

/// `GET /v1/jobs/{id}`: 202 with when to ask again while pending, then the
/// synchronous path's answer; 404 unknown or expired, 400 malformed.
async fn read_job(
    State(sys): State<Arc<System>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return (StatusCode::BAD_REQUEST, "a job id is a number\n").into_response();
    };
    match sys.jobs.get(id) {
        None => (StatusCode::NOT_FOUND, "no such job (unknown, or expired)\n").into_response(),
        Some(JobView::Pending { .. }) => {
            // Ask again in a tenth of the pool deadline: long enough not to
            // add load, short against the document's own processing.
            let after = (sys.config.pool.deadline / 10).max(Duration::from_millis(10));
            let mut headers = HeaderMap::new();
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(after.as_secs_f64().ceil().max(1.0) as u64),
            );
            headers.insert(RETRY_AFTER_MS, HeaderValue::from(after.as_millis() as u64));
            let body = JobPending {
                job: id,
                status: "pending".into(),
            };
            (StatusCode::ACCEPTED, headers, Json(body)).into_response()
        }
        Some(JobView::Done {
            reply,
            zone,
            document,
            pages,
        }) => reply_response(document, pages, reply, zone),
    }
}

/// A gateway's attempt at this process's pool (`--role pool`). Detached like
/// `extract`: a gateway that times out does not cancel the work.
async fn pool_extract(State(sys): State<Arc<System>>, body: axum::body::Bytes) -> Response {
    let Some(pool) = sys.served_pool().cloned() else {
        return (
            StatusCode::NOT_FOUND,
            "this process does not serve a pool to gateways (start it with --role pool)\n",
        )
            .into_response();
    };
    let req = match parse_request(&body) {
        Ok(r) => r,
        Err(bad) => return bad.into_response(),
    };
    let task = tokio::spawn(async move { pool.handle(&req.tenant, req.document, req.pages).await });
    match task.await {
        Ok(reply) => Json(reply).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("handler failed: {e}\n"),
        )
            .into_response(),
    }
}

/// Maps a layer's reply to HTTP.
pub(crate) fn reply_response(document: u64, pages: u32, reply: Reply, zone: String) -> Response {
    match reply {
        Reply::Ok { digest, source } => Json(ExtractResponse {
            document,
            pages,
            digest,
            source,
            zone,
        })
        .into_response(),
        Reply::Overloaded {
            retry_after,
            reason,
        } => {
            let mut headers = HeaderMap::new();
            let secs = retry_after.as_secs_f64().ceil().max(1.0) as u64;
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
            headers.insert(
                RETRY_AFTER_MS,
                HeaderValue::from(retry_after.as_millis() as u64),
            );
            let body = ErrorBody {
                error: "Server overloaded".into(),
                reason,
                retry_after_ms: Some(retry_after.as_millis() as u64),
            };
            (StatusCode::SERVICE_UNAVAILABLE, headers, Json(body)).into_response()
        }
        Reply::Deadline => {
            let body = ErrorBody {
                error: "Deadline exceeded".into(),
                reason: RejectReason::Deadline,
                retry_after_ms: None,
            };
            (StatusCode::GATEWAY_TIMEOUT, Json(body)).into_response()
        }
    }
}

async fn metrics(State(sys): State<Arc<System>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        sys.metrics_text().await,
    )
        .into_response()
}

/// Admin requests must come from loopback and carry the token.
fn authorize(
    sys: &System,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> Result<(), (StatusCode, &'static str)> {
    if !peer.ip().is_loopback() && !sys.admin_from_any_peer {
        return Err((StatusCode::FORBIDDEN, "admin API is loopback only\n"));
    }
    let expected = format!("Bearer {}", sys.config.admin_token);
    let ok = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected);
    if !ok {
        return Err((StatusCode::UNAUTHORIZED, "missing or wrong admin token\n"));
    }
    Ok(())
}

/// An admin request's body, once the caller is authorised: 403/401 when it
/// is not, 400 naming `what` when the body is not one.
fn admin_body<T: serde::de::DeserializeOwned>(
    sys: &System,
    peer: SocketAddr,
    headers: &HeaderMap,
    body: &[u8],
    what: &str,
) -> Result<T, (StatusCode, String)> {
    authorize(sys, peer, headers).map_err(|(code, why)| (code, why.to_string()))?;
    serde_json::from_slice(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid {what}: {e}\n")))
}

async fn admin_command(
    State(sys): State<Arc<System>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let cmd: AdminCommand = match admin_body(&sys, peer, &headers, &body, "command") {
        Ok(c) => c,
        Err(r) => return r.into_response(),
    };
    match sys.apply(&cmd).await {
        Ok(detail) => Json(serde_json::json!({ "ok": true, "detail": detail })).into_response(),
        Err(e @ AdminError::UnknownZone(_)) => {
            (StatusCode::NOT_FOUND, format!("{e}\n")).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    }
}

async fn admin_work(
    State(sys): State<Arc<System>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let q: WorkQuery = match admin_body(&sys, peer, &headers, &body, "query") {
        Ok(q) => q,
        Err(r) => return r.into_response(),
    };
    match sys.work_in_progress(&q).await {
        Ok(w) => Json(w).into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, format!("{e}\n")).into_response(),
    }
}

async fn admin_info(
    State(sys): State<Arc<System>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorize(&sys, peer, &headers) {
        return r.into_response();
    }
    Json(serde_json::json!({
        "executor": sys.executor_info(),
        "zones": sys.config.zones,
        "role": sys.role.to_string(),
        "pool_deadline_ms": sys.config.pool.deadline.as_millis() as u64,
        // Clients verify results with the page function's parameters.
        "page": { "words": sys.config.page.words, "rounds": sys.config.page.rounds },
    }))
    .into_response()
}

/// How long `run`'s caller should wait for draining before giving up.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
