//! Asynchronous submission: the advice seed 000 gave its customers ("use
//! asynchronous submission where available and honour the Retry-After
//! header"), so that an experiment can test it.
//!
//! `POST /v1/jobs` takes the body of `POST /v1/extract` and answers 202 with a
//! job id at once; the document then goes through exactly the synchronous
//! path (gateway, internal retries, deadlines, de-duplication, caches), run
//! detached. `GET /v1/jobs/{id}` answers 202 with `Retry-After` while it is
//! pending, then the synchronous path's answer (200 with the result, 503 or
//! 504). The table is bounded: when it holds `capacity` jobs, `POST` is 503
//! `job_table_full`; a finished job stays readable for `ttl`, then is
//! forgotten (404), like an unknown id; a malformed id is 400.

use crate::api::Reply;
use crate::config::JobsConfig;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// What a job is, as a reader sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JobView {
    Pending {
        for_s: f64,
    },
    Done {
        reply: Reply,
        zone: String,
        document: u64,
        pages: u32,
    },
}

/// The table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableFull;

struct Job {
    document: u64,
    pages: u32,
    done: Option<(Reply, String, Instant)>,
    submitted: Instant,
}

#[derive(Default)]
struct Table {
    jobs: HashMap<u64, Job>,
    /// Finished jobs in the order they finished, for expiry.
    finished: VecDeque<(u64, Instant)>,
    next_id: u64,
}

/// The bounded job table.
pub(crate) struct JobTable {
    table: Mutex<Table>,
    capacity: u64,
    ttl: Duration,
}

impl JobTable {
    pub fn new(cfg: &JobsConfig) -> JobTable {
        JobTable {
            table: Mutex::new(Table {
                next_id: 1,
                ..Table::default()
            }),
            capacity: cfg.capacity.max(1),
            ttl: cfg.ttl,
        }
    }

    fn purge(&self, t: &mut Table, now: Instant) {
        while let Some(&(id, at)) = t.finished.front() {
            if now.saturating_duration_since(at) < self.ttl {
                break;
            }
            t.finished.pop_front();
            t.jobs.remove(&id);
        }
    }

    /// A new pending job's id for `document` (of `pages`), unless the table is full.
    pub fn submit(&self, document: u64, pages: u32) -> Result<u64, TableFull> {
        let now = Instant::now();
        let mut t = self.table.lock().expect("job table lock");
        self.purge(&mut t, now);
        if t.jobs.len() as u64 >= self.capacity {
            return Err(TableFull);
        }
        let id = t.next_id;
        t.next_id += 1;
        t.jobs.insert(
            id,
            Job {
                document,
                pages,
                done: None,
                submitted: now,
            },
        );
        Ok(id)
    }

    /// The job's processing ended with `reply` (from `zone`).
    pub fn finish(&self, id: u64, reply: Reply, zone: String) {
        let now = Instant::now();
        let mut t = self.table.lock().expect("job table lock");
        if let Some(j) = t.jobs.get_mut(&id) {
            j.done = Some((reply, zone, now));
            t.finished.push_back((id, now));
        }
    }

    /// The job as it stands; `None` for an unknown or expired id.
    pub fn get(&self, id: u64) -> Option<JobView> {
        let now = Instant::now();
        let mut t = self.table.lock().expect("job table lock");
        self.purge(&mut t, now);
        t.jobs.get(&id).map(|j| match &j.done {
            Some((reply, zone, _)) => JobView::Done {
                reply: reply.clone(),
                zone: zone.clone(),
                document: j.document,
                pages: j.pages,
            },
            None => JobView::Pending {
                for_s: now.saturating_duration_since(j.submitted).as_secs_f64(),
            },
        })
    }

    /// Jobs held now (pending and finished, not yet expired).
    pub fn len(&self) -> usize {
        self.table.lock().expect("job table lock").jobs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ResultSource;

    fn table(capacity: u64, ttl_ms: u64) -> JobTable {
        JobTable::new(&JobsConfig {
            capacity,
            ttl: Duration::from_millis(ttl_ms),
        })
    }

    fn ok() -> Reply {
        Reply::Ok {
            digest: 7,
            source: ResultSource::Computed,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_and_finished_jobs_expire_after_their_ttl() {
        let t = table(2, 1000);
        let a = t.submit(5, 2).unwrap();
        let b = t.submit(6, 2).unwrap();
        assert_eq!(
            t.submit(7, 2),
            Err(TableFull),
            "pending jobs hold their place"
        );
        assert!(matches!(t.get(a), Some(JobView::Pending { .. })));
        t.finish(a, ok(), "z1".into());
        assert_eq!(
            t.get(a),
            Some(JobView::Done {
                reply: ok(),
                zone: "z1".into(),
                document: 5,
                pages: 2
            })
        );
        // Still full: a finished job stays readable for its ttl.
        assert_eq!(t.submit(7, 2), Err(TableFull));
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert_eq!(t.get(a), None, "expired");
        let c = t.submit(7, 2).expect("room again");
        assert!(c > b, "ids are never reused");
        assert_eq!(t.get(999), None);
        assert_eq!(t.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pending_job_says_how_long_it_has_waited() {
        let t = table(10, 1000);
        let a = t.submit(1, 1).unwrap();
        tokio::time::advance(Duration::from_millis(250)).await;
        match t.get(a) {
            Some(JobView::Pending { for_s }) => assert!((for_s - 0.25).abs() < 1e-6),
            other => panic!("{other:?}"),
        }
    }
}
