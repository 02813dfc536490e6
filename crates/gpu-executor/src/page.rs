//! The page function: what "processing one page of a document" computes.
//!
//! The system under test models document extraction whose real work runs on a
//! GPU. To keep every result checkable, a page's work is a deterministic hash
//! computation: `words` elements, each hashed from (doc_seed, page, index) and
//! then mixed `rounds` times, summed into one `u32`. Cost grows with
//! `words * rounds`, so a huge document really is expensive.
//!
//! Everything is 32-bit integer arithmetic (wrapping add/mul, xor, shifts)
//! because WGSL has no `u64`; the shader in `wgpu_exec/page.wgsl` implements
//! the very same steps and must stay bit-for-bit identical to this file.

use serde::{Deserialize, Serialize};

/// One page of one document: its content is a deterministic function of (doc_seed, page, words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageSpec {
    /// Identity of the document's content; split into two `u32` halves on the GPU.
    pub doc_seed: u64,
    /// Page index within the document.
    pub page: u32,
    /// Number of elements on the page (work grows linearly with it).
    pub words: u32,
    /// Mixing rounds per element (work grows linearly with it).
    pub rounds: u32,
}

/// Odd constant (2^32 / golden ratio) that keeps index 0 away from the hash's fixed point at 0.
const GOLDEN: u32 = 0x9E37_79B9;

/// `lowbias32` (Chris Wellons' integer hash): good avalanche, only 32-bit ops.
#[inline]
pub(crate) fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846C_A68B);
    x ^= x >> 16;
    x
}

/// Final value of element `i` of a page (shader: `page_element`).
#[inline]
pub(crate) fn page_element(seed_lo: u32, seed_hi: u32, page: u32, rounds: u32, i: u32) -> u32 {
    let h0 = lowbias32(i ^ GOLDEN);
    let h1 = lowbias32(page ^ h0);
    let h2 = lowbias32(seed_hi ^ h1);
    let mut x = lowbias32(seed_lo ^ h2);
    for r in 0..rounds {
        // Mixing in the round index makes every round a different function,
        // so the loop cannot collapse into a short cycle.
        x = lowbias32(x ^ r.wrapping_mul(GOLDEN));
    }
    x
}

/// Splits a 64-bit seed into the (lo, hi) halves the shader receives.
#[inline]
pub(crate) fn split_seed(doc_seed: u64) -> (u32, u32) {
    (doc_seed as u32, (doc_seed >> 32) as u32)
}

/// CPU reference of the page function, bit for bit what the shader computes.
///
/// Elements are computed [`LANES`] at a time, each round applied to all of
/// them, so the compiler can keep them in vector registers; on x86-64 with
/// AVX2 (checked at run time) the same code is compiled for it. The sum is
/// a wrapping one, so the order the elements are added in does not change
/// it. [`reference_page_scalar`] is the element-by-element definition.
pub fn reference_page(spec: &PageSpec) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU was just found to support AVX2.
        return unsafe { reference_page_avx2(spec) };
    }
    reference_page_lanes(spec)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn reference_page_avx2(spec: &PageSpec) -> u32 {
    reference_page_lanes(spec)
}

/// Elements computed side by side.
const LANES: usize = 8;

#[inline(always)]
fn reference_page_lanes(spec: &PageSpec) -> u32 {
    let (lo, hi) = split_seed(spec.doc_seed);
    let full = spec.words - spec.words % LANES as u32;
    let mut sum = 0u32;
    let mut i = 0;
    while i < full {
        let mut x = [0u32; LANES];
        for (l, x) in x.iter_mut().enumerate() {
            let h0 = lowbias32((i + l as u32) ^ GOLDEN);
            let h1 = lowbias32(spec.page ^ h0);
            let h2 = lowbias32(hi ^ h1);
            *x = lowbias32(lo ^ h2);
        }
        for r in 0..spec.rounds {
            let k = r.wrapping_mul(GOLDEN);
            for x in x.iter_mut() {
                *x = lowbias32(*x ^ k);
            }
        }
        sum = x.iter().fold(sum, |s, x| s.wrapping_add(*x));
        i += LANES as u32;
    }
    (full..spec.words).fold(sum, |acc, i| {
        acc.wrapping_add(page_element(lo, hi, spec.page, spec.rounds, i))
    })
}

