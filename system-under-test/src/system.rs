//! `System`: the whole service assembled from its configuration.
//!
//! One page executor (one GPU device) is shared by every zone's scheduler, one
//! result cache by every pool, and one gateway routes between them. The
//! admin commands are applied here, and the metrics of every layer are
//! gathered here into one Prometheus exposition.
//!
//! A process runs one `Role`: everything (the embedded default), one zone's
//! pool, or the gateway alone with every pool remote. In the gateway role the
//! admin commands meant for a zone are forwarded to its pool process and the
//! pools' metrics are merged into the gateway's, so a harness talks to one
//! address whatever the shape.

use crate::admin::{AdminCommand, AdminError, WorkInProgress, WorkQuery};
use crate::api::RejectReason;
use crate::cache::{MemoryCache, ResultCache};
use crate::config::{CacheBackend, SystemConfig};
use crate::failure_cache::FailureCache;
use crate::gateway::Gateway;
use crate::metrics::Exposition;
use crate::pool::Pool;
use crate::remote_pool::RemotePool;
use crate::role::Role;
use crate::router::ZoneRouter;
use crate::zone_pool::ZonePool;
use gpu_executor::{select_executor, ExecutorInfo, ExecutorKind, GpuScheduler, PageExecutor};
use std::sync::Arc;

pub struct System {
    pub config: SystemConfig,
    pub role: Role,
    pub gateway: Gateway,
    /// The result cache; `None` in the gateway role (the pools hold it).
    pub cache: Option<Arc<dyn ResultCache>>,
    /// The GPU; `None` in the gateway role.
    pub executor: Option<Arc<dyn PageExecutor>>,
    /// Admin API open to non-loopback peers (token still required): for pool
    /// and gateway processes in containers, whose callers are other hosts.
    pub admin_from_any_peer: bool,
}

/// How a process runs the system (the `sut` binary's flags).
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub role: Role,
    pub admin_from_any_peer: bool,
}

/// Why the system could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("page executor: {0}")]
    Executor(#[from] gpu_executor::ExecError),
    #[error("result cache: {0}")]
    Cache(String),
    #[error("role: {0}")]
    Role(String),
}

impl System {
    /// Builds the system; must be called inside a tokio runtime (schedulers are tasks).
    pub async fn start(config: SystemConfig) -> Result<Arc<System>, StartError> {
        Self::start_with(config, StartOptions::default(), None).await
    }

    /// As `start`, with a given executor (tests, or one device shared by several systems).
    pub async fn start_with_executor(
        config: SystemConfig,
        executor: Arc<dyn PageExecutor>,
    ) -> Result<Arc<System>, StartError> {
        Self::start_with(config, StartOptions::default(), Some(executor)).await
    }

    /// Builds the part of the system that `opts.role` names; `executor` is
    /// selected from the configuration when not given (and not needed by the
    /// gateway role).
    pub async fn start_with(
        config: SystemConfig,
        opts: StartOptions,
        executor: Option<Arc<dyn PageExecutor>>,
    ) -> Result<Arc<System>, StartError> {
        config.validate()?;
        opts.role.check(&config.zones).map_err(StartError::Role)?;
        let (cache, executor, pools) = match &opts.role {
            Role::Gateway { pools } => {
                let remote = config
                    .zones
                    .iter()
                    .map(|z| {
                        let url = pools
                            .iter()
                            .find(|(p, _)| p == z)
                            .map(|(_, u)| u.clone())
                            .expect("Role::check saw a URL for every zone");
                        ZonePool::Remote(Arc::new(RemotePool::new(
                            z.clone(),
                            url,
                            config.admin_token.clone(),
                            config.pool.deadline,
                            config.gateway.fallback_retry_after,
                        )))
                    })
                    .collect();
                (None, None, remote)
            }
            role => {
                let executor = match executor {
                    Some(e) => e,
                    None => select_executor(config.executor)?,
                };
                let cache = Self::open_cache(&config).await?;
                let local = |zone: &String| {
                    let gpu = GpuScheduler::start(config.gpu.clone(), executor.clone());
                    ZonePool::Local(Pool::new(
                        zone.clone(),
                        config.pool.clone(),
                        config.page,
                        cache.clone(),
                        FailureCache::new(config.failure_cache.ttl, config.failure_cache.capacity),
                        gpu,
                    ))
                };
                let pools: Vec<ZonePool> = match role {
                    Role::Pool { zone } => vec![local(zone)],
                    _ => config.zones.iter().map(local).collect(),
                };
                (Some(cache), Some(executor), pools)
            }
        };
        let names: Vec<String> = pools.iter().map(|p| p.zone().to_string()).collect();
        let router = ZoneRouter::new(config.router.clone(), &names);
        let gateway = Gateway::new(pools, router, config.gateway.clone());
        Ok(Arc::new(System {
            config,
            role: opts.role,
            gateway,
            cache,
            executor,
            admin_from_any_peer: opts.admin_from_any_peer,
        }))
    }

