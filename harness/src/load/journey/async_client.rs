//! An asynchronous client's attempt: submit the document as a job, then poll
//! for its answer.
//!
//! Seed 000 advised customers to "use asynchronous submission where
//! available" and to "honour the Retry-After header". An async client holds
//! no request open while the document computes, so its own timeout no longer
//! abandons work in progress and retries it; whether that alone avoids the
//! incident's waves is what the `async-clients` variant of retry-storm asks.
//!
//! One attempt is `POST /v1/jobs` (202 and a Location, or the synchronous
//! path's refusal, such as 503 `job_table_full`), then `GET` of that location
//! until the answer is no longer 202. The final answer is read exactly as a
//! synchronous one (the system's job runs the synchronous path), so the
//! retry policy and the check against the reference see no difference. The
//! attempt's latency runs from the submission to the answer; the caller cuts
//! it off at the variant's end like any attempt.

use super::{answer, post, transport, Attempt, JourneyContext};
use crate::load::workload::Document;
use crate::observe::recorder::AttemptOutcome;
use bytes::Bytes;
use hyper::{Method, Uri};
use retry_policy::Failure;
use std::time::Duration;

/// One asynchronous attempt, to its final answer.
pub(crate) async fn attempt(
    ctx: &JourneyContext,
    doc: &Document,
    body: &Bytes,
    poll_interval: Duration,
    honour_retry_after: bool,
) -> (Attempt, Option<u16>) {
    let accepted = match post(ctx, &ctx.jobs_path, body, doc).await {
        Ok(r) => r,
        Err(failed) => return (failed, None),
    };
    if accepted.status != 202 {
        // Refused at submission: the same answer a synchronous client reads.
        return answer(accepted);
    }
    let Some(location) = accepted.location.filter(|l| l.starts_with('/')) else {
        // A 202 without a job to ask about cannot complete: a broken answer.
        return (
            Attempt::Failed(AttemptOutcome::Error, Failure::Error),
            Some(202),
        );
    };
    let Ok(job) = location.parse::<Uri>() else {
        // Not a path a request can carry: nothing was sent.
        return (Attempt::Failed(AttemptOutcome::Error, Failure::Error), None);
    };
    let mut wait = poll_interval;
    loop {
        tokio::time::sleep(wait).await;
        let resp = match transport(
            ctx.http
                .request(Method::GET, job.clone(), None, ctx.timeout_for(doc))
                .await,
        ) {
            Ok(r) => r,
            Err(failed) => return (failed, None),
        };
        if resp.status != 202 {
            // 200, or the synchronous path's failure; 404 (expired) is an error.
            return answer(resp);
        }
        wait = next_wait(poll_interval, honour_retry_after, resp.retry_after);
    }
}

/// The pause before the next poll: the answer's Retry-After when the client
/// honours it, else its own interval.
fn next_wait(interval: Duration, honour: bool, advised: Option<Duration>) -> Duration {
    match advised {
        Some(a) if honour && !a.is_zero() => a,
        _ => interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_at_the_advised_time_only_when_honouring_it() {
        let i = Duration::from_millis(250);
        let a = Some(Duration::from_millis(50));
        assert_eq!(next_wait(i, true, a), Duration::from_millis(50));
        assert_eq!(next_wait(i, false, a), i);
        assert_eq!(next_wait(i, true, None), i);
        // A zero advice would poll in a busy loop: the client's own pause.
        assert_eq!(next_wait(i, true, Some(Duration::ZERO)), i);
    }
}
