//! Fault injection and operator actions, as one command type.
//!
//! The same `AdminCommand` is sent over the admin HTTP API (loopback only,
//! bearer token) and applied in-process by the harness's embedded environment,
//! so a timeline replays identically in both. Every command does only what
//! happened in an incident (a cache left at its limit, a failing zone, an
//! operator freeing capacity or cutting retries); none of them forces 503s.

pub mod command_row;

use crate::config::OnFull;
use command_row::{first_bad, CacheEffect, CommandRow, Host, K8s, Part, Zone};
use serde::{Deserialize, Serialize};

/// One fault or operator action. JSON: `{"cache_fill": {"entries": 1000}}` or
/// `"cache_fill_to_limit"`; the same shape in experiment timelines (YAML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AdminCommand {
    /// Fill the result cache with `entries` filler entries (stale data), up to its limit.
    CacheFill {
        /// Filler entries to write.
        entries: u64,
    },
    /// Fill the result cache to its storage limit.
    CacheFillToLimit,
    /// Change what the cache does at its limit.
    CacheOnFull {
        /// What a write at the limit does from now on.
        on_full: OnFull,
    },
    /// Drop this share (0, 1] of the cache's entries at random (a flush).
    CacheFlush {
        /// The share of entries dropped, in (0, 1].
        share: f64,
    },
    /// The cache comes back empty, as after a restart (a cold cache).
    CacheRestart,
    /// Set a zone's worker slots (all zones when `zone` is absent).
    SetSlots {
        /// The zone; absent: every zone.
        #[serde(default)]
        zone: Option<String>,
        /// Worker slots (>= 1).
        slots: u32,
    },
    /// Set a zone's GPU lanes (capacity freed or taken).
    SetGpuLanes {
        /// The zone; absent: every zone.
        #[serde(default)]
        zone: Option<String>,
        /// GPU lanes (>= 1).
        lanes: u32,
    },
    /// Degrade (factor < 1) or restore (1) a zone's GPU speed.
    SetGpuSpeed {
        /// The zone; absent: every zone.
        #[serde(default)]
        zone: Option<String>,
        /// The speed as a multiple of full speed (> 0, at most 1000; 1 restores it).
        factor: f64,
    },
    /// Set the gateway's internal attempts (1 = no internal retries).
    SetGatewayAttempts {
        /// Attempts per request, the first included (1 to 100).
        attempts: u32,
    },
    /// A zone fails this share of requests at once (seed 003 trigger).
    ZoneFail {
        /// The zone (one of `system.zones`).
        zone: String,
        /// The share of its requests that fail, in [0, 1].
        ratio: f64,
    },
    /// The zone stops failing.
    ZoneRecover {
        /// The zone (one of `system.zones`).
        zone: String,
    },
    /// The zone stops answering at all, as a paused or partitioned host
    /// would: its requests hang until the caller's timeout. In the containers
    /// environment the harness pauses the zone's container instead.
    ZoneOutage {
        /// The zone (one of `system.zones`).
        zone: String,
    },
    /// The zone answers again (the container is unpaused).
    ZoneRestore {
        /// The zone (one of `system.zones`).
        zone: String,
    },
    /// Stop new allocations to a zone (requests routed there are refused).
    StopAllocations {
        /// The zone (one of `system.zones`).
        zone: String,
    },
    /// Allocations to the zone resume.
    ResumeAllocations {
        /// The zone (one of `system.zones`).
        zone: String,
    },
    /// Throttle a zone to `per_sec` requests/s; absent lifts the throttle.
    Throttle {
        /// The zone (one of `system.zones`).
        zone: String,
        /// Requests per second let through. Absent: the throttle is lifted.
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

const K8S_ZONE_OUTAGE: K8s = K8s {
    entry: "zone_outage / zone_restore",
    how: "the coordinator sends it to the gateway's admin API, which forwards it to the zone's pool: the pool stops answering (its connections hang), as `docker pause` does in the containers environment. The Kubernetes-native form, for replaying it by hand, is `kubectl delete networkpolicy <variant>-allow-pool-<zone>` (restore: `kubectl apply -f 30-network-policies.yaml`); see below",
};
const K8S_ZONE_FAIL: K8s = K8s {
    entry: "zone_fail / zone_recover",
    how: "admin API (the pool fails a share of its requests): a behaviour of the service, not of the cluster; no Kubernetes operation does it",
};
const K8S_CAPACITY: K8s = K8s {
    entry: "set_slots / set_gpu_lanes / set_gpu_speed",
    how: "admin API (capacity inside a pool); scaling a Deployment would add pools, which is a different system",
};
const K8S_CACHE: K8s = K8s {
    entry: "cache_fill / cache_fill_to_limit / cache_on_full / cache_flush",
    how: "admin API (the gateway forwards cache commands to the pools; a shared Redis is filled once)",
};
const K8S_CACHE_RESTART: K8s = K8s {
    entry: "cache_restart",
    how: "admin API (the cache comes back empty). With Redis, `kubectl rollout restart deployment/<variant>-redis` is the cluster's equivalent, but it also drops connections, so the admin API is used",
};
const K8S_OPERATORS: K8s = K8s {
    entry: "operators' actions (stop/resume allocations, throttle, gateway attempts)",
    how: "admin API, exactly as in the embedded environment",
};

impl AdminCommand {
    /// The command's row of the table: every decision made per command.
    /// One arm per command and no `_`, so a new command is a compile error
    /// here until its row is written.
    pub fn row(&self) -> CommandRow<'_> {
        use AdminCommand::*;
        let ok = Ok(());
        match self {
            CacheFill { entries } => CommandRow {
                name: "cache_fill",
                part: Part::Cache(CacheEffect::Fills),
                zone: Zone::None,
                check: first_bad(&[
                    (*entries == 0, "entries", "must be >= 1"),
                    (
                        *entries > 100_000_000,
                        "entries",
                        "must be at most 100000000 (the filler is held in memory)",
                    ),
                ]),
                undo: None,
                host: Host::Untouched,
                label: format!("cache fill {entries}"),
                k8s: K8S_CACHE,
            },
            CacheFillToLimit => CommandRow {
                name: "cache_fill_to_limit",
                part: Part::Cache(CacheEffect::Fills),
                zone: Zone::None,
                check: ok,
                undo: None,
                host: Host::Untouched,
                label: "cache at limit".into(),
                k8s: K8S_CACHE,
            },
            CacheOnFull { on_full } => CommandRow {
                name: "cache_on_full",
                part: Part::Cache(CacheEffect::Behaviour),
                zone: Zone::None,
                check: ok,
                undo: None,
                host: Host::Untouched,
                label: format!("cache on_full {on_full:?}"),
                k8s: K8S_CACHE,
            },
            CacheFlush { share } => CommandRow {
                name: "cache_flush",
                part: Part::Cache(CacheEffect::Empties),
                zone: Zone::None,
                check: first_bad(&[(
                    !(*share > 0.0 && *share <= 1.0),
                    "share",
                    "must be in (0, 1]: the share of entries dropped",
                )]),
                undo: None,
                host: Host::Untouched,
                label: format!("cache flush {:.0}%", share * 100.0),
                k8s: K8S_CACHE,
            },
            CacheRestart => CommandRow {
                name: "cache_restart",
                part: Part::Cache(CacheEffect::Empties),
                zone: Zone::None,
                check: ok,
                undo: None,
                host: Host::Untouched,
                label: "cache restart".into(),
                k8s: K8S_CACHE_RESTART,
            },
            SetSlots { zone, slots } => CommandRow {
                name: "set_slots",
                part: Part::Zones,
                zone: Zone::OneOrAll(zone.as_deref()),
                check: first_bad(&[
                    (*slots == 0, "slots", "must be >= 1"),
                    (*slots > 1_000_000, "slots", "must be at most 1000000"),
                ]),
                undo: None,
                host: Host::Untouched,
                label: format!("slots {slots}"),
                k8s: K8S_CAPACITY,
            },
            SetGpuLanes { zone, lanes } => CommandRow {
                name: "set_gpu_lanes",
                part: Part::Zones,
                zone: Zone::OneOrAll(zone.as_deref()),
                check: first_bad(&[
                    (*lanes == 0, "lanes", "must be >= 1"),
                    (*lanes > 65_536, "lanes", "must be at most 65536"),
                ]),
                undo: None,
                host: Host::Untouched,
                label: format!("GPU lanes {lanes}"),
                k8s: K8S_CAPACITY,
            },
            SetGpuSpeed { zone, factor } => CommandRow {
                name: "set_gpu_speed",
                part: Part::Zones,
                zone: Zone::OneOrAll(zone.as_deref()),
                check: first_bad(&[
                    (
                        !(*factor > 0.0 && factor.is_finite()),
                        "factor",
                        "must be a finite number > 0 (0.5 = half speed)",
                    ),
                    (*factor > 1000.0, "factor", "must be at most 1000"),
                ]),
                undo: Some(SetGpuSpeed {
                    zone: zone.clone(),
                    factor: 1.0,
                }),
                host: Host::Untouched,
                label: format!("GPU speed x{factor}"),
                k8s: K8S_CAPACITY,
            },
            SetGatewayAttempts { attempts } => CommandRow {
                name: "set_gateway_attempts",
                part: Part::Gateway,
                zone: Zone::None,
                check: first_bad(&[
                    (
                        *attempts == 0,
                        "attempts",
                        "must be >= 1 (1 = no internal retries)",
                    ),
                    (*attempts > 100, "attempts", "must be at most 100"),
                ]),
                undo: None,
                host: Host::Untouched,
                label: format!("gateway attempts {attempts}"),
                k8s: K8S_OPERATORS,
            },
            ZoneFail { zone, ratio } => CommandRow {
                name: "zone_fail",
                part: Part::Zones,
                zone: Zone::One(zone),
                check: first_bad(&[(!(0.0..=1.0).contains(ratio), "ratio", "must be in [0, 1]")]),
                undo: Some(ZoneRecover { zone: zone.clone() }),
                host: Host::Untouched,
                label: format!("{zone} failing {:.0}%", ratio * 100.0),
                k8s: K8S_ZONE_FAIL,
            },
            ZoneRecover { zone } => CommandRow {
                name: "zone_recover",
                part: Part::Zones,
                zone: Zone::One(zone),
                check: ok,
                undo: None,
                host: Host::Untouched,
                label: format!("{zone} recovers"),
                k8s: K8S_ZONE_FAIL,
            },
            ZoneOutage { zone } => CommandRow {
                name: "zone_outage",
                part: Part::Zones,
                zone: Zone::One(zone),
                check: ok,
                undo: Some(ZoneRestore { zone: zone.clone() }),
                host: Host::Unreachable(zone),
                label: format!("{zone} out"),
                k8s: K8S_ZONE_OUTAGE,
            },
            ZoneRestore { zone } => CommandRow {
                name: "zone_restore",
                part: Part::Zones,
                zone: Zone::One(zone),
                check: ok,
                undo: None,
                host: Host::Reachable(zone),
                label: format!("{zone} back"),
                k8s: K8S_ZONE_OUTAGE,
            },
            StopAllocations { zone } => CommandRow {
                name: "stop_allocations",
                part: Part::Router,
                zone: Zone::One(zone),
                check: ok,
                undo: Some(ResumeAllocations { zone: zone.clone() }),
                host: Host::Untouched,
                label: format!("stop {zone}"),
                k8s: K8S_OPERATORS,
            },
            ResumeAllocations { zone } => CommandRow {
                name: "resume_allocations",
                part: Part::Router,
                zone: Zone::One(zone),
                check: ok,
                undo: None,
                host: Host::Untouched,
                label: format!("resume {zone}"),
                k8s: K8S_OPERATORS,
            },
            Throttle { zone, per_sec } => CommandRow {
                name: "throttle",
                part: Part::Router,
                zone: Zone::One(zone),
                check: first_bad(&[(
                    per_sec.is_some_and(|r| !(r > 0.0 && r.is_finite())),
                    "per_sec",
                    "must be a finite number > 0",
                )]),
                undo: Some(Throttle {
                    zone: zone.clone(),
                    per_sec: None,
                }),
                host: Host::Untouched,
                label: match per_sec {
                    Some(r) => format!("throttle {zone} {r}/s"),
                    None => format!("unthrottle {zone}"),
                },
                k8s: K8S_OPERATORS,
            },
        }
    }

    /// One command of each kind, in the order they are declared (the values
    /// are examples): for what is said about every command, such as the
    /// names a file may use. A test checks it against the schema.
    pub fn every() -> Vec<AdminCommand> {
        use AdminCommand::*;
        let zone = || "az1".to_string();
        vec![
            CacheFill { entries: 1000 },
            CacheFillToLimit,
            CacheOnFull {
                on_full: OnFull::Error,
            },
            CacheFlush { share: 0.5 },
            CacheRestart,
            SetSlots {
                zone: None,
                slots: 8,
            },
            SetGpuLanes {
                zone: None,
                lanes: 4,
            },
            SetGpuSpeed {
                zone: None,
                factor: 0.5,
            },
            SetGatewayAttempts { attempts: 1 },
            ZoneFail {
                zone: zone(),
                ratio: 0.5,
            },
            ZoneRecover { zone: zone() },
            ZoneOutage { zone: zone() },
            ZoneRestore { zone: zone() },
            StopAllocations { zone: zone() },
            ResumeAllocations { zone: zone() },
            Throttle {
                zone: zone(),
                per_sec: Some(10.0),
            },
        ]
    }

    /// The one check of a command's values ([`CommandRow::check`]), made by
    /// the experiment validator (with the entry's file:line:column) before
    /// anything runs and by [`crate::System::apply`] when a command arrives.
    pub fn validate(&self) -> Result<(), AdminError> {
        self.row().check
    }

    /// The command's name as written (`set_gpu_lanes`), for messages.
    pub fn name(&self) -> &'static str {
        self.row().name
    }

    /// The same command aimed at one zone, for forwarding it to that zone's
    /// pool process: a command whose zone is optional gets `name`; the
    /// others are returned unchanged (no zone, or a required one).
    pub fn for_zone(&self, name: &str) -> AdminCommand {
        let Zone::OneOrAll(_) = self.row().zone else {
            return self.clone();
        };
        let mut v = serde_json::to_value(self).expect("a command serializes");
        v[self.name()]["zone"] = name.into();
        serde_json::from_value(v).expect("the same command with its zone set")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys the schema (derived from the enum) lists, in its order.
    fn schema_names() -> Vec<String> {
        let schema = serde_json::to_value(schemars::schema_for!(AdminCommand)).unwrap();
        schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|alt| match alt.get("const") {
                Some(name) => name.as_str().unwrap().to_string(),
                None => alt["required"][0].as_str().unwrap().to_string(),
            })
            .collect()
    }

    #[test]
    fn every_names_each_command_once_in_order() {
        let names: Vec<String> = AdminCommand::every()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(names, schema_names());
    }

    #[test]
    fn each_rows_name_is_serdes() {
        for c in AdminCommand::every() {
            let key = match serde_json::to_value(&c).unwrap() {
                serde_json::Value::String(s) => s,
                serde_json::Value::Object(m) => m.keys().next().unwrap().clone(),
                other => panic!("{other}"),
            };
            assert_eq!(c.name(), key);
            // The examples are possible values.
            assert_eq!(c.validate(), Ok(()), "{c:?}");
        }
    }

    #[test]
    fn an_undo_is_a_possible_command_on_the_same_zone() {
        for c in AdminCommand::every() {
            if let Some(u) = c.row().undo {
                assert_eq!(u.validate(), Ok(()), "{c:?}");
                assert_eq!(u.row().zone.named(), c.row().zone.named(), "{c:?}");
            }
        }
    }

    #[test]
    fn for_zone_sets_an_optional_zone_only() {
        let c = AdminCommand::SetGpuLanes {
            zone: None,
            lanes: 3,
        };
        assert_eq!(
            c.for_zone("az2"),
            AdminCommand::SetGpuLanes {
                zone: Some("az2".into()),
                lanes: 3
            }
        );
        let f = AdminCommand::ZoneFail {
            zone: "az1".into(),
            ratio: 0.25,
        };
        assert_eq!(f.for_zone("az1"), f);
        assert_eq!(
            AdminCommand::CacheRestart.for_zone("az1"),
            AdminCommand::CacheRestart
        );
    }

    #[test]
    fn impossible_values_name_their_field() {
        let e = AdminCommand::SetGpuSpeed {
            zone: None,
            factor: 0.0,
        }
        .validate();
        assert_eq!(
            e,
            Err(AdminError::Field {
                field: "factor",
                why: "must be a finite number > 0 (0.5 = half speed)"
            })
        );
        let e = AdminCommand::CacheFill {
            entries: 100_000_001,
        }
        .validate();
        assert!(matches!(
            e,
            Err(AdminError::Field {
                field: "entries",
                ..
            })
        ));
    }
}
