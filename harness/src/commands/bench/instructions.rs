//! Step 6, instructions per attempt: the load path's CPU cost in a unit
//! that does not move with the machine's noise.
//!
//! Times on a shared machine vary by tens of percent between runs;
//! instruction counts do not. Hardware counters are often unavailable in a
//! VM, so the count comes from callgrind: the storm child (`bench --only storm`: journeys, goose,
//! recorder and the HTTP client, with the endpoint in this process, outside
//! what is counted) runs under `valgrind --tool=callgrind` to two attempt
//! counts, and the difference in instructions over the difference in
//! attempts removes start-up and teardown. It runs in two shapes: the storm
//! (1,000 journeys retrying: the cost of an attempt) and the ceiling's
//! arrivals (a journey per attempt, no retries: what the ceiling step times,
//! where each attempt also pays for its journey). wrk runs under callgrind too, for
//! the reference's instructions per request. Without valgrind the step is
//! skipped, and says so. With `HARNESS_BENCH_CALLGRIND_DIR` set, the
//! callgrind files are kept there (for `callgrind_annotate`), else deleted.

use super::error::during;
use super::BenchError;
use super::{memory, server};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The two attempt counts of the storm child (the difference is measured).
pub const ATTEMPTS: [u64; 2] = [2_000, 8_000];
/// The same for the arrivals shape (exact: one attempt per document).
pub const ARRIVALS: [u64; 2] = [3_000, 9_000];
/// Where to keep the callgrind files instead of deleting them.
pub const KEEP_DIR_ENV: &str = "HARNESS_BENCH_CALLGRIND_DIR";

pub struct Instructions {
    /// Instructions per attempt of the load path (storm child).
    pub per_attempt: f64,
    /// `(attempts, instructions)` of the two runs.
    pub runs: Vec<(u64, u64)>,
    /// The same in the arrivals shape (one journey per attempt).
    pub arrivals_per_attempt: f64,
    pub arrivals_runs: Vec<(u64, u64)>,
    /// wrk's instructions per request, or why not measured.
    pub wrk_per_request: Result<f64, super::NotMeasured>,
}

fn find(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// `totals:` (or `summary:`) of a callgrind output file: instructions.
fn callgrind_total(path: &Path) -> Result<u64, BenchError> {
    let text =
        std::fs::read_to_string(path).map_err(during(format!("reading {}", path.display())))?;
    parse_total(&text)
        .ok_or_else(|| BenchError::Invalid(format!("no totals in {}", path.display())))
}

pub(crate) fn parse_total(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Runs the step; `Ok(None)` when valgrind is not installed.
pub fn run() -> Result<Option<Instructions>, BenchError> {
    let Some(valgrind) = find("valgrind") else {
        return Ok(None);
    };
    let server_rt = super::runtime("bench-server")?;
    let srv = server_rt.block_on(server::start(memory::storm_reply()))?;
    let (per_attempt, runs) = measure(&valgrind, &srv, None, ATTEMPTS)?;
    let (arrivals_per_attempt, arrivals_runs) =
        measure(&valgrind, &srv, Some("arrivals"), ARRIVALS)?;
    let wrk_per_request = wrk_instructions(&valgrind, &srv.url("/v1/extract"));
    Ok(Some(Instructions {
        per_attempt,
        runs,
        arrivals_per_attempt,
        arrivals_runs,
        wrk_per_request,
    }))
}

/// The storm child under callgrind at both `counts`, in `mode`
/// (`memory::MODE_ENV`): instructions per attempt, and each run's
/// `(attempts, instructions)`.
fn measure(
    valgrind: &Path,
    srv: &server::FixedServer,
    mode: Option<&str>,
    counts: [u64; 2],
) -> Result<(f64, Vec<(u64, u64)>), BenchError> {
    let exe = std::env::current_exe().map_err(during("locating this program to re-run it"))?;
    let keep = std::env::var_os(KEEP_DIR_ENV).map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(std::env::temp_dir);
    let mut runs = Vec::new();
    for n in counts {
        let out_file = dir.join(format!(
            "harness-bench-callgrind-{}-{}-{n}.out",
            std::process::id(),
            mode.unwrap_or("storm")
        ));
        let mut cmd = Command::new(valgrind);
        cmd.arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(&exe)
            .args(["bench", "--only", "storm"])
            .env(memory::TARGET_ENV, srv.addr.to_string())
            .env(memory::ATTEMPTS_ENV, n.to_string());
        if let Some(m) = mode {
            cmd.env(memory::MODE_ENV, m);
        }
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(during("running the storm under callgrind"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(BenchError::Invalid(format!(
                "the storm under callgrind exited with {}: {stdout}",
                out.status
            )));
        }
        let storm: memory::Storm = stdout
            .lines()
            .find_map(|l| l.strip_prefix(memory::LINE_PREFIX))
            .and_then(|l| serde_json::from_str(l).ok())
            .ok_or_else(|| {
                BenchError::Invalid(format!("no storm result under callgrind: {stdout}"))
            })?;
        let total = callgrind_total(&out_file);
        if keep.is_none() {
            let _ = std::fs::remove_file(&out_file);
        }
        runs.push((storm.attempts, total?));
    }
    let (a0, i0) = runs[0];
    let (a1, i1) = runs[1];
    if a1 <= a0 {
        return Err(BenchError::Invalid(format!(
            "the storm under callgrind made {a0} then {a1} attempts: no difference to measure"
        )));
    }
    Ok(((i1.saturating_sub(i0)) as f64 / (a1 - a0) as f64, runs))
}

/// wrk (1 thread, 64 connections, 3 s) under callgrind: instructions per request.
fn wrk_instructions(valgrind: &Path, url: &str) -> Result<f64, super::NotMeasured> {
    let wrk = super::wrk::find().ok_or_else(|| super::wrk::MISSING.to_string())?;
    let out_file = std::env::temp_dir().join(format!(
        "harness-bench-callgrind-wrk-{}.out",
        std::process::id()
    ));
    let out = Command::new(valgrind)
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(&wrk)
        .args(["-t1", "-c64", "-d3s", url])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("running wrk under callgrind: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let total = callgrind_total(&out_file).map_err(|e| super::NotMeasured(format!("{e:#}")));
    let _ = std::fs::remove_file(&out_file);
    let requests = stdout
        .lines()
        .find_map(|l| {
            let (n, rest) = l.trim().split_once(' ')?;
            rest.starts_with("requests in")
                .then(|| n.parse::<f64>().ok())?
        })
        .ok_or_else(|| format!("no request count in wrk's output: {stdout}"))?;
    Ok(total? as f64 / requests.max(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrind_totals() {
        let out = "events: Ir\nsummary: 123456\nfl=(1) x\n0 5\ntotals: 123456\n";
        assert_eq!(parse_total(out), Some(123456));
        assert_eq!(parse_total("events: Ir\n"), None);
    }
}
