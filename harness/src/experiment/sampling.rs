//! Seeded draws from the experiment's own distributions: a document's id
//! from the seed, a stream and an index (the same document whenever it is
//! drawn), its pages from the page distribution, and their mean, which
//! turns the calibrated pages per second into documents per second.
//!
//! They sit with the model because the model's own figures (`mean_pages`)
//! and every layer above it (the schedule, load spikes, the recorder) must
//! draw them the same way.

use super::PageDistribution;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Mixes the run seed and an index into a document id (splitmix64).
pub fn document_id(seed: u64, stream: u64, index: u64) -> u64 {
    let mut z = seed
        ^ stream.wrapping_mul(0xA24B_AED4_963E_E407)
        ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    // Keep ids below 2^62: filler cache keys live above 2^63.
    (z ^ (z >> 31)) >> 2
}

pub fn sample_pages(dist: &PageDistribution, rng: &mut impl Rng) -> u32 {
    match *dist {
        PageDistribution::Fixed(n) => n,
        PageDistribution::Uniform { min, max } => rng.random_range(min..=max),
        PageDistribution::Lognormal { median, sigma, max } => {
            // Box-Muller: a standard normal from two uniforms.
            let u1: f64 = rng.random_range(f64::EPSILON..1.0);
            let u2: f64 = rng.random();
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            let x = median * (sigma * z).exp();
            (x.round() as u32).clamp(1, max)
        }
    }
}

/// Mean pages per document, estimated from 20,000 seeded samples (the clamp
/// at `max` makes a closed form awkward, and this is exact enough for rates).
pub fn mean_pages(dist: &PageDistribution) -> f64 {
    let mut rng = StdRng::seed_from_u64(0x5EED);
    let n = 20_000;
    (0..n)
        .map(|_| f64::from(sample_pages(dist, &mut rng)))
        .sum::<f64>()
        / f64::from(n)
}
