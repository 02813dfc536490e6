//! Reads the system under test's `/metrics` once a second.
//!
//! The Prometheus text format is parsed into `name{labels} -> value`, and the
//! series the analysis needs are derived: gauges as read, counters as deltas
//! since the previous scrape, zones kept apart. Works the same against the
//! embedded system and an external target.

use run_report::{Second, ZoneSecond};
use std::collections::BTreeMap;
use std::time::Duration;

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
            .filter(|(n, _, _)| n == "sut_pool_slots")
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
    s.slots_total = now.sum("sut_pool_slots", &[]);
    s.slots_busy = now.sum("sut_pool_slots_busy", &[]);
    s.slots_held_by_waiters = now.sum("sut_pool_waiters_holding_slot", &[]);
    s.queue_depth = now.sum("sut_pool_queue_depth", &[]);
    s.gpu_queue_pages = now.sum("sut_gpu_queued_pages", &[]);
    s.gateway_attempts = delta(now, prev, "sut_gateway_attempts_total", &[]);
    s.admitted = delta(now, prev, "sut_pool_admitted_total", &[]);
    s.cache_writes_acked = delta(now, prev, "sut_cache_writes_acked_total", &[]);
    s.cache_writes_lost = delta(now, prev, "sut_cache_writes_lost_total", &[]);
    s.cache_write_errors = delta(now, prev, "sut_cache_write_errors_total", &[]);
    s.pages_computed = delta(now, prev, "sut_gpu_pages_computed_total", &[]);
    s.pages_recomputed = delta(now, prev, "sut_gpu_pages_recomputed_total", &[]);
    s.orphan_pages = delta(now, prev, "sut_gpu_orphan_pages_total", &[]);
    s.zombie_pages = delta(now, prev, "sut_pool_zombie_pages_total", &[]);
    s.rejected_early = delta(
        now,
        prev,
        "sut_pool_rejected_total",
        &[("reason", "duplicate_in_progress")],
    ) + delta(
        now,
        prev,
        "sut_pool_rejected_total",
        &[("reason", "recently_failed")],
    );
    let zones = now.zones();
    if zones.len() > 1 {
        for z in zones {
            let f: &[(&str, &str)] = &[("zone", &z)];
            let requests = delta(now, prev, "sut_pool_requests_total", f);
            let ok = delta(now, prev, "sut_pool_ok_total", f);
            s.zones.insert(
                z.clone(),
                ZoneSecond {
                    requests,
                    failures: requests.saturating_sub(ok),
                    slots_busy: now.sum("sut_pool_slots_busy", f),
                    queue_depth: now.sum("sut_pool_queue_depth", f)
                        + now.sum("sut_gpu_queued_pages", f),
                    zombie_work: delta(now, prev, "sut_pool_zombie_work_total", f),
                },
            );
        }
    }
}

/// Totals at the end of a run, for the report.
pub fn totals(now: &Scrape) -> BTreeMap<String, f64> {
    let mut t = BTreeMap::new();
    for name in [
        "sut_gateway_requests_total",
        "sut_gateway_attempts_total",
        "sut_distinct_documents_total",
        "sut_cache_writes_acked_total",
        "sut_cache_writes_stored_total",
        "sut_cache_writes_lost_total",
        "sut_cache_write_errors_total",
        "sut_cache_hits_total",
        "sut_cache_misses_total",
        "sut_gpu_pages_computed_total",
        "sut_gpu_pages_recomputed_total",
        "sut_gpu_orphan_pages_total",
        "sut_pool_zombie_work_total",
        "sut_pool_documents_computed_total",
        "sut_pool_admitted_total",
    ] {
        t.insert(name.to_string(), now.sum(name, &[]));
    }
    t
}

/// Scrapes once, bounded in time.
pub async fn scrape(client: &reqwest::Client, base_url: &str) -> Result<Scrape, String> {
    let r = client
        .get(format!("{base_url}/metrics"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !r.status().is_success() {
        return Err(format!("/metrics answered {}", r.status()));
    }
    Ok(parse(&r.text().await.map_err(|e| e.to_string())?))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn counters_become_deltas() {
        let prev = parse("sut_cache_writes_lost_total 10\nsut_pool_slots_busy{zone=\"a\"} 3\n");
        let now = parse("sut_cache_writes_lost_total 25\nsut_pool_slots_busy{zone=\"a\"} 5\n");
        let mut s = Second::default();
        fill_second(&mut s, &now, &prev);
        assert_eq!(s.cache_writes_lost, 15);
        assert_eq!(s.slots_busy, 5.0);
    }
}
