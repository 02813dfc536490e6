//! Counters of the service, and their Prometheus text exposition.
//!
//! The counters are what an operator needed during the incidents and did not
//! have: request volume against distinct documents (retry amplification),
//! slots held by waiting duplicates, cache writes acknowledged but lost, pages
//! computed more than once. Every counter is a relaxed atomic: they are read
//! by a scraper once a second, never used for control decisions.

use crate::api::RejectReason;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// A relaxed counter.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A gauge that goes up and down (e.g. waiters holding a slot).
#[derive(Default, Debug)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    pub fn dec(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Decrements a gauge when dropped, so early returns cannot leak it.
pub struct GaugeGuard<'a>(&'a Gauge);

impl<'a> GaugeGuard<'a> {
    pub fn new(g: &'a Gauge) -> Self {
        g.inc();
        GaugeGuard(g)
    }
}

impl Drop for GaugeGuard<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Counts of rejections by reason.
#[derive(Default, Debug)]
pub struct ReasonCounters(Mutex<BTreeMap<RejectReason, u64>>);

impl ReasonCounters {
    pub fn inc(&self, r: RejectReason) {
        *self.0.lock().expect("reason lock").entry(r).or_default() += 1;
    }
    pub fn get(&self, r: RejectReason) -> u64 {
        self.0
            .lock()
            .expect("reason lock")
            .get(&r)
            .copied()
            .unwrap_or(0)
    }
}

/// Counts distinct keys with bounded memory: two generations of at most
/// `generation` keys each; a key forgotten after two generations may be
/// counted again, which for a per-run distinct count of documents is the
/// documented approximation (generations hold 1M keys by default).
pub struct DistinctCounter {
    state: Mutex<(HashSet<u64>, HashSet<u64>)>,
    generation: usize,
    count: AtomicU64,
}