    async fn open_cache(config: &SystemConfig) -> Result<Arc<dyn ResultCache>, StartError> {
        Ok(match &config.cache.backend {
            CacheBackend::Memory => Arc::new(MemoryCache::new(&config.cache)),
            CacheBackend::Redis(r) => {
                let url = r.url.as_deref().ok_or_else(|| {
                    StartError::Cache(
                        "cache.backend.redis.url is not set (the harness sets it when it starts redis-server itself)"
                            .into(),
                    )
                })?;
                crate::redis_cache::RedisCache::connect(url)
                    .await
                    .map_err(|e| StartError::Cache(e.to_string()))?
            }
        })
    }

    /// The pools running in this process.
    pub fn local_pools(&self) -> impl Iterator<Item = &Arc<Pool>> {
        self.gateway.pools().iter().filter_map(ZonePool::local)
    }

    /// The pool this process serves to a gateway (`--role pool` only).
    pub fn served_pool(&self) -> Option<&Arc<Pool>> {
        match self.role {
            Role::Pool { .. } => self.local_pools().next(),
            _ => None,
        }
    }

    fn remote_pools(&self) -> impl Iterator<Item = &Arc<RemotePool>> {
        self.gateway.pools().iter().filter_map(ZonePool::remote)
    }

    pub fn executor_info(&self) -> ExecutorInfo {
        match &self.executor {
            Some(e) => e.info().clone(),
            None => ExecutorInfo {
                kind: ExecutorKind::Cpu,
                adapter: "none in this process (gateway role: pages run in the pool processes)"
                    .into(),
                fallback: false,
                fallback_reason: None,
            },
        }
    }

    /// Stops the GPU schedulers; in-flight page work is dropped.
    pub fn shutdown(&self) {
        for p in self.local_pools() {
            p.gpu().shutdown();
        }
    }

    fn zones(&self, zone: &Option<String>) -> Result<Vec<&ZonePool>, AdminError> {
        match zone {
            None => Ok(self.gateway.pools().iter().collect()),
            Some(z) => self
                .gateway
                .pools()
                .iter()
                .find(|p| p.zone() == z)
                .map(|p| vec![p])
                .ok_or_else(|| AdminError::UnknownZone(z.clone())),
        }
    }

    /// Applies a zone command: `local` on this process's pools, forwarded to
    /// remote ones. Returns how many zones it reached.
    async fn on_zones(
        &self,
        zone: &Option<String>,
        cmd: &AdminCommand,
        local: impl Fn(&Pool),
    ) -> Result<usize, AdminError> {
        let targets = self.zones(zone)?;
        for t in &targets {
            match t {
                ZonePool::Local(p) => local(p),
                ZonePool::Remote(r) => {
                    r.apply(&cmd.for_zone(&r.zone)).await?;
                }
            }
        }
        Ok(targets.len())
    }

