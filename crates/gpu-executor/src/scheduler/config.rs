//! Configuration of the shared GPU: capacity model, queue bound and scheduling policy.
//!
//! These are the knobs the incident seeds turn: `policy: shared` with no tenant
//! limit is the defect of seed 000, `tenant_fair_share` its fix. Unknown fields
//! are rejected so a typo in an experiment file cannot silently disable a fix.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Capacity model and policy of one shared GPU.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Pages computed together in one batch (GPU parallelism); >= 1.
    pub lanes: u32,
    /// Modeled time one batch takes: a batch takes max(real compute, page_time / speed_factor).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub page_time: Duration,
    /// Bound on queued (not yet computing) pages across all jobs; >= 1.
    pub page_queue: u32,
    /// Which queued pages go into the next batch: `fifo`, `shared` or `tenant_fair_share`.
    #[serde(default)]
    pub policy: SchedulingPolicy,
}

/// 4 lanes x 10 ms: 400 pages/s, a large queue, processor sharing.
impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            lanes: 4,
            page_time: Duration::from_millis(10),
            page_queue: 100_000,
            policy: SchedulingPolicy::Shared,
        }
    }
}

/// Which queued pages go into the next batch.
///
/// YAML: `policy: fifo` | `policy: shared` | `policy: { tenant_fair_share: { max_share: 0.25 } }`
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulingPolicy {
    /// Pages in global arrival order: one huge document delays everyone behind it.
    Fifo,
    /// Round robin over open jobs (documents), one page each per turn: processor
    /// sharing, as concurrent kernels share a GPU. Many or huge documents slow
    /// everyone proportionally; no tenant limit (the seed 000 defect).
    #[default]
    Shared,
    /// Round robin over tenants first, then over that tenant's jobs. A tenant whose
    /// share of the last ~200 scheduled pages exceeds `max_share` is skipped while
    /// another tenant has pages queued (work-conserving). 0 < max_share <= 1.
    TenantFairShare {
        /// The largest share of recent pages one tenant may take while
        /// others wait, in (0, 1].
        max_share: f64,
    },
}

/// A [`SchedulerConfig`] value serde accepts but the scheduler cannot run
/// with; the message names the field the way the YAML spells it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SchedulerConfigError {
    #[error("lanes must be >= 1")]
    NoLanes,
    #[error("page_queue must be >= 1")]
    NoPageQueue,
    #[error("policy.tenant_fair_share.max_share must be in (0, 1], got {0}")]
    MaxShare(f64),
}

impl SchedulerConfig {
    /// Checks the ranges serde cannot express; the message names the field.
    pub fn validate(&self) -> Result<(), SchedulerConfigError> {
        if self.lanes < 1 {
            return Err(SchedulerConfigError::NoLanes);
        }
        if self.page_queue < 1 {
            return Err(SchedulerConfigError::NoPageQueue);
        }
        if let SchedulingPolicy::TenantFairShare { max_share } = self.policy {
            // Written so NaN fails too.
            if !(max_share > 0.0 && max_share <= 1.0) {
                return Err(SchedulerConfigError::MaxShare(max_share));
            }
        }
        Ok(())
    }
}
