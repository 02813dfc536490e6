//! `RedisCache`: the result cache on a real Redis.
//!
//! Seed 000's cache defect, for real: Redis at its `maxmemory` with an
//! evicting policy acknowledges every write and then evicts keys, results
//! included. Loss is measured by reading back, never assumed: a GET that
//! misses a document whose write was acknowledged counts as a lost write.
//! With `noeviction` a write that does not fit fails with Redis's OOM error,
//! which this cache reports as an explicit, counted `CacheError::Full`.
//!
//! Every call is bounded by a timeout; a slow or dead Redis is a miss (reads)
//! or an error (writes), never a hang. Bounded memory: the set of acknowledged
//! documents is two generations of at most 1M ids.

use crate::cache::{CacheError, CacheStats, ResultCache};
use crate::config::OnFull;
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bound on every Redis call.
const CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// Size of one filler value: stale entries like the ones that filled the incident's cache.
const FILLER_BYTES: usize = 1024;
const GENERATION: usize = 1 << 20;

pub struct RedisCache {
    con: MultiplexedConnection,
    acked: Mutex<(HashSet<u64>, HashSet<u64>)>,
    hits: AtomicU64,
    misses: AtomicU64,
    writes_acked: AtomicU64,
    writes_lost: AtomicU64,
    write_errors: AtomicU64,
    /// Refreshed in the background (DBSIZE, maxmemory), since `stats` is sync.
    entries: Arc<AtomicU64>,
    maxmemory: Arc<AtomicU64>,
}

fn key(doc: u64) -> String {
    format!("doc:{doc}")
}

async fn bounded<T>(
    f: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, CacheError> {
    match tokio::time::timeout(CALL_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) if e.code() == Some("OOM") => Err(CacheError::Full(0)),
        Ok(Err(e)) => Err(CacheError::Unavailable(e.to_string())),
        Err(_) => Err(CacheError::Unavailable(format!(
            "no answer within {CALL_TIMEOUT:?}"
        ))),
    }
}

impl RedisCache {
    /// Connects (bounded) and starts the background size refresher.
    pub async fn connect(url: &str) -> Result<Arc<Self>, CacheError> {
        let client =
            redis::Client::open(url).map_err(|e| CacheError::Unavailable(format!("{url}: {e}")))?;
        let con = bounded(client.get_multiplexed_async_connection()).await?;
        let cache = Arc::new(RedisCache {
            con,
            acked: Mutex::new((HashSet::new(), HashSet::new())),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            writes_acked: AtomicU64::new(0),
            writes_lost: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            entries: Arc::new(AtomicU64::new(0)),
            maxmemory: Arc::new(AtomicU64::new(0)),
        });
        cache.refresh().await;
        let weak = Arc::downgrade(&cache);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                match weak.upgrade() {
                    Some(c) => c.refresh().await,
                    None => break,
                }
            }
        });
        Ok(cache)
    }

    async fn refresh(&self) {
        let mut con = self.con.clone();
        if let Ok(n) = bounded(redis::cmd("DBSIZE").query_async::<u64>(&mut con)).await {
            self.entries.store(n, Ordering::Relaxed);
        }
        if let Ok((_, v)) = bounded(
            redis::cmd("CONFIG")
                .arg("GET")
                .arg("maxmemory")
                .query_async::<(String, u64)>(&mut con),
        )
        .await
        {
            self.maxmemory.store(v, Ordering::Relaxed);
        }
    }

    async fn used_memory(&self) -> Result<u64, CacheError> {
        let mut con = self.con.clone();
        let info: String = bounded(redis::cmd("INFO").arg("memory").query_async(&mut con)).await?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| CacheError::Unavailable("INFO memory has no used_memory".into()))
    }

    /// Writes `n` filler keys; stops early at an OOM refusal. Returns how many were written.
    async fn write_filler(&self, n: u64, until_full: bool) -> Result<u64, CacheError> {
        let mut con = self.con.clone();
        let limit = self.maxmemory.load(Ordering::Relaxed);
        let value = vec![b'x'; FILLER_BYTES];
        let mut written = 0;
        let start: u64 = rand::random::<u32>().into();
        while written < n {
            let mut pipe = redis::pipe();
            let batch = (n - written).min(256);
            for i in 0..batch {
                pipe.cmd("SET")
                    .arg(format!("filler:{start}:{}", written + i))
                    .arg(&value)
                    .ignore();
            }
            match bounded(pipe.query_async::<()>(&mut con)).await {
                Ok(()) => written += batch,
                Err(CacheError::Full(_)) => break,
                Err(e) => return Err(e),
            }
            if until_full
                && limit > 0
                && self.used_memory().await? >= limit.saturating_mul(98) / 100
            {
                break;
            }
        }
        self.refresh().await;
        Ok(written)
    }

    fn remember_acked(&self, doc: u64) {
        let mut g = self.acked.lock().expect("acked lock");
        if g.0.len() >= GENERATION {
            let old = std::mem::take(&mut g.0);
            g.1 = old;
        }
        g.0.insert(doc);
    }

    /// True (once) if `doc`'s write had been acknowledged.
    fn take_acked(&self, doc: u64) -> bool {
        let mut g = self.acked.lock().expect("acked lock");
        g.0.remove(&doc) | g.1.remove(&doc)
    }
}

