//! The shape of a command's row ([`CommandRow`]): every decision made per
//! admin command, declared once in `AdminCommand::row` (`admin.rs`).
//!
//! Metrics have one table (`run_report`'s `catalogue!`); so do commands. The
//! system (`System::apply`), the harness's validator, timeline and residue
//! watcher, and its Kubernetes rendering read the row instead of each
//! matching on the command, so a new command is its variant, its row and
//! its effect in `System::apply`.

use super::{AdminCommand, AdminError};

/// Everything decided per command, declared once in [`AdminCommand::row`]:
/// the system, the harness's validator and timeline, and the Kubernetes
/// rendering all read it instead of matching on the command. No field has
/// a default, so a new command's row must decide each one; the variant's
/// doc comment is its one-line description (the schema's and the docs').
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRow<'a> {
    /// The YAML and JSON key (`set_gpu_lanes`); serde's name for the variant.
    pub name: &'static str,
    /// The part of the system it acts on.
    pub part: Part,
    /// The zone it names, if any.
    pub zone: Zone<'a>,
    /// Its values checked: `Err` says which field is impossible and why.
    /// Zones are checked against the system by the caller, who knows them.
    pub check: Result<(), AdminError>,
    /// What undoes it at the end of a timeline entry's `duration`; `None`:
    /// it cannot have one.
    pub undo: Option<AdminCommand>,
    /// What it does to a zone's host where the environment has hosts of its
    /// own: the containers environment pauses and unpauses the zone's
    /// container instead of calling the admin API, and the Kubernetes
    /// rendering names the NetworkPolicy whose deletion is the outage.
    pub host: Host<'a>,
    /// Its label in a run's timeline when the entry gives none.
    pub label: String,
    /// How it is carried out on a Kubernetes cluster (`harness render k8s`).
    pub k8s: K8s,
}

/// The part of the system a command acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The result cache, held by the pools (the gateway role forwards it).
    Cache(CacheEffect),
    /// Each zone's pool.
    Zones,
    /// The gateway's internal retries.
    Gateway,
    /// The zone router (allocations, throttles).
    Router,
}

/// What a cache command does to the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheEffect {
    /// Adds entries (filler): a shared backend gets it once, not per pool.
    Fills,
    /// Drops entries; its residue is the refill.
    Empties,
    /// Changes each pool's behaviour, not the data.
    Behaviour,
}

impl CacheEffect {
    /// Whether it changes the cache's data, so that a shared backend
    /// (Redis) gets it once, not once per pool.
    pub fn changes_data(self) -> bool {
        match self {
            CacheEffect::Fills | CacheEffect::Empties => true,
            CacheEffect::Behaviour => false,
        }
    }
}

/// The zone a command names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone<'a> {
    /// It names none.
    None,
    /// One zone, or every zone when absent (`zone` is optional).
    OneOrAll(Option<&'a str>),
    /// Exactly this zone.
    One(&'a str),
}

impl<'a> Zone<'a> {
    /// The zone named, if one is.
    pub fn named(self) -> Option<&'a str> {
        match self {
            Zone::None | Zone::OneOrAll(None) => None,
            Zone::OneOrAll(Some(z)) | Zone::One(z) => Some(z),
        }
    }
}

/// What a command does to a zone's host (see [`CommandRow::host`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host<'a> {
    /// Nothing: the admin API carries it out everywhere.
    Untouched,
    /// The zone's host stops answering (paused, partitioned).
    Unreachable(&'a str),
    /// The zone's host answers again.
    Reachable(&'a str),
}

/// A timeline entry on a Kubernetes cluster: the `entry` it is listed
/// under (commands carried out alike share one) and `how`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct K8s {
    pub entry: &'static str,
    pub how: &'static str,
}

/// The first rule `(impossible, field, why)` that holds, as the error.
pub(crate) fn first_bad(rules: &[(bool, &'static str, &'static str)]) -> Result<(), AdminError> {
    match rules.iter().find(|(impossible, _, _)| *impossible) {
        Some(&(_, field, why)) => Err(AdminError::Field { field, why }),
        None => Ok(()),
    }
}
