//! The whole configuration of the system under test, as one serde struct.
//!
//! Every defect from the incident reports is a named value here, right next to
//! its fix, so an experiment's `before-fix` and `after-fix` variants differ only
//! in a few switches. The harness embeds this same struct in experiment files,
//! which is why every struct denies unknown fields: a typo must be an error,
//! not a silently ignored fix.

mod check;

pub use check::{SystemConfigError, SystemConfigFileError};

use gpu_executor::{ExecutorChoice, SchedulerConfig};
use retry_policy::RetryConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Top-level configuration of the system under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SystemConfig {
    /// Zone names; one pool per zone behind the gateway's router.
    pub zones: Vec<String>,
    /// Each zone's worker pool: slots, queue, deadline, de-duplication.
    pub pool: PoolConfig,
    /// Each zone's GPU: its capacity model, page queue and scheduling policy.
    pub gpu: SchedulerConfig,
    /// Which page executor runs the pages (auto: wgpu when an adapter exists).
    pub executor: ExecutorChoice,
    /// A page's size and the cost of the page function.
    pub page: PageConfig,
    /// The result cache shared by the zones.
    pub cache: CacheConfig,
    /// Memory of failed submissions (seed 002's fix; off by default).
    pub failure_cache: FailureCacheConfig,
    /// The internal-services layer in front of the pools: its retries and Retry-After.
    pub gateway: GatewayConfig,
    /// Routing between zones: failover when a zone fails.
    pub router: RouterConfig,
    /// Asynchronous submission (`POST /v1/jobs`).
    pub jobs: JobsConfig,
    /// Token required by the admin API (`Authorization: Bearer <token>`; at least 8 characters).
    pub admin_token: String,
    /// Bound on concurrent HTTP connections the server accepts work from.
    pub max_concurrent_requests: usize,
}

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig {
            zones: vec!["z1".into()],
            pool: PoolConfig::default(),
            gpu: SchedulerConfig::default(),
            executor: ExecutorChoice::Auto,
            page: PageConfig::default(),
            cache: CacheConfig::default(),
            failure_cache: FailureCacheConfig::default(),
            gateway: GatewayConfig::default(),
            router: RouterConfig::default(),
            jobs: JobsConfig::default(),
            admin_token: "local-admin-token".into(),
            max_concurrent_requests: 10_000,
        }
    }
}

/// The model-serving worker pool of one zone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    /// Worker slots: requests processed (or waiting while holding a slot) at once (>= 1).
    pub slots: u32,
    /// Requests that may wait for a slot; beyond it: 503 Server overloaded.
    pub queue: u32,
    /// Processing deadline of one request at the pool. Expiry answers the caller
    /// with 504 while the page work continues, as in the incident (> 0).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub deadline: Duration,
    /// How a 503's `Retry-After` is chosen: `fixed` or `estimated`.
    pub retry_after: RetryAfterMode,
    /// What happens to a duplicate of a document already in flight.
    pub dedup: DedupMode,
    /// Time to split one page off a document before it is queued for the GPU (seed 002's splitter).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub split_time: Duration,
    /// Fix for zombie work (seed 003): when a request's deadline passes, its
    /// pages still queued for the GPU are dropped instead of computed for a
    /// caller that has gone. Off: the zone keeps serving timed-out work.
    pub cancel_queued_on_deadline: bool,
    /// What a request whose deadline passed is told while its document's
    /// work goes on.
    pub deadline_answer: DeadlineAnswer,
    /// A heap whose collector slows the pool's CPU work (`split_time`) as
    /// the memory held by requests in flight grows, like a JVM's (the OSDI'22
    /// GC case). Absent: no heap, nothing slows (every seed experiment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heap: Option<crate::heap::HeapConfig>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            slots: 16,
            queue: 0,
            deadline: Duration::from_millis(500),
            retry_after: RetryAfterMode::Fixed {
                after: Duration::from_secs(5),
            },
            dedup: DedupMode::RejectBeforeAdmission,
            split_time: Duration::ZERO,
            cancel_queued_on_deadline: false,
            deadline_answer: DeadlineAnswer::Timeout,
            heap: None,
        }
    }
}

