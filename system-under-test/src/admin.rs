//! Fault injection and operator actions, as one command type.
//!
//! The same `AdminCommand` is sent over the admin HTTP API (loopback only,
//! bearer token) and applied in-process by the harness's embedded environment,
//! so a timeline replays identically in both. Every command does only what
//! happened in an incident (a cache left at its limit, a failing zone, an
//! operator freeing capacity or cutting retries); none of them forces 503s.

use crate::config::OnFull;
use serde::{Deserialize, Serialize};

/// One fault or operator action. JSON: `{"cache_fill": {"entries": 1000}}` or
/// `"cache_fill_to_limit"`; the same shape in experiment timelines (YAML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AdminCommand {
    /// Fill the result cache with `entries` filler entries (stale data), up to its limit.
    CacheFill {
        entries: u64,
    },
    /// Fill the result cache to its storage limit.
    CacheFillToLimit,
    /// Change what the cache does at its limit.
    CacheOnFull {
        on_full: OnFull,
    },
    /// Drop this share (0, 1] of the cache's entries at random (a flush).
    CacheFlush {
        share: f64,
    },
    /// The cache comes back empty, as after a restart (a cold cache).
    CacheRestart,
    /// Set a zone's worker slots (all zones when `zone` is absent).
    SetSlots {
        #[serde(default)]
        zone: Option<String>,
        slots: u32,
    },
    /// Set a zone's GPU lanes (capacity freed or taken).
    SetGpuLanes {
        #[serde(default)]
        zone: Option<String>,
        lanes: u32,
    },
    /// Degrade (factor < 1) or restore (1) a zone's GPU speed.
    SetGpuSpeed {
        #[serde(default)]
        zone: Option<String>,
        factor: f64,
    },
    /// Set the gateway's internal attempts (1 = no internal retries).
    SetGatewayAttempts {
        attempts: u32,
    },
    /// A zone fails this share of requests at once (seed 003 trigger).
    ZoneFail {
        zone: String,
        ratio: f64,
    },
    /// The zone stops failing.
    ZoneRecover {
        zone: String,
    },
    /// The zone stops answering at all, as a paused or partitioned host
    /// would: its requests hang until the caller's timeout. In the containers
    /// environment the harness pauses the zone's container instead.
    ZoneOutage {
        zone: String,
    },
    /// The zone answers again (the container is unpaused).
    ZoneRestore {
        zone: String,
    },
    /// Stop new allocations to a zone (requests routed there are refused).
    StopAllocations {
        zone: String,
    },
    ResumeAllocations {
        zone: String,
    },
    /// Throttle a zone to `per_sec` requests/s; absent lifts the throttle.
    Throttle {
        zone: String,
        #[serde(default)]
        per_sec: Option<f64>,
    },
}

/// Where a harness asks how much work the system still holds for some
/// documents (`POST`, a [`WorkQuery`] in, a [`WorkInProgress`] out; token as
/// for commands). A trigger that injected documents is over only when its
/// documents' work has left the system, not when their clients gave up.
pub const WORK_PATH: &str = "/admin/work";

/// The documents a [`WORK_PATH`] request asks about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkQuery {
    pub documents: Vec<DocumentRef>,
}

/// A document and its page count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentRef {
    pub id: u64,
    pub pages: u32,
}

/// Work the system still holds for the documents asked about: GPU jobs open
/// for them (being split, queued or computing), their pages queued or
/// computing, and of their pages those not computed even once while a job is
/// open (`gpu_executor::DocumentWork`): when that is zero the documents'
/// own work is done, and what still runs for them is recomputation.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct WorkInProgress {
    pub jobs: u64,
    pub pages: u64,
    pub first_time_pages: u64,
}

impl std::ops::AddAssign for WorkInProgress {
    fn add_assign(&mut self, o: WorkInProgress) {
        self.jobs += o.jobs;
        self.pages += o.pages;
        self.first_time_pages += o.first_time_pages;
    }
}

/// A command that could not be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdminError {
    #[error("unknown zone {0:?}")]
    UnknownZone(String),
    #[error("invalid value: {0}")]
    Invalid(String),
    /// One field of the command has an impossible value.
    #[error("invalid value: {field} {why}")]
    Field {
        field: &'static str,
        why: &'static str,
    },
    #[error("cache: {0}")]
    Cache(String),
    /// A pool process did not take a forwarded command (split roles).
    #[error("remote pool: {0}")]
    Remote(String),
}