    /// A cache command in the gateway role: the pools hold the cache. A shared
    /// backend (Redis) is filled once; per-process caches each get it.
    async fn forward_cache(&self, cmd: &AdminCommand) -> Result<String, AdminError> {
        let shared = matches!(self.config.cache.backend, CacheBackend::Redis(_));
        let fill = !matches!(cmd, AdminCommand::CacheOnFull { .. });
        let mut details = Vec::new();
        for (i, r) in self.remote_pools().enumerate() {
            if shared && fill && i > 0 {
                break;
            }
            details.push(r.apply(cmd).await?);
        }
        Ok(details.join("; "))
    }

    fn zone_index(&self, zone: &str) -> Result<usize, AdminError> {
        self.gateway
            .zone_index(zone)
            .ok_or_else(|| AdminError::UnknownZone(zone.into()))
    }

    /// A cache command: on this process's cache, or forwarded to the pools
    /// that hold it (gateway role).
    async fn apply_cache(&self, cmd: &AdminCommand) -> Result<String, AdminError> {
        let Some(cache) = &self.cache else {
            return self.forward_cache(cmd).await;
        };
        match cmd {
            AdminCommand::CacheFill { entries } => {
                let n = cache
                    .fill(*entries)
                    .await
                    .map_err(|e| AdminError::Cache(e.to_string()))?;
                let s = cache.stats();
                Ok(format!(
                    "inserted {n} filler entries; cache {}/{}",
                    s.entries, s.capacity
                ))
            }
            AdminCommand::CacheFillToLimit => {
                let n = cache
                    .fill_to_limit()
                    .await
                    .map_err(|e| AdminError::Cache(e.to_string()))?;
                let s = cache.stats();
                Ok(format!(
                    "inserted {n} filler entries; cache {}/{} (at its limit)",
                    s.entries, s.capacity
                ))
            }
            AdminCommand::CacheOnFull { on_full } => {
                cache.set_on_full(*on_full);
                Ok(format!("cache on_full = {on_full:?}"))
            }
            other => unreachable!("apply_cache is only called with cache commands, not {other:?}"),
        }
    }

