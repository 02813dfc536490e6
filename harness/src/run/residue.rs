//! Trigger residues: when each trigger of a variant was really over.
//!
//! A fault's end is not the end of what it did. A burst of oversized
//! documents keeps the GPU busy until the last of their pages is computed,
//! whether their clients are still waiting or gave up long ago (the pool is
//! not told). So a trigger is over when its fault is undone *and* the work it
//! injected has left the system:
//!
//! - injected documents (oversized documents, a load spike's extra
//!   arrivals): every journey ended (completed, given up or cut
//!   off) and the system reports that each of their pages has been computed
//!   once, or that no job of theirs is open any more (cancelled, failed,
//!   never admitted) ([`sut::WORK_PATH`]). Recomputing them afterwards is
//!   the system's amplification — a sustaining effect the verdict measures —
//!   not the trigger. A target without that admin query is judged on the
//!   clients' side only, and the residue says so;
//! - a capacity cut, a failing or silent zone: undone at the end of its duration;
//! - a cache flush or restart: over when the cache's hit ratio is back to
//!   what it was in the seconds before it (pooled over the next 3 s), or after the
//!   recovery window at the latest; judged from the recorded seconds once
//!   the variant ended ([`cache_residues`]);
//! - any other fault without a duration: never undone within the run.
//!
//! [`watch`] polls every [`POLL`] while some residue is open and returns
//! one [`TriggerSpan`] per trigger; the verdict is judged from their ends.

use crate::env::timeline::AdminApi;
use crate::experiment::{Experiment, TimelineOp};
use crate::load::workload::Document;
use crate::observe::recorder::Recorder;
use run_report::TriggerSpan;
use std::sync::Arc;
use std::time::Duration;
use sut::{DocumentRef, WorkInProgress, WorkQuery, WORK_PATH};
use tokio::time::Instant;

/// How often open residues are checked.
pub const POLL: Duration = Duration::from_millis(250);

/// One trigger to watch.
#[derive(Debug, Clone, PartialEq)]
pub struct Watched {
    pub label: String,
    pub at: Duration,
    /// When its fault is undone (None: never, for a fault without a duration).
    pub undone: Option<Duration>,
    /// The documents it injected, with their pages and planned times
    /// (empty for faults that inject none).
    pub documents: Vec<Document>,
}

impl Watched {
    /// Its journeys as the recorder knows them: id and planned time (a
    /// population's member may also be drawn by the regular traffic).
    fn journeys(&self) -> Vec<(u64, Duration)> {
        self.documents.iter().map(|d| (d.id, d.planned)).collect()
    }

    /// What to ask the system about: each document once, with its pages.
    fn refs(&self) -> Vec<DocumentRef> {
        let mut seen = std::collections::HashSet::new();
        self.documents
            .iter()
            .filter(|d| seen.insert(d.id))
            .map(|d| DocumentRef {
                id: d.id,
                pages: d.pages,
            })
            .collect()
    }
}

/// The triggers of `exp` that apply to `variant`, with the documents they
/// inject (a load spike's at `capacity_docs_per_sec`, documents/s of one pool).
pub fn plan(exp: &Experiment, variant: &str, capacity_docs_per_sec: f64) -> Vec<Watched> {
    exp.timeline
        .iter()
        .enumerate()
        .filter(|(_, e)| e.trigger && e.applies_to(variant))
        .map(|(i, e)| {
            let (documents, undone) = match &e.op {
                TimelineOp::OversizedDocuments(o) => {
                    let docs = crate::load::workload::oversized(exp.seed, i, e.at, o);
                    let last = docs.iter().map(|d| d.planned).max().unwrap_or(e.at);
                    (docs, Some(last))
                }
                // Over once its extra arrivals stopped and every one of
                // them left the system, like oversized documents.
                TimelineOp::LoadSpike(_) => (
                    crate::load::spike::documents(exp, i, capacity_docs_per_sec),
                    Some(e.at + e.duration.unwrap_or_default()),
                ),
                // A cache emptied is done at once; what it left is judged
                // on the hit ratio afterwards (cache_residues).
                TimelineOp::Admin(c) if is_cache_emptying(c) => (Vec::new(), Some(e.at)),
                // Undone at the end of its duration; a fault without one (or
                // that nothing can undo) lasts for the whole run.
                // A generic fault likewise, when the injector undoes it.
                TimelineOp::Admin(_) | TimelineOp::Generic(_) => {
                    match (e.duration, e.op.revert()) {
                        (Some(d), Some(_)) => (Vec::new(), Some(e.at + d)),
                        _ => (Vec::new(), None),
                    }
                }
            };
            Watched {
                label: e.label.clone(),
                at: e.at,
                undone,
                documents,
            }
        })
        .collect()
}

