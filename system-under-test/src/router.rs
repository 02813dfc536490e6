//! `ZoneRouter`: which zone's pool serves a request (seed 003).
//!
//! Each document has a home zone. When the home zone's failure ratio over the
//! recent window passes a threshold, its traffic is redirected to the
//! healthiest other zone: the automatic failover that, together with platform
//! retries, overloaded the neighbouring zone in the incident. The fix
//! (`failover_headroom`) redirects only as much as the target can absorb.
//! Operators' actions live here too: stop allocations to a zone, throttle it.
//!
//! Bounds: per zone, a fixed ring of 10 time buckets.

use crate::api::RejectReason;
use crate::config::RouterConfig;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

const BUCKETS: usize = 10;

/// Counts over a sliding window of `BUCKETS` buckets.
#[derive(Clone)]
struct Window {
    bucket: Duration,
    start: Instant,
    /// (bucket index, requests, failures, redirected-in)
    ring: [(u64, u64, u64, u64); BUCKETS],
}

impl Window {
    fn new(window: Duration) -> Self {
        Window {
            bucket: window / BUCKETS as u32,
            start: Instant::now(),
            ring: [(u64::MAX, 0, 0, 0); BUCKETS],
        }
    }

    fn slot(&mut self, now: Instant) -> &mut (u64, u64, u64, u64) {
        let idx =
            (now.duration_since(self.start).as_nanos() / self.bucket.as_nanos().max(1)) as u64;
        let s = &mut self.ring[(idx % BUCKETS as u64) as usize];
        if s.0 != idx {
            *s = (idx, 0, 0, 0);
        }
        s
    }

    fn totals(&self, now: Instant) -> (u64, u64, u64) {
        let idx =
            (now.duration_since(self.start).as_nanos() / self.bucket.as_nanos().max(1)) as u64;
        let mut t = (0, 0, 0);
        for s in &self.ring {
            if s.0 != u64::MAX && idx.saturating_sub(s.0) < BUCKETS as u64 {
                t.0 += s.1;
                t.1 += s.2;
                t.2 += s.3;
            }
        }
        t
    }
}

/// A token bucket throttling one zone (operator action).
#[derive(Clone, Debug)]
struct Throttle {
    per_sec: f64,
    tokens: f64,
    last: Instant,
}

#[derive(Clone)]
struct ZoneState {
    window: Window,
    stopped: bool,
    throttle: Option<Throttle>,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub zone: usize,
    pub redirected: bool,
}

pub struct ZoneRouter {
    cfg: RouterConfig,
    zones: Mutex<Vec<ZoneState>>,
    /// Fixed failover target per zone index, from `cfg.failover`.
    pairs: Vec<Option<usize>>,
}

impl ZoneRouter {
    /// `names` are the zones in index order (pairs in `cfg.failover` refer to them).
    pub fn new(cfg: RouterConfig, names: &[String]) -> Self {
        let st = ZoneState {
            window: Window::new(cfg.window),
            stopped: false,
            throttle: None,
        };
        let index = |n: &String| names.iter().position(|z| z == n);
        let pairs = names
            .iter()
            .map(|z| cfg.failover.get(z).and_then(index))
            .collect();
        ZoneRouter {
            zones: Mutex::new(vec![st; names.len()]),
            pairs,
            cfg,
        }
    }

    /// Home zone of a document: a stable hash, so each zone has its own traffic.
    pub fn home(&self, doc: u64, zones: usize) -> usize {
        let mut x = doc.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        (x % zones as u64) as usize
    }

