//! CPU time of this process's thread groups, and of Docker containers, over
//! an interval: what the harness-cost panel and `harness bench` read.
//!
//! In the embedded environment the load path, the rest of the harness and
//! the system under test run in one process, each on runtimes whose threads
//! are named (`harness-load`, `sut`, the main runtime's `tokio-runtime-w`),
//! so a snapshot of `/proc/self/task/*/stat` grouped by thread name splits
//! the process's CPU between them. Threads that ended between two snapshots
//! (tokio's idle blocking threads) are still in the process total of
//! `/proc/self/stat`; what no live thread accounts for is reported as
//! unattributed rather than guessed. Containers are read from their cgroup's
//! `cpuacct.usage` (cgroup v1) or `cpu.stat` (v2), which is what
//! `docker stats` computes its percentages from.

use run_report::{CostRole, CpuUse};
use std::collections::HashMap;

/// Name of the load path's runtime threads (`load::drive` runs there).
pub const LOAD_THREADS: &str = "harness-load";
/// Name of the embedded system under test's runtime threads.
pub const SUT_THREADS: &str = "sut";

/// The cores this process may run on (1 when the OS does not say).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A multi-threaded runtime with one worker per core whose threads are all
/// named `name` (workers and blocking threads), and whose idle blocking
/// threads stay alive for an hour: a thread that ends takes its CPU account
/// with it, and the panel would have to call that time unattributed.
pub fn named_runtime(name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .thread_name(name)
        .thread_keep_alive(std::time::Duration::from_secs(3600))
        .enable_all()
        .build()
}

/// CPU seconds per thread at one moment, and the process total.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// tid -> the thread's name and CPU seconds.
    threads: HashMap<u32, ThreadCpu>,
    process_s: f64,
}

/// One thread's (or the process's) CPU seconds from its `stat` line.
#[derive(Debug, Clone, PartialEq)]
struct ThreadCpu {
    name: String,
    /// User and system time.
    cpu_s: f64,
    /// Of `cpu_s`, the time in the kernel.
    system_s: f64,
}

/// CPU seconds of a group of threads over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadsCpu {
    /// User and system time.
    pub cpu_s: f64,
    /// Of `cpu_s`, the time in the kernel: on a host where system calls are
    /// dear, the same load path costs more CPU per attempt (BENCHMARKS.md).
    pub system_s: f64,
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The name (comm) and CPU seconds (utime + stime, and stime) of one `stat`
/// line; the name may hold spaces and parentheses, so it ends at the last `)`.
fn parse_stat(line: &str, hz: f64) -> Option<ThreadCpu> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let name = line.get(open + 1..close)?.to_string();
    // After the name: state is field 3, utime 14 and stime 15 (1-based).
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    let utime: f64 = rest.get(11)?.parse().ok()?;
    let stime: f64 = rest.get(12)?.parse().ok()?;
    Some(ThreadCpu {
        name,
        cpu_s: (utime + stime) / hz,
        system_s: stime / hz,
    })
}

/// CPU seconds this whole process has used so far, ended threads included
/// (`/proc/self/stat`).
pub fn process_cpu_s() -> std::io::Result<f64> {
    let process = std::fs::read_to_string("/proc/self/stat")?;
    parse_stat(&process, ticks_per_sec())
        .map(|t| t.cpu_s)
        .ok_or_else(|| std::io::Error::other("unparsable /proc/self/stat"))
}

impl Snapshot {
    /// Reads every live thread of this process; an unreadable `/proc` gives an error.
    pub fn now() -> std::io::Result<Snapshot> {
        let hz = ticks_per_sec();
        let process_s = process_cpu_s()?;
        let mut threads = HashMap::new();
        for entry in std::fs::read_dir("/proc/self/task")?.flatten() {
            let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            // A thread may end between the listing and the read.
            if let Ok(line) = std::fs::read_to_string(entry.path().join("stat")) {
                if let Some(t) = parse_stat(&line, hz) {
                    threads.insert(tid, t);
                }
            }
        }
        Ok(Snapshot { threads, process_s })
    }

