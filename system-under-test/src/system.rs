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

use crate::admin::command_row::{CacheEffect, Part};
use crate::admin::{AdminCommand, AdminError, WorkInProgress, WorkQuery};
use crate::cache::{MemoryCache, ResultCache};
use crate::config::{CacheBackend, SystemConfig};
use crate::entropy::Entropy;
use crate::failure_cache::FailureCache;
use crate::gateway::Gateway;
use crate::pool::Pool;
use crate::remote_pool::RemotePool;
use crate::role::Role;
use crate::router::ZoneRouter;
use crate::zone_pool::ZonePool;
use gpu_executor::{
    select_executor, Compute, ExecutorInfo, ExecutorKind, GpuScheduler, PageExecutor,
};
use std::sync::Arc;

pub struct System {
    pub config: SystemConfig,
    pub role: Role,
    pub(crate) gateway: Gateway,
    /// The result cache; `None` in the gateway role (the pools hold it).
    pub(crate) cache: Option<Arc<dyn ResultCache>>,
    /// The GPU; `None` in the gateway role.
    pub(crate) executor: Option<Arc<dyn PageExecutor>>,
    /// Admin API open to non-loopback peers (token still required): for pool
    /// and gateway processes in containers, whose callers are other hosts.
    pub(crate) admin_from_any_peer: bool,
    /// Asynchronous submission's jobs, and how many were taken or refused.
    pub(crate) jobs: crate::jobs::JobTable,
    pub(crate) jobs_submitted: crate::metrics::Counter,
    pub(crate) jobs_rejected: crate::metrics::Counter,
}

/// How a process runs the system (the `sut` binary's flags).
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub role: Role,
    pub admin_from_any_peer: bool,
    /// `Some(seed)`: the system runs on a virtual (paused) tokio clock and
    /// must replay exactly: every random draw comes from this seed and the
    /// GPU's batches are computed in line, on the scheduler's own task,
    /// never on another thread while the clock advances. `None`: real time.
    pub deterministic: Option<u64>,
}

