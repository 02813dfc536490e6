//! Reads the system under test's `/metrics` once a second.
//!
//! The Prometheus text format is parsed into `name{labels} -> value`, and the
//! series the analysis needs are derived: gauges as read, counters as deltas
//! since the previous scrape, zones kept apart. Works the same against the
//! embedded system and an external target. Every name comes from the metric
//! contract (`sut::metric_names`), and [`READ`] lists each series read with
//! the report figures it feeds: a target that lacks one is warned about at
//! the start, and those figures read "n/a", never 0.

use run_report::{Metric as Report, Second, ZoneSecond};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use sut::metric_names::{self as names, Metric};
use sut::RejectReason;

/// Every series the harness reads, with the report metrics it feeds.
pub const READ: &[(Metric, &[Report])] = &[
    (names::POOL_SLOTS, &[]),
    (names::POOL_SLOTS_BUSY, &[]),
    (
        names::POOL_WAITERS_HOLDING_SLOT,
        &[Report::SlotsHeldByWaitersPeak],
    ),
    (names::POOL_QUEUE_DEPTH, &[]),
    (names::GPU_QUEUED_PAGES, &[]),
    (
        names::GATEWAY_ATTEMPTS_TOTAL,
        &[Report::GatewayAmplification],
    ),
    (names::POOL_ADMITTED_TOTAL, &[]),
    (names::CACHE_WRITES_ACKED_TOTAL, &[]),
    (names::CACHE_WRITES_LOST_TOTAL, &[Report::CacheWritesLost]),
    (names::CACHE_WRITE_ERRORS_TOTAL, &[Report::CacheWriteErrors]),
    (names::CACHE_HITS_TOTAL, &[Report::CacheHitRatio]),
    (names::CACHE_MISSES_TOTAL, &[Report::CacheHitRatio]),
    (
        names::GPU_PAGES_COMPUTED_TOTAL,
        &[Report::DuplicateComputeShare],
    ),
    (
        names::GPU_PAGES_RECOMPUTED_TOTAL,
        &[Report::DuplicateComputeShare],
    ),
    (names::GPU_ORPHAN_PAGES_TOTAL, &[]),
    (names::POOL_ZOMBIE_PAGES_TOTAL, &[]),
    (names::POOL_REJECTED_TOTAL, &[Report::RejectedEarly]),
    (
        names::POOL_REQUESTS_TOTAL,
        &[Report::ZoneFailureRatioPeak, Report::ZoneFailureRatioMean],
    ),
    (
        names::POOL_OK_TOTAL,
        &[Report::ZoneFailureRatioPeak, Report::ZoneFailureRatioMean],
    ),
    (names::POOL_ZOMBIE_WORK_TOTAL, &[Report::ZoneZombieWork]),
    (names::POOL_HEAP_CAPACITY_MB, &[Report::CollectorShareMean]),
    (
        names::POOL_HEAP_COLLECTOR_SHARE,
        &[Report::CollectorShareMean],
    ),
];

/// The series of [`READ`] that `scrape` lacks, each with the figures it blanks.
pub fn missing(scrape: &Scrape) -> Vec<(&'static str, &'static [Report])> {
    READ.iter()
        .filter(|(m, _)| !scrape.has(m.name))
        .map(|(m, feeds)| (m.name, *feeds))
        .collect()
}

/// One scrape: `(name, labels) -> value`.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

/// Parses Prometheus text exposition (comments and blank lines skipped; malformed lines ignored).
pub fn parse(text: &str) -> Scrape {
    let mut samples = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (head, value) = match line.rsplit_once(' ') {
            Some(x) => x,
            None => continue,
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = match head.split_once('{') {
            Some((n, rest)) => (n.to_string(), parse_labels(rest.trim_end_matches('}'))),
            None => (head.to_string(), BTreeMap::new()),
        };
        samples.push((name, labels, value));
    }
    Scrape { samples }
}

fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = s;
    while let Some((k, after)) = rest.split_once("=\"") {
        let mut val = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        val.push(if n == 'n' { '\n' } else { n });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => val.push(c),
            }
        }
        out.insert(k.trim_start_matches(',').trim().to_string(), val);
        rest = &after[end..];
    }
    out
}

impl Scrape {
    /// Whether any sample of `name` was read.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|(n, _, _)| n == name)
    }

    /// Sum of a metric over samples whose labels include `filter`.
    pub fn sum(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && filter
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, v)| v)
            .sum()
    }

    pub fn zones(&self) -> Vec<String> {
        let mut z: Vec<String> = self
            .samples
            .iter()
            .filter(|(n, _, _)| n == names::POOL_SLOTS.name)
            .filter_map(|(_, l, _)| l.get("zone").cloned())
            .collect();
        z.sort();
        z.dedup();
        z
    }

    pub fn label(&self, name: &str, label: &str) -> Option<String> {
        self.samples
            .iter()
            .find(|(n, _, _)| n == name)
            .and_then(|(_, l, _)| l.get(label).cloned())
    }
}

fn delta(now: &Scrape, prev: &Scrape, name: &str, filter: &[(&str, &str)]) -> u64 {
    (now.sum(name, filter) - prev.sum(name, filter))
        .max(0.0)
        .round() as u64
}

/// Fills the system-side fields of a second from two consecutive scrapes.
pub fn fill_second(s: &mut Second, now: &Scrape, prev: &Scrape) {
    s.slots_total = now.sum(names::POOL_SLOTS.name, &[]);
    s.slots_busy = now.sum(names::POOL_SLOTS_BUSY.name, &[]);
    s.slots_held_by_waiters = now.sum(names::POOL_WAITERS_HOLDING_SLOT.name, &[]);
    s.queue_depth = now.sum(names::POOL_QUEUE_DEPTH.name, &[]);
    s.gpu_queue_pages = now.sum(names::GPU_QUEUED_PAGES.name, &[]);
    s.gateway_attempts = delta(now, prev, names::GATEWAY_ATTEMPTS_TOTAL.name, &[]);
    s.admitted = delta(now, prev, names::POOL_ADMITTED_TOTAL.name, &[]);
    s.cache_writes_acked = delta(now, prev, names::CACHE_WRITES_ACKED_TOTAL.name, &[]);
    s.cache_writes_lost = delta(now, prev, names::CACHE_WRITES_LOST_TOTAL.name, &[]);
    s.cache_write_errors = delta(now, prev, names::CACHE_WRITE_ERRORS_TOTAL.name, &[]);
    s.cache_hits = delta(now, prev, names::CACHE_HITS_TOTAL.name, &[]);
    s.cache_misses = delta(now, prev, names::CACHE_MISSES_TOTAL.name, &[]);
    s.pages_computed = delta(now, prev, names::GPU_PAGES_COMPUTED_TOTAL.name, &[]);
    s.pages_recomputed = delta(now, prev, names::GPU_PAGES_RECOMPUTED_TOTAL.name, &[]);
    s.orphan_pages = delta(now, prev, names::GPU_ORPHAN_PAGES_TOTAL.name, &[]);
    s.zombie_pages = delta(now, prev, names::POOL_ZOMBIE_PAGES_TOTAL.name, &[]);
    s.rejected_early = delta(
        now,
        prev,
        names::POOL_REJECTED_TOTAL.name,
        &[("reason", RejectReason::DuplicateInProgress.as_str())],
    ) + delta(
        now,
        prev,
        names::POOL_REJECTED_TOTAL.name,
        &[("reason", RejectReason::RecentlyFailed.as_str())],
    );
    s.collector_share = collector_share(now);
    let zones = now.zones();
    if zones.len() > 1 {
        for z in zones {
            let f: &[(&str, &str)] = &[("zone", &z)];
            let requests = delta(now, prev, names::POOL_REQUESTS_TOTAL.name, f);
            let ok = delta(now, prev, names::POOL_OK_TOTAL.name, f);
            s.zones.insert(
                z.clone(),
                ZoneSecond {
                    requests,
                    failures: requests.saturating_sub(ok),
                    slots_busy: now.sum(names::POOL_SLOTS_BUSY.name, f),
                    queue_depth: now.sum(names::POOL_QUEUE_DEPTH.name, f)
                        + now.sum(names::GPU_QUEUED_PAGES.name, f),
                    zombie_work: delta(now, prev, names::POOL_ZOMBIE_WORK_TOTAL.name, f),
                },
            );
        }
    }
}

