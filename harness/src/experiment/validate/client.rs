//! The `client:` section: how the simulated clients retry and time out, how
//! they submit (synchronously, or as jobs they poll), how many there are, and
//! which tenants' clients differ. Used for the base client and, through
//! [`submission`], for a variant's override of it.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use serde_saphyr::Location;

pub(super) fn client(
    cx: &Ctx,
    c: &RawClient,
    field: &str,
    tenants: u32,
) -> Result<ClientBehaviour, ExperimentError> {
    let timeout = cx.duration(
        &c.timeout.referenced,
        &format!("{field}.timeout"),
        &c.timeout.value,
    )?;
    if timeout.is_zero() {
        return Err(cx.err(
            &c.timeout.referenced,
            format!("{field}.timeout"),
            "must be > 0",
        ));
    }
    c.retry.validate().map_err(|m| {
        cx.err(
            &c.timeout.referenced,
            format!("{field}.retry"),
            m.to_string(),
        )
    })?;
    let mode = c.mode.as_ref().map(|m| m.value).unwrap_or_default();
    let at = c
        .poll
        .as_ref()
        .map(|p| p.referenced)
        .or(c.mode.as_ref().map(|m| m.referenced))
        .unwrap_or(c.timeout.referenced);
    let submission = submission(cx, &at, field, mode, c.poll.as_ref().map(|p| &p.value))?;
    let clients_per_tenant = client_count(cx, c, field, tenants)?;
    let mut by_tenant = std::collections::BTreeMap::new();
    if let Some(map) = &c.tenants {
        for (name, t) in &map.value {
            let f = format!("{field}.tenants.{name}");
            let known = name
                .strip_prefix('t')
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| (1..=tenants).contains(&n) && name == &format!("t{n}"));
            if !known {
                return Err(cx.err(
                    &map.referenced,
                    f,
                    format!("unknown tenant: the documents' tenants are t1 to t{tenants}"),
                ));
            }
            if let Some(r) = &t.retry {
                r.validate()
                    .map_err(|m| cx.err(&map.referenced, format!("{f}.retry"), m.to_string()))?;
            }
            let timeout = match &t.timeout {
                Some(text) => {
                    let d = cx.duration(&map.referenced, &format!("{f}.timeout"), text)?;
                    if d.is_zero() {
                        return Err(cx.err(&map.referenced, format!("{f}.timeout"), "must be > 0"));
                    }
                    Some(d)
                }
                None => None,
            };
            by_tenant.insert(
                name.clone(),
                TenantClient {
                    retry: t.retry.clone(),
                    timeout,
                },
            );
        }
    }
    Ok(ClientBehaviour {
        retry: c.retry.clone(),
        timeout,
        submission,
        clients_per_tenant,
        tenants: by_tenant,
    })
}

/// `count` clients spread evenly over the tenants: how many each tenant has.
fn client_count(
    cx: &Ctx,
    c: &RawClient,
    field: &str,
    tenants: u32,
) -> Result<u32, ExperimentError> {
    let Some(count) = &c.count else {
        return Ok(1);
    };
    let n = count.value;
    if n < tenants || n > 1_000_000 || n % tenants != 0 {
        return Err(cx.err(
            &count.referenced,
            format!("{field}.count"),
            format!(
                "{n} clients cannot be spread evenly over {tenants} tenants: give a multiple of {tenants}, at most 1,000,000"
            ),
        ));
    }
    Ok(n / tenants)
}

/// How the clients submit: `mode` and its `poll` policy. A poll policy
/// without `mode: async` would be silently ignored, so it is an error.
pub(super) fn submission(
    cx: &Ctx,
    at: &Location,
    field: &str,
    mode: ClientMode,
    poll: Option<&RawPoll>,
) -> Result<Submission, ExperimentError> {
    match (mode, poll) {
        (ClientMode::Sync, None) => Ok(Submission::Sync),
        (ClientMode::Sync, Some(_)) => Err(cx.err(
            at,
            format!("{field}.poll"),
            "a poll policy only applies to `mode: async`",
        )),
        (ClientMode::Async, poll) => {
            let (interval, honour) = match poll {
                Some(p) => (
                    cx.duration(at, &format!("{field}.poll.interval"), &p.interval)?,
                    p.honour_retry_after,
                ),
                None => (DEFAULT_POLL_INTERVAL, true),
            };
            if interval.is_zero() {
                return Err(cx.err(
                    at,
                    format!("{field}.poll.interval"),
                    "must be > 0 (a client polling without pause is a load test of the job table)",
                ));
            }
            Ok(Submission::Async {
                poll_interval: interval,
                honour_retry_after: honour,
            })
        }
    }
}

/// An async client's pause between polls when the answer gives none.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(250);
