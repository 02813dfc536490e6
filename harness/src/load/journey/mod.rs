//! One document's journey: first attempt, retries by the client's policy, and
//! the check of its result against the reference computation.
//!
//! The first attempt's latency is measured from its *planned* send time, so a
//! late sender cannot hide queueing (no coordinated omission). Every journey
//! ends by `hard_stop` at the latest, counted as pending if it had to be cut
//! off, so each submitted document is accounted for exactly once. An attempt
//! in flight at the cut is reported to goose as a failure and counted by the
//! recorder as cut off, so goose's request count covers every attempt sent.

mod async_client;
pub(crate) mod http;

use crate::experiment::http_workload::HttpWorkload;
use crate::experiment::Submission;
use crate::load::client_policies::ClientPolicies;
use crate::load::workload::Document;
use crate::net::http::{Answer, BodyError, HttpClient, NoAnswer};
use crate::observe::recorder::{AttemptOutcome, JourneyEnd, Recorder};
use bytes::Bytes;
use hyper::{Method, Uri};
use rand::rngs::StdRng;
use rand::SeedableRng;
use retry_policy::{Decision, Failure, RetryPolicy};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;
use sut::config::PageConfig;
use sut::ExtractResponse;
use tokio::sync::Notify;
use tokio::time::Instant;

/// One attempt, for goose's own statistics.
#[derive(Debug, Clone)]
pub struct AttemptReport {
    pub latency: Duration,
    pub success: bool,
    pub status: Option<u16>,
}

/// The attempts' reports for goose, collected from every lane for goose's
/// user (`load::scheduler`) to record in batches.
///
/// A channel message per attempt woke goose's user once per attempt, often
/// from another thread (a futex wake-up in the kernel). Here a journey wakes
/// it only once [`Reports::BATCH`] reports are waiting; the user also
/// records them at least every [`Reports::FLUSH`], so goose hears of an
/// attempt a few ms later at most. Nothing is dropped: the user records the
/// last ones after every lane's last journey has ended.
#[derive(Default)]
pub struct Reports {
    batch: Mutex<Vec<AttemptReport>>,
    ready: Notify,
}

impl Reports {
    /// Reports gathered before a journey wakes goose's user.
    pub const BATCH: usize = 64;
    /// The longest a report waits to be recorded while goose's user idles.
    pub const FLUSH: Duration = Duration::from_millis(10);

    pub fn push(&self, r: AttemptReport) {
        let mut batch = self.batch.lock().expect("reports lock");
        batch.push(r);
        if batch.len() == Self::BATCH {
            self.ready.notify_one();
        }
    }

    /// Resolves once a full batch is waiting (possibly already taken).
    pub async fn ready(&self) {
        self.ready.notified().await
    }

    /// Swaps the reports gathered so far into `into` (emptied first), so
    /// the two buffers are reused instead of allocated per batch.
    pub fn take(&self, into: &mut Vec<AttemptReport>) {
        into.clear();
        std::mem::swap(&mut *self.batch.lock().expect("reports lock"), into);
    }
}

/// The variant's end, announced to every journey at once.
#[derive(Default)]
struct Ending {
    ended: AtomicBool,
    notify: Notify,
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
    /// Every attempt's report for goose.
    pub reports: Arc<Reports>,
    /// Cuts every journey off early (Ctrl-C, dead system under test).
    pub stop: Arc<crate::base::interrupt::StopSignal>,
    /// Set once the variant has ended for the journeys (see `watch_end`).
    ending: Ending,
    /// The clients' retry policies, shared by every lane of the load.
    policies: ClientPolicies,
    /// Requests to any HTTP service instead of documents (`http.rs`).
    http_workload: Option<Arc<HttpWorkload>>,
    /// Where a returned result's reference is computed (see [`Self::verifying`]).
    verify: gpu_executor::Compute,
}

impl JourneyContext {
    pub fn new(
        http: HttpClient,
        settings: &crate::load::JourneySettings,
        reports: Arc<Reports>,
        stop: Arc<crate::base::interrupt::StopSignal>,
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
            policies: ClientPolicies::default(),
            ending: Ending::default(),
            http_workload: settings.http.clone(),
            verify: gpu_executor::Compute::Blocking,
        }
    }

    /// The same context computing each result's reference on `verify`:
    /// `Inline` on a virtual clock, whose only thread would otherwise wait,
    /// its clock held, for a thread of the blocking pool to compute it and
    /// wake it (a futex and an eventfd write per result: a full retry-storm
    /// run took 2.1 s that way, 0.85 s in line, BENCHMARKS.md). In real
    /// time the blocking pool
    /// keeps the lane free to start the next arrivals on time.
    pub(crate) fn verifying(mut self, verify: gpu_executor::Compute) -> Self {
        self.verify = verify;
        self
    }

    /// The same context with `policies` as its clients' retry policies.
    pub fn sharing_clients(mut self, policies: ClientPolicies) -> Self {
        self.policies = policies;
        self
    }

    /// Waits for the variant's end (the hard stop or the stop signal) and
    /// cuts every journey off: whoever runs journeys on this context runs
    /// this beside them (each lane's `lanes::arrivals` does). Each journey still checks
    /// both itself before every attempt.
    pub async fn watch_end(&self) {
        // biased: an unbiased select! draws its first branch from the
        // runtime's random seed, which a virtual run cannot replay.
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(self.hard_stop) => {},
            _ = self.stop.wait() => {},
        }
        self.ending.ended.store(true, Ordering::Release);
        self.ending.notify.notify_waiters();
    }

    /// The retry policy of the client `doc` belongs to (`client_policies.rs`).
    fn policy(&self, doc: &Document) -> Arc<RetryPolicy> {
        self.policies.policy(&self.clients, doc)
    }

    /// The client timeout of one attempt (one request) of `doc`.
    pub(crate) fn timeout_for(&self, doc: &Document) -> Duration {
        self.clients.for_tenant(&doc.tenant).1
    }
}

