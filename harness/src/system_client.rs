//! The harness's control-plane requests to the system under test: the admin
//! API (timeline commands, the work query) and `/metrics`. Over HTTP with
//! reqwest to a system on a socket, or in process (`in_process.rs`) on the
//! virtual clock, where no request may wait on a socket. The callers see the
//! same status and body either way.

use crate::in_process::InProcess;
use axum::http::StatusCode;
use bytes::Bytes;
use std::time::Duration;

/// How the control plane reaches one system; cheap to clone.
#[derive(Clone)]
pub(crate) enum SystemClient {
    Http {
        client: reqwest::Client,
        base_url: String,
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
pub(crate) enum RequestError {
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
            SystemClient::Http { client, base_url } => {
                http_answer(client.get(format!("{base_url}{path}")).timeout(timeout)).await
            }
            SystemClient::InProcess(p) => {
                let req = axum::http::Request::get(path).body(axum::body::Body::empty());
                in_process(p, req, timeout).await
            }
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
            SystemClient::Http { client, base_url } => {
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
