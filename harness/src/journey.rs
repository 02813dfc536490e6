//! One document's journey: first attempt, retries by the client's policy, and
//! the check of its result against the reference computation.
//!
//! The first attempt's latency is measured from its *planned* send time, so a
//! late sender cannot hide queueing (no coordinated omission). Every journey
//! ends by `hard_stop` at the latest, counted as pending if it had to be cut
//! off, so each submitted document is accounted for exactly once. An attempt
//! in flight at the cut is reported to goose as a failure and counted by the
//! recorder as cut off, so goose's request count covers every attempt sent.

use crate::experiment::Submission;
use crate::http::{Answer, BodyError, HttpClient, NoAnswer};
use crate::recorder::{AttemptOutcome, JourneyEnd, Recorder};
use crate::workload::Document;
use bytes::Bytes;
use hyper::{Method, Uri};
use rand::rngs::StdRng;
use rand::SeedableRng;
use retry_policy::{Decision, Failure, RetryPolicy};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sut::config::PageConfig;
use sut::ExtractResponse;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// One attempt, for goose's own statistics.
#[derive(Debug, Clone)]
pub struct AttemptReport {
    pub latency: Duration,
    pub success: bool,
    pub status: Option<u16>,
}

/// What every journey of a variant shares.
pub struct JourneyContext {
    /// The load path's HTTP/1.1 client, bounded by the in-flight cap.
    pub http: HttpClient,
    /// The request paths, parsed once.
    pub(crate) extract_path: Uri,
    pub(crate) jobs_path: Uri,
    pub recorder: Arc<Recorder>,
    /// How the clients behave (per tenant where a tenant's differ).
    pub clients: crate::experiment::ClientBehaviour,
    /// No attempt starts, and no journey lives, past this.
    pub hard_stop: Instant,
    /// The page function's parameters, for the reference computation.
    pub page: PageConfig,
    pub seed: u64,
    pub reports: mpsc::UnboundedSender<AttemptReport>,
    /// Cuts every journey off early (Ctrl-C, dead system under test).
    pub stop: Arc<crate::interrupt::StopSignal>,
    /// One retry policy (its state and budget) per client: a document
    /// belongs to client `id % clients_per_tenant` of its tenant. Keyed by
    /// tenant, then client, so a lookup borrows the tenant's name instead of
    /// allocating a key.
    policies: Mutex<HashMap<String, HashMap<u32, Arc<RetryPolicy>>>>,
}

impl JourneyContext {
    pub fn new(
        http: HttpClient,
        settings: &crate::load::JourneySettings,
        reports: mpsc::UnboundedSender<AttemptReport>,
        stop: Arc<crate::interrupt::StopSignal>,
    ) -> Self {
        JourneyContext {
            http,
            extract_path: Uri::from_static(sut::EXTRACT_PATH),
            jobs_path: Uri::from_static(sut::JOBS_PATH),
            recorder: settings.recorder.clone(),
            clients: settings.clients.clone(),
            hard_stop: settings.hard_stop,
            page: settings.page,
            seed: settings.seed,
            reports,
            stop,
            policies: Mutex::new(HashMap::new()),
        }
    }

    /// The retry policy of the client `doc` belongs to: its own state and
    /// budget, configured as its tenant's clients are.
    fn policy(&self, doc: &Document) -> Arc<RetryPolicy> {
        // Validated >= 1; the max keeps a hand-built context from dividing by 0.
        let per_tenant = u64::from(self.clients.clients_per_tenant.max(1));
        let client = (doc.id % per_tenant) as u32;
        let mut policies = self.policies.lock().expect("policies lock");
        if let Some(p) = policies
            .get(doc.tenant.as_str())
            .and_then(|c| c.get(&client))
        {
            return p.clone();
        }
        let (retry, _) = self.clients.for_tenant(&doc.tenant);
        let p = Arc::new(RetryPolicy::new(retry.clone()));
        policies
            .entry(doc.tenant.clone())
            .or_default()
            .insert(client, p.clone());
        p
    }

    /// The client timeout of one attempt (one request) of `doc`.
    pub(crate) fn timeout_for(&self, doc: &Document) -> Duration {
        self.clients.for_tenant(&doc.tenant).1
    }
}

/// How an attempt ended, with what the retry policy needs.
pub(crate) enum Attempt {
    Ok(ExtractResponse),
    Failed(AttemptOutcome, Failure),
}

/// Runs one journey to its end; `planned` is when its first attempt was due.
pub async fn run(ctx: Arc<JourneyContext>, doc: Document, planned: Instant) {
    ctx.recorder.submitted(doc.id, &doc.tenant);
    let end = journey(&ctx, &doc, planned).await;
    if end == JourneyEnd::Pending {
        ctx.recorder.pending();
    }
    ctx.recorder.journey_ended(doc.id, end);
}