/// How an attempt ended, with what the retry policy needs.
pub(crate) enum Attempt {
    Ok(ExtractResponse),
    /// A generic HTTP request answered with a success status: its body.
    Answered(Bytes),
    Failed(AttemptOutcome, Failure),
}

/// What a journey's attempts send: the document's request body, or a
/// generic HTTP request drawn for it.
enum Prepared<'a> {
    Document(Bytes),
    Http(&'a HttpWorkload, http::HttpRequest),
}

/// A journey's successful answer, to be checked.
enum Reply {
    Extract(ExtractResponse),
    Http(Bytes),
}

/// Runs one journey to its end; `planned` is when its first attempt was due.
pub async fn run(ctx: Arc<JourneyContext>, doc: Document, planned: Instant) {
    ctx.recorder.submitted(doc.id, &doc.tenant);
    let end = journey(&ctx, &doc, planned).await;
    if end == JourneyEnd::Pending {
        ctx.recorder.pending();
    }
    ctx.recorder.journey_ended(doc.id, doc.planned, end);
}

/// Runs the journey; `Pending` means the variant ended first (counted by the caller).
async fn journey(ctx: &JourneyContext, doc: &Document, planned: Instant) -> JourneyEnd {
    let policy = ctx.policy(doc);
    let mut rng = StdRng::seed_from_u64(ctx.seed ^ doc.id);
    if !policy.admit_request(Instant::now().into_std(), &mut rng) {
        // Adaptive throttling refused it locally: a failed attempt that never left.
        ctx.recorder.attempt_sent(doc.id, &doc.tenant);
        ctx.recorder
            .attempt_done(doc.id, AttemptOutcome::Rejected, Duration::ZERO);
        ctx.recorder.given_up(doc.id);
        return JourneyEnd::GaveUp;
    }
    // Prepared once per document: every attempt sends the same bytes.
    let prepared = match &ctx.http_workload {
        Some(h) => Prepared::Http(h, http::prepare(ctx.seed, h, doc)),
        None => Prepared::Document(request_body(doc)),
    };
    // When the attempt now waiting for its answer was sent (its latency's
    // start), for the report of an attempt the variant's end cuts off.
    let mut in_flight = None;
    // One watch on the variant's end for the whole journey, not one per
    // attempt and per retry pause: each was a timer registered in tokio's
    // wheel and a subscription to the stop signal.
    let ended = {
        let attempts = attempts(
            ctx,
            doc,
            planned,
            &policy,
            &mut rng,
            &prepared,
            &mut in_flight,
        );
        // The end first: a journey woken by both its answer (or a freed
        // connection slot) and the end must not start anything more.
        tokio::select! {
            biased;
            _ = variant_end(ctx) => None,
            r = attempts => Some(r),
        }
    };
    match ended {
        Some(Ok(resp)) => {
            match (resp, &prepared) {
                (Reply::Extract(r), _) => verify(ctx, doc, &r).await,
                (Reply::Http(body), Prepared::Http(h, req)) => {
                    http::verify(ctx, h, doc, req, &body)
                }
                // A document's attempts get no generic HTTP answer.
                (Reply::Http(_), Prepared::Document(_)) => {}
            }
            policy.on_success(Instant::now().into_std());
            ctx.recorder
                .completed(&doc.tenant, doc.pages, planned.elapsed());
            JourneyEnd::Completed
        }
        Some(Err(end)) => end,
        None => {
            if let Some(sent) = in_flight {
                // Sent (it may or may not have reached the system) but never
                // answered before the end: goose hears of it as a failed
                // request, so its count still covers every attempt that left.
                ctx.reports.push(AttemptReport {
                    latency: sent.elapsed(),
                    success: false,
                    status: None,
                });
                ctx.recorder.attempt_cut_off();
            }
            JourneyEnd::Pending
        }
    }
}