/// The collector's share in the pool where it is highest, among the pools
/// that have a heap; `None` when none has one.
fn collector_share(now: &Scrape) -> Option<f64> {
    now.zones()
        .iter()
        .filter(|z| now.sum(names::POOL_HEAP_CAPACITY_MB.name, &[("zone", z)]) > 0.0)
        .map(|z| now.sum(names::POOL_HEAP_COLLECTOR_SHARE.name, &[("zone", z)]))
        .reduce(f64::max)
}

/// Totals at the end of a run, for the report.
pub fn totals(now: &Scrape) -> BTreeMap<String, f64> {
    let mut t = BTreeMap::new();
    for name in [
        names::GATEWAY_REQUESTS_TOTAL.name,
        names::GATEWAY_ATTEMPTS_TOTAL.name,
        names::DISTINCT_DOCUMENTS_TOTAL.name,
        names::CACHE_WRITES_ACKED_TOTAL.name,
        names::CACHE_WRITES_STORED_TOTAL.name,
        names::CACHE_WRITES_LOST_TOTAL.name,
        names::CACHE_WRITE_ERRORS_TOTAL.name,
        names::CACHE_HITS_TOTAL.name,
        names::CACHE_MISSES_TOTAL.name,
        names::GPU_PAGES_COMPUTED_TOTAL.name,
        names::GPU_PAGES_RECOMPUTED_TOTAL.name,
        names::GPU_ORPHAN_PAGES_TOTAL.name,
        names::POOL_ZOMBIE_WORK_TOTAL.name,
        names::POOL_DOCUMENTS_COMPUTED_TOTAL.name,
        names::POOL_ADMITTED_TOTAL.name,
        names::GPU_PACED_SECONDS_TOTAL.name,
        names::GPU_PACED_TARGET_SECONDS_TOTAL.name,
    ] {
        t.insert(name.to_string(), now.sum(name, &[]));
    }
    t
}

/// The GPU's back-to-back batch intervals, as run and as modeled, over the
/// zones not in `held_up` (whose pool the timeline froze, limited or
/// killed); zero, and so no figure, where the system does not export them.
pub fn gpu_pacing(last: &Scrape, held_up: &BTreeSet<String>) -> run_report::GpuPacing {
    let total = |name: &str| {
        if held_up.is_empty() {
            return last.sum(name, &[]);
        }
        last.zones()
            .iter()
            .filter(|z| !held_up.contains(*z))
            .map(|z| last.sum(name, &[("zone", z)]))
            .sum()
    };
    run_report::GpuPacing {
        run_secs: total(names::GPU_PACED_SECONDS_TOTAL.name),
        model_secs: total(names::GPU_PACED_TARGET_SECONDS_TOTAL.name),
        left_out_zones: held_up.iter().cloned().collect(),
    }
}

/// Why a scrape of the metrics got no reading.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// No answer (refused, timed out) or a body that could not be read.
    #[error("{0}")]
    Request(#[from] crate::net::system_client::RequestError),
    /// An answer that is not a success.
    #[error("the metrics answered {0}")]
    Status(reqwest::StatusCode),
}

