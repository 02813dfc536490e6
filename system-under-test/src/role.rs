//! `Role`: which part of the service one process runs.
//!
//! The embedded default runs everything in one process (`All`). The same
//! binary can also run the two roles of the incident's architecture apart, as
//! the containers environment does: one `Pool` process per zone (the worker
//! pool with its layers and its own GPU scheduler) and one `Gateway` process
//! (internal retries and the zone router) that reaches the pools over HTTP.
//! Splitting them changes only where the hops are, not the mechanisms: the
//! gateway's retries, the router's failover and each pool's layers are the
//! same code in both shapes.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Role {
    /// Gateway, router and every zone's pool in this process.
    #[default]
    All,
    /// Only this zone's pool; serves `POST /v1/pool/extract` to a gateway.
    Pool { zone: String },
    /// Only the gateway and router; each zone's pool is another process.
    Gateway {
        /// `(zone, base URL)` for every zone of the configuration.
        pools: Vec<(String, String)>,
    },
}

/// Why `--role` and its companions, or a role against the configuration's
/// zones, do not make a process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    #[error("--zone and --pool only go with --role pool / gateway")]
    CompanionsWithAll,
    #[error("--role pool needs --zone NAME")]
    PoolWithoutZone,
    #[error("--pool only goes with --role gateway")]
    PoolsWithPool,
    #[error("--zone only goes with --role pool")]
    ZoneWithGateway,
    /// A `--pool` that is not `ZONE=URL` (`why` says what is wrong).
    #[error("--pool {arg:?}: {why}")]
    BadPool { arg: String, why: &'static str },
    #[error("--role gateway needs one --pool ZONE=URL per zone")]
    GatewayWithoutPools,
    #[error("unknown role {0:?}: expected all, pool or gateway")]
    Unknown(String),
    #[error("zone {zone:?} is not one of the configuration's zones {zones:?}")]
    NotAZone { zone: String, zones: Vec<String> },
    #[error("zone {0:?} has no --pool {0}=URL")]
    NoPoolFor(String),
    #[error("--pool {pool}=...: {pool:?} is not one of the configuration's zones {zones:?}")]
    PoolNotAZone { pool: String, zones: Vec<String> },
}

impl Role {
    /// Parses `--role` and its `--zone` / `--pool` companions.
    pub fn from_args(role: &str, zone: Option<&str>, pools: &[String]) -> Result<Role, RoleError> {
        match role {
            "all" => {
                if zone.is_some() || !pools.is_empty() {
                    return Err(RoleError::CompanionsWithAll);
                }
                Ok(Role::All)
            }
            "pool" => {
                let zone = zone.ok_or(RoleError::PoolWithoutZone)?;
                if !pools.is_empty() {
                    return Err(RoleError::PoolsWithPool);
                }
                Ok(Role::Pool { zone: zone.into() })
            }
            "gateway" => {
                if zone.is_some() {
                    return Err(RoleError::ZoneWithGateway);
                }
                let pools = pools
                    .iter()
                    .map(|p| parse_pool(p))
                    .collect::<Result<Vec<_>, RoleError>>()?;
                if pools.is_empty() {
                    return Err(RoleError::GatewayWithoutPools);
                }
                Ok(Role::Gateway { pools })
            }
            other => Err(RoleError::Unknown(other.into())),
        }
    }

    /// Checks the role against the configuration's zones.
    pub fn check(&self, zones: &[String]) -> Result<(), RoleError> {
        match self {
            Role::All => Ok(()),
            Role::Pool { zone } => {
                if zones.contains(zone) {
                    Ok(())
                } else {
                    Err(RoleError::NotAZone {
                        zone: zone.clone(),
                        zones: zones.to_vec(),
                    })
                }
            }
            Role::Gateway { pools } => {
                for z in zones {
                    if !pools.iter().any(|(p, _)| p == z) {
                        return Err(RoleError::NoPoolFor(z.clone()));
                    }
                }
                for (p, _) in pools {
                    if !zones.contains(p) {
                        return Err(RoleError::PoolNotAZone {
                            pool: p.clone(),
                            zones: zones.to_vec(),
                        });
                    }
                }
                Ok(())
            }
        }
    }
}

/// One `--pool ZONE=URL`, the URL without its trailing `/`.
fn parse_pool(p: &str) -> Result<(String, String), RoleError> {
    let bad = |why| RoleError::BadPool {
        arg: p.to_string(),
        why,
    };
    let (zone, url) = p.split_once('=').ok_or_else(|| bad("expected ZONE=URL"))?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(bad("the URL must start with http://"));
    }
    Ok((zone.to_string(), url.trim_end_matches('/').to_string()))
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::All => write!(f, "all (gateway and every pool)"),
            Role::Pool { zone } => write!(f, "pool of zone {zone}"),
            Role::Gateway { pools } => write!(f, "gateway to {} remote pool(s)", pools.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_role() {
        assert_eq!(Role::from_args("all", None, &[]).unwrap(), Role::All);
        assert_eq!(
            Role::from_args("pool", Some("az1"), &[]).unwrap(),
            Role::Pool { zone: "az1".into() }
        );
        let g = Role::from_args("gateway", None, &["az1=http://pool-az1:8080/".into()]).unwrap();
        assert_eq!(
            g,
            Role::Gateway {
                pools: vec![("az1".into(), "http://pool-az1:8080".into())]
            }
        );
    }

    #[test]
    fn rejects_incomplete_roles() {
        assert!(Role::from_args("pool", None, &[]).is_err());
        assert!(Role::from_args("gateway", None, &[]).is_err());
        assert!(Role::from_args("gateway", None, &["az1".into()]).is_err());
        assert!(Role::from_args("gateway", None, &["az1=pool:80".into()]).is_err());
        assert!(Role::from_args("worker", None, &[]).is_err());
    }

    #[test]
    fn checks_zones() {
        let zones = vec!["a".to_string(), "b".to_string()];
        assert!(Role::Pool { zone: "c".into() }.check(&zones).is_err());
        let one = Role::Gateway {
            pools: vec![("a".into(), "http://x".into())],
        };
        assert!(one.check(&zones).unwrap_err().to_string().contains("\"b\""));
        let both = Role::Gateway {
            pools: vec![
                ("a".into(), "http://x".into()),
                ("b".into(), "http://y".into()),
            ],
        };
        assert!(both.check(&zones).is_ok());
    }

    #[test]
    fn errors_read_as_before() {
        let e = |r: Result<Role, RoleError>| r.unwrap_err().to_string();
        assert_eq!(
            e(Role::from_args("gateway", None, &["az1".into()])),
            "--pool \"az1\": expected ZONE=URL"
        );
        assert_eq!(
            e(Role::from_args("gateway", None, &["az1=pool:80".into()])),
            "--pool \"az1=pool:80\": the URL must start with http://"
        );
        let zones = vec!["a".to_string()];
        let stray = Role::Gateway {
            pools: vec![
                ("a".into(), "http://x".into()),
                ("c".into(), "http://y".into()),
            ],
        };
        assert_eq!(
            stray.check(&zones).unwrap_err().to_string(),
            "--pool c=...: \"c\" is not one of the configuration's zones [\"a\"]"
        );
    }
}