    /// Chooses the zone for one attempt.
    pub fn route(&self, doc: u64) -> Result<Route, RejectReason> {
        let now = Instant::now();
        let mut zones = self.zones.lock().expect("router lock");
        let n = zones.len();
        let home = self.home(doc, n);
        let ratio = |z: &ZoneState| {
            let (req, fail, _) = z.window.totals(now);
            if req < 5 {
                0.0
            } else {
                fail as f64 / req as f64
            }
        };
        let mut target = home;
        let mut redirected = false;
        if n > 1 && ratio(&zones[home]) > self.cfg.redirect_failure_ratio {
            let paired = self.pairs.iter().any(Option::is_some);
            let best = match self.pairs.get(home).copied().flatten() {
                Some(pair) if !zones[pair].stopped => Some(pair),
                Some(_) => None,
                // With pairs configured, only the listed zones fail over.
                None if paired => None,
                None => (0..n)
                    .filter(|&i| i != home && !zones[i].stopped)
                    .min_by(|&a, &b| ratio(&zones[a]).total_cmp(&ratio(&zones[b]))),
            };
            if let Some(b) = best {
                let allowed = match self.cfg.failover_headroom {
                    None => true,
                    Some(h) => {
                        let (req, _, redirected_in) = zones[b].window.totals(now);
                        let own = req.saturating_sub(redirected_in);
                        (redirected_in as f64) < h * own as f64
                    }
                };
                if allowed {
                    target = b;
                    redirected = true;
                }
            }
        }
        let z = &mut zones[target];
        if z.stopped {
            return Err(RejectReason::AllocationsStopped);
        }
        if let Some(t) = &mut z.throttle {
            let dt = now.duration_since(t.last).as_secs_f64();
            t.tokens = (t.tokens + dt * t.per_sec).min(t.per_sec.max(1.0));
            t.last = now;
            if t.tokens < 1.0 {
                return Err(RejectReason::Throttled);
            }
            t.tokens -= 1.0;
        }
        if redirected {
            z.window.slot(now).3 += 1;
        }
        Ok(Route {
            zone: target,
            redirected,
        })
    }

    /// Records the outcome of an attempt served by `zone`.
    pub fn record(&self, zone: usize, failed: bool) {
        let now = Instant::now();
        let mut zones = self.zones.lock().expect("router lock");
        if let Some(z) = zones.get_mut(zone) {
            let s = z.window.slot(now);
            s.1 += 1;
            if failed {
                s.2 += 1;
            }
        }
    }

    /// Operator: stop (or resume) new allocations to a zone.
    pub fn set_stopped(&self, zone: usize, stopped: bool) {
        if let Some(z) = self.zones.lock().expect("router lock").get_mut(zone) {
            z.stopped = stopped;
        }
    }

    /// Operator: throttle a zone to `per_sec` requests per second (None: lift).
    pub fn set_throttle(&self, zone: usize, per_sec: Option<f64>) {
        if let Some(z) = self.zones.lock().expect("router lock").get_mut(zone) {
            z.throttle = per_sec.map(|r| Throttle {
                per_sec: r,
                tokens: r.max(1.0),
                last: Instant::now(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(headroom: Option<f64>) -> RouterConfig {
        RouterConfig {
            failover_headroom: headroom,
            ..RouterConfig::default()
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("z{i}")).collect()
    }

    fn doc_with_home(r: &ZoneRouter, zone: usize, n: usize) -> u64 {
        (0..).find(|&d| r.home(d, n) == zone).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn failing_zone_is_redirected() {
        let r = ZoneRouter::new(cfg(None), &names(3));
        let d = doc_with_home(&r, 2, 3);
        for _ in 0..10 {
            r.record(2, true);
        }
        let route = r.route(d).unwrap();
        assert!(route.redirected);
        assert_ne!(route.zone, 2);
        // The window forgets.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            r.route(d).unwrap(),
            Route {
                zone: 2,
                redirected: false
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failover_pair_wins_over_healthiest() {
        let mut c = cfg(None);
        c.failover.insert("z2".into(), "z1".into());
        let r = ZoneRouter::new(c, &names(3));
        let d = doc_with_home(&r, 2, 3);
        for _ in 0..10 {
            r.record(2, true);
            r.record(1, true);
            r.record(0, false);
        }
        // z1 is failing too, but it is z2's pair.
        assert_eq!(
            r.route(d).unwrap(),
            Route {
                zone: 1,
                redirected: true
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn headroom_limits_redirected_traffic() {
        let r = ZoneRouter::new(cfg(Some(0.5)), &names(2));
        let d = doc_with_home(&r, 1, 2);
        for _ in 0..10 {
            r.record(1, true);
            r.record(0, false);
        }
        let mut redirected = 0;
        for _ in 0..20 {
            let route = r.route(d).unwrap();
            r.record(route.zone, !route.redirected);
            redirected += usize::from(route.redirected);
        }
        // Zone 0 served 10 of its own: at most 5 more are redirected into it.
        assert_eq!(redirected, 5);
    }

    #[tokio::test(start_paused = true)]
    async fn stopped_and_throttled_zones_reject() {
        let r = ZoneRouter::new(cfg(None), &names(1));
        r.set_stopped(0, true);
        assert_eq!(r.route(1), Err(RejectReason::AllocationsStopped));
        r.set_stopped(0, false);
        r.set_throttle(0, Some(2.0));
        assert!(r.route(1).is_ok());
        assert!(r.route(1).is_ok());
        assert_eq!(r.route(1), Err(RejectReason::Throttled));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(r.route(1).is_ok());
    }
}
