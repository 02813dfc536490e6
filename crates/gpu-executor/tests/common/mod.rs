//! Helpers for scheduler tests: configs, page lists and a completion log in virtual time.
#![allow(dead_code)] // each test binary uses a different subset

use gpu_executor::{PageResult, PageSpec, SchedulerConfig, SchedulingPolicy};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub const PAGE_TIME: Duration = Duration::from_millis(10);

pub fn cfg(lanes: u32, page_queue: u32, policy: SchedulingPolicy) -> SchedulerConfig {
    SchedulerConfig {
        lanes,
        page_time: PAGE_TIME,
        page_queue,
        policy,
    }
}

/// `n` tiny pages of document `doc` (cheap on the CPU executor).
pub fn pages(doc: u64, n: u32) -> Vec<PageSpec> {
    (0..n)
        .map(|page| PageSpec {
            doc_seed: doc,
            page,
            words: 8,
            rounds: 1,
        })
        .collect()
}

/// One completed page: when (virtual time since the test start), whose, which.
#[derive(Clone, Debug, PartialEq)]
pub struct Done {
    pub at: Duration,
    pub tag: &'static str,
    pub page: u32,
}

#[derive(Clone)]
pub struct Log {
    t0: Instant,
    entries: Arc<Mutex<Vec<Done>>>,
}

impl Log {
    pub fn new() -> Self {
        Log {
            t0: Instant::now(),
            entries: Arc::default(),
        }
    }

    /// Records every result of `rx` until the channel closes.
    pub fn collect(
        &self,
        tag: &'static str,
        mut rx: UnboundedReceiver<PageResult>,
    ) -> JoinHandle<()> {
        let log = self.clone();
        tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                let at = log.t0.elapsed();
                log.entries.lock().expect("log").push(Done {
                    at,
                    tag,
                    page: r.page,
                });
            }
        })
    }

    /// Entries in completion order.
    pub fn entries(&self) -> Vec<Done> {
        self.entries.lock().expect("log").clone()
    }

    pub fn times(&self, tag: &str) -> Vec<Duration> {
        self.entries()
            .into_iter()
            .filter(|d| d.tag == tag)
            .map(|d| d.at)
            .collect()
    }
}

/// `k` batches of PAGE_TIME each.
pub fn batches(k: u32) -> Duration {
    PAGE_TIME * k
}
