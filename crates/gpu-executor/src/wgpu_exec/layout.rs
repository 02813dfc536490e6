//! How a batch of pages maps onto one compute dispatch.
//!
//! Every page gets a whole number of workgroups (padded up to the workgroup
//! size), so a workgroup never straddles two pages: it can reduce its partial
//! sum in shared memory and issue a single `atomicAdd` into its page's slot
//! instead of one per element. Workgroups are numbered linearly across the
//! batch and laid out on a 2-D grid when they exceed the per-dimension limit.
//!
//! This file is pure arithmetic (no wgpu calls) so its limit checks are tested
//! on machines without a GPU.

use crate::error::ExecError;
use crate::page::{split_seed, PageSpec};
use bytemuck::{Pod, Zeroable};

/// Invocations per workgroup; must match `@workgroup_size` in `page.wgsl`.
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// Per-page record read by the shader (`PageMeta` in `page.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct PageMeta {
    pub seed_lo: u32,
    pub seed_hi: u32,
    pub page: u32,
    pub words: u32,
    pub rounds: u32,
    /// First linear workgroup of this page.
    pub wg_start: u32,
    pub _pad: [u32; 2],
}

/// Dispatch-wide parameters (`Params` uniform in `page.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct Params {
    pub n_pages: u32,
    pub total_wg: u32,
    /// Width of the dispatch grid; linear workgroup = x + y * grid_x.
    pub grid_x: u32,
    pub _pad: u32,
}

/// The device limits a batch must respect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchLimits {
    pub max_workgroups_per_dim: u32,
    pub max_storage_binding: u64,
    pub max_buffer_size: u64,
}

/// A batch ready to upload and dispatch.
#[derive(Debug)]
pub(crate) struct BatchLayout {
    pub meta: Vec<PageMeta>,
    pub params: Params,
    /// Dispatch grid (x, y); (0, 0) when no page has any word.
    pub grid: (u32, u32),
}

/// Lays out `pages`, or says which limit the batch exceeds.
pub(crate) fn layout_batch(
    pages: &[PageSpec],
    limits: &BatchLimits,
) -> Result<BatchLayout, ExecError> {
    let meta_bytes = (pages.len() as u64).saturating_mul(std::mem::size_of::<PageMeta>() as u64);
    let binding_limit = limits.max_storage_binding.min(limits.max_buffer_size);
    if meta_bytes > binding_limit {
        return Err(ExecError::TooLarge {
            what: "page table bytes",
            requested: meta_bytes,
            limit: binding_limit,
        });
    }
    let max_dim = u64::from(limits.max_workgroups_per_dim.max(1));
    // The shader indexes workgroups with a u32, so the grid is capped there too.
    let max_total = (max_dim * max_dim).min(u64::from(u32::MAX));
    let mut meta = Vec::with_capacity(pages.len());
    let mut total: u64 = 0;
    for p in pages {
        let (seed_lo, seed_hi) = split_seed(p.doc_seed);
        meta.push(PageMeta {
            seed_lo,
            seed_hi,
            page: p.page,
            words: p.words,
            rounds: p.rounds,
            wg_start: u32::try_from(total).unwrap_or(u32::MAX),
            _pad: [0; 2],
        });
        total += u64::from(p.words.div_ceil(WORKGROUP_SIZE));
        if total > max_total {
            return Err(ExecError::TooLarge {
                what: "workgroups in one batch",
                requested: total,
                limit: max_total,
            });
        }
    }
    // total <= max_total <= u32::MAX here, so these conversions cannot fail.
    let total_wg = u32::try_from(total).unwrap_or(u32::MAX);
    let grid_x = total_wg.min(limits.max_workgroups_per_dim.max(1));
    let grid_y = if grid_x == 0 {
        0
    } else {
        total_wg.div_ceil(grid_x)
    };
    Ok(BatchLayout {
        meta,
        params: Params {
            n_pages: pages.len() as u32,
            total_wg,
            grid_x,
            _pad: 0,
        },
        grid: (grid_x, grid_y),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: BatchLimits = BatchLimits {
        max_workgroups_per_dim: 65_535,
        max_storage_binding: 128 << 20,
        max_buffer_size: 256 << 20,
    };

    fn spec(page: u32, words: u32) -> PageSpec {
        PageSpec {
            doc_seed: 0x1234_5678_9abc_def0,
            page,
            words,
            rounds: 1,
        }
    }

    #[test]
    fn pages_start_on_workgroup_boundaries() {
        let l = layout_batch(&[spec(0, 1), spec(1, 0), spec(2, 64), spec(3, 65)], &LIMITS)
            .expect("fits");
        let starts: Vec<u32> = l.meta.iter().map(|m| m.wg_start).collect();
        assert_eq!(starts, vec![0, 1, 1, 2]);
        assert_eq!(l.params.total_wg, 4);
        assert_eq!(l.grid, (4, 1));
        assert_eq!(
            (l.meta[0].seed_lo, l.meta[0].seed_hi),
            (0x9abc_def0, 0x1234_5678)
        );
    }

    #[test]
    fn large_page_uses_two_dimensions() {
        let l = layout_batch(&[spec(0, 65_535 * 64 + 100)], &LIMITS).expect("fits");
        assert_eq!(l.params.total_wg, 65_537);
        assert_eq!(l.grid, (65_535, 2));
    }

    #[test]
    fn too_many_workgroups_is_too_large() {
        let small = BatchLimits {
            max_workgroups_per_dim: 4,
            ..LIMITS
        };
        let err = layout_batch(&[spec(0, 16 * 64 + 1)], &small).expect_err("too big");
        assert!(matches!(
            err,
            ExecError::TooLarge {
                requested: 17,
                limit: 16,
                ..
            }
        ));
    }

    #[test]
    fn page_table_over_binding_limit_is_too_large() {
        let small = BatchLimits {
            max_storage_binding: 64,
            ..LIMITS
        };
        let err = layout_batch(&[spec(0, 1), spec(1, 1), spec(2, 1)], &small).expect_err("big");
        assert!(matches!(err, ExecError::TooLarge { requested: 96, .. }));
    }

    #[test]
    fn empty_pages_need_no_dispatch() {
        let l = layout_batch(&[spec(0, 0)], &LIMITS).expect("fits");
        assert_eq!(l.grid, (0, 0));
    }
}
