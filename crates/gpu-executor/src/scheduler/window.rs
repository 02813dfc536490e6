//! Each tenant's share of recently scheduled pages (for `tenant_fair_share`).
//!
//! A sliding window over the last [`WINDOW`] scheduled pages rather than
//! lifetime totals, so a tenant that was busy an hour ago is not punished now,
//! and one that floods the GPU is throttled within a few batches.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Pages the share is computed over.
pub(crate) const WINDOW: usize = 200;

#[derive(Default)]
pub(crate) struct ShareWindow {
    recent: VecDeque<Arc<str>>,
    counts: HashMap<Arc<str>, usize>,
}

impl ShareWindow {
    /// Records one page scheduled for `tenant`, forgetting the oldest beyond the window.
    pub fn record(&mut self, tenant: &Arc<str>) {
        self.recent.push_back(tenant.clone());
        *self.counts.entry(tenant.clone()).or_default() += 1;
        if self.recent.len() > WINDOW {
            if let Some(old) = self.recent.pop_front() {
                if let Some(c) = self.counts.get_mut(&old) {
                    *c -= 1;
                    if *c == 0 {
                        self.counts.remove(&old);
                    }
                }
            }
        }
    }

    /// Fraction of the window that went to `tenant` (0 when the window is empty).
    pub fn share(&self, tenant: &str) -> f64 {
        if self.recent.is_empty() {
            return 0.0;
        }
        let c = self.counts.get(tenant).copied().unwrap_or(0);
        c as f64 / self.recent.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_slides() {
        let a: Arc<str> = "a".into();
        let b: Arc<str> = "b".into();
        let mut w = ShareWindow::default();
        assert_eq!(w.share("a"), 0.0);
        for _ in 0..WINDOW {
            w.record(&a);
        }
        assert_eq!(w.share("a"), 1.0);
        for _ in 0..WINDOW / 2 {
            w.record(&b);
        }
        assert_eq!(w.share("a"), 0.5);
        assert_eq!(w.share("b"), 0.5);
    }
}