/// Waits for `fut` unless the variant ends first (its hard stop, or the stop
/// signal): `None` then, and the journey is cut off.
async fn until_end<T>(
    ctx: &JourneyContext,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        v = fut => Some(v),
        _ = tokio::time::sleep_until(ctx.hard_stop) => None,
        _ = ctx.stop.wait() => None,
    }
}

/// Runs the journey; `Pending` means the variant ended first (counted by the caller).
async fn journey(ctx: &JourneyContext, doc: &Document, planned: Instant) -> JourneyEnd {
    let policy = ctx.policy(doc);
    let mut rng = StdRng::seed_from_u64(ctx.seed ^ doc.id);
    if !policy.admit_request(std::time::Instant::now(), &mut rng) {
        // Adaptive throttling refused it locally: a failed attempt that never left.
        ctx.recorder.attempt_sent(doc.id, &doc.tenant);
        ctx.recorder
            .attempt_done(doc.id, AttemptOutcome::Rejected, Duration::ZERO);
        ctx.recorder.given_up(doc.id);
        return JourneyEnd::GaveUp;
    }
    // Prepared once per document: every attempt sends the same bytes.
    let body = request_body(doc);
    let mut attempt = 1u32;
    let mut measured_from = planned;
    loop {
        if Instant::now() >= ctx.hard_stop || ctx.stop.is_set() {
            return JourneyEnd::Pending;
        }
        if attempt == 1 {
            ctx.recorder.first_sent(planned.elapsed());
        }
        ctx.recorder.attempt_sent(doc.id, &doc.tenant);
        let Some(outcome) = until_end(ctx, send(ctx, doc, &body)).await else {
            // Sent (it may or may not have reached the system) but never
            // answered before the end: goose hears of it as a failed request,
            // so its count still covers every attempt that left.
            let _ = ctx.reports.send(AttemptReport {
                latency: measured_from.elapsed(),
                success: false,
                status: None,
            });
            ctx.recorder.attempt_cut_off();
            return JourneyEnd::Pending;
        };
        let latency = measured_from.elapsed();
        let (kind, failure, status) = match outcome {
            (Attempt::Ok(resp), status) => {
                let _ = ctx.reports.send(AttemptReport {
                    latency,
                    success: true,
                    status,
                });
                ctx.recorder
                    .attempt_done(doc.id, AttemptOutcome::Ok, latency);
                verify(ctx, doc, &resp).await;
                policy.on_success(std::time::Instant::now());
                ctx.recorder
                    .completed(&doc.tenant, doc.pages, planned.elapsed());
                return JourneyEnd::Completed;
            }
            (Attempt::Failed(kind, failure), status) => (kind, failure, status),
        };
        let _ = ctx.reports.send(AttemptReport {
            latency,
            success: false,
            status,
        });
        ctx.recorder.attempt_done(doc.id, kind, latency);
        match policy.on_failure(attempt, failure, std::time::Instant::now(), &mut rng) {
            Decision::Retry { after } => {
                if until_end(ctx, tokio::time::sleep(after)).await.is_none() {
                    return JourneyEnd::Pending;
                }
                measured_from = Instant::now();
                attempt += 1;
            }
            Decision::GiveUp(_) => {
                ctx.recorder.given_up(doc.id);
                return JourneyEnd::GaveUp;
            }
        }
    }
}

/// The document's request body, serialised once for all its attempts.
fn request_body(doc: &Document) -> Bytes {
    let body = sut::ExtractRequest {
        tenant: doc.tenant.clone(),
        document: doc.id,
        pages: doc.pages,
    };
    Bytes::from(serde_json::to_vec(&body).expect("a request serialises"))
}

/// One attempt, by the client's submission mode.
async fn send(ctx: &JourneyContext, doc: &Document, body: &Bytes) -> (Attempt, Option<u16>) {
    match ctx.clients.submission {
        Submission::Sync => match post(ctx, &ctx.extract_path, body, doc).await {
            Ok(resp) => answer(resp),
            Err(failed) => (failed, None),
        },
        Submission::Async {
            poll_interval,
            honour_retry_after,
        } => crate::async_client::attempt(ctx, doc, body, poll_interval, honour_retry_after).await,
    }
}

/// `POST`s the document's prepared body to `path`; a failure to get any
/// answer is the attempt's end. The answer's body is always read to its end
/// (so its connection is reused), within the attempt's timeout.
pub(crate) async fn post(
    ctx: &JourneyContext,
    path: &Uri,
    body: &Bytes,
    doc: &Document,
) -> Result<Answer, Attempt> {
    transport(
        ctx.http
            .request(
                Method::POST,
                path.clone(),
                Some(body.clone()),
                ctx.timeout_for(doc),
            )
            .await,
    )
}

