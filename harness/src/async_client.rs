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

use crate::journey::{answer, drain, post, retry_after, transport, Attempt, JourneyContext};
use crate::recorder::AttemptOutcome;
use crate::workload::Document;
use retry_policy::Failure;
use std::time::Duration;

/// One asynchronous attempt, to its final answer.
pub(crate) async fn attempt(
    ctx: &JourneyContext,
    doc: &Document,
    poll_interval: Duration,
    honour_retry_after: bool,
) -> (Attempt, Option<u16>) {
    let jobs_url = format!("{}{}", ctx.base_url, sut::JOBS_PATH);
    let accepted = match post(ctx, &jobs_url, doc).await {
        Ok(r) => r,
        Err(failed) => return (failed, None),
    };
    if accepted.status().as_u16() != 202 {
        // Refused at submission: the same answer a synchronous client reads.
        return answer(accepted).await;
    }
    let location = accepted
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    drain(accepted).await;
    let Some(location) = location.filter(|l| l.starts_with('/')) else {
        // A 202 without a job to ask about cannot complete: a broken answer.
        return (
            Attempt::Failed(AttemptOutcome::Error, Failure::Error),
            Some(202),
        );
    };
    let job_url = format!("{}{location}", ctx.base_url);
    let mut wait = poll_interval;
    loop {
        tokio::time::sleep(wait).await;
        let resp = match transport(
            ctx.client
                .get(&job_url)
                .timeout(ctx.timeout_for(doc))
                .send()
                .await,
        ) {
            Ok(r) => r,
            Err(failed) => return (failed, None),
        };
        if resp.status().as_u16() != 202 {
            // 200, or the synchronous path's failure; 404 (expired) is an error.
            return answer(resp).await;
        }
        wait = next_wait(
            poll_interval,
            honour_retry_after,
            retry_after(resp.headers()),
        );
        drain(resp).await;
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