impl DistinctCounter {
    pub fn new(generation: usize) -> Self {
        DistinctCounter {
            state: Mutex::new((HashSet::new(), HashSet::new())),
            generation,
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, key: u64) {
        let mut st = self.state.lock().expect("distinct lock");
        if st.0.contains(&key) || st.1.contains(&key) {
            return;
        }
        if st.0.len() >= self.generation {
            let old = std::mem::take(&mut st.0);
            st.1 = old;
        }
        st.0.insert(key);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// Builds Prometheus text exposition (format 0.0.4). Samples are grouped by
/// metric family (one HELP/TYPE header, then every sample of the family), as
/// the format requires, whatever order they are added in.
#[derive(Default)]
pub struct Exposition {
    families: Vec<Family>,
    index: HashMap<String, usize>,
}

struct Family {
    header: String,
    lines: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) -> &mut String {
        let i = match self.index.get(name) {
            Some(i) => *i,
            None => {
                self.families.push(Family {
                    header: format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"),
                    lines: String::new(),
                });
                self.index.insert(name.to_string(), self.families.len() - 1);
                self.families.len() - 1
            }
        };
        &mut self.families[i].lines
    }

    /// Adds one sample; HELP/TYPE are written the first time a name appears.
    pub fn sample(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let mut line = String::from(name);
        if !labels.is_empty() {
            line.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                let _ = write!(line, "{k}=\"{}\"", escape(v));
            }
            line.push('}');
        }
        let _ = writeln!(line, " {value}");
        self.family(name, kind, help).push_str(&line);
    }

    /// Adds one sample of a contract series (see [`crate::metric_names`]).
    pub fn put(&mut self, m: &crate::metric_names::Metric, labels: &[(&str, &str)], value: f64) {
        self.sample(m.name, m.kind.as_str(), m.help, labels, value);
    }

    /// Merges another process's exposition (a remote pool's) into this one:
    /// families named by `keep` only, and samples without a `zone` label get
    /// `label` so that two processes' process-wide series stay apart.
    pub fn merge(&mut self, text: &str, keep: impl Fn(&str) -> bool, label: (&str, &str)) {
        let mut help: HashMap<&str, &str> = HashMap::new();
        let mut kind: HashMap<&str, &str> = HashMap::new();
        let extra = format!("{}=\"{}\"", label.0, escape(label.1));
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# HELP ") {
                if let Some((n, h)) = rest.split_once(' ') {
                    help.insert(n, h);
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                if let Some((n, k)) = rest.split_once(' ') {
                    kind.insert(n, k);
                }
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let name_end = line.find(['{', ' ']).unwrap_or(line.len());
            let (name, rest) = line.split_at(name_end);
            if !keep(name) {
                continue;
            }
            let relabelled = if let Some(labels) = rest.strip_prefix('{') {
                if labels.contains("zone=\"") {
                    line.to_string()
                } else {
                    format!("{name}{{{extra},{labels}")
                }
            } else {
                format!("{name}{{{extra}}}{rest}")
            };
            let h = help.get(name).copied().unwrap_or("");
            let k = kind.get(name).copied().unwrap_or("untyped");
            let family = self.family(name, k, h);
            family.push_str(&relabelled);
            family.push('\n');
        }
    }

    pub fn finish(self) -> String {
        let mut out = String::new();
        for f in self.families {
            out.push_str(&f.header);
            out.push_str(&f.lines);
        }
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_counts_once_and_stays_bounded() {
        let d = DistinctCounter::new(3);
        for k in [1, 2, 1, 3, 2, 4] {
            d.observe(k);
        }
        assert_eq!(d.get(), 4);
        let st = d.state.lock().unwrap();
        assert!(st.0.len() <= 3 && st.1.len() <= 3);
    }

    #[test]
    fn exposition_format() {
        let mut e = Exposition::default();
        e.sample("x_total", "counter", "Xs.", &[("zone", "a\"b")], 3.0);
        e.sample("x_total", "counter", "Xs.", &[("zone", "c")], 1.5);
        let s = e.finish();
        assert_eq!(s.matches("# TYPE x_total counter").count(), 1);
        assert!(s.contains("x_total{zone=\"a\\\"b\"} 3\n"), "{s}");
        assert!(s.contains("x_total{zone=\"c\"} 1.5\n"), "{s}");
    }

    #[test]
    fn families_stay_grouped() {
        let mut e = Exposition::default();
        e.sample("a_total", "counter", "As.", &[("zone", "1")], 1.0);
        e.sample("b", "gauge", "B.", &[], 2.0);
        e.sample("a_total", "counter", "As.", &[("zone", "2")], 3.0);
        let s = e.finish();
        let a1 = s.find("a_total{zone=\"1\"}").unwrap();
        let a2 = s.find("a_total{zone=\"2\"}").unwrap();
        let b = s.find("# HELP b ").unwrap();
        assert!(a1 < a2 && a2 < b, "{s}");
    }

    #[test]
    fn merge_keeps_zones_and_labels_process_series() {
        let mut e = Exposition::default();
        e.sample("sut_cache_hits_total", "counter", "Hits.", &[], 1.0);
        e.merge(
            "# HELP sut_cache_hits_total Hits.\n# TYPE sut_cache_hits_total counter\n\
             sut_cache_hits_total 5\nsut_pool_slots{zone=\"az1\"} 8\n\
             sut_executor_info{adapter=\"x\",fallback=\"false\"} 1\nsut_gateway_ok_total 9\n",
            |n| !n.starts_with("sut_gateway_"),
            ("process", "az1"),
        );
        let s = e.finish();
        assert!(s.contains("sut_cache_hits_total 1\n"), "{s}");
        assert!(
            s.contains("sut_cache_hits_total{process=\"az1\"} 5\n"),
            "{s}"
        );
        assert!(s.contains("sut_pool_slots{zone=\"az1\"} 8\n"), "{s}");
        assert!(
            s.contains("sut_executor_info{process=\"az1\",adapter=\"x\",fallback=\"false\"} 1"),
            "{s}"
        );
        assert!(!s.contains("sut_gateway_ok_total"), "{s}");
        assert_eq!(s.matches("# TYPE sut_cache_hits_total").count(), 1, "{s}");
    }
}