/// A request that got no answer: timed out or failed in transport.
pub(crate) fn transport(resp: Result<Answer, NoAnswer>) -> Result<Answer, Attempt> {
    match resp {
        Ok(r) => Ok(r),
        Err(NoAnswer::Timeout) => Err(Attempt::Failed(AttemptOutcome::Timeout, Failure::Timeout)),
        Err(NoAnswer::Transport) => Err(Attempt::Failed(AttemptOutcome::Error, Failure::Error)),
    }
}

/// What a final answer (the synchronous path's) means for the attempt.
pub(crate) fn answer(resp: Answer) -> (Attempt, Option<u16>) {
    let status = resp.status;
    let failed = |kind, failure| (Attempt::Failed(kind, failure), Some(status));
    match status {
        200 => match resp.body {
            Ok(b) => match serde_json::from_slice::<ExtractResponse>(&b) {
                Ok(r) => (Attempt::Ok(r), Some(status)),
                Err(_) => failed(AttemptOutcome::Error, Failure::Error),
            },
            Err(BodyError::Timeout) => failed(AttemptOutcome::Timeout, Failure::Timeout),
            Err(BodyError::Broken) => failed(AttemptOutcome::Error, Failure::Error),
        },
        // The error bodies were read (or failed to be) by the client already.
        503 => failed(
            AttemptOutcome::Rejected,
            Failure::Overloaded {
                retry_after: resp.retry_after,
            },
        ),
        504 => failed(AttemptOutcome::Timeout, Failure::Timeout),
        _ => failed(AttemptOutcome::Error, Failure::Error),
    }
}

/// Checks a returned result against the reference page function.
async fn verify(ctx: &JourneyContext, doc: &Document, resp: &ExtractResponse) {
    let (id, pages, words, rounds) = (doc.id, doc.pages, ctx.page.words, ctx.page.rounds);
    let expected = tokio::task::spawn_blocking(move || {
        gpu_executor::reference_document(id, pages, words, rounds)
    })
    .await
    .unwrap_or(!resp.digest);
    let correct = resp.document == doc.id && resp.pages == doc.pages && resp.digest == expected;
    ctx.recorder
        .result_checked(doc.id, correct, resp.digest, expected);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::TenantClient;

    fn context(clients_per_tenant: u32) -> JourneyContext {
        let mut tenant_clients = std::collections::BTreeMap::new();
        let mut aggressive = retry_policy::RetryConfig::no_retries();
        aggressive.max_attempts = 10;
        tenant_clients.insert(
            "t7".to_string(),
            TenantClient {
                retry: Some(aggressive),
                timeout: Some(Duration::from_secs(5)),
            },
        );
        let mut clients = crate::experiment::ClientBehaviour::synchronous(
            retry_policy::RetryConfig::no_retries(),
            Duration::from_secs(1),
        );
        clients.clients_per_tenant = clients_per_tenant;
        clients.tenants = tenant_clients;
        let settings = crate::load::JourneySettings {
            recorder: Arc::new(Recorder::new(Instant::now(), 2)),
            clients,
            hard_stop: Instant::now(),
            page: PageConfig {
                words: 1,
                rounds: 1,
            },
            seed: 1,
        };
        let (tx, _rx) = mpsc::unbounded_channel();
        JourneyContext::new(
            HttpClient::new("http://127.0.0.1:9", 4).unwrap(),
            &settings,
            tx,
            Arc::new(crate::interrupt::StopSignal::default()),
        )
    }

    fn doc(id: u64, tenant: &str) -> Document {
        Document {
            id,
            tenant: tenant.into(),
            pages: 1,
            planned: Duration::ZERO,
        }
    }

    #[test]
    fn each_client_keeps_its_own_retry_state() {
        let ctx = context(3);
        // Documents 3 and 6 belong to client 0 of t1, document 4 to client 1.
        let a = ctx.policy(&doc(3, "t1"));
        assert!(Arc::ptr_eq(&a, &ctx.policy(&doc(6, "t1"))));
        assert!(!Arc::ptr_eq(&a, &ctx.policy(&doc(4, "t1"))));
        // The same client index of another tenant is another client.
        assert!(!Arc::ptr_eq(&a, &ctx.policy(&doc(3, "t2"))));
        let clients: usize = ctx.policies.lock().unwrap().values().map(|c| c.len()).sum();
        assert_eq!(clients, 3);
        // One client per tenant, as before a population of clients.
        let one = context(1);
        assert!(Arc::ptr_eq(
            &one.policy(&doc(3, "t1")),
            &one.policy(&doc(4, "t1"))
        ));
    }

    #[test]
    fn a_tenant_override_configures_its_clients_only() {
        let ctx = context(2);
        assert_eq!(ctx.policy(&doc(1, "t7")).config().max_attempts, 10);
        assert_eq!(ctx.policy(&doc(1, "t1")).config().max_attempts, 1);
        assert_eq!(ctx.timeout_for(&doc(1, "t7")), Duration::from_secs(5));
        assert_eq!(ctx.timeout_for(&doc(1, "t1")), Duration::from_secs(1));
    }
}