impl AdminCommand {
    /// The one check of a command's values, made by the experiment validator
    /// (with the entry's file:line:column) before anything runs and by
    /// [`crate::System::apply`] when a command arrives: `Err` says which
    /// field is impossible and why. Zones are checked against the system by
    /// the caller, who knows them.
    pub fn validate(&self) -> Result<(), AdminError> {
        let bad = |field: &'static str, why: &'static str| Err(AdminError::Field { field, why });
        match self {
            AdminCommand::CacheFill { entries } if *entries == 0 => bad("entries", "must be >= 1"),
            AdminCommand::CacheFill { entries } if *entries > 100_000_000 => bad(
                "entries",
                "must be at most 100000000 (the filler is held in memory)",
            ),
            AdminCommand::SetSlots { slots, .. } if *slots == 0 => bad("slots", "must be >= 1"),
            AdminCommand::SetSlots { slots, .. } if *slots > 1_000_000 => {
                bad("slots", "must be at most 1000000")
            }
            AdminCommand::SetGpuLanes { lanes, .. } if *lanes == 0 => bad("lanes", "must be >= 1"),
            AdminCommand::SetGpuLanes { lanes, .. } if *lanes > 65_536 => {
                bad("lanes", "must be at most 65536")
            }
            AdminCommand::SetGpuSpeed { factor, .. } if !(*factor > 0.0 && factor.is_finite()) => {
                bad("factor", "must be a finite number > 0 (0.5 = half speed)")
            }
            AdminCommand::SetGpuSpeed { factor, .. } if *factor > 1000.0 => {
                bad("factor", "must be at most 1000")
            }
            AdminCommand::SetGatewayAttempts { attempts } if *attempts == 0 => {
                bad("attempts", "must be >= 1 (1 = no internal retries)")
            }
            AdminCommand::SetGatewayAttempts { attempts } if *attempts > 100 => {
                bad("attempts", "must be at most 100")
            }
            AdminCommand::CacheFlush { share } if !(*share > 0.0 && *share <= 1.0) => {
                bad("share", "must be in (0, 1]: the share of entries dropped")
            }
            AdminCommand::ZoneFail { ratio, .. } if !(0.0..=1.0).contains(ratio) => {
                bad("ratio", "must be in [0, 1]")
            }
            AdminCommand::Throttle {
                per_sec: Some(r), ..
            } if !(*r > 0.0 && r.is_finite()) => bad("per_sec", "must be a finite number > 0"),
            // Every command, listed so that a new one is a compile error here
            // until someone decides which of its values are impossible.
            AdminCommand::CacheFill { .. }
            | AdminCommand::CacheFillToLimit
            | AdminCommand::CacheOnFull { .. }
            | AdminCommand::CacheFlush { .. }
            | AdminCommand::CacheRestart
            | AdminCommand::SetSlots { .. }
            | AdminCommand::SetGpuLanes { .. }
            | AdminCommand::SetGpuSpeed { .. }
            | AdminCommand::SetGatewayAttempts { .. }
            | AdminCommand::ZoneFail { .. }
            | AdminCommand::ZoneRecover { .. }
            | AdminCommand::ZoneOutage { .. }
            | AdminCommand::ZoneRestore { .. }
            | AdminCommand::StopAllocations { .. }
            | AdminCommand::ResumeAllocations { .. }
            | AdminCommand::Throttle { .. } => Ok(()),
        }
    }

    /// Whether the command changes the cache's data (fill, flush, restart),
    /// so that a shared backend (Redis) gets it once, not once per pool.
    /// `cache_on_full` changes each pool's behaviour, not the data; commands
    /// that are not about the cache change no cache data either.
    pub fn changes_cache_data(&self) -> bool {
        match self {
            AdminCommand::CacheFill { .. }
            | AdminCommand::CacheFillToLimit
            | AdminCommand::CacheFlush { .. }
            | AdminCommand::CacheRestart => true,
            AdminCommand::CacheOnFull { .. }
            | AdminCommand::SetSlots { .. }
            | AdminCommand::SetGpuLanes { .. }
            | AdminCommand::SetGpuSpeed { .. }
            | AdminCommand::SetGatewayAttempts { .. }
            | AdminCommand::ZoneFail { .. }
            | AdminCommand::ZoneRecover { .. }
            | AdminCommand::ZoneOutage { .. }
            | AdminCommand::ZoneRestore { .. }
            | AdminCommand::StopAllocations { .. }
            | AdminCommand::ResumeAllocations { .. }
            | AdminCommand::Throttle { .. } => false,
        }
    }

    /// The command's name as written (`set_gpu_lanes`), for messages.
    pub fn name(&self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(serde_json::Value::Object(m)) => m.keys().next().cloned().unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The same command aimed at one zone, for forwarding it to that zone's
    /// pool process (commands without a zone are returned unchanged).
    pub fn for_zone(&self, name: &str) -> AdminCommand {
        let zone = Some(name.to_string());
        match self {
            AdminCommand::SetSlots { slots, .. } => AdminCommand::SetSlots {
                zone,
                slots: *slots,
            },
            AdminCommand::SetGpuLanes { lanes, .. } => AdminCommand::SetGpuLanes {
                zone,
                lanes: *lanes,
            },
            AdminCommand::SetGpuSpeed { factor, .. } => AdminCommand::SetGpuSpeed {
                zone,
                factor: *factor,
            },
            // Commands without a zone field, or with a required one.
            AdminCommand::CacheFill { .. }
            | AdminCommand::CacheFillToLimit
            | AdminCommand::CacheOnFull { .. }
            | AdminCommand::CacheFlush { .. }
            | AdminCommand::CacheRestart
            | AdminCommand::SetGatewayAttempts { .. }
            | AdminCommand::ZoneFail { .. }
            | AdminCommand::ZoneRecover { .. }
            | AdminCommand::ZoneOutage { .. }
            | AdminCommand::ZoneRestore { .. }
            | AdminCommand::StopAllocations { .. }
            | AdminCommand::ResumeAllocations { .. }
            | AdminCommand::Throttle { .. } => self.clone(),
        }
    }
}
