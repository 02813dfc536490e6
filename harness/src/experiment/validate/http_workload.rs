//! `workload.http` checked and located: classes, templates, the success
//! statuses and the response checks (`experiment/http_workload/`).

use super::Ctx;
use crate::experiment::http_workload::raw::{RawBody, RawCheck, RawHttpClass, RawHttpWorkload};
use crate::experiment::http_workload::{
    Body, HeaderTemplate, HttpClass, HttpWorkload, ResponseCheck, Success, Template,
};
use crate::experiment::{ExperimentError, PageDistribution};
use hyper::header::{HeaderName, HeaderValue};
use serde_saphyr::Location;

/// The largest request body a class may ask for (bytes).
const MAX_BODY: u32 = 16 << 20;

/// The validated workload and its tenants.
pub(super) fn http_workload(
    cx: &Ctx,
    w: &RawHttpWorkload,
) -> Result<(HttpWorkload, u32), ExperimentError> {
    let tenants = match &w.tenants {
        Some(t) if t.value == 0 || t.value > 1000 => {
            return Err(cx.err(
                &t.referenced,
                "workload.http.tenants",
                "must be in 1..=1000",
            ))
        }
        Some(t) => t.value,
        None => 1,
    };
    let keys = match &w.keys {
        None => None,
        Some(p) => Some(super::population(
            cx,
            &p.referenced,
            "workload.http.keys",
            &p.value,
        )?),
    };
    if w.classes.value.is_empty() {
        return Err(cx.err(
            &w.classes.referenced,
            "workload.http.classes",
            "at least one class of requests is required",
        ));
    }
    let mut classes = Vec::new();
    for (i, c) in w.classes.value.iter().enumerate() {
        let field = format!("workload.http.classes[{i}]");
        if classes.iter().any(|k: &HttpClass| k.name == c.value.name) {
            return Err(cx.err(
                &c.referenced,
                format!("{field}.name"),
                format!("{:?} names two classes", c.value.name),
            ));
        }
        classes.push(class(cx, &c.referenced, &field, &c.value)?);
    }
    let success = success(cx, w)?;
    let workload = HttpWorkload {
        classes,
        keys,
        success,
    };
    Ok((workload, tenants))
}

fn success(cx: &Ctx, w: &RawHttpWorkload) -> Result<Success, ExperimentError> {
    let at = &w.success.referenced;
    let s = &w.success.value;
    if s.status.is_empty() {
        return Err(cx.err(
            at,
            "workload.http.success.status",
            "is empty: no answer could ever be a success; list the statuses that answer a request, e.g. [200]",
        ));
    }
    let retry_later = s.retry_later.clone().unwrap_or_else(|| vec![429, 503]);
    for (field, list) in [("status", &s.status), ("retry_later", &retry_later)] {
        if let Some(bad) = list.iter().find(|c| !(100..=599).contains(*c)) {
            return Err(cx.err(
                at,
                format!("workload.http.success.{field}"),
                format!("{bad} is not an HTTP status (100 to 599)"),
            ));
        }
    }
    if let Some(both) = s.status.iter().find(|c| retry_later.contains(c)) {
        return Err(cx.err(
            at,
            "workload.http.success.retry_later",
            format!("{both} is both a success and a rejection"),
        ));
    }
    Ok(Success {
        status: s.status.clone(),
        retry_later,
    })
}

