//! What the tests share: a process's live children, read from /proc,
//! whether a pid is still alive (a zombie is not), and why an experiment
//! with a proxy gateway cannot run here.
// Each test crate uses part of this module.
#![allow(dead_code)]

/// The pids of `parent`'s live children whose command line contains `needle`.
pub fn children(parent: u32, needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the comm may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) || !alive(pid) {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// Alive and not a zombie (a zombie only waits for its parent to read its status).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

/// Why an experiment with a proxy gateway cannot be validated here: its
/// proxy's binary is not installed (and `HARNESS_REQUIRE_PROXIES` is unset,
/// as it is in `.ci/run`, which installs them).
pub fn proxy_missing(text: &str) -> Option<String> {
    if std::env::var_os("HARNESS_REQUIRE_PROXIES").is_some_and(|v| v == "1") {
        return None;
    }
    let on_path = |b: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join(b).is_file())
    };
    ["haproxy", "nginx"]
        .into_iter()
        .find(|b| text.contains(&format!("proxy: {{ {b}:")) && !on_path(b))
        .map(|b| {
            format!(
                "`{b}` is not installed (apt-get install {})",
                if b == "nginx" { "nginx-light" } else { b }
            )
        })
}
