//! `workload.client` and a variant's `client` as written: the simulated
//! clients' retry policy, timeout and submission mode, and per-tenant changes.

use crate::experiment::schema_defaults as sd;
use retry_policy::RetryConfig;
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// `client:` the simulated clients' behaviour.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClient {
    /// Their retry policy: attempts, backoff, Retry-After, budget.
    pub retry: RetryConfig,
    /// How long a client waits for one attempt's answer before giving it
    /// up (a duration > 0, e.g. `2s`).
    #[schemars(with = "String")]
    pub timeout: Spanned<String>,
    /// `sync`: one request per attempt, held until the answer.
    /// `async`: submit a job, then poll for its answer.
    #[serde(default)]
    #[schemars(with = "Option<ClientMode>", default = "sd::client_mode")]
    pub mode: Option<Spanned<ClientMode>>,
    /// How an `async` client polls (only with `mode: async`). Absent:
    /// every 250ms, honouring Retry-After.
    #[serde(default)]
    #[schemars(with = "Option<RawPoll>")]
    pub poll: Option<Spanned<RawPoll>>,
    /// Clients in all, spread over the tenants (default: one per tenant);
    /// each keeps its own retry state and budget.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub count: Option<Spanned<u32>>,
    /// Per-tenant client behaviour, e.g. `t7: { retry: { max_attempts: 10 } }`.
    /// Absent: every tenant's clients as above.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, RawTenantClient>>")]
    pub tenants: Option<Spanned<BTreeMap<String, RawTenantClient>>>,
}

/// One tenant's clients, where they differ from the others.
#[derive(Debug, Deserialize, Clone, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTenantClient {
    /// This tenant's retry policy, replacing the clients' as a whole. Absent: theirs.
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    /// This tenant's attempt timeout (a duration > 0). Absent: theirs.
    #[serde(default)]
    pub timeout: Option<String>,
}

/// How a client submits a document.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientMode {
    /// One request per attempt, held until the answer.
    #[default]
    Sync,
    /// Submit a job (`POST /v1/jobs`), then poll for its answer.
    Async,
}

/// `poll: { interval: 250ms, honour_retry_after: true }`: how an async client
/// asks for its job's answer.
#[derive(Debug, Deserialize, Clone, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPoll {
    /// Time between two polls of one job (a duration > 0).
    pub interval: String,
    /// Wait a pending answer's Retry-After instead of `interval` when it gives one.
    #[serde(default = "yes")]
    pub honour_retry_after: bool,
}

fn yes() -> bool {
    true
}

/// A variant's changes to `workload.client`; each key absent keeps the base's.
#[derive(Debug, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClientOverride {
    /// The retry policy, replacing the base's as a whole. Absent: the base's.
    #[serde(default)]
    pub retry: Option<RetryConfig>,
    /// The attempt timeout (a duration > 0). Absent: the base's.
    #[serde(default)]
    pub timeout: Option<String>,
    /// `sync` or `async`. Absent: the base's.
    #[serde(default)]
    pub mode: Option<ClientMode>,
    /// How an `async` client polls. Absent: the base's.
    #[serde(default)]
    pub poll: Option<RawPoll>,
}
