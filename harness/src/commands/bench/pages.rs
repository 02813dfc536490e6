//! Step 3, the page executor: pages/s of the wgpu executor next to the CPU
//! reference, for a few page sizes.
//!
//! The experiments model the GPU's capacity, but every page is still computed
//! for real; this shows what the adapter (lavapipe on a machine without a GPU)
//! actually delivers, and where the CPU reference is faster. Each size runs
//! batches of 8 pages for about the step's window, after one warm-up batch
//! whose results are checked against the CPU's. Without an adapter it says so
//! loudly and measures the CPU only.

use gpu_executor::{CpuExecutor, PageExecutor, PageSpec, WgpuExecutor};
use std::time::{Duration, Instant};

/// Page sizes measured: (words, rounds).
pub const SIZES: [(u32, u32); 6] = [
    (256, 8),
    (256, 64),
    (4096, 8),
    (4096, 64),
    (65536, 8),
    (65536, 64),
];
/// Pages per batch.
pub const BATCH: u32 = 8;

pub struct PageRow {
    pub words: u32,
    pub rounds: u32,
    pub cpu_pps: f64,
    /// None without an adapter; Err when the batch failed or disagreed with the CPU.
    pub gpu_pps: Option<Result<f64, super::NotMeasured>>,
}

pub struct Pages {
    /// The adapter's name, or why there is none.
    pub adapter: Result<String, super::NotMeasured>,
    pub rows: Vec<PageRow>,
}

pub fn run(window: Duration) -> Pages {
    let cpu = CpuExecutor::new();
    let gpu = WgpuExecutor::new();
    let adapter = match &gpu {
        Ok(g) => Ok(g.info().adapter.clone()),
        Err(e) => {
            eprintln!(
                "\n!!! NO GPU ADAPTER: {e}\n!!! the page executor step measures the CPU reference only\n"
            );
            Err(super::NotMeasured(e.to_string()))
        }
    };
    let rows = SIZES
        .iter()
        .map(|&(words, rounds)| {
            let batch = batch(words, rounds);
            let cpu_pps = pages_per_sec(&cpu, &batch, window).unwrap_or(f64::NAN);
            let gpu_pps = gpu.as_ref().ok().map(|g| {
                let want = cpu.compute(&batch).map_err(|e| e.to_string())?;
                let got = g.compute(&batch).map_err(|e| e.to_string())?;
                if got != want {
                    return Err(super::NotMeasured(
                        "wgpu results differ from the CPU reference".into(),
                    ));
                }
                pages_per_sec(g, &batch, window)
            });
            PageRow {
                words,
                rounds,
                cpu_pps,
                gpu_pps,
            }
        })
        .collect();
    Pages { adapter, rows }
}

fn batch(words: u32, rounds: u32) -> Vec<PageSpec> {
    (0..BATCH)
        .map(|page| PageSpec {
            doc_seed: 0x5EED_0000_0000_0042,
            page,
            words,
            rounds,
        })
        .collect()
}

/// Runs batches for at least `window` (at least one, after one warm-up).
fn pages_per_sec(
    exec: &dyn PageExecutor,
    batch: &[PageSpec],
    window: Duration,
) -> Result<f64, super::NotMeasured> {
    exec.compute(batch).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut pages = 0u64;
    while pages == 0 || t0.elapsed() < window {
        exec.compute(batch).map_err(|e| e.to_string())?;
        pages += batch.len() as u64;
    }
    Ok(pages as f64 / t0.elapsed().as_secs_f64())
}
