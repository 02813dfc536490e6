//! Counters of the service, and their Prometheus text exposition.
//!
//! The counters are what an operator needed during the incidents and did not
//! have: request volume against distinct documents (retry amplification),
//! slots held by waiting duplicates, cache writes acknowledged but lost, pages
//! computed more than once. Every counter is a relaxed atomic: they are read
//! by a scraper once a second, never used for control decisions.

use crate::api::RejectReason;
use std::collections::{BTreeMap, HashSet};
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

/// Builds Prometheus text exposition (format 0.0.4).
#[derive(Default)]
pub struct Exposition {
    out: String,
    declared: HashSet<String>,
}

impl Exposition {
    /// Adds one sample; HELP/TYPE are written the first time a name appears.
    pub fn sample(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        if self.declared.insert(name.to_string()) {
            let _ = writeln!(self.out, "# HELP {name} {help}");
            let _ = writeln!(self.out, "# TYPE {name} {kind}");
        }
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = write!(self.out, "{k}=\"{v}\"");
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    pub fn finish(self) -> String {
        self.out
    }
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
}