/// A command that empties (part of) the cache, whose residue is the refill.
fn is_cache_emptying(c: &sut::AdminCommand) -> bool {
    use sut::command_row::{CacheEffect, Part};
    c.row().part == Part::Cache(CacheEffect::Empties)
}

/// The residues of cache flushes and restarts, from the recorded seconds:
/// over at the first second from which the next 3 seconds' pooled hit ratio is back
/// to the one of the (up to 5) seconds before the fault, and at the latest
/// `window` seconds after it. `spans` are in the order of [`plan`].
pub fn cache_residues(
    exp: &Experiment,
    variant: &str,
    spans: &mut [TriggerSpan],
    seconds: &[run_report::Second],
    window: Duration,
) {
    let emptying = exp
        .timeline
        .iter()
        .filter(|e| e.trigger && e.applies_to(variant))
        .map(|e| matches!(&e.op, TimelineOp::Admin(c) if is_cache_emptying(c)));
    let ratio = |from: u32, to: u32| {
        let (h, m) = seconds
            .iter()
            .filter(|s| s.t >= from && s.t < to)
            .fold((0u64, 0u64), |(h, m), s| {
                (h + s.cache_hits, m + s.cache_misses)
            });
        (h + m > 0).then(|| h as f64 / (h + m) as f64)
    };
    for (span, cache) in spans.iter_mut().zip(emptying) {
        if !cache {
            continue;
        }
        let at = span.start_s.max(0.0) as u32;
        let latest = span.start_s + window.as_secs_f64();
        let Some(before) = ratio(at.saturating_sub(5), at) else {
            span.residue_end_s = Some(latest);
            span.residue = "no cache reads before it: over after the recovery window".into();
            continue;
        };
        let back =
            (at + 1..latest.ceil() as u32).find(|&t| ratio(t, t + 3).is_some_and(|r| r >= before));
        match back {
            Some(t) => {
                span.residue_end_s = Some(f64::from(t));
                span.residue = format!(
                    "the hit ratio was back to {:.0} % (as before it) at {t} s",
                    before * 100.0
                );
            }
            None => {
                span.residue_end_s = Some(latest);
                span.residue = format!(
                    "the hit ratio had not come back to {:.0} % within the recovery window ({} s)",
                    before * 100.0,
                    window.as_secs()
                );
            }
        }
    }
}

/// What the system answered about a trigger's documents.
enum Asked {
    /// Some of the documents' pages were never computed yet, with a job open.
    Holding(WorkInProgress),
    /// Every page computed once (or no job open); what is left is recomputation.
    Done(WorkInProgress),
    /// The target cannot say (no admin API, or no work query): clients' side only.
    CannotTell(String),
    /// Transient failure: ask again.
    Failed,
}

async fn ask(admin: Option<&AdminApi>, docs: &[DocumentRef]) -> Asked {
    let Some(a) = admin else {
        return Asked::CannotTell("no admin API for this target".into());
    };
    let q = WorkQuery {
        documents: docs.to_vec(),
    };
    let sent = a
        .system
        .post_admin(WORK_PATH, &a.token, &q, Duration::from_secs(2))
        .await;
    match sent {
        Ok(r) if r.status == reqwest::StatusCode::NOT_FOUND => {
            Asked::CannotTell(format!("the target does not answer {WORK_PATH}"))
        }
        Ok(r) if r.status.is_success() => match serde_json::from_slice::<WorkInProgress>(&r.body) {
            Ok(w) if w.first_time_pages == 0 => Asked::Done(w),
            Ok(w) => Asked::Holding(w),
            Err(_) => Asked::Failed,
        },
        _ => Asked::Failed,
    }
}

