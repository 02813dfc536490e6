//! The queue of pages waiting for the GPU, and the policies that pick from it.
//!
//! Each job keeps its own FIFO of pages; the policy only decides which job
//! (or tenant) gives the next page:
//! - `fifo`: a global arrival log of (job, sequence number) pairs;
//! - `shared`: a ring of jobs that have pages queued;
//! - `tenant_fair_share`: a ring of tenants, each with a ring of its jobs, plus
//!   a window of recent shares to skip tenants over their limit.
//!
//! Rings hold exactly the jobs/tenants with queued pages (removal on cancel is
//! O(ring), which is fine: rings are as long as the open jobs, not the pages).

use super::config::SchedulingPolicy;
use super::window::ShareWindow;
use crate::page::PageSpec;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

pub(crate) type JobId = u64;

struct JobPages {
    tenant: Arc<str>,
    /// (arrival sequence number, page); the number lets FIFO skip cancelled entries.
    pages: VecDeque<(u64, PageSpec)>,
}

#[derive(Default)]
struct TenantJobs {
    queued: usize,
    jobs: VecDeque<JobId>,
}

pub(crate) struct PageQueue {
    policy: SchedulingPolicy,
    jobs: HashMap<JobId, JobPages>,
    len: usize,
    next_seq: u64,
    arrival: VecDeque<(JobId, u64)>,
    job_ring: VecDeque<JobId>,
    tenant_ring: VecDeque<Arc<str>>,
    tenants: HashMap<Arc<str>, TenantJobs>,
    window: ShareWindow,
}

impl PageQueue {
    pub fn new(policy: SchedulingPolicy) -> Self {
        PageQueue {
            policy,
            jobs: HashMap::new(),
            len: 0,
            next_seq: 0,
            arrival: VecDeque::new(),
            job_ring: VecDeque::new(),
            tenant_ring: VecDeque::new(),
            tenants: HashMap::new(),
            window: ShareWindow::default(),
        }
    }

    /// Pages queued, across all jobs.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn push(&mut self, job: JobId, tenant: &Arc<str>, spec: PageSpec) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = self.jobs.entry(job).or_insert_with(|| JobPages {
            tenant: tenant.clone(),
            pages: VecDeque::new(),
        });
        let activated = entry.pages.is_empty();
        entry.pages.push_back((seq, spec));
        self.len += 1;
        match self.policy {
            SchedulingPolicy::Fifo => self.arrival.push_back((job, seq)),
            SchedulingPolicy::Shared if activated => self.job_ring.push_back(job),
            SchedulingPolicy::Shared => {}
            SchedulingPolicy::TenantFairShare { .. } => {
                let t = self.tenants.entry(tenant.clone()).or_default();
                if t.queued == 0 {
                    self.tenant_ring.push_back(tenant.clone());
                }
                t.queued += 1;
                if activated {
                    t.jobs.push_back(job);
                }
            }
        }
    }

    /// Next page by policy, or None when nothing is queued.
    pub fn pop(&mut self) -> Option<(JobId, PageSpec)> {
        if self.len == 0 {
            return None;
        }
        let job = match self.policy {
            SchedulingPolicy::Fifo => self.next_fifo_job()?,
            SchedulingPolicy::Shared => self.job_ring.pop_front()?,
            SchedulingPolicy::TenantFairShare { max_share } => self.next_fair_job(max_share)?,
        };
        let entry = self.jobs.get_mut(&job)?;
        let (_, spec) = entry.pages.pop_front()?;
        self.len -= 1;
        let tenant = entry.tenant.clone();
        if entry.pages.is_empty() {
            self.jobs.remove(&job);
        } else if self.policy == SchedulingPolicy::Shared {
            self.job_ring.push_back(job);
        }
        if let SchedulingPolicy::TenantFairShare { .. } = self.policy {
            self.after_fair_pop(job, &tenant);
        }
        Some((job, spec))
    }

    /// Removes every queued page of `job`; returns how many.
    pub fn cancel(&mut self, job: JobId) -> usize {
        let Some(entry) = self.jobs.remove(&job) else {
            return 0;
        };
        let n = entry.pages.len();
        self.len -= n;
        // FIFO's arrival log keeps stale entries; next_fifo_job skips them.
        self.job_ring.retain(|&j| j != job);
        if let Some(t) = self.tenants.get_mut(&entry.tenant) {
            t.queued -= n;
            t.jobs.retain(|&j| j != job);
            if t.queued == 0 {
                self.tenants.remove(&entry.tenant);
                self.tenant_ring.retain(|x| *x != entry.tenant);
            }
        }
        n
    }

    fn next_fifo_job(&mut self) -> Option<JobId> {
        while let Some((job, seq)) = self.arrival.pop_front() {
            let live = self
                .jobs
                .get(&job)
                .and_then(|j| j.pages.front())
                .is_some_and(|&(s, _)| s == seq);
            if live {
                return Some(job);
            }
        }
        None
    }

    /// Picks the tenant (round robin, skipping tenants over `max_share` while
    /// another tenant has pages), then that tenant's next job.
    fn next_fair_job(&mut self, max_share: f64) -> Option<JobId> {
        let total = self.len;
        let eligible = self.tenant_ring.iter().position(|t| {
            let queued = self.tenants.get(t).map_or(0, |x| x.queued);
            self.window.share(t) <= max_share || queued == total
        });
        // Everyone over the limit: stay work-conserving and serve the ring's head.
        let idx = eligible.unwrap_or(0);
        let tenant = self.tenant_ring.remove(idx)?;
        self.window.record(&tenant);
        let t = self.tenants.get_mut(&tenant)?;
        let job = t.jobs.pop_front()?;
        self.tenant_ring.push_back(tenant);
        Some(job)
    }

    fn after_fair_pop(&mut self, job: JobId, tenant: &Arc<str>) {
        let Some(t) = self.tenants.get_mut(tenant) else {
            return;
        };
        t.queued -= 1;
        if self.jobs.contains_key(&job) {
            t.jobs.push_back(job);
        }
        if t.queued == 0 {
            self.tenants.remove(tenant);
            self.tenant_ring.retain(|x| x != tenant);
        }
    }
}

#[cfg(test)]
mod tests;
