//! `FaultTimeline`: executes faults and operator actions at their times.
//!
//! Commands go to the system's admin API (loopback, bearer token), so the same
//! timeline replays against the embedded system and an external target. In
//! the containers environment a zone outage is real instead: the zone's
//! container is paused, and unpaused when the outage ends.
//! Generic faults (`cpu_limit`, `pause`, `kill`) go to the variant's
//! [`Injector`] instead, which acts on the component's process.
//! Entries with a duration are undone at its end. Every entry is logged with
//! the time it actually ran and what the system answered; a failed command is
//! reported in the run, never ignored. Oversized documents and a load
//! spike's extra arrivals are client traffic (planned into the arrival
//! schedule from the seed); the timeline only logs their arrival.
//!
//! Initial conditions — operator state at 0 s that is not a trigger and is
//! never undone, such as seed 000's cache "left at its limit since early
//! August" — are applied by [`set_up`] before the variant's clock starts.
//! Applying them at 0 s on the clock instead made the first seconds' clients
//! pay for the harness filling a cache (on two busy cores, timeouts in the
//! second after the warm-up), a failure of the harness, not of the system.

use crate::env::faults::Injector;
use crate::experiment::faults::GenericFault;
use crate::experiment::{Revert, TimelineEntry, TimelineOp};
use run_report::{EventKind, TimelineEvent};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sut::command_row::Host;
use sut::AdminCommand;
use tokio::time::Instant;

/// Where admin commands go.
#[derive(Clone)]
pub struct AdminApi {
    /// The system's control plane (HTTP, or in process in virtual time).
    pub system: crate::net::system_client::SystemClient,
    pub token: String,
    /// The zones' containers (containers environment only).
    pub containers: Option<Arc<crate::env::containers::ZoneContainers>>,
}

/// Why an admin command was not carried out (logged as the entry's detail).
#[derive(Debug, thiserror::Error)]
pub enum AdminApiError {
    /// No connection, or no answer in time.
    #[error("admin API unreachable: {0}")]
    Unreachable(crate::net::system_client::RequestError),
    /// The admin API refused the command; `body` is its answer, trimmed.
    #[error("admin API answered {status}: {body}")]
    Refused {
        status: reqwest::StatusCode,
        body: String,
    },
    /// A zone outage or restore on the zone's container failed.
    #[error(transparent)]
    Container(#[from] crate::env::containers::DockerError),
}

impl AdminApi {
    /// Carries out `cmd` (on the zone's container, paused or unpaused, for a
    /// command whose row takes the zone's host off the network or back, in
    /// the containers environment); returns what the system said.
    pub async fn send(&self, cmd: &AdminCommand) -> Result<String, AdminApiError> {
        if let Some(c) = &self.containers {
            match cmd.row().host {
                Host::Unreachable(zone) => return Ok(c.pause(zone).await?),
                Host::Reachable(zone) => return Ok(c.unpause(zone).await?),
                // Every other command goes to the admin API, as in the
                // embedded environment.
                Host::Untouched => {}
            }
        }
        let r = self
            .system
            .post_admin("/admin/command", &self.token, cmd, Duration::from_secs(5))
            .await
            .map_err(AdminApiError::Unreachable)?;
        let status = r.status;
        let body = String::from_utf8_lossy(&r.body).into_owned();
        if !status.is_success() {
            return Err(AdminApiError::Refused {
                status,
                body: body.trim().to_string(),
            });
        }
        Ok(serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(String::from))
            .unwrap_or(body))
    }
}

/// `cmd` carried out through `admin`, as the log records it: whether it
/// was done, and what the system said or why it was not done.
async fn apply(admin: Option<&AdminApi>, cmd: &AdminCommand) -> (bool, String) {
    match admin {
        Some(a) => match a.send(cmd).await {
            Ok(d) => (true, d),
            Err(err) => (false, err.to_string()),
        },
        None => (false, "no admin API for this target".into()),
    }
}

/// Whether `e` is an initial condition (see the module doc).
pub(crate) fn is_initial_condition(e: &TimelineEntry) -> bool {
    e.at.is_zero() && !e.trigger && e.duration.is_none() && matches!(e.op, TimelineOp::Admin(_))
}

/// Applies the initial conditions of `entries` now, before the clock starts,
/// removes them from `entries` and logs each at 0 s. A failed one is logged
/// as failed, like any entry.
pub async fn set_up(
    entries: &mut Vec<TimelineEntry>,
    admin: Option<&AdminApi>,
    log: &Mutex<Vec<TimelineEvent>>,
) {
    let (initial, rest): (Vec<_>, Vec<_>) = std::mem::take(entries)
        .into_iter()
        .partition(is_initial_condition);
    *entries = rest;
    for e in initial {
        let TimelineOp::Admin(cmd) = &e.op else {
            continue;
        };
        let (ok, detail) = match apply(admin, cmd).await {
            (true, d) => (true, format!("before the load: {d}")),
            failed => failed,
        };
        if !ok {
            tracing::error!("initial condition {:?} failed: {detail}", e.label);
        }
        log.lock().expect("timeline log").push(TimelineEvent {
            at_s: 0.0,
            end_s: None,
            kind: if e.is_fault {
                EventKind::Fault
            } else {
                EventKind::Action
            },
            label: e.label,
            ok,
            detail,
        });
    }
}

