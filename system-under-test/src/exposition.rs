//! The Prometheus exposition of every layer of the system, built from the
//! metric contract ([`crate::metric_names`]): gateway, cache, executor, each
//! pool and its GPU, and in the gateway role every remote pool's metrics
//! merged in.

use crate::api::RejectReason;
use crate::metric_names::{self as names, Metric};
use crate::metrics::Exposition;
use crate::system::System;

impl System {
    /// The Prometheus text exposition of every layer.
    pub fn render_metrics(&self) -> String {
        self.exposition().finish()
    }

    /// `render_metrics` plus every remote pool's metrics, merged (the gateway
    /// role's `/metrics`). A pool that does not answer within a short bound
    /// contributes its last good reading and `sut_remote_pool_up 0`, so a
    /// paused zone cannot stall the scraper or make counters run backwards.
    pub async fn metrics_text(&self) -> String {
        let mut e = self.exposition();
        let mut reads = tokio::task::JoinSet::new();
        for (i, r) in self.remote_pools().enumerate() {
            let r = r.clone();
            reads.spawn(async move {
                let read = r.metrics_or_last().await;
                (i, r, read)
            });
        }
        let mut texts = Vec::new();
        while let Some(Ok(t)) = reads.join_next().await {
            texts.push(t);
        }
        // Zone order, whatever order the reads finished in.
        texts.sort_by_key(|(i, _, _)| *i);
        for (_, remote, (text, up)) in texts {
            let zone = &remote.zone;
            e.put(
                &names::REMOTE_POOL_UP,
                &[("zone", zone)],
                if up { 1.0 } else { 0.0 },
            );
            if let Some(text) = text {
                // The pool process's own gateway is idle: its counters would only add zeros.
                let keep = |n: &str| {
                    !n.starts_with(names::GATEWAY_PREFIX)
                        && n != names::DISTINCT_DOCUMENTS_TOTAL.name
                };
                e.merge(&text, keep, ("process", zone));
            }
        }
        e.finish()
    }