    /// Applies one fault or operator action; returns what it did, in words.
    pub async fn apply(&self, cmd: &AdminCommand) -> Result<String, AdminError> {
        use AdminCommand::*;
        match cmd {
            CacheFill { .. } | CacheFillToLimit | CacheOnFull { .. } => self.apply_cache(cmd).await,
            SetSlots { zone, slots } => {
                if *slots == 0 {
                    return Err(AdminError::Invalid("slots must be >= 1".into()));
                }
                let n = self
                    .on_zones(zone, cmd, |p| p.gate().set_slots(*slots))
                    .await?;
                Ok(format!("slots = {slots} in {n} zone(s)"))
            }
            SetGpuLanes { zone, lanes } => {
                if *lanes == 0 {
                    return Err(AdminError::Invalid("lanes must be >= 1".into()));
                }
                let n = self
                    .on_zones(zone, cmd, |p| p.gpu().set_lanes(*lanes))
                    .await?;
                Ok(format!("GPU lanes = {lanes} in {n} zone(s)"))
            }
            SetGpuSpeed { zone, factor } => {
                if !(*factor > 0.0 && factor.is_finite()) {
                    return Err(AdminError::Invalid("factor must be > 0".into()));
                }
                let n = self
                    .on_zones(zone, cmd, |p| p.gpu().set_speed_factor(*factor))
                    .await?;
                Ok(format!("GPU speed x{factor} in {n} zone(s)"))
            }
            SetGatewayAttempts { attempts } => {
                if *attempts == 0 {
                    return Err(AdminError::Invalid("attempts must be >= 1".into()));
                }
                self.gateway.set_attempts(*attempts);
                Ok(format!("gateway attempts = {attempts}"))
            }
            ZoneFail { zone, ratio } => {
                if !(0.0..=1.0).contains(ratio) {
                    return Err(AdminError::Invalid("ratio must be in [0, 1]".into()));
                }
                self.on_zones(&Some(zone.clone()), cmd, |p| p.set_fail_ratio(*ratio))
                    .await?;
                Ok(format!(
                    "zone {zone} failing {:.0}% of requests",
                    ratio * 100.0
                ))
            }
            ZoneRecover { zone } => {
                self.on_zones(&Some(zone.clone()), cmd, |p| p.set_fail_ratio(0.0))
                    .await?;
                Ok(format!("zone {zone} recovered"))
            }
            ZoneOutage { zone } => {
                self.on_zones(&Some(zone.clone()), cmd, |p| p.set_outage(true))
                    .await?;
                Ok(format!("zone {zone} stopped answering"))
            }
            ZoneRestore { zone } => {
                self.on_zones(&Some(zone.clone()), cmd, |p| p.set_outage(false))
                    .await?;
                Ok(format!("zone {zone} answers again"))
            }
            StopAllocations { zone } => {
                self.gateway
                    .router()
                    .set_stopped(self.zone_index(zone)?, true);
                Ok(format!("allocations to {zone} stopped"))
            }
            ResumeAllocations { zone } => {
                self.gateway
                    .router()
                    .set_stopped(self.zone_index(zone)?, false);
                Ok(format!("allocations to {zone} resumed"))
            }
            Throttle { zone, per_sec } => {
                if let Some(r) = per_sec {
                    if !(*r > 0.0 && r.is_finite()) {
                        return Err(AdminError::Invalid("per_sec must be > 0".into()));
                    }
                }
                self.gateway
                    .router()
                    .set_throttle(self.zone_index(zone)?, *per_sec);
                Ok(match per_sec {
                    Some(r) => format!("zone {zone} throttled to {r}/s"),
                    None => format!("zone {zone} throttle lifted"),
                })
            }
        }
    }

