//! Step 2, the service's hot path: cache-hit `POST /v1/extract` on the real
//! system under test, next to the axum stack's own floor and a bare endpoint.
//!
//! The cheapest thing the service does is answer from its result cache; if
//! even that were slow, the harness would measure the HTTP stack instead of
//! the overload mechanisms. Both sides are driven by the same client (wrk with
//! a POST script, or the closed-loop reqwest client when wrk is missing) with
//! the same connections.
//!
//! The target compares with the *axum floor*: the service's own `GET /healthz`
//! (a handler returning "ok" behind the same router, concurrency limit and
//! connection handling), the closest thing to a bare axum handler reachable
//! without adding axum to the harness's dependencies. A fixed responder with
//! the same JSON body and no framework at all ([`super::server`]) is shown as
//! the stricter reference.

use super::error::during;
use super::BenchError;
use super::{client, server, wrk, Windows};
use std::sync::Arc;
use std::time::Duration;
use sut::{ExtractResponse, ResultSource, System, SystemConfig};

/// Connections of the closed-loop client, for both sides.
pub const CONNECTIONS: u64 = 64;

pub struct HotPath {
    pub sut_rps: f64,
    /// The fixed responder with the same JSON body (no framework).
    pub bare_rps: f64,
    /// The service's `GET /healthz`: the axum stack with a trivial handler.
    pub healthz_rps: f64,
    /// Which client drove both sides.
    pub client: String,
}

/// Starts the system on 127.0.0.1:0, warms the cache, and compares.
pub fn run(w: &Windows) -> Result<HotPath, BenchError> {
    let server_rt = super::runtime("bench-sut")?;
    let client_rt = super::runtime("bench-client")?;
    let system = server_rt
        .block_on(System::start_with_executor(
            SystemConfig::default(),
            Arc::new(gpu_executor::CpuExecutor::new()),
        ))
        .map_err(BenchError::System)?;
    let listener = server_rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(during("binding the system under test on 127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
    server_rt.spawn(sut::server::run(listener, system, async move {
        let _ = stopped.await;
    }));
    let extract = format!("http://{addr}/v1/extract");
    let body = client_rt.block_on(warm_cache(&extract))?;
    let bare = server_rt.block_on(server::start(server::response(
        "200 OK",
        &[],
        "application/json",
        body.as_bytes(),
    )))?;
    let healthz = format!("http://{addr}/healthz");
    let wrk_bin = wrk::find();
    // Every answer must be a success: a 503 is cheaper than a cache hit and
    // would flatter the service.
    let measure = |url: &str, post: bool| -> Result<f64, BenchError> {
        let json = post.then_some(super::ceiling::BODY);
        let d = match &wrk_bin {
            Some(bin) => wrk::run(bin, url, CONNECTIONS, w.measure, json),
            None => client_rt.block_on(client::closed_loop(url, json, CONNECTIONS, w.measure)),
        }
        .map_err(|inner| BenchError::Driving {
            what: format!("driving {url}"),
            inner: Box::new(inner),
        })?;
        if d.non_2xx != 0 {
            return Err(BenchError::Invalid(format!(
                "{url} answered {} requests with an error status during the measurement",
                d.non_2xx
            )));
        }
        Ok(d.requests_per_sec)
    };
    let sut_rps = measure(&extract, true)?;
    let bare_rps = measure(&bare.url("/v1/extract"), true)?;
    let healthz_rps = measure(&healthz, false)?;
    let _ = shutdown.send(());
    Ok(HotPath {
        sut_rps,
        bare_rps,
        healthz_rps,
        client: match wrk_bin {
            Some(_) => format!("wrk, 2 threads, {CONNECTIONS} connections"),
            None => format!(
                "closed-loop reqwest client, {CONNECTIONS} connections ({})",
                wrk::MISSING
            ),
        },
    })
}

/// Computes the benchmark document once, then checks the next answer is a
/// cache hit; returns that answer's body (the bare endpoint serves the same).
async fn warm_cache(url: &str) -> Result<String, BenchError> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let mut last = None;
    for _ in 0..2 {
        let r = client
            .post(url)
            .header("content-type", "application/json")
            .body(super::ceiling::BODY)
            .send()
            .await
            .map_err(|e| {
                BenchError::Invalid(format!(
                    "warming the cache: {}",
                    crate::base::causes::Causes(&e)
                ))
            })?;
        let status = r.status();
        let text = r.text().await?;
        if status != 200 {
            return Err(BenchError::Invalid(format!(
                "warming the cache: {status}: {text}"
            )));
        }
        last = Some(text);
    }
    let body = last.unwrap_or_default();
    let parsed: ExtractResponse =
        serde_json::from_str(&body).map_err(|error| BenchError::Json {
            what: format!("reading the answer {body}"),
            error,
        })?;
    if parsed.source != ResultSource::Cache {
        return Err(BenchError::Invalid(format!(
            "the second request was not a cache hit: {body}"
        )));
    }
    Ok(body)
}
