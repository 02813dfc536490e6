//! goose prints "N users launched." on stdout whatever its `quiet` setting,
//! once per variant, between the harness's own lines (and into `--json`
//! output). While any load runs, [`StdoutToLog`] points the process's stdout
//! at a pipe whose lines go to the log (`RUST_LOG=goose=debug` shows them);
//! when the last one is dropped stdout is restored. Only goose writes to
//! stdout during a load; loads may overlap (`sweep --parallel`), so the
//! redirection is shared and counted.

use std::io::{BufRead, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::sync::Mutex;

struct Redirect {
    users: usize,
    saved: RawFd,
    reader: Option<std::thread::JoinHandle<()>>,
}

static ACTIVE: Mutex<Option<Redirect>> = Mutex::new(None);

/// Stdout redirected into the log until the last of these is dropped.
pub struct StdoutToLog {
    active: bool,
}

/// Points fd 1 at a pipe read into the log; `None` (stdout untouched) on failure.
fn redirect() -> Option<Redirect> {
    let _ = std::io::stdout().flush();
    let mut fds = [0 as RawFd; 2];
    // SAFETY: plain POSIX calls on descriptors this function owns; every
    // failure path closes what it opened and leaves fd 1 untouched.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return None;
        }
        let saved = libc::dup(1);
        if saved < 0 || libc::dup2(fds[1], 1) < 0 {
            libc::close(fds[0]);
            libc::close(fds[1]);
            if saved >= 0 {
                libc::close(saved);
            }
            return None;
        }
        libc::close(fds[1]);
        let read = std::fs::File::from_raw_fd(fds[0]);
        let reader = std::thread::Builder::new()
            .name("goose-stdout".into())
            .spawn(move || {
                for line in std::io::BufReader::new(read).lines().map_while(Result::ok) {
                    if !line.trim().is_empty() {
                        tracing::debug!(target: "goose", "{}", line.trim());
                    }
                }
            })
            .ok();
        Some(Redirect {
            users: 0,
            saved,
            reader,
        })
    }
}

impl StdoutToLog {
    /// Starts (or joins) the redirection; on failure stdout is left as it was.
    pub fn begin() -> StdoutToLog {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        if active.is_none() {
            *active = redirect();
        }
        match active.as_mut() {
            Some(r) => {
                r.users += 1;
                StdoutToLog { active: true }
            }
            None => StdoutToLog { active: false },
        }
    }
}

impl Drop for StdoutToLog {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        let last = active.as_mut().is_some_and(|r| {
            r.users -= 1;
            r.users == 0
        });
        if !last {
            return;
        }
        let Some(mut r) = active.take() else {
            return;
        };
        let _ = std::io::stdout().flush();
        // SAFETY: restores fd 1 from the copy taken in `redirect`; the pipe's
        // write end goes with it, so the reader sees end-of-file.
        unsafe {
            libc::dup2(r.saved, 1);
            libc::close(r.saved);
        }
        if let Some(t) = r.reader.take() {
            let _ = t.join();
        }
    }
}
