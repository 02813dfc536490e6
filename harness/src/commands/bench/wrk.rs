//! Runs `wrk`, the reference HTTP load generator, and reads its result.
//!
//! wrk is the yardstick the harness's load path is compared with: a C event
//! loop that does nothing but send requests. It is an external tool (Debian
//! package `wrk`); when it is missing the comparisons that need it say so and
//! are skipped, never fail. POST bodies go through a small Lua script.

use super::error::during;
use super::BenchError;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The wrk binary on PATH, if any.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("wrk"))
        .find(|p| p.is_file())
}

/// What to tell the reader when wrk is missing.
pub const MISSING: &str =
    "wrk is not installed (Debian/Ubuntu: sudo apt-get install -y wrk): this comparison is SKIPPED";

/// What one load run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Driven {
    pub requests_per_sec: f64,
    /// Answers that were not 2xx/3xx (wrk's "Non-2xx or 3xx responses").
    pub non_2xx: u64,
    /// The run's length (s).
    pub seconds: f64,
    /// CPU seconds the client used (wrk: its process, from the children's
    /// rusage; `None` where not measured).
    pub cpu_s: Option<f64>,
    /// Of `cpu_s`, the time in the kernel.
    pub system_s: Option<f64>,
}

/// CPU seconds of this process's waited-for children so far.
fn children_cpu() -> Option<crate::base::cpu::ThreadsCpu> {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) } != 0 {
        return None;
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(crate::base::cpu::ThreadsCpu {
        cpu_s: s(u.ru_utime) + s(u.ru_stime),
        system_s: s(u.ru_stime),
    })
}

/// One wrk run against `url` (127.0.0.1 only).
///
/// `post_json`: send POSTs with this JSON body instead of GETs.
pub fn run(
    wrk: &PathBuf,
    url: &str,
    connections: u64,
    duration: Duration,
    post_json: Option<&str>,
) -> Result<Driven, BenchError> {
    if !url.starts_with("http://127.0.0.1:") {
        return Err(BenchError::Invalid(format!(
            "refusing to send benchmark traffic to {url}: 127.0.0.1 only"
        )));
    }
    let threads = connections.clamp(1, 2);
    let secs = duration.as_secs().max(1);
    let mut cmd = Command::new(wrk);
    cmd.arg(format!("-t{threads}"))
        .arg(format!("-c{}", connections.max(threads)))
        .arg(format!("-d{secs}s"))
        .arg("--timeout")
        .arg("5s");
    let script = match post_json {
        Some(body) => {
            let p = std::env::temp_dir().join(format!("harness-bench-{}.lua", std::process::id()));
            std::fs::write(&p, lua_post(body))
                .map_err(during(format!("writing {}", p.display())))?;
            cmd.arg("-s").arg(&p);
            Some(p)
        }
        None => None,
    };
    cmd.arg(url);
    let before = children_cpu();
    let out = cmd
        .output()
        .map_err(during(format!("running {}", wrk.display())));
    if let Some(p) = script {
        let _ = std::fs::remove_file(p);
    }
    let out = out?;
    let used = before.zip(children_cpu());
    let cpu_s = used.map(|(a, b)| b.cpu_s - a.cpu_s);
    let system_s = used.map(|(a, b)| b.system_s - a.system_s);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Invalid(format!(
            "wrk exited with {}: {}{}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let requests_per_sec = parse_requests_per_sec(&stdout).ok_or_else(|| {
        BenchError::Invalid(format!(
            "no \"Requests/sec:\" line in wrk's output:\n{stdout}"
        ))
    })?;
    Ok(Driven {
        requests_per_sec,
        non_2xx: parse_non_2xx(&stdout),
        seconds: secs as f64,
        cpu_s,
        system_s,
    })
}

/// The Lua script that makes wrk POST `body` as JSON.
fn lua_post(body: &str) -> String {
    format!(
        "wrk.method = \"POST\"\nwrk.body = [[{body}]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"
    )
}

/// Reads `Requests/sec:   1234.56` from wrk's report.
pub(crate) fn parse_requests_per_sec(out: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Reads `Non-2xx or 3xx responses: 12` (absent when every answer was 2xx/3xx).
pub(crate) fn parse_non_2xx(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_requests_per_second() {
        let out = "Running 2s test @ http://127.0.0.1:1/\n  2 threads and 8 connections\n\
                   \x20 Thread Stats   Avg      Stdev     Max   +/- Stdev\n\
                   \x20 118020 requests in 2.00s, 9.57MB read\n\
                   Requests/sec:  58934.12\nTransfer/sec:      4.78MB\n";
        assert_eq!(parse_requests_per_sec(out), Some(58934.12));
        assert_eq!(parse_requests_per_sec("unable to connect"), None);
        assert_eq!(parse_non_2xx(out), 0);
        assert_eq!(
            parse_non_2xx("  Non-2xx or 3xx responses: 117988\n"),
            117988
        );
    }

    #[test]
    fn lua_script_posts_the_body() {
        let s = lua_post(r#"{"a":1}"#);
        assert!(s.contains(r#"wrk.body = [[{"a":1}]]"#));
        assert!(s.contains("\"POST\""));
    }
}
