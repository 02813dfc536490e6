//! The document population and the open-loop arrival schedule, from the seed.
//!
//! The same seed gives the same documents at the same planned times, so the
//! before-fix and after-fix variants face identical traffic and a run can be
//! repeated. Arrivals are a Poisson process (exponential gaps) whose rate
//! follows the experiment's profile; they never wait for responses, because
//! a closed-loop generator slows down with the system and hides overload.
//!
//! Without a population every arrival is a new document. With one, each
//! arrival draws a member of a finite population (uniformly, or by a Zipf
//! law: a few hot documents and a long tail), so repeats hit the cache. A
//! member is the same document every time it is drawn: its id, pages and
//! tenant come from the seed and its index alone.

use crate::experiment::sampling::{document_id, sample_pages};
use crate::experiment::{
    Arrival, OversizedDocuments, PageDistribution, Popularity, Population, TimelineEntry,
    TimelineOp,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// One document a client will submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Id and content seed; unique within a run.
    pub id: u64,
    pub tenant: String,
    pub pages: u32,
    /// Planned time of the first attempt, since the variant's start.
    pub planned: Duration,
    /// A generic HTTP workload's class for a timeline burst (`requests:`);
    /// `None`: drawn by the classes' shares (`journey/http.rs`).
    pub class: Option<String>,
}

/// Member `k` of the population: the same document whenever it is drawn.
pub fn member(seed: u64, k: u64, pages: &PageDistribution, tenants: u32) -> (u64, String, u32) {
    let id = document_id(seed, 3, k);
    let mut rng = StdRng::seed_from_u64(id);
    let tenant = format!("t{}", rng.random_range(1..=tenants));
    (id, tenant, sample_pages(pages, &mut rng))
}

/// Draws member indexes by the population's popularity.
pub(crate) struct Draw {
    size: u64,
    zipf: Option<rand_distr::Zipf<f64>>,
}

impl Draw {
    pub(crate) fn new(p: &Population) -> Draw {
        let zipf = match p.popularity {
            Popularity::Uniform => None,
            // Validated: size >= 1 and 0 < s <= 10, which Zipf::new accepts.
            Popularity::Zipf { s } => rand_distr::Zipf::new(p.size as f64, s).ok(),
        };
        Draw { size: p.size, zipf }
    }

    /// A member index in `0..size` (member 0 the most popular under Zipf).
    pub(crate) fn next(&self, rng: &mut StdRng) -> u64 {
        match &self.zipf {
            Some(z) => (rand::Rng::sample(rng, z) as u64).clamp(1, self.size) - 1,
            None => rng.random_range(0..self.size),
        }
    }
}

/// Draws documents as the regular traffic does: a population's member, or
/// (without a population) a new document whose id is the next of `stream`.
/// A load spike's extra arrivals are drawn by the same code, from a stream
/// of their own (`spike.rs`).
pub(crate) struct Traffic<'a> {
    seed: u64,
    stream: u64,
    pages: &'a PageDistribution,
    tenants: u32,
    draw: Option<Draw>,
}

impl<'a> Traffic<'a> {
    pub(crate) fn new(
        seed: u64,
        stream: u64,
        pages: &'a PageDistribution,
        tenants: u32,
        population: Option<&Population>,
    ) -> Self {
        Traffic {
            seed,
            stream,
            pages,
            tenants,
            draw: population.map(Draw::new),
        }
    }

    /// The `index`-th arrival of the stream, planned at `planned`.
    pub(crate) fn document(&self, rng: &mut StdRng, index: u64, planned: Duration) -> Document {
        match &self.draw {
            Some(d) => {
                let (id, tenant, pages) = member(self.seed, d.next(rng), self.pages, self.tenants);
                Document {
                    id,
                    tenant,
                    pages,
                    planned,
                    class: None,
                }
            }
            None => {
                let tenant = format!("t{}", rng.random_range(1..=self.tenants));
                Document {
                    id: document_id(self.seed, self.stream, index),
                    tenant,
                    pages: sample_pages(self.pages, rng),
                    planned,
                    class: None,
                }
            }
        }
    }
}

/// The regular traffic of one variant: every document with its planned time.
pub fn schedule(
    seed: u64,
    arrival: &Arrival,
    pages: &PageDistribution,
    tenants: u32,
    population: Option<&Population>,
    duration: Duration,
    capacity_docs_per_sec: f64,
) -> Vec<Document> {
    let traffic = Traffic::new(seed, 0, pages, tenants, population);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut t = 0.0f64;
    let end = duration.as_secs_f64();
    let mut index = 0u64;
    loop {
        // Thinning would be exact for varying rates; stepping by the current
        // rate is exact for constant and step profiles and close for ramps.
        let rate = arrival.rate_at(Duration::from_secs_f64(t), duration, capacity_docs_per_sec);
        if rate <= 0.0 {
            t += 0.01;
            if t >= end {
                break;
            }
            continue;
        }
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        t += -u.ln() / rate;
        if t >= end {
            break;
        }
        out.push(traffic.document(&mut rng, index, Duration::from_secs_f64(t)));
        index += 1;
    }
    out
}

/// The documents that timeline entry `entry` (an `oversized_documents`
/// fault at `at`) injects: ids from their own stream, so they never collide
/// with the regular population, and pages from the seed.
pub fn oversized(seed: u64, entry: usize, at: Duration, o: &OversizedDocuments) -> Vec<Document> {
    let mut rng = StdRng::seed_from_u64(seed ^ (0x0B5E_55ED + entry as u64));
    (0..o.count)
        .map(|k| Document {
            id: document_id(seed, 1 + entry as u64, u64::from(k)),
            tenant: o.tenant.clone(),
            pages: rng.random_range(o.min_pages..=o.max_pages),
            planned: at
                + o.spread
                    .unwrap_or_default()
                    .mul_f64(f64::from(k) / f64::from(o.count)),
            class: o.class.clone(),
        })
        .collect()
}