fn class(
    cx: &Ctx,
    at: &Location,
    field: &str,
    c: &RawHttpClass,
) -> Result<HttpClass, ExperimentError> {
    let err = |sub: &str, msg: String| cx.err(at, format!("{field}.{sub}"), msg);
    if !(c.share.is_finite() && c.share > 0.0) {
        return Err(err("share", format!("must be > 0, not {}", c.share)));
    }
    let method = match &c.method {
        None => hyper::Method::GET,
        Some(m) => hyper::Method::from_bytes(m.as_bytes())
            .map_err(|_| err("method", format!("{m:?} is not an HTTP method")))?,
    };
    if !c.path.starts_with('/') {
        return Err(err("path", format!("{:?} must start with /", c.path)));
    }
    let path = Template::parse(&c.path).map_err(|e| err("path", e.to_string()))?;
    let mut headers = Vec::new();
    for (name, value) in &c.headers {
        let sub = format!("headers.{name}");
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| err(&sub, format!("{name:?} is not a header name")))?;
        let t = Template::parse(value).map_err(|e| err(&sub, e.to_string()))?;
        let value = if t.vars().next().is_none() {
            HeaderTemplate::Fixed(
                HeaderValue::from_str(value)
                    .map_err(|_| err(&sub, format!("{value:?} is not a header value")))?,
            )
        } else {
            HeaderTemplate::Template(t)
        };
        headers.push((header, value));
    }
    let body = match &c.body {
        None => Body::None,
        Some(RawBody::Template(text)) => {
            let t = Template::parse(text).map_err(|e| err("body.template", e.to_string()))?;
            if let Some(v) = t.vars().find(|v| v.per_attempt()) {
                return Err(err(
                    "body.template",
                    format!("{v:?} changes with each attempt; a body is built once per request (use it in a header)"),
                ));
            }
            Body::Template(t)
        }
        Some(RawBody::Bytes(d)) => Body::Bytes(body_size(d).map_err(|m| err("body.bytes", m))?),
    };
    let check = match &c.check {
        None => None,
        Some(RawCheck::Regex(r)) => {
            let t = Template::parse_regex(r).map_err(|e| err("check.regex", e.to_string()))?;
            // With every variable as a plain word, it must compile.
            let probe = t.render(&crate::experiment::http_workload::template::Fixed(&[]));
            regex::Regex::new(&probe).map_err(|e| err("check.regex", e.to_string()))?;
            Some(ResponseCheck::Regex(t))
        }
        Some(RawCheck::JsonPointer { pointer, equals }) => {
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                return Err(err(
                    "check.json_pointer.pointer",
                    format!("{pointer:?} is not a JSON pointer (\"\" or /a/b)"),
                ));
            }
            let equals = Template::parse(equals)
                .map_err(|e| err("check.json_pointer.equals", e.to_string()))?;
            Some(ResponseCheck::JsonPointer {
                pointer: pointer.clone(),
                equals,
            })
        }
    };
    Ok(HttpClass {
        name: c.name.clone(),
        share: c.share,
        method,
        path,
        headers,
        body,
        check,
    })
}

/// A body size distribution in bytes: 0 allowed, at most [`MAX_BODY`].
fn body_size(d: &PageDistribution) -> Result<PageDistribution, String> {
    let ok = match *d {
        PageDistribution::Fixed(n) => n <= MAX_BODY,
        PageDistribution::Uniform { min, max } => min <= max && max <= MAX_BODY,
        PageDistribution::Lognormal { median, sigma, max } => {
            median >= 1.0 && (0.0..5.0).contains(&sigma) && max <= MAX_BODY
        }
    };
    if ok {
        Ok(*d)
    } else {
        Err(format!(
            "sizes in bytes must be at most {MAX_BODY} (uniform: min <= max; lognormal: median >= 1, 0 <= sigma < 5)"
        ))
    }
}