    fn exposition(&self) -> Exposition {
        let mut e = Exposition::default();
        let g = &self.gateway.metrics;
        let c = |e: &mut Exposition, m: &Metric, v: u64| e.put(m, &[], v as f64);
        c(&mut e, &names::GATEWAY_REQUESTS_TOTAL, g.requests.get());
        c(&mut e, &names::GATEWAY_OK_TOTAL, g.ok.get());
        c(&mut e, &names::GATEWAY_REJECTED_TOTAL, g.rejected.get());
        c(&mut e, &names::GATEWAY_DEADLINE_TOTAL, g.deadline.get());
        c(&mut e, &names::GATEWAY_ATTEMPTS_TOTAL, g.attempts.get());
        c(&mut e, &names::GATEWAY_REDIRECTED_TOTAL, g.redirected.get());
        c(
            &mut e,
            &names::JOBS_SUBMITTED_TOTAL,
            self.jobs_submitted.get(),
        );
        c(
            &mut e,
            &names::JOBS_REJECTED_TOTAL,
            self.jobs_rejected.get(),
        );
        e.put(&names::JOBS_HELD, &[], self.jobs.len() as f64);
        c(
            &mut e,
            &names::DISTINCT_DOCUMENTS_TOTAL,
            g.distinct_documents.get(),
        );
        e.put(
            &names::GATEWAY_ATTEMPTS_CONFIGURED,
            &[],
            f64::from(self.gateway.attempts_configured()),
        );

        if let Some(cache) = &self.cache {
            let cs = cache.stats();
            c(&mut e, &names::CACHE_HITS_TOTAL, cs.hits);
            c(&mut e, &names::CACHE_MISSES_TOTAL, cs.misses);
            c(&mut e, &names::CACHE_WRITES_ACKED_TOTAL, cs.writes_acked);
            c(&mut e, &names::CACHE_WRITES_STORED_TOTAL, cs.writes_stored);
            c(&mut e, &names::CACHE_WRITES_LOST_TOTAL, cs.writes_lost);
            c(&mut e, &names::CACHE_WRITE_ERRORS_TOTAL, cs.write_errors);
            e.put(&names::CACHE_ENTRIES, &[], cs.entries as f64);
            e.put(&names::CACHE_CAPACITY, &[], cs.capacity as f64);
        }

        if let Some(executor) = &self.executor {
            let info = executor.info();
            e.put(
                &names::EXECUTOR_INFO,
                &[
                    ("adapter", &info.adapter),
                    ("fallback", if info.fallback { "true" } else { "false" }),
                ],
                1.0,
            );
        }

        for r in self.remote_pools() {
            let z: &[(&str, &str)] = &[("zone", &r.zone)];
            e.put(
                &names::GATEWAY_REMOTE_POOL_TIMEOUTS_TOTAL,
                z,
                r.metrics.timeouts.get() as f64,
            );
            e.put(
                &names::GATEWAY_REMOTE_POOL_UNREACHABLE_TOTAL,
                z,
                r.metrics.unreachable.get() as f64,
            );
        }

        for p in self.local_pools() {
            let z: &[(&str, &str)] = &[("zone", &p.zone)];
            let m = &p.metrics;
            let zc = |e: &mut Exposition, m: &Metric, v: u64| e.put(m, z, v as f64);
            let zg = |e: &mut Exposition, m: &Metric, v: f64| e.put(m, z, v);
            zc(&mut e, &names::POOL_REQUESTS_TOTAL, m.requests.get());
            for (src, v) in [
                ("computed", m.ok_computed.get()),
                ("cache", m.ok_cache.get()),
                ("duplicate", m.ok_duplicate.get()),
            ] {
                e.put(
                    &names::POOL_OK_TOTAL,
                    &[("zone", &p.zone), ("source", src)],
                    v as f64,
                );
            }
            for r in RejectReason::ALL {
                e.put(
                    &names::POOL_REJECTED_TOTAL,
                    &[("zone", &p.zone), ("reason", r.as_str())],
                    m.rejected.get(r) as f64,
                );
            }
            zc(&mut e, &names::POOL_ADMITTED_TOTAL, m.admitted.get());
            zc(&mut e, &names::POOL_ZOMBIE_WORK_TOTAL, m.zombie_work.get());
            zc(
                &mut e,
                &names::POOL_ZOMBIE_PAGES_TOTAL,
                m.zombie_pages.get(),
            );
            zc(
                &mut e,
                &names::POOL_PAGES_CANCELLED_TOTAL,
                m.pages_cancelled.get(),
            );
            zc(&mut e, &names::POOL_UNANSWERED_TOTAL, m.unanswered.get());
            zc(
                &mut e,
                &names::POOL_DOCUMENTS_COMPUTED_TOTAL,
                m.documents_computed.get(),
            );
            zc(
                &mut e,
                &names::POOL_COMPUTE_FAILURES_TOTAL,
                m.compute_failures.get(),
            );
            zg(&mut e, &names::POOL_SLOTS, f64::from(p.gate().slots()));
            zg(&mut e, &names::POOL_SLOTS_BUSY, f64::from(p.gate().busy()));
            zg(
                &mut e,
                &names::POOL_WAITERS_HOLDING_SLOT,
                m.waiters_holding_slot.get() as f64,
            );
            zg(
                &mut e,
                &names::POOL_WAITERS_WITHOUT_SLOT,
                m.waiters_without_slot.get() as f64,
            );
            zg(
                &mut e,
                &names::POOL_QUEUE_DEPTH,
                f64::from(p.gate().queued()),
            );
            zg(
                &mut e,
                &names::POOL_INFLIGHT_DOCUMENTS,
                p.inflight_documents() as f64,
            );
            let heap = p.heap();
            let (capacity, live, share) = heap.map_or((0.0, 0.0, 0.0), |h| {
                (h.capacity_mb(), h.live_mb(), h.collector_share())
            });
            zg(&mut e, &names::POOL_HEAP_CAPACITY_MB, capacity);
            zg(&mut e, &names::POOL_HEAP_LIVE_MB, live);
            zg(&mut e, &names::POOL_HEAP_COLLECTOR_SHARE, share);
            zg(&mut e, &names::ZONE_FAIL_RATIO, p.fail_ratio());
            let s = p.gpu().stats();
            zc(&mut e, &names::GPU_PAGES_COMPUTED_TOTAL, s.pages_computed);
            zc(
                &mut e,
                &names::GPU_PAGES_RECOMPUTED_TOTAL,
                s.pages_recomputed,
            );
            zc(&mut e, &names::GPU_ORPHAN_PAGES_TOTAL, s.orphan_pages);
            zc(&mut e, &names::GPU_COMPUTE_ERRORS_TOTAL, s.compute_errors);
            zg(&mut e, &names::GPU_QUEUED_PAGES, s.queued_pages as f64);
            zg(&mut e, &names::GPU_LANES, f64::from(s.lanes));
            zg(
                &mut e,
                &names::GPU_REAL_COMPUTE_SECONDS,
                s.real_compute_secs,
            );
            zg(&mut e, &names::GPU_PACED_SECONDS_TOTAL, s.paced_secs);
            zg(
                &mut e,
                &names::GPU_PACED_TARGET_SECONDS_TOTAL,
                s.paced_target_secs,
            );
            for (tenant, pages) in &s.per_tenant_pages {
                e.put(
                    &names::GPU_TENANT_PAGES_TOTAL,
                    &[("zone", &p.zone), ("tenant", tenant)],
                    *pages as f64,
                );
            }
        }
        e
    }
}