/// The page function element by element: the definition
/// [`reference_page`] must equal.
pub fn reference_page_scalar(spec: &PageSpec) -> u32 {
    let (lo, hi) = split_seed(spec.doc_seed);
    (0..spec.words).fold(0u32, |acc, i| {
        acc.wrapping_add(page_element(lo, hi, spec.page, spec.rounds, i))
    })
}

/// splitmix64 finalizer: a full-avalanche 64-bit mix for the document digest.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Combines page results (in page-index order) into a document digest.
///
/// Order-sensitive (each result is mixed with its index) so swapped or missing
/// pages change the digest.
pub fn document_digest(page_results: &[u32]) -> u64 {
    let start = 0x243F_6A88_85A3_08D3u64 ^ page_results.len() as u64;
    page_results.iter().enumerate().fold(start, |h, (i, &v)| {
        mix64(h ^ ((i as u64) << 32 | u64::from(v)))
    })
}

/// reference_page over pages 0..pages, then document_digest.
pub fn reference_document(doc_seed: u64, pages: u32, words: u32, rounds: u32) -> u64 {
    let results: Vec<u32> = (0..pages)
        .map(|page| {
            reference_page(&PageSpec {
                doc_seed,
                page,
                words,
                rounds,
            })
        })
        .collect();
    document_digest(&results)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes give the element-by-element sum, for word counts that
    /// are and are not a multiple of the lanes, and for 0 rounds.
    #[test]
    fn the_lanes_are_the_definition() {
        for words in [0, 1, 7, 8, 9, 64, 255, 256, 1000] {
            for rounds in [0, 1, 8] {
                for (doc_seed, page) in [(0, 0), (42, 3), (u64::MAX, 199)] {
                    let spec = PageSpec {
                        doc_seed,
                        page,
                        words,
                        rounds,
                    };
                    assert_eq!(
                        reference_page(&spec),
                        reference_page_scalar(&spec),
                        "{spec:?}"
                    );
                    assert_eq!(reference_page_lanes(&spec), reference_page_scalar(&spec));
                }
            }
        }
    }

    #[test]
    fn pinned_values_from_an_independent_implementation() {
        // Computed with a separate Python transcription of the page function, so
        // an accidental edit here (or in the shader's twin) cannot go unnoticed.
        assert_eq!(lowbias32(0), 0);
        assert_eq!(lowbias32(1), 0x6889_90c0);
        let spec = PageSpec {
            doc_seed: 0x0123_4567_89AB_CDEF,
            page: 3,
            words: 1000,
            rounds: 16,
        };
        assert_eq!(reference_page(&spec), 0x9c9b_ceb0);
        assert_eq!(reference_document(42, 3, 100, 8), 0x30a0_c0b2_143b_bc80);
    }

    #[test]
    fn empty_page_is_zero_and_pages_differ() {
        let mut spec = PageSpec {
            doc_seed: 7,
            page: 0,
            words: 0,
            rounds: 3,
        };
        assert_eq!(reference_page(&spec), 0);
        spec.words = 100;
        let a = reference_page(&spec);
        spec.page = 1;
        assert_ne!(a, reference_page(&spec));
    }

    #[test]
    fn digest_is_order_sensitive() {
        assert_ne!(document_digest(&[1, 2]), document_digest(&[2, 1]));
        assert_ne!(document_digest(&[]), document_digest(&[0]));
        assert_eq!(
            reference_document(42, 3, 10, 2),
            reference_document(42, 3, 10, 2)
        );
    }
}