/// Scrapes once, bounded in time.
pub(crate) async fn scrape(
    client: &crate::net::system_client::SystemClient,
) -> Result<Scrape, ScrapeError> {
    let r = client.get_metrics(Duration::from_secs(2)).await?;
    if !r.status.is_success() {
        return Err(ScrapeError::Status(r.status));
    }
    Ok(parse(&String::from_utf8_lossy(&r.body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zone whose pool the timeline held up is not counted: here az3's
    /// batches took 9 s over their model while it was paused.
    #[test]
    fn gpu_pacing_leaves_out_the_held_up_zones() {
        let s = parse(
            "sut_pool_slots{zone=\"az1\"} 16\nsut_pool_slots{zone=\"az3\"} 16\n\
             sut_gpu_paced_seconds_total{zone=\"az1\"} 30\nsut_gpu_paced_target_seconds_total{zone=\"az1\"} 30\n\
             sut_gpu_paced_seconds_total{zone=\"az3\"} 29\nsut_gpu_paced_target_seconds_total{zone=\"az3\"} 20\n",
        );
        let all = gpu_pacing(&s, &BTreeSet::new());
        assert_eq!((all.run_secs, all.model_secs), (59.0, 50.0));
        assert!(all.warning().is_some());
        let held_up = BTreeSet::from(["az3".to_string()]);
        let p = gpu_pacing(&s, &held_up);
        assert_eq!((p.run_secs, p.model_secs), (30.0, 30.0));
        assert_eq!(p.left_out_zones, vec!["az3"]);
        assert!(p.warning().is_none());
    }

    #[test]
    fn parses_labels_and_sums() {
        let s = parse(
            "# HELP x y\n# TYPE x counter\nsut_pool_rejected_total{zone=\"a\",reason=\"queue_full\"} 3\n\
             sut_pool_rejected_total{zone=\"b\",reason=\"queue_full\"} 4\nsut_pool_slots{zone=\"a\"} 16\n\
             sut_executor_info{adapter=\"llvmpipe (LLVM \\\"15\\\")\",fallback=\"false\"} 1\n",
        );
        assert_eq!(
            s.sum("sut_pool_rejected_total", &[("reason", "queue_full")]),
            7.0
        );
        assert_eq!(s.sum("sut_pool_rejected_total", &[("zone", "b")]), 4.0);
        assert_eq!(
            s.label("sut_executor_info", "adapter").unwrap(),
            "llvmpipe (LLVM \"15\")"
        );
        assert_eq!(s.zones(), vec!["a"]);
    }

    #[test]
    fn the_collector_share_is_read_only_where_a_pool_has_a_heap() {
        let prev = Scrape::default();
        let none = parse(
            "sut_pool_slots{zone=\"a\"} 16\nsut_pool_heap_capacity_mb{zone=\"a\"} 0\n\
             sut_pool_heap_collector_share{zone=\"a\"} 0\n",
        );
        let mut s = Second::default();
        fill_second(&mut s, &none, &prev);
        assert_eq!(s.collector_share, None);
        let two = parse(
            "sut_pool_slots{zone=\"a\"} 16\nsut_pool_slots{zone=\"b\"} 16\n\
             sut_pool_heap_capacity_mb{zone=\"a\"} 1024\nsut_pool_heap_collector_share{zone=\"a\"} 0.3\n\
             sut_pool_heap_capacity_mb{zone=\"b\"} 1024\nsut_pool_heap_collector_share{zone=\"b\"} 0.9\n",
        );
        fill_second(&mut s, &two, &prev);
        assert_eq!(s.collector_share, Some(0.9));
    }

    #[test]
    fn counters_become_deltas() {
        let prev = parse("sut_cache_writes_lost_total 10\nsut_pool_slots_busy{zone=\"a\"} 3\n");
        let now = parse("sut_cache_writes_lost_total 25\nsut_pool_slots_busy{zone=\"a\"} 5\n");
        let mut s = Second::default();
        fill_second(&mut s, &now, &prev);
        assert_eq!(s.cache_writes_lost, 15);
        assert_eq!(s.slots_busy, 5.0);
    }
}