/// Resolves when the variant ends for the journeys: its hard stop, or the
/// stop signal, as [`JourneyContext::watch_end`] announces it.
///
/// It is polled every time the journey's task wakes (3-4 times an attempt).
/// A timer and a watch of the stop signal per journey, polled at each
/// wake-up, cost about 1,200 instructions an attempt (callgrind); here one
/// task watches both for all journeys, and once the notification has this
/// task's waker a poll reads one flag. It is polled again only if the waker
/// is not the one it holds.
async fn variant_end(ctx: &JourneyContext) {
    // Created before the flag is read: `notify_waiters` completes it even
    // if it was never polled.
    let ended = ctx.ending.notify.notified();
    tokio::pin!(ended);
    let mut registered: Option<std::task::Waker> = None;
    std::future::poll_fn(|cx| {
        if ctx.ending.ended.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if !registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            if ended.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            registered = Some(cx.waker().clone());
        }
        Poll::Pending
    })
    .await
}

/// The journey's attempts until one is answered with a result (`Ok`, to be
/// checked), the policy gives up, or the variant's end is reached between
/// attempts. `in_flight` holds the send time of the attempt awaiting its
/// answer, so the caller can report it if the end cuts it off.
async fn attempts(
    ctx: &JourneyContext,
    doc: &Document,
    planned: Instant,
    policy: &RetryPolicy,
    rng: &mut StdRng,
    prepared: &Prepared<'_>,
    in_flight: &mut Option<Instant>,
) -> Result<Reply, JourneyEnd> {
    let mut attempt = 1u32;
    let mut measured_from = planned;
    loop {
        if Instant::now() >= ctx.hard_stop || ctx.stop.is_set() {
            return Err(JourneyEnd::Pending);
        }
        if attempt == 1 {
            ctx.recorder
                .first_attempt_sent(doc.id, &doc.tenant, planned.elapsed());
        } else {
            ctx.recorder.attempt_sent(doc.id, &doc.tenant);
        }
        *in_flight = Some(measured_from);
        let outcome = send(ctx, doc, prepared, attempt).await;
        *in_flight = None;
        let latency = measured_from.elapsed();
        let (kind, failure, status) = match outcome {
            (Attempt::Ok(r), status) => {
                return Ok(succeeded(ctx, doc, latency, status, Reply::Extract(r)))
            }
            (Attempt::Answered(b), status) => {
                return Ok(succeeded(ctx, doc, latency, status, Reply::Http(b)))
            }
            (Attempt::Failed(kind, failure), status) => (kind, failure, status),
        };
        ctx.reports.push(AttemptReport {
            latency,
            success: false,
            status,
        });
        ctx.recorder.attempt_done(doc.id, kind, latency);
        match policy.on_failure(attempt, failure, Instant::now().into_std(), rng) {
            Decision::Retry { after } => {
                tokio::time::sleep(after).await;
                measured_from = Instant::now();
                attempt += 1;
            }
            Decision::GiveUp(_) => {
                ctx.recorder.given_up(doc.id);
                return Err(JourneyEnd::GaveUp);
            }
        }
    }
}

/// Reports a successful attempt; its reply.
fn succeeded(
    ctx: &JourneyContext,
    doc: &Document,
    latency: Duration,
    status: Option<u16>,
    reply: Reply,
) -> Reply {
    ctx.reports.push(AttemptReport {
        latency,
        success: true,
        status,
    });
    ctx.recorder
        .attempt_done(doc.id, AttemptOutcome::Ok, latency);
    reply
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

/// One attempt: a generic HTTP request, else by the client's submission mode.
async fn send(
    ctx: &JourneyContext,
    doc: &Document,
    prepared: &Prepared<'_>,
    attempt: u32,
) -> (Attempt, Option<u16>) {
    let body = match prepared {
        Prepared::Http(h, req) => return http::attempt(ctx, h, doc, req, attempt).await,
        Prepared::Document(body) => body,
    };
    match ctx.clients.submission {
        Submission::Sync => match post(ctx, &ctx.extract_path, body, doc).await {
            Ok(resp) => answer(resp),
            Err(failed) => (failed, None),
        },
        Submission::Async {
            poll_interval,
            honour_retry_after,
        } => {
            // Boxed: its two requests and its pause make the async attempt
            // the larger future, and inline it would size every journey's
            // task by it, the synchronous ones too (moved whole when spawned).
            Box::pin(async_client::attempt(
                ctx,
                doc,
                body,
                poll_interval,
                honour_retry_after,
            ))
            .await
        }
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
    let reference = move || gpu_executor::reference_document(id, pages, words, rounds);
    let expected = match ctx.verify {
        gpu_executor::Compute::Blocking => tokio::task::spawn_blocking(reference)
            .await
            .unwrap_or(!resp.digest),
        gpu_executor::Compute::Inline => reference(),
    };
    let correct = resp.document == doc.id && resp.pages == doc.pages && resp.digest == expected;
    ctx.recorder
        .result_checked(doc.id, correct, resp.digest, expected);
}

#[cfg(test)]
mod tests;
