//! Shards of the seeded schedule: document k (in the order of the variant's
//! plan, sorted by planned time) belongs to shard k mod N. Each agent
//! computes the whole plan from the same seed and calibration and keeps its
//! shard, so the union of the shards is the single-process schedule: the
//! same ids, planned times and tenants, each document exactly once.
//! [`shard_plans`] turns the shards into the agents' plans (the coordinator
//! hands them out).

use super::protocol::Plan;
use crate::load::workload::Document;
use std::time::Duration;
use tokio::time::Instant;

/// Shard `i` of `n` of `plan` (`plan` as `runner::plan_documents` returns it).
pub fn shard(plan: &[Document], i: u32, n: u32) -> Vec<Document> {
    assert!(n > 0 && i < n, "shard {i} of {n}");
    plan.iter()
        .enumerate()
        .filter(|(k, _)| *k as u64 % u64::from(n) == u64::from(i))
        .map(|(_, d)| d.clone())
        .collect()
}

/// The documents of `docs` the load will submit: those planned before its end.
pub fn submitted_before(docs: &[Document], load_end: Duration) -> impl Iterator<Item = &Document> {
    docs.iter().filter(move |d| d.planned < load_end)
}

/// Digest of a shard (ids, planned times, tenants, pages, in order): the
/// coordinator and the agent must compute the same one.
pub fn digest(docs: &[Document]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        h ^= x;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for d in docs {
        eat(d.id);
        eat(d.planned.as_nanos() as u64);
        eat(u64::from(d.pages));
        for b in d.tenant.bytes() {
            eat(u64::from(b));
        }
    }
    h
}

/// Every agent's plan and the ids each will submit (planned before the load's end).
pub struct ShardPlans {
    pub plans: Vec<Plan>,
    pub planned: Vec<Vec<u64>>,
}

/// Splits `load` (the whole variant's plan) into `n` agents' plans.
pub fn shard_plans(
    load: &crate::load::LoadPlan,
    n: u32,
    variant: &str,
    capacity: crate::load::Capacity,
    duration: Duration,
    hard_stop: Instant,
    seconds: usize,
) -> ShardPlans {
    let start_unix_ms = {
        let ahead = load.start.saturating_duration_since(Instant::now());
        (std::time::SystemTime::now() + ahead)
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64
    };
    let shards: Vec<_> = (0..n).map(|i| shard(&load.documents, i, n)).collect();
    let planned = shards
        .iter()
        .map(|s| submitted_before(s, duration).map(|d| d.id).collect())
        .collect();
    let plans = shards
        .iter()
        .map(|s| Plan {
            variant: variant.to_string(),
            base_url: load.base_url.clone(),
            capacity_docs_per_sec: capacity.docs_per_sec,
            capacity_pages_per_sec: capacity.pages_per_sec,
            start_unix_ms,
            load_end_ms: load.load_end.duration_since(load.start).as_millis() as u64,
            hard_stop_ms: hard_stop.duration_since(load.start).as_millis() as u64,
            max_in_flight: load.max_in_flight.div_ceil(u64::from(n)).max(1),
            seconds,
            shard_digest: digest(s),
            shard_documents: s.len() as u64,
        })
        .collect();
    ShardPlans { plans, planned }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Arrival, PageDistribution, Population, Rate};
    use crate::load::workload::schedule;

    fn plan(population: Option<&Population>) -> Vec<Document> {
        schedule(
            42,
            &Arrival::Constant(Rate::PerSec(300.0)),
            &PageDistribution::Lognormal {
                median: 4.0,
                sigma: 1.0,
                max: 50,
            },
            8,
            population,
            Duration::from_secs(20),
            0.0,
        )
    }

    fn key(d: &Document) -> (u64, Duration, String, u32) {
        (d.id, d.planned, d.tenant.clone(), d.pages)
    }

    #[test]
    fn the_union_of_the_shards_is_the_schedule_each_document_once() {
        let p = plan(None);
        assert!(p.len() > 5000);
        for n in [1u32, 2, 3, 4, 7] {
            let shards: Vec<Vec<Document>> = (0..n).map(|i| shard(&p, i, n)).collect();
            assert_eq!(shards.iter().map(Vec::len).sum::<usize>(), p.len());
            // Sizes differ by at most one: round robin over the plan.
            let (lo, hi) = (
                shards.iter().map(Vec::len).min().unwrap(),
                shards.iter().map(Vec::len).max().unwrap(),
            );
            assert!(hi - lo <= 1, "{lo}..{hi}");
            let mut union: Vec<_> = shards.iter().flatten().map(key).collect();
            union.sort();
            let mut all: Vec<_> = p.iter().map(key).collect();
            all.sort();
            assert_eq!(union, all, "{n} shards");
            let ids: std::collections::HashSet<u64> = union.iter().map(|k| k.0).collect();
            assert_eq!(ids.len(), p.len(), "no id in two shards");
        }
    }

    #[test]
    fn a_population_s_repeats_are_split_the_same_way() {
        let pop = Population {
            size: 200,
            popularity: crate::experiment::Popularity::Zipf { s: 1.1 },
        };
        let p = plan(Some(&pop));
        let mut union: Vec<_> = (0..3)
            .flat_map(|i| shard(&p, i, 3))
            .map(|d| key(&d))
            .collect();
        union.sort();
        let mut all: Vec<_> = p.iter().map(key).collect();
        all.sort();
        assert_eq!(union, all);
    }

    #[test]
    fn digests_tell_shards_apart() {
        let p = plan(None);
        assert_eq!(digest(&shard(&p, 1, 3)), digest(&shard(&p, 1, 3)));
        assert_ne!(digest(&shard(&p, 1, 3)), digest(&shard(&p, 2, 3)));
        assert_ne!(digest(&shard(&p, 0, 3)), digest(&shard(&p, 0, 2)));
    }
}