/// The tenants that receive oversized documents (the report judges the
/// other tenants apart), each once, in order.
pub fn oversized_tenants(timeline: &[TimelineEntry]) -> Vec<String> {
    timeline
        .iter()
        .filter_map(|e| match &e.op {
            TimelineOp::OversizedDocuments(o) => Some(o.tenant.clone()),
            TimelineOp::Admin(_) | TimelineOp::LoadSpike(_) | TimelineOp::Generic(_) => None,
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::sampling::mean_pages;
    use crate::experiment::Rate;

    #[test]
    fn same_seed_same_schedule() {
        let a = Arrival::Constant(Rate::PerSec(50.0));
        let p = PageDistribution::Lognormal {
            median: 4.0,
            sigma: 1.0,
            max: 200,
        };
        let s1 = schedule(7, &a, &p, 8, None, Duration::from_secs(10), 0.0);
        let s2 = schedule(7, &a, &p, 8, None, Duration::from_secs(10), 0.0);
        let s3 = schedule(8, &a, &p, 8, None, Duration::from_secs(10), 0.0);
        assert_eq!(s1, s2);
        assert_ne!(s1, s3);
    }

    #[test]
    fn poisson_count_matches_rate() {
        let a = Arrival::Constant(Rate::Capacity(0.5));
        let s = schedule(
            1,
            &a,
            &PageDistribution::Fixed(1),
            1,
            None,
            Duration::from_secs(100),
            200.0,
        );
        // Expect 10,000; a Poisson count's sd is 100, so 5 sd is 500.
        assert!((s.len() as i64 - 10_000).abs() < 500, "{}", s.len());
        assert!(s.windows(2).all(|w| w[0].planned <= w[1].planned));
    }

    #[test]
    fn lognormal_median_and_clamp() {
        let p = PageDistribution::Lognormal {
            median: 4.0,
            sigma: 1.0,
            max: 50,
        };
        let mut rng = StdRng::seed_from_u64(3);
        let mut v: Vec<u32> = (0..10_001).map(|_| sample_pages(&p, &mut rng)).collect();
        v.sort_unstable();
        assert_eq!(v[5000], 4);
        assert!(*v.last().unwrap() <= 50 && v[0] >= 1);
        // Mean of lognormal(median 4, sigma 1) is 4 * e^0.5 = 6.6 (a little less with the clamp).
        let m = mean_pages(&p);
        assert!((6.0..6.8).contains(&m), "{m}");
    }

    fn population_schedule(popularity: Popularity, seed: u64) -> Vec<Document> {
        let p = Population {
            size: 2000,
            popularity,
        };
        schedule(
            seed,
            &Arrival::Constant(Rate::PerSec(1000.0)),
            &PageDistribution::Lognormal {
                median: 4.0,
                sigma: 1.0,
                max: 50,
            },
            8,
            Some(&p),
            Duration::from_secs(100),
            0.0,
        )
    }

    #[test]
    fn a_population_repeats_its_members_the_same_way_every_run() {
        let a = population_schedule(Popularity::Zipf { s: 1.1 }, 5);
        let b = population_schedule(Popularity::Zipf { s: 1.1 }, 5);
        assert_eq!(a, b, "seeded");
        let ids: std::collections::HashSet<u64> = a.iter().map(|d| d.id).collect();
        assert!(ids.len() <= 2000 && ids.len() > 100, "{}", ids.len());
        // A member is the same document each time: same pages, same tenant.
        let mut seen = std::collections::HashMap::new();
        for d in &a {
            let first = seen.entry(d.id).or_insert((d.pages, d.tenant.clone()));
            assert_eq!(*first, (d.pages, d.tenant.clone()));
        }
        // Without a population, nothing repeats (and the old schedule is unchanged).
        let plain = schedule(
            5,
            &Arrival::Constant(Rate::PerSec(1000.0)),
            &PageDistribution::Fixed(2),
            8,
            None,
            Duration::from_secs(10),
            0.0,
        );
        let plain_ids: std::collections::HashSet<u64> = plain.iter().map(|d| d.id).collect();
        assert_eq!(plain_ids.len(), plain.len());
    }

    #[test]
    fn the_top_zipf_document_is_drawn_as_often_as_the_law_says() {
        let s = 1.1f64;
        let a = population_schedule(Popularity::Zipf { s }, 9);
        let top = member(
            9,
            0,
            &PageDistribution::Lognormal {
                median: 4.0,
                sigma: 1.0,
                max: 50,
            },
            8,
        )
        .0;
        let observed = a.iter().filter(|d| d.id == top).count() as f64 / a.len() as f64;
        let h: f64 = (1..=2000).map(|k| (k as f64).powf(-s)).sum();
        let expected = 1.0 / h;
        assert!(
            (observed - expected).abs() <= 0.1 * expected,
            "top document {observed:.4} of arrivals, theory {expected:.4}"
        );
        // Uniform: the same member at about 1/2000.
        let u = population_schedule(Popularity::Uniform, 9);
        let n0 = u.iter().filter(|d| d.id == top).count() as f64 / u.len() as f64;
        assert!(n0 < 4.0 / 2000.0, "{n0}");
    }

    #[test]
    fn ids_are_distinct_and_below_filler_space() {
        let ids: std::collections::HashSet<u64> =
            (0..100_000).map(|i| document_id(42, 0, i)).collect();
        assert_eq!(ids.len(), 100_000);
        assert!(ids.iter().all(|&i| i < 1 << 62));
    }
}
