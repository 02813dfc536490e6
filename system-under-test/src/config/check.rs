//! Values a [`SystemConfig`] can hold but the system cannot run with, each
//! named by its field path as the YAML spells it, checked before anything
//! starts; and the configuration read from a file.

use super::*;

/// A configuration value that cannot work, named by its field path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid system configuration: {field}: {message}")]
pub struct SystemConfigError {
    pub field: String,
    pub message: String,
}

/// Why a configuration file's text does not make a [`SystemConfig`].
#[derive(Debug, thiserror::Error)]
pub enum SystemConfigFileError {
    /// Not a configuration: YAML that does not parse, an unknown key, a
    /// wrong type (with line and column).
    #[error(transparent)]
    Yaml(#[from] serde_saphyr::Error),
    /// A configuration whose values cannot work.
    #[error(transparent)]
    Invalid(#[from] SystemConfigError),
}

fn bad(field: &str, message: impl Into<String>) -> SystemConfigError {
    SystemConfigError {
        field: field.into(),
        message: message.into(),
    }
}

impl SystemConfig {
    /// Parses YAML; unknown keys and type errors carry line and column.
    pub fn from_yaml(text: &str) -> Result<Self, SystemConfigFileError> {
        let cfg: SystemConfig = serde_saphyr::from_str(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Rejects values that cannot work before anything starts.
    pub fn validate(&self) -> Result<(), SystemConfigError> {
        if self.zones.is_empty() {
            return Err(bad("zones", "at least one zone is required"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for z in &self.zones {
            if z.is_empty()
                || !z
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(bad(
                    "zones",
                    format!("zone name {z:?} must be non-empty ASCII letters, digits, '-' or '_'"),
                ));
            }
            if !seen.insert(z) {
                return Err(bad("zones", format!("zone {z:?} listed twice")));
            }
        }
        let p = &self.pool;
        if p.slots == 0 {
            return Err(bad("pool.slots", "must be >= 1"));
        }
        if p.deadline.is_zero() {
            return Err(bad("pool.deadline", "must be > 0"));
        }
        if let RetryAfterMode::Estimated { jitter, min, max } = &p.retry_after {
            if !(0.0..1.0).contains(jitter) {
                return Err(bad(
                    "pool.retry_after.estimated.jitter",
                    "must be in [0, 1)",
                ));
            }
            if min > max {
                return Err(bad("pool.retry_after.estimated.min", "must be <= max"));
            }
        }
        if let Some(h) = &p.heap {
            h.check()
                .map_err(|(field, m)| bad(&format!("pool.heap.{field}"), m))?;
            if p.split_time.is_zero() {
                return Err(bad(
                    "pool.heap",
                    "needs pool.split_time > 0: the collector slows the pool's CPU work, which is split_time per page",
                ));
            }
        }
        self.gpu.validate().map_err(|m| bad("gpu", m.to_string()))?;
        if self.page.words == 0 {
            return Err(bad("page.words", "must be >= 1"));
        }
        if self.page.rounds == 0 {
            return Err(bad("page.rounds", "must be >= 1"));
        }
        if let CacheBackend::Redis(r) = &self.cache.backend {
            if !(r.maxmemory_mb >= 1.0 && r.maxmemory_mb <= 65536.0) {
                return Err(bad(
                    "cache.backend.redis.maxmemory_mb",
                    "must be between 1 and 65536",
                ));
            }
            if let Some(u) = &r.url {
                if !u.starts_with("redis://") {
                    return Err(bad("cache.backend.redis.url", "must start with redis://"));
                }
            }
        }
        if self.cache.capacity == 0 {
            return Err(bad("cache.capacity", "must be >= 1"));
        }
        if !(0.0..=1.0).contains(&self.cache.drop_ratio) {
            return Err(bad("cache.drop_ratio", "must be in [0, 1]"));
        }
        if self.jobs.capacity == 0 {
            return Err(bad("jobs.capacity", "must be >= 1"));
        }
        if self.jobs.ttl.is_zero() {
            return Err(bad(
                "jobs.ttl",
                "must be > 0: a finished job must stay readable",
            ));
        }
        if self.failure_cache.capacity == 0 {
            return Err(bad("failure_cache.capacity", "must be >= 1"));
        }
        self.gateway
            .retry
            .validate()
            .map_err(|m| bad("gateway.retry", m.to_string()))?;
        let r = &self.router;
        if !(0.0..=1.0).contains(&r.redirect_failure_ratio) {
            return Err(bad("router.redirect_failure_ratio", "must be in [0, 1]"));
        }
        if r.window.is_zero() {
            return Err(bad("router.window", "must be > 0"));
        }
        for (from, to) in &r.failover {
            for z in [from, to] {
                if !self.zones.contains(z) {
                    return Err(bad("router.failover", format!("unknown zone {z:?}")));
                }
            }
            if from == to {
                return Err(bad(
                    "router.failover",
                    format!("zone {from:?} cannot fail over to itself"),
                ));
            }
        }
        if let Some(h) = r.failover_headroom {
            if !(h > 0.0 && h.is_finite()) {
                return Err(bad("router.failover_headroom", "must be > 0"));
            }
        }
        if self.admin_token.len() < 8 {
            return Err(bad("admin_token", "must be at least 8 characters"));
        }
        if self.max_concurrent_requests == 0 {
            return Err(bad("max_concurrent_requests", "must be >= 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        SystemConfig::default().validate().unwrap();
    }

    #[test]
    fn parses_defect_switches() {
        let cfg = SystemConfig::from_yaml(
            "pool: { slots: 8, dedup: abandoned_deadline_holds_slot, retry_after: { fixed: { after: 5s } } }\n\
             cache: { capacity: 10, on_full: ack_and_drop }\n",
        )
        .unwrap();
        assert_eq!(cfg.pool.slots, 8);
        assert_eq!(cfg.pool.dedup, DedupMode::AbandonedDeadlineHoldsSlot);
        assert_eq!(cfg.cache.on_full, OnFull::AckAndDrop);
    }

    #[test]
    fn unknown_key_is_an_error_with_location() {
        let err = SystemConfig::from_yaml("pool:\n  slotz: 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("slotz"), "{err}");
        assert!(err.contains('2'), "line missing: {err}");
    }

    #[test]
    fn zero_slots_rejected() {
        let err = SystemConfig::from_yaml("pool: { slots: 0 }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("pool.slots"), "{err}");
    }
}