    /// CPU seconds since `earlier`, summed per group as `group` names each
    /// thread, plus what ended threads used (unattributed).
    pub fn since(
        &self,
        earlier: &Snapshot,
        group: impl Fn(&str) -> (&'static str, CostRole),
    ) -> Vec<CpuUse> {
        let mut sums: Vec<CpuUse> = Vec::new();
        let mut live = 0.0;
        for (tid, t) in &self.threads {
            let before = earlier.threads.get(tid).map_or(0.0, |b| b.cpu_s);
            let d = (t.cpu_s - before).max(0.0);
            live += d;
            let (label, role) = group(&t.name);
            match sums.iter_mut().find(|u| u.name == label) {
                Some(u) => u.cpu_s += d,
                None => sums.push(CpuUse {
                    name: label.to_string(),
                    role,
                    cpu_s: d,
                }),
            }
        }
        let ended = (self.process_s - earlier.process_s - live).max(0.0);
        // Below one tick per thread that ended it is rounding, not a thread.
        if ended > 0.05 {
            sums.push(CpuUse {
                name: "threads that ended during the interval".into(),
                role: CostRole::Unattributed,
                cpu_s: ended,
            });
        }
        sums.sort_by(|a, b| a.name.cmp(&b.name));
        sums
    }

    /// CPU seconds of threads whose name starts with `prefix`, since `earlier`.
    pub fn threads_since(&self, earlier: &Snapshot, prefix: &str) -> ThreadsCpu {
        let mut sum = ThreadsCpu::default();
        for (tid, t) in self
            .threads
            .iter()
            .filter(|(_, t)| t.name.starts_with(prefix))
        {
            let before = earlier.threads.get(tid);
            sum.cpu_s += (t.cpu_s - before.map_or(0.0, |b| b.cpu_s)).max(0.0);
            sum.system_s += (t.system_s - before.map_or(0.0, |b| b.system_s)).max(0.0);
        }
        sum
    }
}

/// The embedded environment's thread groups: the load runtime, the system
/// under test's runtime and its GPU device's threads (lavapipe's `llvmpipe-N`
/// when the device is the CPU), and the rest of the harness.
pub fn embedded_group(thread: &str) -> (&'static str, CostRole) {
    if thread.starts_with(LOAD_THREADS) {
        ("harness-load threads", CostRole::LoadPath)
    } else if thread.starts_with(SUT_THREADS) {
        ("sut runtime threads", CostRole::SystemUnderTest)
    } else if thread.starts_with("llvmpipe") || thread.starts_with("lp:") {
        ("GPU device threads (lavapipe)", CostRole::SystemUnderTest)
    } else {
        ("other harness threads", CostRole::Harness)
    }
}

/// Where the harness runs alone (containers, external): everything but the
/// load runtime is the rest of the harness.
pub fn harness_only_group(thread: &str) -> (&'static str, CostRole) {
    if thread.starts_with(LOAD_THREADS) {
        ("harness-load threads", CostRole::LoadPath)
    } else {
        ("other harness threads", CostRole::Harness)
    }
}

/// No cgroup v1 or v2 CPU account of the container (by its short id) could
/// be read: its CPU is reported as not measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no readable cgroup CPU account for container {0}")]
pub struct NoCpuAccount(String);

/// Cumulative CPU seconds of a Docker container from its cgroup, or why not.
pub fn container_cpu_s(id: &str) -> Result<f64, NoCpuAccount> {
    let v1 = [
        format!("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage"),
        format!("/sys/fs/cgroup/cpuacct/system.slice/docker-{id}.scope/cpuacct.usage"),
        format!("/sys/fs/cgroup/cpu,cpuacct/docker/{id}/cpuacct.usage"),
    ];
    for p in &v1 {
        if let Ok(s) = std::fs::read_to_string(p) {
            if let Ok(ns) = s.trim().parse::<f64>() {
                return Ok(ns / 1e9);
            }
        }
    }
    let v2 = [
        format!("/sys/fs/cgroup/system.slice/docker-{id}.scope/cpu.stat"),
        format!("/sys/fs/cgroup/docker/{id}/cpu.stat"),
    ];
    for p in &v2 {
        if let Ok(s) = std::fs::read_to_string(p) {
            if let Some(us) = s
                .lines()
                .find_map(|l| l.strip_prefix("usage_usec "))
                .and_then(|v| v.trim().parse::<f64>().ok())
            {
                return Ok(us / 1e6);
            }
        }
    }
    Err(NoCpuAccount(id[..id.len().min(12)].to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        // utime 250, stime 50 ticks at 100 Hz.
        let line = "4242 (tokio (w) 1) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 5 6 7";
        let t = parse_stat(line, 100.0).unwrap();
        assert_eq!(t.name, "tokio (w) 1");
        assert!((t.cpu_s - 3.0).abs() < 1e-9);
        assert!((t.system_s - 0.5).abs() < 1e-9);
        assert_eq!(parse_stat("garbage", 100.0), None);
    }

    #[test]
    fn groups_split_the_interval_and_ended_threads_are_unattributed() {
        let t = |v: &[(u32, &str, f64)], p: f64| Snapshot {
            threads: v
                .iter()
                .map(|(i, n, s)| {
                    let t = ThreadCpu {
                        name: n.to_string(),
                        cpu_s: *s,
                        system_s: s / 4.0,
                    };
                    (*i, t)
                })
                .collect(),
            process_s: p,
        };
        let a = t(
            &[
                (1, "harness-load", 1.0),
                (2, "sut-w", 2.0),
                (3, "gone", 1.0),
            ],
            4.0,
        );
        let b = t(
            &[
                (1, "harness-load", 3.0),
                (2, "sut-w", 5.0),
                (4, "harness-load", 0.5),
            ],
            10.5,
        );
        let u = b.since(&a, embedded_group);
        let get = |r: CostRole| {
            u.iter()
                .filter(|c| c.role == r)
                .map(|c| c.cpu_s)
                .sum::<f64>()
        };
        assert!((get(CostRole::LoadPath) - 2.5).abs() < 1e-9);
        assert!((get(CostRole::SystemUnderTest) - 3.0).abs() < 1e-9);
        // 6.5 s of process time, 5.5 s by live threads: thread 3's last second.
        assert!((get(CostRole::Unattributed) - 1.0).abs() < 1e-9);
        // The load threads: 2 s more on thread 1 and 0.5 s on the new thread 4,
        // a quarter of it in the kernel.
        let load = b.threads_since(&a, "harness-load");
        assert!((load.cpu_s - 2.5).abs() < 1e-9);
        assert!((load.system_s - 0.625).abs() < 1e-9);
    }

    #[test]
    fn this_process_can_be_read() {
        let a = Snapshot::now().expect("/proc/self readable");
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = Snapshot::now().unwrap();
        assert!(!b.threads.is_empty());
        assert!(b.process_s >= a.process_s);
    }
}
