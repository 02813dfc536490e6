// The page function on the GPU. Must stay bit-for-bit identical to src/page.rs.
//
// One dispatch computes a whole batch: each page owns a run of whole
// workgroups (see layout.rs), each workgroup reduces its 64 elements in shared
// memory and adds the partial sum to its page's slot with one atomicAdd.

struct PageMeta {
    seed_lo: u32,
    seed_hi: u32,
    page: u32,
    words: u32,
    rounds: u32,
    wg_start: u32,
    pad0: u32,
    pad1: u32,
}

struct Params {
    n_pages: u32,
    total_wg: u32,
    grid_x: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> pages: array<PageMeta>;
@group(0) @binding(2) var<storage, read_write> sums: array<atomic<u32>>;

const WG: u32 = 64u;
const GOLDEN: u32 = 0x9E3779B9u;

var<workgroup> partial: array<u32, 64>;

fn lowbias32(v: u32) -> u32 {
    var x = v;
    x = x ^ (x >> 16u);
    x = x * 0x7FEB352Du;
    x = x ^ (x >> 15u);
    x = x * 0x846CA68Bu;
    x = x ^ (x >> 16u);
    return x;
}

fn page_element(m: PageMeta, i: u32) -> u32 {
    let h0 = lowbias32(i ^ GOLDEN);
    let h1 = lowbias32(m.page ^ h0);
    let h2 = lowbias32(m.seed_hi ^ h1);
    var x = lowbias32(m.seed_lo ^ h2);
    for (var r = 0u; r < m.rounds; r = r + 1u) {
        x = lowbias32(x ^ (r * GOLDEN));
    }
    return x;
}

// Largest p with pages[p].wg_start <= w. Empty pages share their start with
// the next page, so the search lands on the page that owns workgroup w.
fn find_page(w: u32) -> u32 {
    var lo = 0u;
    var hi = params.n_pages;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (pages[mid].wg_start <= w) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = wid.x + wid.y * params.grid_x;
    // The 2-D grid may have a few workgroups past the end; they contribute nothing
    // but still take part in the barriers below.
    let in_grid = w < params.total_wg;
    var p = 0u;
    var value = 0u;
    if (in_grid) {
        p = find_page(w);
        let m = pages[p];
        let i = (w - m.wg_start) * WG + lid;
        if (i < m.words) {
            value = page_element(m, i);
        }
    }
    partial[lid] = value;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            partial[lid] = partial[lid] + partial[lid + s];
        }
        workgroupBarrier();
    }
    if (in_grid && lid == 0u) {
        atomicAdd(&sums[p], partial[0]);
    }
}
