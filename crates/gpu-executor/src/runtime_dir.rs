//! The Vulkan loader (Mesa's WSI layers) prints `error: XDG_RUNTIME_DIR is
//! invalid or not set in the environment.` on stderr when it cannot find a
//! runtime directory, though nothing is wrong with compute; a new user reads
//! it as a failure. [`ensure_runtime_dir`] gives a process without one a
//! private 0700 directory (one per user, reused across runs), which is all
//! the loader wants.

/// Sets `XDG_RUNTIME_DIR` to a private directory when it is unset or not a
/// directory. Call it first thing in `main`, before any thread starts:
/// setting an environment variable races with threads reading it.
pub fn ensure_runtime_dir() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir()) {
        return;
    }
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("overload-harness-xdg-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    // Only use it if it really is ours and private (not planted by someone else).
    let ok = std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o777 == 0o700);
    if ok {
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}
