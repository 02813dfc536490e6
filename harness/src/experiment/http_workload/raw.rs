//! `workload.http` as written: strict serde structs, nothing interpreted
//! (the validator, `validate/http_workload.rs`, checks and locates them).

use crate::experiment::{PageDistribution, RawPopulation};
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

use crate::experiment::schema_defaults as sd;

/// Requests to any HTTP service, in classes with their shares, instead of
/// this project's documents.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttpWorkload {
    /// The request classes; each arrival is one of them, drawn by `share`.
    #[schemars(with = "Vec<RawHttpClass>")]
    pub classes: Spanned<Vec<Spanned<RawHttpClass>>>,
    /// Tenants the arrivals are spread over (`{tenant}`: t1 to tN; 1 to 1,000).
    #[serde(default)]
    #[schemars(with = "Option<u32>", default = "sd::http_tenants")]
    pub tenants: Option<Spanned<u32>>,
    /// The population `{key}` is drawn from (0 to size-1), with its
    /// popularity. Absent: `{key}` is the request's id.
    #[serde(default)]
    #[schemars(with = "Option<RawPopulation>")]
    pub keys: Option<Spanned<RawPopulation>>,
    /// Which statuses are a success, and which mean "rejected, try later".
    #[schemars(with = "RawSuccess")]
    pub success: Spanned<RawSuccess>,
}

/// One class of requests: `{ name: read, share: 99, method: GET, path: /items/{key} }`.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttpClass {
    /// The class's name (unique), as `requests: { class }` names it.
    pub name: String,
    /// Its weight among the classes (shares need not add up to 100).
    pub share: f64,
    /// The HTTP method: GET, POST, PUT, ...
    #[serde(default)]
    #[schemars(default = "sd::http_method")]
    pub method: Option<String>,
    /// The path and query, a template: `/items/{key}?tenant={tenant}`.
    pub path: String,
    /// Request headers, values as templates (none by default).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The request body: none (default), a template, or bytes of a drawn size.
    #[serde(default)]
    pub body: Option<RawBody>,
    /// What a successful answer's body must hold (the result check).
    /// Absent: its status alone decides.
    #[serde(default)]
    pub check: Option<RawCheck>,
}

/// A request body.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawBody {
    /// A template (`{"key": "{key}"}`), rendered once per request.
    Template(String),
    /// Bytes of a size (in bytes) drawn per request.
    Bytes(PageDistribution),
}

/// A successful answer's required content: a regular expression (with
/// `{var}` placeholders, matched literally) or a JSON pointer's value.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RawCheck {
    /// The body must match it somewhere.
    Regex(String),
    /// The body is JSON whose value at `pointer` equals the template `equals`.
    JsonPointer {
        /// An RFC 6901 JSON pointer, e.g. `/id`.
        pointer: String,
        /// The value it must equal, a template (`{key}`).
        equals: String,
    },
}

/// `requests:` in a timeline entry: a burst of one class's requests, a
/// generic workload's trigger as oversized documents are seed 000's
/// (`{ class: upload, count: 50, spread: 5s }`).
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRequests {
    /// One of `workload.http.classes`.
    pub class: String,
    /// How many requests (1 to 10,000).
    pub count: u32,
    /// Whose clients send them.
    #[serde(default)]
    #[schemars(default = "sd::first_tenant")]
    pub tenant: Option<String>,
    /// Arrivals spread over this time (default: all at once).
    #[serde(default)]
    pub spread: Option<String>,
}

/// `success: { status: [200], retry_later: [429, 503] }`.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSuccess {
    /// Statuses that answer the request.
    pub status: Vec<u16>,
    /// Statuses that mean "rejected, try later": the
    /// client's policy sees them as overload, with any Retry-After.
    #[serde(default)]
    #[schemars(default = "sd::retry_later")]
    pub retry_later: Option<Vec<u16>>,
}