    /// The work every zone still holds for the documents of `q`: this
    /// process's pools, plus each remote pool asked over its admin API.
    pub async fn work_in_progress(&self, q: &WorkQuery) -> Result<WorkInProgress, AdminError> {
        let docs: Vec<(u64, u32)> = q.documents.iter().map(|d| (d.id, d.pages)).collect();
        let mut total = WorkInProgress::default();
        for p in self.local_pools() {
            let w = p.gpu().work_for(&docs);
            total += WorkInProgress {
                jobs: w.jobs,
                pages: w.pages,
                first_time_pages: w.first_time_pages,
            };
        }
        for r in self.remote_pools() {
            total += r.work(q).await?;
        }
        Ok(total)
    }

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
            e.sample(
                "sut_remote_pool_up",
                "gauge",
                "1 when the zone's pool process answered its last metrics read.",
                &[("zone", zone)],
                if up { 1.0 } else { 0.0 },
            );
            if let Some(text) = text {
                // The pool process's own gateway is idle: its counters would only add zeros.
                let keep =
                    |n: &str| !n.starts_with("sut_gateway_") && n != "sut_distinct_documents_total";
                e.merge(&text, keep, ("process", zone));
            }
        }
        e.finish()
    }

    fn exposition(&self) -> Exposition {
        let mut e = Exposition::default();
        let g = &self.gateway.metrics;
        let c =
            |e: &mut Exposition, n: &str, h: &str, v: u64| e.sample(n, "counter", h, &[], v as f64);
        c(
            &mut e,
            "sut_gateway_requests_total",
            "Client requests received by the gateway.",
            g.requests.get(),
        );
        c(
            &mut e,
            "sut_gateway_ok_total",
            "Client requests answered 200.",
            g.ok.get(),
        );
        c(
            &mut e,
            "sut_gateway_rejected_total",
            "Client requests answered 503.",
            g.rejected.get(),
        );
        c(
            &mut e,
            "sut_gateway_deadline_total",
            "Client requests answered 504.",
            g.deadline.get(),
        );
        c(
            &mut e,
            "sut_gateway_attempts_total",
            "Attempts the gateway sent to pools (internal retries included).",
            g.attempts.get(),
        );
        c(
            &mut e,
            "sut_gateway_redirected_total",
            "Attempts redirected to another zone.",
            g.redirected.get(),
        );
        c(
            &mut e,
            "sut_distinct_documents_total",
            "Distinct documents seen by the gateway.",
            g.distinct_documents.get(),
        );
        e.sample(
            "sut_gateway_attempts_configured",
            "gauge",
            "Internal attempts currently configured.",
            &[],
            f64::from(self.gateway.attempts_configured()),
        );

        if let Some(cache) = &self.cache {
            let cs = cache.stats();
            c(
                &mut e,
                "sut_cache_hits_total",
                "Result cache hits.",
                cs.hits,
            );
            c(
                &mut e,
                "sut_cache_misses_total",
                "Result cache misses.",
                cs.misses,
            );
            c(
                &mut e,
                "sut_cache_writes_acked_total",
                "Cache writes acknowledged.",
                cs.writes_acked,
            );
            c(
                &mut e,
                "sut_cache_writes_stored_total",
                "Acknowledged cache writes really stored.",
                cs.writes_stored,
            );
            c(
                &mut e,
                "sut_cache_writes_lost_total",
                "Cache writes acknowledged and then discarded.",
                cs.writes_lost,
            );
            c(
                &mut e,
                "sut_cache_write_errors_total",
                "Cache writes refused with an explicit error.",
                cs.write_errors,
            );
            e.sample(
                "sut_cache_entries",
                "gauge",
                "Entries in the result cache.",
                &[],
                cs.entries as f64,
            );
            e.sample(
                "sut_cache_capacity",
                "gauge",
                "Storage limit of the result cache, in entries.",
                &[],
                cs.capacity as f64,
            );
        }

        if let Some(executor) = &self.executor {
            let info = executor.info();
            e.sample(
                "sut_executor_info",
                "gauge",
                "The page executor; fallback=\"true\" means no GPU adapter was found.",
                &[
                    ("adapter", &info.adapter),
                    ("fallback", if info.fallback { "true" } else { "false" }),
                ],
                1.0,
            );
        }

        for r in self.remote_pools() {
            let z: &[(&str, &str)] = &[("zone", &r.zone)];
            e.sample(
                "sut_gateway_remote_pool_timeouts_total",
                "counter",
                "Attempts to a remote pool that got no answer in time.",
                z,
                r.metrics.timeouts.get() as f64,
            );
            e.sample(
                "sut_gateway_remote_pool_unreachable_total",
                "counter",
                "Attempts to a remote pool that could not be delivered.",
                z,
                r.metrics.unreachable.get() as f64,
            );
        }

        for p in self.local_pools() {
            let z: &[(&str, &str)] = &[("zone", &p.zone)];
            let m = &p.metrics;
            let zc = |e: &mut Exposition, n: &str, h: &str, v: u64| {
                e.sample(n, "counter", h, z, v as f64)
            };
            let zg = |e: &mut Exposition, n: &str, h: &str, v: f64| e.sample(n, "gauge", h, z, v);
            zc(
                &mut e,
                "sut_pool_requests_total",
                "Requests that reached the pool.",
                m.requests.get(),
            );
            for (src, v) in [
                ("computed", m.ok_computed.get()),
                ("cache", m.ok_cache.get()),
                ("duplicate", m.ok_duplicate.get()),
            ] {
                e.sample(
                    "sut_pool_ok_total",
                    "counter",
                    "Requests answered 200, by source.",
                    &[("zone", &p.zone), ("source", src)],
                    v as f64,
                );
            }
            for r in RejectReason::ALL {
                e.sample(
                    "sut_pool_rejected_total",
                    "counter",
                    "Requests not served, by reason.",
                    &[("zone", &p.zone), ("reason", r.as_str())],
                    m.rejected.get(r) as f64,
                );
            }
            zc(
                &mut e,
                "sut_pool_admitted_total",
                "Requests admitted to a worker slot.",
                m.admitted.get(),
            );
            zc(
                &mut e,
                "sut_pool_zombie_work_total",
                "Documents computed after their request was answered 504.",
                m.zombie_work.get(),
            );
            zc(
                &mut e,
                "sut_pool_zombie_pages_total",
                "Pages of the documents computed after their request was answered 504.",
                m.zombie_pages.get(),
            );
            zc(
                &mut e,
                "sut_pool_pages_cancelled_total",
                "Queued pages dropped because their caller had gone (cancel_queued_on_deadline).",
                m.pages_cancelled.get(),
            );
            zc(
                &mut e,
                "sut_pool_unanswered_total",
                "Requests left unanswered during a zone outage.",
                m.unanswered.get(),
            );
            zc(
                &mut e,
                "sut_pool_documents_computed_total",
                "Documents computed.",
                m.documents_computed.get(),
            );
            zc(
                &mut e,
                "sut_pool_compute_failures_total",
                "Compute tasks that failed.",
                m.compute_failures.get(),
            );
            zg(
                &mut e,
                "sut_pool_slots",
                "Worker slots configured.",
                f64::from(p.gate().slots()),
            );
            zg(
                &mut e,
                "sut_pool_slots_busy",
                "Worker slots held.",
                f64::from(p.gate().busy()),
            );
            zg(
                &mut e,
                "sut_pool_waiters_holding_slot",
                "Requests waiting for a duplicate's result while holding a slot.",
                m.waiters_holding_slot.get() as f64,
            );
            zg(
                &mut e,
                "sut_pool_waiters_without_slot",
                "Duplicates waiting without a slot.",
                m.waiters_without_slot.get() as f64,
            );
            zg(
                &mut e,
                "sut_pool_queue_depth",
                "Requests waiting for a slot.",
                f64::from(p.gate().queued()),
            );
            zg(
                &mut e,
                "sut_pool_inflight_documents",
                "Documents being computed.",
                p.inflight_documents() as f64,
            );
            zg(
                &mut e,
                "sut_zone_fail_ratio",
                "Injected failure ratio of the zone.",
                p.fail_ratio(),
            );
            let s = p.gpu().stats();
            zc(
                &mut e,
                "sut_gpu_pages_computed_total",
                "Pages computed on the GPU.",
                s.pages_computed,
            );
            zc(
                &mut e,
                "sut_gpu_pages_recomputed_total",
                "Pages computed that had been computed before.",
                s.pages_recomputed,
            );
            zc(
                &mut e,
                "sut_gpu_orphan_pages_total",
                "Pages computed for submissions that had already failed.",
                s.orphan_pages,
            );
            zc(
                &mut e,
                "sut_gpu_compute_errors_total",
                "Executor errors.",
                s.compute_errors,
            );
            zg(
                &mut e,
                "sut_gpu_queued_pages",
                "Pages queued at the GPU.",
                s.queued_pages as f64,
            );
            zg(&mut e, "sut_gpu_lanes", "GPU lanes.", f64::from(s.lanes));
            zg(
                &mut e,
                "sut_gpu_real_compute_seconds",
                "Time spent computing pages for real.",
                s.real_compute_secs,
            );
            for (tenant, pages) in &s.per_tenant_pages {
                e.sample(
                    "sut_gpu_tenant_pages_total",
                    "counter",
                    "Pages computed per tenant.",
                    &[("zone", &p.zone), ("tenant", tenant)],
                    *pages as f64,
                );
            }
        }
        e
    }
}