struct Open {
    w: Watched,
    /// Set once the residue ended (seconds since the start) with its description.
    ended: Option<(f64, String)>,
    /// The first reading once every client was done, and the latest.
    when_clients_done: Option<WorkInProgress>,
    last_seen: Option<WorkInProgress>,
}

/// "1 document", "4 documents".
fn documents(n: usize) -> String {
    format!("{n} document{}", if n == 1 { "" } else { "s" })
}

fn outcomes(counts: [usize; 3]) -> String {
    let [done, gave_up, pending] = counts;
    let mut parts = Vec::new();
    for (n, what) in [
        (done, "completed"),
        (gave_up, "given up"),
        (pending, "cut off"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    parts.join(", ")
}

/// Watches every trigger until its residue ended or `done` resolves (the
/// variant is over); returns the spans, open ones with no residue end.
pub async fn watch(
    triggers: Vec<Watched>,
    start: Instant,
    recorder: Arc<Recorder>,
    admin: Option<AdminApi>,
    done: impl std::future::Future<Output = ()>,
) -> Vec<TriggerSpan> {
    for t in &triggers {
        recorder.watch(t.journeys());
    }
    let mut open: Vec<Open> = triggers
        .into_iter()
        .map(|w| Open {
            w,
            ended: None,
            when_clients_done: None,
            last_seen: None,
        })
        .collect();
    let mut watcher = Watcher {
        start,
        recorder,
        admin,
        client_side_only: None,
    };
    tokio::pin!(done);
    loop {
        let now = start.elapsed();
        for o in open.iter_mut().filter(|o| o.ended.is_none()) {
            watcher.look(o, now).await;
        }
        if open.iter().all(|o| o.ended.is_some()) {
            break;
        }
        // The end first; biased: an unbiased select! draws its first branch
        // from the runtime's random seed, which a virtual run cannot replay.
        tokio::select! {
            biased;
            _ = &mut done => break,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
    open.into_iter().map(span).collect()
}

/// What the watch looks with: the variant's clock, the clients' record
/// and the target's admin API, and, once the target could not tell, why
/// (every later residue is then judged on the clients' side alone).
struct Watcher {
    start: Instant,
    recorder: Arc<Recorder>,
    admin: Option<AdminApi>,
    client_side_only: Option<String>,
}

impl Watcher {
    /// One look at a trigger still open at `now`: its residue ends once the
    /// fault was undone, the clients are done with its documents and the
    /// target holds no first-time work for them (or cannot tell).
    async fn look(&mut self, o: &mut Open, now: Duration) {
        let Some(undone) = o.w.undone.filter(|u| *u <= now) else {
            return;
        };
        if o.w.documents.is_empty() {
            o.ended = Some((
                undone.as_secs_f64(),
                format!(
                    "none beyond the fault itself (undone at {:.1} s)",
                    undone.as_secs_f64()
                ),
            ));
            return;
        }
        let Some((last_end, counts)) = self.recorder.watched_ended(&o.w.journeys()) else {
            return;
        };
        let n = o.w.documents.len();
        let clients_only = |why: &str| {
            Some((
                last_end.as_secs_f64(),
                format!(
                    "{} ({}); measured on the clients' side only: {why}",
                    documents(n),
                    outcomes(counts)
                ),
            ))
        };
        if let Some(why) = &self.client_side_only {
            o.ended = clients_only(why);
            return;
        }
        match ask(self.admin.as_ref(), &o.w.refs()).await {
            Asked::Done(now_w) => {
                let at = self
                    .start
                    .elapsed()
                    .as_secs_f64()
                    .max(last_end.as_secs_f64());
                let words = server_side_residue(at, o.when_clients_done, now_w);
                o.ended = Some((
                    at,
                    format!("{} ({}){words}", documents(n), outcomes(counts)),
                ));
            }
            Asked::Holding(w) => {
                o.when_clients_done.get_or_insert(w);
                o.last_seen = Some(w);
            }
            Asked::CannotTell(why) => {
                tracing::warn!("trigger residues are judged on the clients' side only: {why}");
                o.ended = clients_only(&why);
                self.client_side_only = Some(why);
            }
            Asked::Failed => {}
        }
    }
}

/// What the target said of a residue that ended at `at`: the first-time
/// pages it still had when the clients were done (`first`, else the
/// reading `now_w` that found none left), and the jobs still recomputing.
fn server_side_residue(at: f64, first: Option<WorkInProgress>, now_w: WorkInProgress) -> String {
    let gpu = match first.or(Some(now_w)) {
        Some(first) if first.first_time_pages > 0 => format!(
            "; when the last client was done the GPU had yet to compute {} of \
             their pages for the first time ({} job(s) open), the last by {at:.1} s",
            first.first_time_pages, first.jobs
        ),
        _ => "; their pages had all been computed when the last client was done".into(),
    };
    let rest = if now_w.jobs > 0 {
        format!(
            "; {} job(s) recomputing them were still open then ({} page(s) queued or computing)",
            now_w.jobs, now_w.pages
        )
    } else {
        String::new()
    };
    format!("{gpu}{rest}")
}

fn span(o: Open) -> TriggerSpan {
    let end_s = o.w.undone.map(|u| u.as_secs_f64());
    let (residue_end_s, residue) = match o.ended {
        Some((at, words)) => (Some(at), words),
        None if !o.w.documents.is_empty() => (
            None,
            match o.last_seen {
                Some(w) => format!(
                    "{}: {} of their pages not yet computed once ({} job(s) open) when the run ended",
                    documents(o.w.documents.len()),
                    w.first_time_pages,
                    w.jobs
                ),
                None => format!(
                    "{}: not all of their journeys had ended when the run did",
                    documents(o.w.documents.len())
                ),
            },
        ),
        None => (None, "the fault was not undone before the run ended".into()),
    };
    TriggerSpan {
        label: o.w.label,
        start_s: o.w.at.as_secs_f64(),
        end_s,
        residue_end_s,
        residue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, quick: bool) -> Experiment {
        let p = format!("{}/../experiments/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
        crate::experiment::load(std::path::Path::new(&p), quick).unwrap()
    }

    #[test]
    fn injected_documents_and_timed_faults_are_watched_standing_conditions_are_not() {
        let e = load("retry-storm", false);
        let w = plan(&e, "before-fix", 60.0);
        // The cache fill at 0 s is a standing condition (trigger: false).
        let sizes: Vec<usize> = w.iter().map(|t| t.documents.len()).collect();
        assert_eq!(sizes, vec![18, 18, 18, 16, 16]);
        // 18 spread over 2 s from 7 s: the trigger lasts until its last document arrives.
        let last = Duration::from_secs(7) + Duration::from_secs(2).mul_f64(17.0 / 18.0);
        assert_eq!(w[0].undone, Some(last));
        // The documents watched are the ones the runner submits, with their pages.
        let cap = crate::load::Capacity {
            pages_per_sec: 400.0,
            docs_per_sec: 60.0,
        };
        let planned = crate::load::plan_documents(&e, cap);
        for d in &w[1].documents {
            assert!(planned
                .iter()
                .any(|p| p.id == d.id && p.pages == d.pages && p.tenant == "t7"));
        }
        let q = load("queue-overflow", false);
        let w = plan(&q, "after-fix", 60.0);
        assert_eq!(w.len(), 1);
        assert!(w[0].documents.is_empty());
        assert_eq!(w[0].undone, Some(Duration::from_secs(13)));
        // Operators' actions are not triggers.
        let z = load("zone-failover", false);
        assert_eq!(plan(&z, "before-fix", 60.0).len(), 1);
    }

    /// The full timeline's first line at 7 s (two spaces of indentation).
    fn first_full_timeline_line_at_7s(yaml: &str) -> String {
        let line = yaml
            .lines()
            .find(|l| l.starts_with("  - { at: 7s,"))
            .expect("retry-storm's full timeline starts at 7 s");
        // With the newline before it: the quick form's line (four spaces)
        // holds the same text after its first two.
        format!("\n{line}\n")
    }

    #[test]
    fn a_cache_flush_is_over_when_the_hit_ratio_is_back() {
        let original = std::fs::read_to_string(format!(
            "{}/../experiments/retry-storm.yaml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        // The full timeline's first trigger becomes a flush; the quick form's
        // line has deeper indentation and stays as it is.
        let first_trigger = first_full_timeline_line_at_7s(&original);
        let text = original.replacen(
            &first_trigger,
            "\n  - { at: 7s, fault: { cache_flush: { share: 1.0 } } }\n",
            1,
        );
        assert_ne!(text, original, "the first trigger was not found");
        let file = format!(
            "{}/../experiments/retry-storm.yaml (cache flush)",
            env!("CARGO_MANIFEST_DIR")
        );
        let e = crate::experiment::parse(&text, &file, false).unwrap();
        let plan = plan(&e, "before-fix", 60.0);
        assert_eq!(plan[0].undone, Some(Duration::from_secs(7)));
        // 50 % hits before, none after the flush, back from 11 s.
        let seconds: Vec<run_report::Second> = (0..30)
            .map(|t| {
                let hits = if (7..11).contains(&t) { 0 } else { 10 };
                run_report::Second {
                    t,
                    cache_hits: hits,
                    cache_misses: 20 - hits,
                    ..Default::default()
                }
            })
            .collect();
        let mut spans: Vec<TriggerSpan> = plan
            .iter()
            .map(|w| TriggerSpan::undone_at(&w.label, w.at.as_secs_f64(), Some(w.at.as_secs_f64())))
            .collect();
        cache_residues(
            &e,
            "before-fix",
            &mut spans,
            &seconds,
            Duration::from_secs(8),
        );
        assert_eq!(spans[0].residue_end_s, Some(11.0), "{:?}", spans[0]);
        assert!(spans[0].residue.contains("back to 50 %"));
        // Never back: over after the window.
        let flat: Vec<run_report::Second> = seconds
            .iter()
            .map(|s| run_report::Second {
                cache_hits: if s.t < 7 { 10 } else { 0 },
                ..s.clone()
            })
            .collect();
        cache_residues(&e, "before-fix", &mut spans, &flat, Duration::from_secs(8));
        assert_eq!(spans[0].residue_end_s, Some(15.0));
        // The other triggers are left as they were.
        assert_eq!(spans[1].residue_end_s, Some(32.0));
    }

    #[test]
    fn a_load_spike_is_watched_until_its_extra_documents_left() {
        let text = "name: t\nduration: 40s\nworkload:\n  arrival: { steps: [ { at: 0s, capacity: 0.5 }, \
                    { at: 30s, capacity: 0.8, trigger: true }, { at: 33s, capacity: 0.5 } ] }\n  \
                    documents: { pages: { fixed: 3 }, tenants: 2 }\n  client: { timeout: 1s, retry: {} }\n\
                    timeline:\n  - { at: 20s, duration: 4s, fault: { load_spike: { factor: 2 } } }\n\
                    variants:\n  a: {}\n";
        let e = crate::experiment::parse(text, "spike.yaml", false).unwrap();
        let w = plan(&e, "a", 50.0);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].undone, Some(Duration::from_secs(24)));
        assert_eq!(w[1].undone, Some(Duration::from_secs(33)));
        // Its documents are the extra ones the runner submits: 25/s over 4 s,
        // then 15/s over 3 s (a share of 50 documents/s).
        let cap = crate::load::Capacity {
            pages_per_sec: 150.0,
            docs_per_sec: 50.0,
        };
        let planned = crate::load::plan_documents(&e, cap);
        for t in &w {
            assert!(!t.documents.is_empty());
            for d in &t.documents {
                assert!(planned.contains(d), "{d:?} is submitted");
                assert!(d.planned >= t.at && Some(d.planned) < t.undone);
            }
            assert_eq!(t.refs().len(), t.documents.len());
        }
        assert!(
            (60..140).contains(&w[0].documents.len()),
            "{}",
            w[0].documents.len()
        );
        assert!(
            (20..80).contains(&w[1].documents.len()),
            "{}",
            w[1].documents.len()
        );
    }

    #[test]
    fn outcomes_are_listed_in_words() {
        assert_eq!(outcomes([2, 1, 0]), "2 completed, 1 given up");
        assert_eq!(outcomes([0, 0, 3]), "3 cut off");
    }
}
