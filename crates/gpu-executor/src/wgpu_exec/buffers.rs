//! The per-batch buffers, kept between batches and grown on demand.
//!
//! Allocating buffers and a bind group per batch would cost more than small
//! batches' compute on lavapipe, so they are sized for a page capacity
//! (rounded up to a power of two) and replaced only when a bigger batch comes.

use super::layout::{PageMeta, Params};
use wgpu::BufferUsages;

/// Smallest capacity allocated, so typical batches never trigger a regrow.
const MIN_CAPACITY: usize = 64;

/// Uniform params, page table, per-page sums and their readback copy.
pub(crate) struct BatchBuffers {
    pub capacity: usize,
    pub params: wgpu::Buffer,
    pub meta: wgpu::Buffer,
    pub sums: wgpu::Buffer,
    pub readback: wgpu::Buffer,
    pub bind_group: wgpu::BindGroup,
}

impl BatchBuffers {
    /// Buffers for at least `pages` pages, capped so the page table still fits
    /// `max_binding` bytes (the caller has already checked `pages` fits).
    pub fn new(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        pages: usize,
        max_binding: u64,
    ) -> Self {
        let meta_size = std::mem::size_of::<PageMeta>();
        let cap_limit = usize::try_from(max_binding / meta_size as u64).unwrap_or(usize::MAX);
        let capacity = pages
            .max(MIN_CAPACITY)
            .checked_next_power_of_two()
            .unwrap_or(pages)
            .min(cap_limit)
            .max(pages);
        let buffer = |label, size: usize, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size as u64,
                usage,
                mapped_at_creation: false,
            })
        };
        let params = buffer(
            "params",
            std::mem::size_of::<Params>(),
            BufferUsages::UNIFORM | BufferUsages::COPY_DST,
        );
        let meta = buffer(
            "page table",
            capacity * meta_size,
            BufferUsages::STORAGE | BufferUsages::COPY_DST,
        );
        let sums = buffer(
            "page sums",
            capacity * 4,
            BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
        );
        let readback = buffer(
            "page sums readback",
            capacity * 4,
            BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        );
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("page"),
            layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: meta.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: sums.as_entire_binding(),
                },
            ],
        });
        BatchBuffers {
            capacity,
            params,
            meta,
            sums,
            readback,
            bind_group,
        }
    }
}
