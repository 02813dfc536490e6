//! `RemotePool`: a zone's pool in another process, as the gateway reaches it.
//!
//! The wire is `POST /v1/pool/extract` (an `ExtractRequest` in, the pool's
//! `Reply` out as JSON), so a pool process answers exactly what an in-process
//! pool would. What the network adds is failure: a pool that does not answer
//! within its deadline plus a margin (a paused container, a partition) is a
//! `Deadline` to the gateway, and one that cannot be reached at all is an
//! overload answer with reason `zone_unreachable`; both feed the router's
//! failure window, so automatic failover sees a dead zone as it would in
//! production. Admin commands for the zone are forwarded to its admin API, and
//! its `/metrics` are merged into the gateway's.
//!
//! Bounds: every call has a timeout; connections per pool are capped by the
//! HTTP client's idle pool and the gateway's own request limit.

use crate::admin::{AdminCommand, AdminError, WorkInProgress, WorkQuery, WORK_PATH};
use crate::api::{ExtractRequest, RejectReason, Reply};
use crate::metrics::Counter;
use std::time::Duration;

/// How long an admin call may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a remote pool's `/metrics` could not be read (the gateway then
/// serves the last good ones).
#[derive(Debug, thiserror::Error)]
pub enum MetricsReadError {
    /// No connection, no answer in time, or a body that did not arrive.
    #[error(transparent)]
    Request(#[from] reqwest::Error),
    #[error("/metrics answered {0}")]
    Status(reqwest::StatusCode),
}

/// How long a metrics read may take: short, because the gateway's own
/// `/metrics` waits for it and a paused pool must not stall the scraper.
const METRICS_TIMEOUT: Duration = Duration::from_millis(400);
/// A pool that has not answered by its deadline plus this is not answering.
pub const SILENCE_MARGIN: Duration = Duration::from_secs(1);

/// Transport failures towards one remote pool.
#[derive(Default)]
pub struct RemotePoolMetrics {
    /// No answer within the pool's deadline plus the margin.
    pub timeouts: Counter,
    /// Connection refused or reset, or an answer that was not a pool reply.
    pub unreachable: Counter,
}

pub struct RemotePool {
    pub zone: String,
    base_url: String,
    admin_token: String,
    client: reqwest::Client,
    /// The pool answers by its own deadline; past this it is not answering.
    timeout: Duration,
    /// Retry advice when the pool could not be asked.
    fallback_retry_after: Duration,
    pub metrics: RemotePoolMetrics,
    /// The last metrics text read, served while the pool does not answer.
    last_metrics: std::sync::Mutex<Option<String>>,
}

impl RemotePool {
    pub fn new(
        zone: String,
        base_url: String,
        admin_token: String,
        pool_deadline: Duration,
        fallback_retry_after: Duration,
    ) -> Self {
        let client = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(256)
            .connect_timeout(Duration::from_secs(1))
            .build()
            .expect("building an HTTP client with static settings");
        RemotePool {
            zone,
            base_url,
            admin_token,
            client,
            timeout: pool_deadline + SILENCE_MARGIN,
            fallback_retry_after,
            metrics: RemotePoolMetrics::default(),
            last_metrics: std::sync::Mutex::new(None),
        }
    }

    /// Asks the remote pool; never fails, a broken hop is a failed reply.
    pub async fn handle(&self, tenant: &str, doc: u64, pages: u32) -> Reply {
        let req = ExtractRequest {
            tenant: tenant.to_string(),
            document: doc,
            pages,
        };
        let sent = self
            .client
            .post(format!("{}/v1/pool/extract", self.base_url))
            .json(&req)
            .timeout(self.timeout)
            .send()
            .await;
        let unreachable = || Reply::Overloaded {
            retry_after: self.fallback_retry_after,
            reason: RejectReason::ZoneUnreachable,
        };
        let resp = match sent {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                tracing::debug!(zone = %self.zone, status = %r.status(), "remote pool refused");
                self.metrics.unreachable.inc();
                return unreachable();
            }
            Err(e) if e.is_timeout() => {
                self.metrics.timeouts.inc();
                return Reply::Deadline;
            }
            Err(e) => {
                tracing::debug!(zone = %self.zone, "remote pool unreachable: {e}");
                self.metrics.unreachable.inc();
                return unreachable();
            }
        };
        match resp.json::<Reply>().await {
            Ok(reply) => reply,
            Err(e) if e.is_timeout() => {
                self.metrics.timeouts.inc();
                Reply::Deadline
            }
            Err(_) => {
                self.metrics.unreachable.inc();
                unreachable()
            }
        }
    }

    /// Applies an admin command in the remote pool's process.
    pub async fn apply(&self, cmd: &AdminCommand) -> Result<String, AdminError> {
        let remote = |m: String| AdminError::Remote(format!("zone {}: {m}", self.zone));
        let resp = self
            .client
            .post(format!("{}/admin/command", self.base_url))
            .bearer_auth(&self.admin_token)
            .json(cmd)
            .timeout(CONTROL_TIMEOUT)
            .send()
            .await
            .map_err(|e| remote(e.to_string()))?;
        let status = resp.status();
        let body = resp.text().await.map_err(|e| remote(e.to_string()))?;
        if !status.is_success() {
            return Err(remote(format!("{status}: {}", body.trim())));
        }
        let detail = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(String::from))
            .unwrap_or(body);
        Ok(format!("{}: {detail}", self.zone))
    }

    /// The work the remote pool still holds for some documents.
    pub async fn work(&self, q: &WorkQuery) -> Result<WorkInProgress, AdminError> {
        let remote = |m: String| AdminError::Remote(format!("zone {}: {m}", self.zone));
        let resp = self
            .client
            .post(format!("{}{WORK_PATH}", self.base_url))
            .bearer_auth(&self.admin_token)
            .json(q)
            .timeout(CONTROL_TIMEOUT)
            .send()
            .await
            .map_err(|e| remote(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(remote(format!("{WORK_PATH} answered {}", resp.status())));
        }
        resp.json().await.map_err(|e| remote(e.to_string()))
    }

    /// The remote process's Prometheus text.
    pub async fn metrics_text(&self) -> Result<String, MetricsReadError> {
        let resp = self
            .client
            .get(format!("{}/metrics", self.base_url))
            .timeout(METRICS_TIMEOUT)
            .send()
            .await?;
        if !resp.status().is_success() {
            return Err(MetricsReadError::Status(resp.status()));
        }
        Ok(resp.text().await?)
    }

    /// The remote metrics, or the last good ones when the pool does not
    /// answer now; the flag says whether this read succeeded.
    pub async fn metrics_or_last(&self) -> (Option<String>, bool) {
        match self.metrics_text().await {
            Ok(t) => {
                *self.last_metrics.lock().expect("metrics lock") = Some(t.clone());
                (Some(t), true)
            }
            Err(e) => {
                tracing::debug!(zone = %self.zone, "metrics read failed: {e}");
                (
                    self.last_metrics.lock().expect("metrics lock").clone(),
                    false,
                )
            }
        }
    }
}
