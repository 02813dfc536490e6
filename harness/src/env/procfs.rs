//! What `/proc` says about processes: when one started (its identity
//! against pid reuse), whether it is a zombie, and its descendants. The
//! fault ledger, the components and the cgroup faults all ask.

/// The start time of `pid` (clock ticks since boot, field 22 of its stat), or
/// None when no such process runs.
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may contain spaces and parentheses: fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `pid` has exited but not been reaped (a zombie: its parent, the
/// killed harness, is gone and the new parent may never reap it).
pub(crate) fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace()
                .next()
                .map(|st| st == "Z" || st == "X")
        })
        .unwrap_or(false)
}

/// Every descendant of `pid` (children, their children, ...), from /proc.
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|x| x.parse::<u32>().ok());
            if let Some(pp) = ppid {
                parent_of.push((p, pp));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (c, pp) in &parent_of {
            if *pp == p && !out.contains(c) {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}

/// The variable that marks a user's process and everything it starts
/// (inherited through fork and exec), so that they are found after the
/// harness died even when they left its process group (`processes.rs`).
pub(crate) const TAG_VAR: &str = "HARNESS_PROCESS";

/// Every live process whose environment carries `TAG_VAR=tag`.
pub(crate) fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("{TAG_VAR}={tag}");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{p}/environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) && !is_zombie(p) {
            out.push(p);
        }
    }
    out
}
