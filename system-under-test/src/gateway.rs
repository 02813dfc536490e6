//! `Gateway`: the "internal services" layer between clients and the pools.
//!
//! It routes each attempt to a zone and, on failure, retries internally with
//! its own policy. Seed 000: "Document Understanding's internal services also
//! retried, which kept the workers saturated"; the mitigation was cutting this
//! layer to a single attempt, after which request volume converged to the
//! number of distinct documents. Seed 003's "platform-initiated retries" are
//! the same mechanism across zones. The policy is a `retry_policy::RetryPolicy`,
//! the very code the load generator's clients use.

use crate::api::{RejectReason, Reply};
use crate::config::GatewayConfig;
use crate::entropy::Entropy;
use crate::metrics::{Counter, DistinctCounter};
use crate::router::ZoneRouter;
use crate::zone_pool::ZonePool;
use retry_policy::{Decision, Failure, RetryPolicy};
use std::sync::{Arc, RwLock};

/// Counters of the gateway.
pub struct GatewayMetrics {
    /// Client requests received.
    pub requests: Counter,
    pub ok: Counter,
    pub rejected: Counter,
    pub deadline: Counter,
    /// Attempts sent to pools (amplification of this layer = attempts / requests).
    pub attempts: Counter,
    pub redirected: Counter,
    pub distinct_documents: DistinctCounter,
}

impl Default for GatewayMetrics {
    fn default() -> Self {
        GatewayMetrics {
            requests: Counter::default(),
            ok: Counter::default(),
            rejected: Counter::default(),
            deadline: Counter::default(),
            attempts: Counter::default(),
            redirected: Counter::default(),
            distinct_documents: DistinctCounter::new(1 << 20),
        }
    }
}

pub struct Gateway {
    /// One per zone, in the router's index order; in this process or remote.
    pools: Vec<ZonePool>,
    router: ZoneRouter,
    /// Replaced as a whole by the operator action "set internal retries".
    retry: RwLock<Arc<RetryPolicy>>,
    cfg: GatewayConfig,
    pub metrics: GatewayMetrics,
    /// The retry policy's draws (jitter, throttling).
    entropy: Entropy,
}

/// Now on tokio's clock (the virtual one when time is paused), as the
/// retry policies' `std::time::Instant`.
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// The gateway's answer, with the zone that produced it.
pub struct GatewayReply {
    pub reply: Reply,
    pub zone: String,
}

impl Gateway {
    pub(crate) fn new(
        pools: Vec<ZonePool>,
        router: ZoneRouter,
        cfg: GatewayConfig,
        entropy: Entropy,
    ) -> Self {
        Gateway {
            entropy,
            pools,
            router,
            retry: RwLock::new(Arc::new(RetryPolicy::new(cfg.retry.clone()))),
            cfg,
            metrics: GatewayMetrics::default(),
        }
    }

    pub fn pools(&self) -> &[ZonePool] {
        &self.pools
    }

    pub fn router(&self) -> &ZoneRouter {
        &self.router
    }

    /// Operator action: replace the internal retry policy's attempt count.
    pub fn set_attempts(&self, attempts: u32) {
        let mut cfg = self.retry.read().expect("retry lock").config().clone();
        cfg.max_attempts = attempts.max(1);
        *self.retry.write().expect("retry lock") = Arc::new(RetryPolicy::new(cfg));
    }

    pub fn attempts_configured(&self) -> u32 {
        self.retry.read().expect("retry lock").config().max_attempts
    }

    pub async fn handle(&self, tenant: &str, doc: u64, pages: u32) -> GatewayReply {
        let m = &self.metrics;
        m.requests.inc();
        m.distinct_documents.observe(doc);
        let policy = self.retry.read().expect("retry lock").clone();
        // Counts the request for ratio budgets and adaptive throttling; a
        // locally throttled request is refused without reaching any pool.
        if !self
            .entropy
            .with(|mut r| policy.admit_request(now(), &mut r))
        {
            m.rejected.inc();
            let reply = Reply::Overloaded {
                retry_after: self.cfg.fallback_retry_after,
                reason: RejectReason::Throttled,
            };
            return self.answer(reply, self.router.home(doc, self.pools.len()));
        }
        let mut attempt = 1;
        let mut last_failure = None;
        loop {
            m.attempts.inc();
            let (reply, zone) = match self.router.route(doc) {
                Ok(route) => {
                    if route.redirected {
                        m.redirected.inc();
                    }
                    let pool = &self.pools[route.zone];
                    let reply = pool.handle(tenant, doc, pages).await;
                    self.router.record(route.zone, !reply.is_ok());
                    (reply, route.zone)
                }
                Err(reason) => (
                    Reply::Overloaded {
                        retry_after: self.cfg.fallback_retry_after,
                        reason,
                    },
                    self.router.home(doc, self.pools.len()),
                ),
            };
            let failure = match &reply {
                Reply::Ok { .. } => {
                    match last_failure {
                        Some(f) => policy.on_retry_success(f, now()),
                        None => policy.on_success(now()),
                    }
                    m.ok.inc();
                    return self.answer(reply, zone);
                }
                Reply::Overloaded { retry_after, .. } => Failure::Overloaded {
                    retry_after: Some(*retry_after),
                },
                Reply::Deadline => Failure::Timeout,
            };
            last_failure = Some(failure);
            let decision = self
                .entropy
                .with(|mut r| policy.on_failure(attempt, failure, now(), &mut r));
            match decision {
                Decision::Retry { after } => {
                    tokio::time::sleep(after + self.entropy.timer_lateness()).await;
                    attempt += 1;
                }
                Decision::GiveUp(_) => {
                    match reply {
                        Reply::Deadline => m.deadline.inc(),
                        _ => m.rejected.inc(),
                    }
                    return self.answer(reply, zone);
                }
            }
        }
    }

    /// Seed 000 fix 4: propagate the pool's retry guidance, or (defect) answer
    /// the gateway's own fixed value.
    fn answer(&self, reply: Reply, zone: usize) -> GatewayReply {
        let reply = match reply {
            Reply::Overloaded {
                retry_after,
                reason,
            } if !self.cfg.propagate_retry_after => {
                let _ = retry_after;
                Reply::Overloaded {
                    retry_after: self.cfg.fallback_retry_after,
                    reason,
                }
            }
            r => r,
        };
        GatewayReply {
            reply,
            zone: self
                .pools
                .get(zone)
                .map(|p| p.zone().to_string())
                .unwrap_or_default(),
        }
    }

    pub fn zone_index(&self, name: &str) -> Option<usize> {
        self.pools.iter().position(|p| p.zone() == name)
    }
}