/// How the pool fills `Retry-After` on 503.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RetryAfterMode {
    /// Seed 000 defect: a constant ("retry after five seconds"), whatever the load.
    Fixed {
        /// The advice, e.g. `5s`.
        #[serde(with = "humantime_serde")]
        #[schemars(with = "String")]
        after: Duration,
    },
    /// Fix: estimated from queue depth and the observed drain rate, with jitter
    /// so rejected clients do not come back in lockstep.
    Estimated {
        /// Relative jitter, in [0, 1): the estimate is multiplied by uniform(1 - j, 1 + j).
        jitter: f64,
        /// The smallest advice given.
        #[serde(with = "humantime_serde")]
        #[schemars(with = "String")]
        min: Duration,
        /// The largest advice given (>= `min`).
        #[serde(with = "humantime_serde")]
        #[schemars(with = "String")]
        max: Duration,
    },
}

/// The answer to a request whose deadline passed while its document is
/// still being computed (seed 000, follow-up 4: "return accurate retry
/// guidance").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineAnswer {
    /// As in the incident: 504, no advice; the client retries on its own
    /// backoff, however long the document still needs.
    Timeout,
    /// Fix: 503 whose Retry-After is the document's estimated remaining time
    /// (from its own progress), bounded as `retry_after` bounds its advice,
    /// so a client that honours it comes back when the result is due
    /// instead of retrying a document that cannot be ready.
    RetryAfterRemaining,
}

/// The de-duplication layer's behaviour (seed 000).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DedupMode {
    /// No de-duplication: every request computes. (Not `off`: YAML 1.1 reads that as `false`.)
    Disabled,
    /// Defect: after a request's deadline the in-flight entry is marked abandoned
    /// although the work continues; a retry is admitted, finds the original
    /// running and waits for its result (through the result cache) holding a slot.
    AbandonedDeadlineHoldsSlot,
    /// Fix: duplicates are recognised before admission and rejected with an
    /// accurate Retry-After; they never take a slot.
    RejectBeforeAdmission,
    /// Fix: duplicates are recognised before admission and attached to the
    /// running work as slot-less waiters, handed its result directly.
    WaitWithoutSlot,
}

/// Size of a page's content and the cost of the page function.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PageConfig {
    /// 32-bit words of content per page (>= 1).
    pub words: u32,
    /// Rounds of the mix function per word (>= 1; cost grows linearly).
    pub rounds: u32,
}

impl Default for PageConfig {
    fn default() -> Self {
        PageConfig {
            words: 1024,
            rounds: 16,
        }
    }
}

/// The shared result cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Where results are stored: `memory` or `{ redis: { ... } }`.
    pub backend: CacheBackend,
    /// Entries the cache can hold (its storage limit; >= 1).
    pub capacity: u64,
    /// What a write at the limit does.
    pub on_full: OnFull,
    /// With `ack_and_drop`: share of writes at the limit that are acknowledged and discarded, in [0, 1].
    pub drop_ratio: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            backend: CacheBackend::Memory,
            capacity: 100_000,
            on_full: OnFull::Error,
            drop_ratio: 0.9,
        }
    }
}

/// Where results are stored. YAML: `backend: memory` or
/// `backend: { redis: { maxmemory_mb: 2, policy: allkeys_random } }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CacheBackend {
    /// In-process, bounded by `capacity` entries.
    Memory,
    /// A real Redis, bounded by its `maxmemory`.
    Redis(RedisCacheConfig),
}

/// A Redis result cache. Seed 000's defect for real: at `maxmemory` with an
/// evicting policy, newly written results are acknowledged and then evicted;
/// the fix is a sized instance with `noeviction`, whose refusals (OOM) the
/// cache reports as explicit errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisCacheConfig {
    /// `redis://127.0.0.1:PORT`. Absent: the harness starts its own
    /// `redis-server` with `maxmemory_mb` and `policy` and fills this in.
    #[serde(default)]
    pub url: Option<String>,
    /// The instance's memory limit, in MB, 1 to 65,536 (when the harness starts it).
    pub maxmemory_mb: f64,
    /// What Redis does at `maxmemory` (its `maxmemory-policy`).
    pub policy: RedisPolicy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RedisPolicy {
    /// Evicts random keys at the limit: acknowledged results disappear (defect).
    AllkeysRandom,
    /// Evicts the least recently used keys at the limit: acknowledged results disappear too.
    AllkeysLru,
    /// Refuses writes at the limit with an OOM error (fix: loud).
    Noeviction,
}

impl RedisPolicy {
    /// The name Redis uses.
    pub fn as_redis(&self) -> &'static str {
        match self {
            RedisPolicy::AllkeysRandom => "allkeys-random",
            RedisPolicy::AllkeysLru => "allkeys-lru",
            RedisPolicy::Noeviction => "noeviction",
        }
    }
}

