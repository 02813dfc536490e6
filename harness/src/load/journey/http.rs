//! One request of a generic HTTP workload (`workload.http`): its class, key
//! and body drawn once per request, its path and headers rendered per
//! attempt, its answer taken by the workload's success statuses, and a
//! successful answer's body checked by its class's `check`.
//!
//! The draws come from the seed and the request's id alone, so both
//! variants of an experiment send the same requests, in the same order.

use super::{transport, Attempt, JourneyContext};
use crate::experiment::http_workload::template::Values;
use crate::experiment::http_workload::{
    Body, HeaderTemplate, HttpClass, HttpWorkload, StatusClass, Var,
};
use crate::load::workload::{Document, Draw};
use crate::net::http::{Answer, BodyError};
use crate::observe::recorder::AttemptOutcome;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Uri};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use retry_policy::Failure;
use std::fmt::Write;

/// A request as drawn for a document of the load path.
pub(crate) struct HttpRequest {
    class: usize,
    key: u64,
    /// Built once: every attempt sends the same bytes.
    body: Bytes,
}

/// The variables of one attempt of a request.
struct AttemptValues<'a> {
    doc: &'a Document,
    req: &'a HttpRequest,
    class: &'a HttpClass,
    attempt: u32,
    sent_unix_us: u128,
}

impl Values for AttemptValues<'_> {
    fn write(&self, var: Var, out: &mut String) {
        let _ = match var {
            Var::Key => write!(out, "{}", self.req.key),
            Var::Tenant => write!(out, "{}", self.doc.tenant),
            Var::Id => write!(out, "{}", self.doc.id),
            Var::Class => write!(out, "{}", self.class.name),
            Var::Attempt => write!(out, "{}", self.attempt),
            Var::SentUnixUs => write!(out, "{}", self.sent_unix_us),
        };
    }
}

/// Draws `doc`'s class, key and body.
pub(crate) fn prepare(seed: u64, http: &HttpWorkload, doc: &Document) -> HttpRequest {
    let mut rng = StdRng::seed_from_u64(seed ^ doc.id ^ 0x4854_5450);
    let total: f64 = http.classes.iter().map(|c| c.share).sum();
    let mut u = rng.random_range(0.0..total);
    let mut class = http.classes.len() - 1;
    for (i, c) in http.classes.iter().enumerate() {
        if u < c.share {
            class = i;
            break;
        }
        u -= c.share;
    }
    // A timeline burst names its class (validated to be one of them).
    if let Some(i) = doc
        .class
        .as_ref()
        .and_then(|name| http.classes.iter().position(|c| &c.name == name))
    {
        class = i;
    }
    let key = match &http.keys {
        Some(p) => Draw::new(p).next(&mut rng),
        None => doc.id,
    };
    let mut req = HttpRequest {
        class,
        key,
        body: Bytes::new(),
    };
    let c = &http.classes[class];
    req.body = match &c.body {
        Body::None => Bytes::new(),
        Body::Template(t) => Bytes::from(t.render(&values(doc, &req, c, 1))),
        Body::Bytes(d) => {
            let n = crate::experiment::sampling::sample_pages(d, &mut rng) as usize;
            Bytes::from(vec![b'x'; n])
        }
    };
    req
}

fn values<'a>(
    doc: &'a Document,
    req: &'a HttpRequest,
    class: &'a HttpClass,
    attempt: u32,
) -> AttemptValues<'a> {
    AttemptValues {
        doc,
        req,
        class,
        attempt,
        sent_unix_us: 0,
    }
}

/// Sends attempt `attempt` of `req` and takes its answer.
pub(super) async fn attempt(
    ctx: &JourneyContext,
    http: &HttpWorkload,
    doc: &Document,
    req: &HttpRequest,
    attempt: u32,
) -> (Attempt, Option<u16>) {
    let class = &http.classes[req.class];
    let mut v = values(doc, req, class, attempt);
    v.sent_unix_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let Some(request) = build(class, &v, &req.body) else {
        // A rendered path or header that HTTP cannot carry (a variable's
        // value made it invalid): the attempt fails without leaving.
        return (Attempt::Failed(AttemptOutcome::Error, Failure::Error), None);
    };
    let sent = ctx.http.send_request(request, ctx.timeout_for(doc)).await;
    match transport(sent) {
        Ok(answer) => taken(http, answer),
        Err(failed) => (failed, None),
    }
}

/// The request of one attempt; `None` if a rendered part is not valid HTTP.
fn build(class: &HttpClass, v: &AttemptValues<'_>, body: &Bytes) -> Option<Request<Full<Bytes>>> {
    let uri: Uri = class.path.render(v).parse().ok()?;
    let mut r = Request::new(Full::new(body.clone()));
    *r.method_mut() = class.method.clone();
    *r.uri_mut() = uri;
    let headers = r.headers_mut();
    for (name, value) in &class.headers {
        let value = match value {
            HeaderTemplate::Fixed(h) => h.clone(),
            HeaderTemplate::Template(t) => t.render(v).parse().ok()?,
        };
        headers.insert(name.clone(), value);
    }
    Some(r)
}