#[async_trait]
impl ResultCache for RedisCache {
    async fn get(&self, doc: u64) -> Option<u64> {
        let mut con = self.con.clone();
        match bounded(
            redis::cmd("GET")
                .arg(key(doc))
                .query_async::<Option<u64>>(&mut con),
        )
        .await
        {
            Ok(Some(v)) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(v)
            }
            _ => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                if self.take_acked(doc) {
                    // Acknowledged, and not there: read back, found lost.
                    self.writes_lost.fetch_add(1, Ordering::Relaxed);
                }
                None
            }
        }
    }

    async fn put(&self, doc: u64, digest: u64) -> Result<(), CacheError> {
        let mut con = self.con.clone();
        match bounded(
            redis::cmd("SET")
                .arg(key(doc))
                .arg(digest)
                .query_async::<()>(&mut con),
        )
        .await
        {
            Ok(()) => {
                self.writes_acked.fetch_add(1, Ordering::Relaxed);
                self.remember_acked(doc);
                Ok(())
            }
            Err(CacheError::Full(_)) => {
                self.write_errors.fetch_add(1, Ordering::Relaxed);
                Err(CacheError::Full(doc))
            }
            Err(e) => {
                self.write_errors.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    async fn fill(&self, entries: u64) -> Result<u64, CacheError> {
        self.write_filler(entries, false).await
    }

    async fn fill_to_limit(&self) -> Result<u64, CacheError> {
        if self.maxmemory.load(Ordering::Relaxed) == 0 {
            return Err(CacheError::Unavailable(
                "this Redis has no maxmemory: it has no limit to fill to".into(),
            ));
        }
        self.write_filler(u64::MAX, true).await
    }

    async fn flush(&self, share: f64) -> Result<u64, CacheError> {
        let mut con = self.con.clone();
        let before = bounded(redis::cmd("DBSIZE").query_async::<u64>(&mut con)).await?;
        if share >= 1.0 {
            bounded(redis::cmd("FLUSHDB").query_async::<()>(&mut con)).await?;
            *self.acked.lock().expect("acked lock") = Default::default();
            self.refresh().await;
            return Ok(before);
        }
        // A random share of the keys, results and filler alike.
        let mut cursor = 0u64;
        let mut dropped = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = bounded(
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut con),
            )
            .await?;
            // The thread-local generator is not Send: drawn before the next await.
            let victims: Vec<String> = {
                let mut rng = rand::rng();
                keys.into_iter()
                    .filter(|_| rand::Rng::random_bool(&mut rng, share.clamp(0.0, 1.0)))
                    .collect()
            };
            if !victims.is_empty() {
                {
                    let mut g = self.acked.lock().expect("acked lock");
                    for k in &victims {
                        if let Some(doc) =
                            k.strip_prefix("doc:").and_then(|d| d.parse::<u64>().ok())
                        {
                            g.0.remove(&doc);
                            g.1.remove(&doc);
                        }
                    }
                }
                dropped +=
                    bounded(redis::cmd("DEL").arg(&victims).query_async::<u64>(&mut con)).await?;
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        self.refresh().await;
        Ok(dropped)
    }

    fn set_on_full(&self, on_full: OnFull) {
        let policy = match on_full {
            OnFull::AckAndDrop => "allkeys-random",
            OnFull::EvictOldest => "allkeys-lru",
            OnFull::Error => "noeviction",
        };
        let mut con = self.con.clone();
        tokio::spawn(async move {
            let r = bounded(
                redis::cmd("CONFIG")
                    .arg("SET")
                    .arg("maxmemory-policy")
                    .arg(policy)
                    .query_async::<()>(&mut con),
            )
            .await;
            if let Err(e) = r {
                tracing::error!("setting the Redis eviction policy to {policy}: {e}");
            }
        });
    }

    fn stats(&self) -> CacheStats {
        let acked = self.writes_acked.load(Ordering::Relaxed);
        let lost = self.writes_lost.load(Ordering::Relaxed);
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            writes_acked: acked,
            // Known only by reading back: stored = acknowledged minus found lost.
            writes_stored: acked.saturating_sub(lost),
            writes_lost: lost,
            write_errors: self.write_errors.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            capacity: self.maxmemory.load(Ordering::Relaxed) / FILLER_BYTES as u64,
        }
    }
}

#[cfg(test)]
mod tests;