/// What a generic HTTP workload rules out elsewhere in the file: this
/// project's system as the target (it speaks the documents' API), the
/// documents' asynchronous clients, and timeline entries that need this
/// project's admin API or documents.
pub(super) fn fits(
    cx: &Ctx,
    w: &RawHttpWorkload,
    timeline: &[serde_saphyr::Spanned<crate::experiment::raw::RawTimelineEntry>],
    environment: &crate::experiment::Environment,
    variants: &[crate::experiment::Variant],
) -> Result<(), ExperimentError> {
    use crate::experiment::{Environment, Submission};
    let at = &w.classes.referenced;
    if !matches!(
        environment,
        Environment::External { .. } | Environment::Processes(_)
    ) {
        return Err(cx.err(
            at,
            "workload.http",
            format!(
                "drives a service of your own, but environment {} runs this project's system (which speaks the documents' API): use environment processes (the harness starts it) or external (target.url)",
                environment.kind()
            ),
        ));
    }
    if let Some(v) = variants
        .iter()
        .find(|v| !matches!(v.client.submission, Submission::Sync))
    {
        return Err(cx.err(
            at,
            format!("variants.{}.client.mode", v.name),
            "`mode: async` submits this project's jobs; a generic HTTP request is one request per attempt (sync)",
        ));
    }
    let generic = crate::experiment::faults::GenericFault::kinds();
    for (i, e) in timeline.iter().enumerate() {
        let Some(value) = e.value.fault.as_ref().or(e.value.action.as_ref()) else {
            continue;
        };
        if let Some(class) = value.get("requests").and_then(|r| r.get("class")) {
            let names: Vec<&str> = w
                .classes
                .value
                .iter()
                .map(|c| c.value.name.as_str())
                .collect();
            if !names.iter().any(|n| Some(*n) == class.as_str()) {
                return Err(cx.err(
                    &e.referenced,
                    format!("timeline[{i}].requests.class"),
                    format!(
                        "{class} is not a class of workload.http (its classes: {})",
                        names.join(", ")
                    ),
                ));
            }
            continue;
        }
        let allowed =
            value.get("load_spike").is_some() || generic.iter().any(|k| value.get(k).is_some());
        if !allowed {
            return Err(cx.err(
                &e.referenced,
                format!("timeline[{i}]"),
                "with workload.http the trigger is a burst of `requests`, a load spike or a generic fault (cpu_limit, pause, kill, network): the other entries need this project's documents or admin API",
            ));
        }
    }
    Ok(())
}

/// `requests:` (in `field`): a burst of one class's requests, lowered to
/// the harness-side trigger that oversized documents are, with its class
/// (the class itself is checked against the workload by [`fits`]).
pub(super) fn requests(
    cx: &Ctx,
    at_loc: &Location,
    field: &str,
    value: &serde_json::Value,
    at: std::time::Duration,
    duration: std::time::Duration,
) -> Result<crate::experiment::TimelineOp, ExperimentError> {
    use crate::experiment::http_workload::raw::RawRequests;
    let r: RawRequests =
        serde_json::from_value(value.clone()).map_err(|e| cx.err(at_loc, field, e.to_string()))?;
    if r.count == 0 || r.count > 10_000 {
        return Err(cx.err(at_loc, format!("{field}.count"), "must be in 1..=10000"));
    }
    let spread = match &r.spread {
        Some(s) => Some(cx.duration(at_loc, &format!("{field}.spread"), s)?),
        None => None,
    };
    if spread.is_some_and(|s| at + s >= duration) {
        return Err(cx.err(
            at_loc,
            format!("{field}.spread"),
            "the last request would arrive after the run; the spread must end inside it",
        ));
    }
    Ok(crate::experiment::TimelineOp::OversizedDocuments(
        crate::experiment::OversizedDocuments {
            tenant: r.tenant.unwrap_or_else(|| "t1".to_string()),
            count: r.count,
            min_pages: 1,
            max_pages: 1,
            spread,
            class: Some(r.class),
        },
    ))
}

/// Without `workload.http` there is no class for a `requests` burst.
pub(super) fn no_requests(
    cx: &Ctx,
    timeline: &[serde_saphyr::Spanned<crate::experiment::raw::RawTimelineEntry>],
) -> Result<(), ExperimentError> {
    for (i, e) in timeline.iter().enumerate() {
        let value = e.value.fault.as_ref().or(e.value.action.as_ref());
        if value.is_some_and(|v| v.get("requests").is_some()) {
            return Err(cx.err(
                &e.referenced,
                format!("timeline[{i}].requests"),
                "a burst of requests needs workload.http (its classes); documents' trigger is oversized_documents",
            ));
        }
    }
    Ok(())
}