/// Why the system could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] crate::config::SystemConfigError),
    #[error("page executor: {0}")]
    Executor(#[from] gpu_executor::ExecError),
    #[error("result cache: {0}")]
    Cache(String),
    #[error("role: {0}")]
    Role(#[from] crate::role::RoleError),
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
        let entropy = opts.deterministic.map(Entropy::seeded).unwrap_or_default();
        opts.role.check(&config.zones)?;
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
                let cache = Self::open_cache(&config, &entropy).await?;
                let compute = match opts.deterministic {
                    Some(_) => Compute::Inline,
                    None => Compute::Blocking,
                };
                let local = |zone: &String| {
                    let gpu =
                        GpuScheduler::start_with(config.gpu.clone(), executor.clone(), compute);
                    ZonePool::Local(Pool::new(
                        zone.clone(),
                        config.pool.clone(),
                        config.page,
                        cache.clone(),
                        FailureCache::new(config.failure_cache.ttl, config.failure_cache.capacity),
                        gpu,
                        entropy.clone(),
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
        let gateway = Gateway::new(pools, router, config.gateway.clone(), entropy);
        Ok(Arc::new(System {
            jobs: crate::jobs::JobTable::new(&config.jobs),
            jobs_submitted: Default::default(),
            jobs_rejected: Default::default(),
            config,
            role: opts.role,
            gateway,
            cache,
            executor,
            admin_from_any_peer: opts.admin_from_any_peer,
        }))
    }

    async fn open_cache(
        config: &SystemConfig,
        entropy: &Entropy,
    ) -> Result<Arc<dyn ResultCache>, StartError> {
        Ok(match &config.cache.backend {
            CacheBackend::Memory => {
                Arc::new(MemoryCache::new(&config.cache).with_entropy(entropy.clone()))
            }
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
    pub(crate) fn local_pools(&self) -> impl Iterator<Item = &Arc<Pool>> {
        self.gateway.pools().iter().filter_map(ZonePool::local)
    }

    /// The pool this process serves to a gateway (`--role pool` only).
    pub(crate) fn served_pool(&self) -> Option<&Arc<Pool>> {
        match self.role {
            Role::Pool { .. } => self.local_pools().next(),
            _ => None,
        }
    }

    pub(crate) fn remote_pools(&self) -> impl Iterator<Item = &Arc<RemotePool>> {
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
    /// backend (Redis) gets a command that changes the data once;
    /// per-process caches each get it.
    async fn forward_cache(
        &self,
        cmd: &AdminCommand,
        effect: CacheEffect,
    ) -> Result<String, AdminError> {
        let shared = matches!(self.config.cache.backend, CacheBackend::Redis(_));
        let mut details = Vec::new();
        for (i, r) in self.remote_pools().enumerate() {
            if shared && effect.changes_data() && i > 0 {
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

    /// This process's cache, for a cache command's effect (in the gateway
    /// role, where there is none, [`System::apply`] forwards it instead).
    fn local_cache(&self) -> &dyn ResultCache {
        self.cache
            .as_deref()
            .expect("a cache command without a cache here is forwarded to the pools")
    }

    /// Applies one fault or operator action; returns what it did, in words.
    /// Its values are checked first (the command's row); a cache command
    /// goes to the pools that hold the cache when this process has none.
    pub async fn apply(&self, cmd: &AdminCommand) -> Result<String, AdminError> {
        let row = cmd.row();
        row.check?;
        match (row.part, &self.cache) {
            (Part::Cache(effect), None) => self.forward_cache(cmd, effect).await,
            _ => self.effect(cmd).await,
        }
    }

    /// What each command does: the one place that acts on a command (every
    /// other decision about it is its row, `AdminCommand::row`).
    async fn effect(&self, cmd: &AdminCommand) -> Result<String, AdminError> {
        use AdminCommand::*;
        Ok(match cmd {
            CacheFill { entries } => {
                let n = self
                    .local_cache()
                    .fill(*entries)
                    .await
                    .map_err(cache_error)?;
                let s = self.local_cache().stats();
                format!(
                    "inserted {n} filler entries; cache {}/{}",
                    s.entries, s.capacity
                )
            }
            CacheFillToLimit => {
                let n = self
                    .local_cache()
                    .fill_to_limit()
                    .await
                    .map_err(cache_error)?;
                let s = self.local_cache().stats();
                format!(
                    "inserted {n} filler entries; cache {}/{} (at its limit)",
                    s.entries, s.capacity
                )
            }
            CacheOnFull { on_full } => {
                self.local_cache().set_on_full(*on_full);
                format!("cache on_full = {on_full:?}")
            }
            CacheFlush { share } => self.flush(*share).await?,
            CacheRestart => {
                let n = self.local_cache().flush(1.0).await.map_err(cache_error)?;
                format!("cache restarted cold ({n} entries gone)")
            }
            SetSlots { zone, slots } => {
                let n = self
                    .on_zones(zone, cmd, |p| p.gate().set_slots(*slots))
                    .await?;
                format!("slots = {slots} in {n} zone(s)")
            }
            SetGpuLanes { zone, lanes } => {
                let n = self
                    .on_zones(zone, cmd, |p| p.gpu().set_lanes(*lanes))
                    .await?;
                format!("GPU lanes = {lanes} in {n} zone(s)")
            }
            SetGpuSpeed { zone, factor } => {
                let n = self
                    .on_zones(zone, cmd, |p| p.gpu().set_speed_factor(*factor))
                    .await?;
                format!("GPU speed x{factor} in {n} zone(s)")
            }
            SetGatewayAttempts { attempts } => {
                self.gateway.set_attempts(*attempts);
                format!("gateway attempts = {attempts}")
            }
            ZoneFail { zone, ratio } => {
                self.on_zone(zone, cmd, |p| p.set_fail_ratio(*ratio))
                    .await?;
                format!("zone {zone} failing {:.0}% of requests", ratio * 100.0)
            }
            ZoneRecover { zone } => {
                self.on_zone(zone, cmd, |p| p.set_fail_ratio(0.0)).await?;
                format!("zone {zone} recovered")
            }
            ZoneOutage { zone } => {
                self.on_zone(zone, cmd, |p| p.set_outage(true)).await?;
                format!("zone {zone} stopped answering")
            }
            ZoneRestore { zone } => {
                self.on_zone(zone, cmd, |p| p.set_outage(false)).await?;
                format!("zone {zone} answers again")
            }
            StopAllocations { zone } => {
                self.gateway
                    .router()
                    .set_stopped(self.zone_index(zone)?, true);
                format!("allocations to {zone} stopped")
            }
            ResumeAllocations { zone } => {
                self.gateway
                    .router()
                    .set_stopped(self.zone_index(zone)?, false);
                format!("allocations to {zone} resumed")
            }
            Throttle { zone, per_sec } => {
                self.gateway
                    .router()
                    .set_throttle(self.zone_index(zone)?, *per_sec);
                match per_sec {
                    Some(r) => format!("zone {zone} throttled to {r}/s"),
                    None => format!("zone {zone} throttle lifted"),
                }
            }
        })
    }

    /// `cache_flush`'s effect: drops `share` of this process's cache.
    async fn flush(&self, share: f64) -> Result<String, AdminError> {
        let cache = self.local_cache();
        let n = cache.flush(share).await.map_err(cache_error)?;
        Ok(format!(
            "dropped {n} entries ({:.0} %); cache {}/{}",
            share * 100.0,
            cache.stats().entries,
            cache.stats().capacity
        ))
    }

    /// [`System::on_zones`] for a command that names exactly one zone.
    async fn on_zone(
        &self,
        zone: &str,
        cmd: &AdminCommand,
        local: impl Fn(&Pool),
    ) -> Result<usize, AdminError> {
        self.on_zones(&Some(zone.to_string()), cmd, local).await
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
}

/// A cache that did not do what a command asked.
fn cache_error(e: crate::cache::CacheError) -> AdminError {
    AdminError::Cache(e.to_string())
}