/// What the cache does with a write when it is at its storage limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFull {
    /// Seed 000 defect: acknowledge the write, then discard it (`drop_ratio` of them).
    AckAndDrop,
    /// Fix: a write that cannot be stored is an explicit, counted error.
    Error,
    /// A correctly sized cache: evict the oldest entry to store the new one.
    EvictOldest,
}

/// Seed 002: memory of submissions that failed on queue overflow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FailureCacheConfig {
    /// How long a failed submission is remembered; `0s` = off (the defect: failed
    /// submissions are forgotten, so retries re-enter expensive processing).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub ttl: Duration,
    /// Entries remembered at most (bounded memory; >= 1).
    pub capacity: u64,
}

impl Default for FailureCacheConfig {
    fn default() -> Self {
        FailureCacheConfig {
            ttl: Duration::ZERO,
            capacity: 100_000,
        }
    }
}

/// The job table of asynchronous submission: bounded, and a finished job is
/// forgotten `ttl` after it finished.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct JobsConfig {
    /// Jobs held at most, pending and finished (>= 1); beyond it `POST /v1/jobs` is 503.
    pub capacity: u64,
    /// How long a finished job's result stays readable (> 0).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub ttl: Duration,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            capacity: 100_000,
            ttl: Duration::from_secs(60),
        }
    }
}

/// The internal-services layer in front of the pools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Internal retry policy towards the pools (seed 000: 3 attempts; fix: 1).
    pub retry: RetryConfig,
    /// Fix 4 of seed 000: pass the pool's Retry-After on to the client. Off: the
    /// gateway answers its own fixed `fallback_retry_after`.
    pub propagate_retry_after: bool,
    /// The `Retry-After` the gateway answers when it does not propagate the pool's.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub fallback_retry_after: Duration,
    /// A real proxy as the gateway (`{ haproxy: { config: FILE } }` or
    /// `{ nginx: { config: FILE } }`): the harness starts it in front of the
    /// pool processes, and it is the retry layer. A `sut` process never
    /// reads it. Absent: the project's own gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyConfig>,
}

/// Which proxy, and the team's configuration file for it (with the
/// harness's placeholders: `{{listen}}`, `{{pool:ZONE}}`, and for nginx
/// `{{access_log}}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ProxyConfig {
    /// HAProxy as the gateway.
    Haproxy {
        /// Its configuration file, relative to the experiment file.
        config: std::path::PathBuf,
    },
    /// nginx as the gateway.
    Nginx {
        /// Its configuration file, relative to the experiment file.
        config: std::path::PathBuf,
    },
}

impl ProxyConfig {
    /// The configuration file.
    pub fn config(&self) -> &std::path::Path {
        match self {
            ProxyConfig::Haproxy { config } | ProxyConfig::Nginx { config } => config,
        }
    }

    /// The config file, resolved against `base` when relative.
    pub fn resolved(&self, base: &std::path::Path) -> ProxyConfig {
        let r = |c: &std::path::PathBuf| base.join(c);
        match self {
            ProxyConfig::Haproxy { config } => ProxyConfig::Haproxy { config: r(config) },
            ProxyConfig::Nginx { config } => ProxyConfig::Nginx { config: r(config) },
        }
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            retry: RetryConfig::no_retries(),
            propagate_retry_after: true,
            fallback_retry_after: Duration::from_secs(5),
            proxy: None,
        }
    }
}

/// Routing between zones (seed 003).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RouterConfig {
    /// A zone whose failure ratio over `window` exceeds this has its traffic
    /// redirected to the healthy zone with the lowest failure ratio (in [0, 1]).
    pub redirect_failure_ratio: f64,
    /// The time over which a zone's failure ratio is measured (> 0).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub window: Duration,
    /// Fix: redirect only what the target can absorb: at most this share of the
    /// target's own recent traffic is added on top of it (> 0). Absent:
    /// redirect everything (the defect).
    pub failover_headroom: Option<f64>,
    /// Fixed failover pairs (`az3: az2`): a failing zone's traffic goes to its
    /// pair, as the incident's AZ03 traffic went to AZ02. When pairs are given,
    /// only the listed zones fail over; with none, every failing zone fails over
    /// to the healthiest other zone.
    pub failover: std::collections::BTreeMap<String, String>,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            redirect_failure_ratio: 0.5,
            window: Duration::from_secs(1),
            failover_headroom: None,
            failover: Default::default(),
        }
    }
}
