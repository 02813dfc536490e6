//! The harness's control-plane requests to the system under test: the admin
//! API (timeline commands, the work query) and `/metrics`. Over HTTP with
//! reqwest to a system on a socket, or in process (`in_process.rs`) on the
//! virtual clock, where no request may wait on a socket. The callers see the
//! same status and body either way.

use crate::net::in_process::InProcess;
use axum::http::StatusCode;
use bytes::Bytes;
use std::time::Duration;

/// How the control plane reaches one system; cheap to clone.
#[derive(Clone)]
pub(crate) enum SystemClient {
    Http {
        client: reqwest::Client,
        base_url: String,
        /// The metrics' whole URL when not `{base_url}/metrics` (an
        /// external target's `target.metrics`).
        metrics_url: Option<String>,
    },
    InProcess(InProcess),
}

/// A control-plane answer: status and whole body.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

/// No answer: no connection, a broken body, or the timeout passed.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the answer's body could not be read: {0}")]
    Body(String),
}

/// Sends `req` and reads the whole answer (status and body).
async fn http_answer(req: reqwest::RequestBuilder) -> Result<Answer, RequestError> {
    let r = req.send().await?;
    Ok(Answer {
        status: r.status(),
        body: r.bytes().await?,
    })
}

impl SystemClient {
    /// `GET path`, bounded by `timeout`.
    pub(crate) async fn get(&self, path: &str, timeout: Duration) -> Result<Answer, RequestError> {
        match self {
            SystemClient::Http {
                client, base_url, ..
            } => http_answer(client.get(format!("{base_url}{path}")).timeout(timeout)).await,
            SystemClient::InProcess(p) => {
                let req = axum::http::Request::get(path).body(axum::body::Body::empty());
                in_process(p, req, timeout).await
            }
        }
    }

    /// `GET` of the system's Prometheus metrics (`/metrics`, or the
    /// external target's own metrics URL), bounded by `timeout`.
    pub(crate) async fn get_metrics(&self, timeout: Duration) -> Result<Answer, RequestError> {
        match self {
            SystemClient::Http {
                client,
                metrics_url: Some(url),
                ..
            } => http_answer(client.get(url).timeout(timeout)).await,
            _ => self.get("/metrics", timeout).await,
        }
    }

    /// `POST path` with `body` as JSON and the admin `token`, bounded by `timeout`.
    pub(crate) async fn post_admin(
        &self,
        path: &str,
        token: &str,
        body: &impl serde::Serialize,
        timeout: Duration,
    ) -> Result<Answer, RequestError> {
        match self {
            SystemClient::Http {
                client, base_url, ..
            } => {
                let req = client
                    .post(format!("{base_url}{path}"))
                    .bearer_auth(token)
                    .json(body)
                    .timeout(timeout);
                http_answer(req).await
            }
            SystemClient::InProcess(p) => {
                let json =
                    serde_json::to_vec(body).map_err(|e| RequestError::Body(e.to_string()))?;
                let req = axum::http::Request::post(path)
                    .header(axum::http::header::AUTHORIZATION, format!("Bearer {token}"))
                    .header(axum::http::header::CONTENT_TYPE, "application/json")
                    .body(axum::body::Body::from(json));
                in_process(p, req, timeout).await
            }
        }
    }
}

async fn in_process(
    p: &InProcess,
    req: Result<axum::http::Request<axum::body::Body>, axum::http::Error>,
    timeout: Duration,
) -> Result<Answer, RequestError> {
    let req = req.map_err(|e| RequestError::Body(e.to_string()))?;
    let answer = async {
        let r = p.call(req).await;
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), 16 << 20)
            .await
            .map_err(|e| RequestError::Body(e.to_string()))?;
        Ok(Answer { status, body })
    };
    tokio::time::timeout(timeout, answer)
        .await
        .map_err(|_| RequestError::Timeout(timeout))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An external target's `target.metrics` is read where it is, not at
    /// `{base_url}/metrics` (here a port where nothing listens).
    #[tokio::test]
    async fn metrics_come_from_the_metrics_url_when_one_is_given() {
        let app =
            axum::Router::new().route("/own/metrics", axum::routing::get(|| async { "up 1\n" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = |metrics_url: Option<String>| SystemClient::Http {
            client: reqwest::Client::new(),
            base_url: "http://127.0.0.1:9".into(),
            metrics_url,
        };
        let t = Duration::from_secs(2);
        let own = client(Some(format!("http://{addr}/own/metrics")));
        let a = own.get_metrics(t).await.expect("the metrics URL answers");
        assert!(a.status.is_success());
        assert_eq!(&a.body[..], b"up 1\n");
        assert!(
            client(None).get_metrics(t).await.is_err(),
            "{{base_url}}/metrics has nobody listening"
        );
    }
}