/// What an answer means, by the workload's success statuses.
fn taken(http: &HttpWorkload, resp: Answer) -> (Attempt, Option<u16>) {
    let status = resp.status;
    let failed = |kind, failure| (Attempt::Failed(kind, failure), Some(status));
    match http.success.class(status) {
        StatusClass::Success => match resp.body {
            Ok(b) => (Attempt::Answered(b), Some(status)),
            Err(BodyError::Timeout) => failed(AttemptOutcome::Timeout, Failure::Timeout),
            Err(BodyError::Broken) => failed(AttemptOutcome::Error, Failure::Error),
        },
        StatusClass::RetryLater => failed(
            AttemptOutcome::Rejected,
            Failure::Overloaded {
                retry_after: resp.retry_after,
            },
        ),
        StatusClass::Timeout => failed(AttemptOutcome::Timeout, Failure::Timeout),
        StatusClass::Error => failed(AttemptOutcome::Error, Failure::Error),
    }
}

/// Checks a successful answer's body by its class's `check` (none: nothing
/// to check, and nothing is counted as checked).
pub(super) fn verify(
    ctx: &JourneyContext,
    http: &HttpWorkload,
    doc: &Document,
    req: &HttpRequest,
    body: &Bytes,
) {
    let class = &http.classes[req.class];
    let Some(check) = &class.check else {
        return;
    };
    let outcome = check.holds(body, &values(doc, req, class, 1));
    let example = outcome
        .as_ref()
        .err()
        .map(|why| format!("request {} ({}): {why}", doc.id, class.name));
    ctx.recorder
        .result_checked_by(doc.id, outcome.is_ok(), example);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::http_workload::{Success, Template};
    use crate::experiment::{PageDistribution, Popularity, Population};

    fn workload() -> HttpWorkload {
        let class = |name: &str, share: f64, body: Body| HttpClass {
            name: name.into(),
            share,
            method: hyper::Method::POST,
            path: Template::parse("/items/{key}?t={tenant}&a={attempt}").unwrap(),
            headers: vec![(
                hyper::header::HeaderName::from_static("x-id"),
                HeaderTemplate::Template(Template::parse("{id}-{class}").unwrap()),
            )],
            body,
            check: None,
        };
        HttpWorkload {
            classes: vec![
                class("read", 99.0, Body::None),
                class("upload", 1.0, Body::Bytes(PageDistribution::Fixed(1000))),
            ],
            keys: Some(Population {
                size: 10,
                popularity: Popularity::Uniform,
            }),
            success: Success {
                status: vec![200],
                retry_later: vec![429, 503],
            },
        }
    }

    fn doc(id: u64) -> Document {
        Document {
            id,
            tenant: "t2".into(),
            pages: 1,
            planned: std::time::Duration::ZERO,
            class: None,
        }
    }

    /// Shares are kept, keys stay in the population, and the same seed and
    /// id give the same request.
    #[test]
    fn requests_are_drawn_by_share_and_from_the_seed() {
        let w = workload();
        let uploads = (0..20_000)
            .map(|id| prepare(1, &w, &doc(id)))
            .filter(|r| {
                assert!(r.key < 10);
                r.class == 1
            })
            .inspect(|r| assert_eq!(r.body.len(), 1000))
            .count();
        assert!((120..=290).contains(&uploads), "{uploads} uploads of 20000");
        let (a, b) = (prepare(7, &w, &doc(3)), prepare(7, &w, &doc(3)));
        assert_eq!((a.class, a.key, a.body), (b.class, b.key, b.body));
        // A timeline burst's request is of its named class, whatever the share.
        let burst = (0..200).map(|id| Document {
            class: Some("upload".into()),
            ..doc(id)
        });
        assert!(burst.map(|d| prepare(1, &w, &d)).all(|r| r.class == 1));
    }

    #[test]
    fn an_attempts_path_and_headers_carry_its_variables() {
        let w = workload();
        let d = doc(5);
        let req = HttpRequest {
            class: 0,
            key: 4,
            body: Bytes::new(),
        };
        let r = build(
            &w.classes[0],
            &values(&d, &req, &w.classes[0], 2),
            &req.body,
        )
        .unwrap();
        assert_eq!(r.uri().to_string(), "/items/4?t=t2&a=2");
        assert_eq!(r.headers()["x-id"], "5-read");
        assert_eq!(r.method(), hyper::Method::POST);
    }

    #[test]
    fn answers_are_taken_by_the_success_statuses() {
        let w = workload();
        let answer = |status, body: Result<Bytes, BodyError>| Answer {
            status,
            retry_after: Some(std::time::Duration::from_secs(2)),
            location: None,
            body,
        };
        assert!(matches!(
            taken(&w, answer(200, Ok(Bytes::new()))).0,
            Attempt::Answered(_)
        ));
        assert!(matches!(
            taken(&w, answer(200, Err(BodyError::Timeout))).0,
            Attempt::Failed(AttemptOutcome::Timeout, _)
        ));
        assert!(matches!(
            taken(&w, answer(429, Ok(Bytes::new()))).0,
            Attempt::Failed(
                AttemptOutcome::Rejected,
                Failure::Overloaded {
                    retry_after: Some(_)
                }
            )
        ));
        assert!(matches!(
            taken(&w, answer(500, Ok(Bytes::new()))).0,
            Attempt::Failed(AttemptOutcome::Error, Failure::Error)
        ));
    }
}
