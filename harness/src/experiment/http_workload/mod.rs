//! `workload.http`: requests to any HTTP service, instead of this
//! project's documents, so the harness can drive the user's own service.
//!
//! Each arrival is one request of a class (drawn by the classes' shares,
//! from the seed and the request's id, so both variants send the same
//! requests). A class says how to build it (method, a path template,
//! headers, a body) and what its answer must hold (`check`); the workload
//! says which statuses are a success and which mean "rejected, try later".
//! The open-loop arrivals, the clients' retry policies and timeouts are the
//! documents' own: a request is a document of one page to the load path,
//! and `load/journey/http.rs` sends and checks it.

pub mod raw;
pub mod template;

use crate::experiment::{PageDistribution, Population};
use hyper::header::{HeaderName, HeaderValue};
use hyper::Method;
pub use template::{Template, Var};

/// The validated `workload.http`.
#[derive(Debug, Clone)]
pub struct HttpWorkload {
    pub classes: Vec<HttpClass>,
    /// The population `{key}` is drawn from; `None`: the request's id.
    pub keys: Option<Population>,
    pub success: Success,
}

/// One class of requests.
#[derive(Debug, Clone)]
pub struct HttpClass {
    pub name: String,
    /// Its share of the arrivals, as a weight (> 0).
    pub share: f64,
    pub method: Method,
    pub path: Template,
    pub headers: Vec<(HeaderName, HeaderTemplate)>,
    pub body: Body,
    pub check: Option<ResponseCheck>,
}

/// A header's value: fixed, or a template rendered per attempt.
#[derive(Debug, Clone)]
pub enum HeaderTemplate {
    Fixed(HeaderValue),
    Template(Template),
}

/// A request body.
#[derive(Debug, Clone)]
pub enum Body {
    None,
    /// Rendered once per request (its variables are the request's, not the attempt's).
    Template(Template),
    /// Bytes of a size drawn per request.
    Bytes(PageDistribution),
}

/// What a successful answer's body must hold.
#[derive(Debug, Clone)]
pub enum ResponseCheck {
    /// A regular expression, its variables' values matched literally.
    Regex(Template),
    /// The JSON value at `pointer` equals the rendered template (a string
    /// value as it is, any other value as its JSON text).
    JsonPointer { pointer: String, equals: Template },
}

/// Which statuses answer a request, and which reject it for now.
#[derive(Debug, Clone, PartialEq)]
pub struct Success {
    pub status: Vec<u16>,
    pub retry_later: Vec<u16>,
}

/// How an answer's status is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    Success,
    /// Rejected for now: overload to the client's policy (Retry-After honoured).
    RetryLater,
    /// A gateway's timeout (504): a timeout to the client's policy.
    Timeout,
    Error,
}

impl Success {
    pub fn class(&self, status: u16) -> StatusClass {
        if self.status.contains(&status) {
            StatusClass::Success
        } else if self.retry_later.contains(&status) {
            StatusClass::RetryLater
        } else if status == 504 {
            StatusClass::Timeout
        } else {
            StatusClass::Error
        }
    }
}

impl ResponseCheck {
    /// Whether `body` holds what the check asks for, given the request's
    /// variables; `Err` says what was found instead (for the report's
    /// examples of incorrect results).
    pub fn holds(&self, body: &[u8], values: &dyn template::Values) -> Result<(), String> {
        let text = String::from_utf8_lossy(body);
        match self {
            ResponseCheck::Regex(t) => {
                let pattern = t.render_escaped(values, &regex::escape);
                let re = regex::Regex::new(&pattern)
                    .map_err(|e| format!("the check's expression {pattern:?}: {e}"))?;
                if re.is_match(&text) {
                    Ok(())
                } else {
                    Err(format!("no match of {pattern:?} in {:?}", clip(&text)))
                }
            }
            ResponseCheck::JsonPointer { pointer, equals } => {
                let want = equals.render(values);
                let json: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| format!("not JSON ({e}): {:?}", clip(&text)))?;
                let got = match json.pointer(pointer) {
                    None => return Err(format!("no {pointer} in {:?}", clip(&text))),
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                };
                if got == want {
                    Ok(())
                } else {
                    Err(format!("{pointer} is {got:?}, expected {want:?}"))
                }
            }
        }
    }
}

/// The first 80 characters of an answer, for a message.
fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classed_by_the_success_set() {
        let s = Success {
            status: vec![200, 201],
            retry_later: vec![429, 503],
        };
        assert_eq!(s.class(201), StatusClass::Success);
        assert_eq!(s.class(429), StatusClass::RetryLater);
        assert_eq!(s.class(504), StatusClass::Timeout);
        assert_eq!(s.class(500), StatusClass::Error);
        assert_eq!(s.class(404), StatusClass::Error);
    }

    #[test]
    fn checks_compare_with_the_requests_variables() {
        let v = &template::Fixed(&[(Var::Key, "7")]);
        let pointer = ResponseCheck::JsonPointer {
            pointer: "/item/key".into(),
            equals: Template::parse("{key}").unwrap(),
        };
        assert_eq!(pointer.holds(br#"{"item":{"key":7}}"#, v), Ok(()));
        assert_eq!(pointer.holds(br#"{"item":{"key":"7"}}"#, v), Ok(()));
        let e = pointer.holds(br#"{"item":{"key":8}}"#, v).unwrap_err();
        assert!(e.contains("expected \"7\""), "{e}");
        assert!(pointer
            .holds(b"<html>", v)
            .unwrap_err()
            .contains("not JSON"));
        let re = ResponseCheck::Regex(Template::parse_regex(r"key=\d{1}{key}\b").unwrap());
        assert_eq!(re.holds(b"key=17 ok", v), Ok(()));
        assert!(re.holds(b"key=18", v).is_err());
    }
}