/// A generic fault applied (`undo`: false) or undone through `faults`, as
/// the log records it.
async fn generic(faults: Option<&Injector>, f: &GenericFault, undo: bool) -> (bool, String) {
    let Some(inj) = faults else {
        return (false, "no component processes in this environment".into());
    };
    let r = if undo {
        inj.undo(f).await
    } else {
        inj.apply(f).await
    };
    match r {
        Ok(d) => (true, d),
        Err(e) => (false, e.to_string()),
    }
}

/// Runs every entry at `start + at`; returns the executed events (also
/// appended to `log` as they happen, so an interrupted run keeps them).
pub async fn run(
    entries: Vec<TimelineEntry>,
    start: Instant,
    admin: Option<AdminApi>,
    faults: Option<Arc<Injector>>,
    log: Arc<Mutex<Vec<TimelineEvent>>>,
) {
    // Undo steps are scheduled beside the entries.
    let mut steps: Vec<(Duration, Step)> = Vec::new();
    for e in entries {
        if let (Some(d), Some(undo)) = (e.duration, e.op.revert()) {
            steps.push((e.at + d, Step::Undo(undo, e.label.clone())));
        }
        steps.push((e.at, Step::Do(e)));
    }
    steps.sort_by_key(|(t, _)| *t);
    for (at, step) in steps {
        tokio::time::sleep_until(start + at).await;
        let actual = start.elapsed().as_secs_f64();
        let ev = match step {
            Step::Do(e) => {
                let kind = if e.is_fault {
                    EventKind::Fault
                } else {
                    EventKind::Action
                };
                let (ok, detail) = match &e.op {
                    TimelineOp::OversizedDocuments(o) => (
                        true,
                        format!(
                            "{} documents of {}-{} pages submitted by tenant {}",
                            o.count, o.min_pages, o.max_pages, o.tenant
                        ),
                    ),
                    TimelineOp::LoadSpike(s) => (true, spike_detail(s, e.duration)),
                    TimelineOp::Admin(cmd) => apply(admin.as_ref(), cmd).await,
                    TimelineOp::Generic(f) => generic(faults.as_deref(), f, false).await,
                };
                if !ok {
                    tracing::error!(
                        "timeline entry {:?} at {actual:.1}s failed: {detail}",
                        e.label
                    );
                }
                TimelineEvent {
                    at_s: actual,
                    end_s: e.duration.map(|d| (e.at + d).as_secs_f64()),
                    kind,
                    label: e.label,
                    ok,
                    detail,
                }
            }
            Step::Undo(revert, label) => {
                let (ok, detail) = match &revert {
                    Revert::Admin(cmd) => apply(admin.as_ref(), cmd).await,
                    Revert::Generic(f) => generic(faults.as_deref(), f, true).await,
                };
                TimelineEvent {
                    at_s: actual,
                    end_s: None,
                    kind: EventKind::FaultUndone,
                    label: format!("end: {label}"),
                    ok,
                    detail,
                }
            }
        };
        log.lock().expect("timeline log").push(ev);
    }
}

/// What a load spike's log line says (its documents are client traffic,
/// planned from the seed like the regular arrivals).
fn spike_detail(s: &crate::experiment::LoadSpike, d: Option<Duration>) -> String {
    use crate::experiment::{LoadSpike, Rate};
    let what = match s {
        LoadSpike::Factor(f) => format!("arrivals x{f}"),
        LoadSpike::Extra(Rate::PerSec(r)) => format!("{r} documents/s more"),
        LoadSpike::Extra(Rate::Capacity(c)) => format!("{c} x capacity more"),
    };
    format!(
        "{what} for {}: an extra Poisson stream of ordinary documents, submitted as client traffic",
        humantime::format_duration(d.unwrap_or_default())
    )
}

enum Step {
    Do(TimelineEntry),
    Undo(Revert, String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at_s: u64, trigger: bool, duration: Option<u64>) -> TimelineEntry {
        TimelineEntry {
            at: Duration::from_secs(at_s),
            duration: duration.map(Duration::from_secs),
            op: TimelineOp::Admin(AdminCommand::CacheFill { entries: 10 }),
            is_fault: true,
            trigger,
            label: "cache left at its limit".into(),
            variants: None,
        }
    }

    #[test]
    fn only_untimed_non_trigger_state_at_zero_is_set_up_before_the_clock() {
        assert!(is_initial_condition(&entry(0, false, None)));
        // A trigger at 0 s is part of the experiment, measured on the clock.
        assert!(!is_initial_condition(&entry(0, true, None)));
        // So is anything later, or anything that is undone.
        assert!(!is_initial_condition(&entry(1, false, None)));
        assert!(!is_initial_condition(&entry(0, false, Some(5))));
    }

    #[tokio::test]
    async fn set_up_removes_and_logs_the_initial_conditions() {
        let mut entries = vec![entry(0, false, None), entry(7, true, None)];
        let log = Mutex::new(Vec::new());
        set_up(&mut entries, None, &log).await;
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].at, Duration::from_secs(7));
        let log = log.into_inner().unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].at_s, 0.0);
        // Without an admin API it cannot be applied, and says so.
        assert!(!log[0].ok);
    }
}
