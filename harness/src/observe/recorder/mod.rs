//! `Recorder`: what the clients saw, bucketed by second.
//!
//! Every attempt, outcome, document completion and give-up is counted in the
//! bucket of the second it happened in, with latencies in HdrHistograms (one
//! per second, one for the run, one per tenant for document end-to-end time).
//! It is also the ledger of the integrity check: each document is counted once
//! as submitted and once as completed, given up or pending, and every 200
//! result's verdict against the reference computation is recorded here.
//!
//! It also keeps, for the documents a trigger injected (oversized documents,
//! a load spike's extra arrivals), when and how each of their journeys
//! ended: a trigger's residue lasts at least until the last of them has.
//! Their attempts are counted apart as injected by document id, so with a
//! population, the regular traffic's draws of a member a spike also drew
//! count as injected too.
//!
//! With load agents (`agent/`), each agent's recorder also sends every
//! [`Event`] it records, stamped with its offset from the run's start, to
//! the coordinator, whose recorder [`Recorder::apply`]s them in the bucket
//! they happened in: the merged run is counted by the same code as a
//! single-process one.
//!
//! Bound: one bucket per second of the run plus its drain time, a set of
//! document ids per bucket (cleared into a count once the second is sampled),
//! and one entry per watched document.

mod events;
mod ids;
mod state;

pub use events::{Event, Tap};
use hdrhistogram::Histogram;
use ids::IdSet;
use run_report::{Integrity, LatencySummary};
use state::{Bucket, State};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// How a document's journey ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JourneyEnd {
    Completed,
    GaveUp,
    /// Cut off by the end of the variant.
    Pending,
}

/// How one attempt ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Ok,
    /// 503.
    Rejected,
    /// Client timeout or 504.
    Timeout,
    /// Anything else (connection refused, 500, bad body).
    Error,
}

/// What the clients have seen since the variant started (see [`Recorder::totals`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientTotals {
    pub submitted: u64,
    /// Distinct documents submitted (a population's repeats count once).
    pub distinct_documents: u64,
    pub attempts: u64,
    pub ok: u64,
    pub rejected: u64,
    pub timeouts: u64,
    pub errors: u64,
    pub completed: u64,
    pub given_up: u64,
    pub in_flight: u64,
}

/// How late the journeys' first attempts left (see [`Recorder::first_sent`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScheduleLag {
    /// Journeys whose first attempt was sent.
    pub sent: u64,
    /// Of those, sent more than `run_report::LAG_P99_LIMIT_MS` late.
    pub behind: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

pub struct Recorder {
    start: Instant,
    state: Mutex<State>,
    tap: Option<Tap>,
    /// Set once any document is watched: until then a journey's end has
    /// nothing to keep, and takes no lock (once per journey, on the load path).
    watching: AtomicBool,
}

/// A document id's share of `Integrity::submitted_digest` (mixed, so that
/// a wrapping sum of them tells id multisets apart).
fn id_digest(doc: u64) -> u64 {
    crate::experiment::sampling::document_id(doc, 0x1D5, 0)
}

fn histogram() -> Histogram<u64> {
    // 1 µs .. 1 h, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

fn summary(h: &Histogram<u64>) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary::default();
    }
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    LatencySummary {
        count: h.len(),
        p50_ms: ms(0.5),
        p90_ms: ms(0.9),
        p99_ms: ms(0.99),
        p999_ms: ms(0.999),
        max_ms: h.max() as f64 / 1000.0,
        distribution: [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99, 100.0]
            .iter()
            .map(|p| (*p, ms(p / 100.0)))
            .collect(),
    }
}

impl Recorder {
    pub fn new(start: Instant, seconds: usize) -> Self {
        Recorder {
            start,
            state: Mutex::new(State {
                buckets: (0..seconds.max(1)).map(|_| Bucket::default()).collect(),
                overall: histogram(),
                tenants: BTreeMap::new(),
                integrity: Integrity::default(),
                agent_lost: 0,
                in_flight: 0,
                late: 0,
                cut_off: 0,
                lag: histogram(),
                behind: 0,
                seen: IdSet::default(),
                traffic: BTreeMap::new(),
                watched: Default::default(),
            }),
            tap: None,
            watching: AtomicBool::new(false),
        }
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    fn with_bucket<R>(&self, at: Instant, f: impl FnOnce(&mut Bucket, &mut State) -> R) -> R {
        let mut st = self.state.lock().expect("recorder lock");
        let i =
            (at.saturating_duration_since(self.start).as_secs() as usize).min(st.buckets.len() - 1);
        // The vector is lent out (three words moved, nothing allocated), not
        // the bucket: a bucket is a few hundred bytes, and moving one out
        // and back on every call was the load path's largest memcpy.
        let mut buckets = std::mem::take(&mut st.buckets);
        let r = f(&mut buckets[i], &mut st);
        st.buckets = buckets;
        r
    }

    /// A submission's journey begins: a document's first, or a repeat of one
    /// submitted before (a population's member drawn again).
    pub fn submitted(&self, doc: u64, tenant: &str) {
        let now = Instant::now();
        self.tap(now, || Event::Submitted {
            doc,
            tenant: tenant.to_string(),
        });
        self.submitted_at(now, doc, tenant);
    }

    fn submitted_at(&self, now: Instant, doc: u64, tenant: &str) {
        self.with_bucket(now, |b, st| {
            st.traffic_of(tenant).submissions += 1;
            b.arrivals += 1;
            if !st.seen.insert(doc) {
                b.repeats += 1;
            }
            st.integrity.submitted += 1;
            st.integrity.submitted_digest =
                st.integrity.submitted_digest.wrapping_add(id_digest(doc));
            st.in_flight += 1;
        });
    }

    /// An arrival could not be sent at its planned time (in-flight cap).
    pub fn late(&self) {
        self.tap(Instant::now(), || Event::Late);
        self.state.lock().expect("recorder lock").late += 1;
    }

    /// A journey's first attempt left `lag` after its planned time (the
    /// arrival schedule's lag, in the harness-cost panel).
    pub fn first_sent(&self, lag: Duration) {
        let us = (lag.as_micros() as u64).max(1);
        self.tap(Instant::now(), || Event::FirstSent { lag_us: us });
        self.state.lock().expect("recorder lock").first_sent(us);
    }

    /// `first_sent` and `attempt_sent` under one lock: once per journey on
    /// the load path, where every lock is shared by all the lanes.
    pub fn first_attempt_sent(&self, doc: u64, tenant: &str, lag: Duration) {
        let (now, us) = (Instant::now(), (lag.as_micros() as u64).max(1));
        self.tap(now, || Event::FirstSent { lag_us: us });
        self.tap(now, || Event::AttemptSent {
            doc,
            tenant: tenant.to_string(),
        });
        self.with_bucket(now, |b, st| {
            st.first_sent(us);
            st.attempt_sent(b, doc, tenant);
        });
    }

    /// The arrival schedule's lag so far.
    pub fn schedule_lag(&self) -> ScheduleLag {
        let st = self.state.lock().expect("recorder lock");
        let ms = |us: u64| us as f64 / 1000.0;
        let some = !st.lag.is_empty();
        ScheduleLag {
            sent: st.lag.len(),
            behind: st.behind,
            p50_ms: some.then(|| ms(st.lag.value_at_quantile(0.5))),
            p99_ms: some.then(|| ms(st.lag.value_at_quantile(0.99))),
            max_ms: some.then(|| ms(st.lag.max())),
        }
    }

    pub fn attempt_sent(&self, doc: u64, tenant: &str) {
        let now = Instant::now();
        self.tap(now, || Event::AttemptSent {
            doc,
            tenant: tenant.to_string(),
        });
        self.attempt_sent_at(now, doc, tenant);
    }

    fn attempt_sent_at(&self, now: Instant, doc: u64, tenant: &str) {
        self.with_bucket(now, |b, st| st.attempt_sent(b, doc, tenant));
    }

    /// An attempt of document `doc` ended with `outcome`.
    pub fn attempt_done(&self, doc: u64, outcome: AttemptOutcome, latency: Duration) {
        let now = Instant::now();
        self.tap(now, || Event::AttemptDone {
            doc,
            outcome,
            latency_us: latency.as_micros() as u64,
        });
        self.attempt_done_at(now, doc, outcome, latency);
    }

    fn attempt_done_at(&self, now: Instant, doc: u64, outcome: AttemptOutcome, latency: Duration) {
        let us = (latency.as_micros() as u64).max(1);
        self.with_bucket(now, |b, st| {
            match outcome {
                AttemptOutcome::Ok => b.ok += 1,
                AttemptOutcome::Rejected => b.rejected += 1,
                AttemptOutcome::Timeout => b.timeouts += 1,
                AttemptOutcome::Error => b.errors += 1,
            }
            if st.watched.contains_key(&doc) {
                b.injected_done += 1;
                if outcome != AttemptOutcome::Ok {
                    b.injected_failed += 1;
                }
            }
            let _ = b.latency.get_or_insert_with(histogram).record(us);
            let _ = st.overall.record(us);
        });
    }

    /// An attempt was still waiting for its answer when the variant ended: it
    /// has no outcome (the client never heard one), only this count.
    pub fn attempt_cut_off(&self) {
        self.tap(Instant::now(), || Event::AttemptCutOff);
        self.state.lock().expect("recorder lock").cut_off += 1;
    }

    /// Attempts sent but never answered before the variant ended.
    pub fn attempts_cut_off(&self) -> u64 {
        self.state.lock().expect("recorder lock").cut_off
    }

    /// A 200 result was checked against the reference computation.
    pub fn result_checked(&self, doc: u64, correct: bool, got: u64, expected: u64) {
        self.checked(doc, correct, (got, expected), || {
            Some(format!(
                "document {doc}: got digest {got:#x}, reference {expected:#x}"
            ))
        });
    }

    /// A generic HTTP answer checked by its class's `check`: `example` says
    /// what was wrong with an incorrect one.
    pub fn result_checked_by(&self, doc: u64, correct: bool, example: Option<String>) {
        self.checked(doc, correct, (0, 0), || example);
    }

    /// A result checked; `example` describes an incorrect one.
    fn checked(
        &self,
        doc: u64,
        correct: bool,
        (got, expected): (u64, u64),
        example: impl FnOnce() -> Option<String>,
    ) {
        self.tap(Instant::now(), || Event::ResultChecked {
            doc,
            correct,
            got,
            expected,
        });
        let mut st = self.state.lock().expect("recorder lock");
        st.integrity.results_checked += 1;
        if !correct {
            st.integrity.incorrect_results += 1;
            if st.integrity.incorrect_examples.len() < 10 {
                st.integrity.incorrect_examples.extend(example());
            }
        }
    }

    pub fn completed(&self, tenant: &str, pages: u32, end_to_end: Duration) {
        let now = Instant::now();
        self.tap(now, || Event::Completed {
            tenant: tenant.to_string(),
            pages,
            end_to_end_us: end_to_end.as_micros() as u64,
        });
        self.completed_at(now, tenant, pages, end_to_end);
    }

    fn completed_at(&self, now: Instant, tenant: &str, pages: u32, end_to_end: Duration) {
        self.with_bucket(now, |b, st| {
            b.completed += 1;
            b.pages_delivered += u64::from(pages);
            st.integrity.completed += 1;
            st.in_flight -= 1;
            let h = st
                .tenants
                .entry(tenant.to_string())
                .or_insert_with(histogram);
            let _ = h.record((end_to_end.as_micros() as u64).max(1));
        });
    }

    /// The client of document `doc` gave up.
    pub fn given_up(&self, doc: u64) {
        let now = Instant::now();
        self.tap(now, || Event::GivenUp { doc });
        self.given_up_at(now, doc);
    }

    fn given_up_at(&self, now: Instant, doc: u64) {
        self.with_bucket(now, |b, st| {
            b.given_up += 1;
            if st.watched.contains_key(&doc) {
                b.injected_given_up += 1;
            }
            st.integrity.given_up += 1;
            st.in_flight -= 1;
        });
    }

    /// The journey was cut off by the end of the variant.
    pub fn pending(&self) {
        self.tap(Instant::now(), || Event::Pending);
        let mut st = self.state.lock().expect("recorder lock");
        st.integrity.pending += 1;
        st.in_flight -= 1;
    }

    /// Keep the end of these journeys (a trigger's documents: id and planned time).
    pub fn watch(&self, journeys: impl IntoIterator<Item = (u64, Duration)>) {
        let mut st = self.state.lock().expect("recorder lock");
        for (d, planned) in journeys {
            let of_doc = st.watched.entry(d).or_default();
            if !of_doc.iter().any(|(p, _)| *p == planned) {
                of_doc.push((planned, None));
            }
        }
        self.watching.store(true, Ordering::Release);
    }

    /// A journey ended (called once per journey, after its outcome was
    /// counted); `planned` is its document's planned time.
    pub fn journey_ended(&self, doc: u64, planned: Duration, how: JourneyEnd) {
        let now = Instant::now();
        self.tap(now, || Event::JourneyEnded {
            doc,
            how,
            planned_ns: planned.as_nanos() as u64,
        });
        self.journey_ended_at(now.saturating_duration_since(self.start), doc, planned, how);
    }

    fn journey_ended_at(&self, at: Duration, doc: u64, planned: Duration, how: JourneyEnd) {
        if !self.watching.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.state.lock().expect("recorder lock");
        let journey = st
            .watched
            .get_mut(&doc)
            .and_then(|js| js.iter_mut().find(|(p, _)| *p == planned));
        if let Some((_, end)) = journey {
            end.get_or_insert((how, at));
        }
    }

    /// How the watched journeys (id, planned time) ended: `None` while any
    /// is still running (or has not started); else the last end and the
    /// count of each outcome.
    pub fn watched_ended(&self, journeys: &[(u64, Duration)]) -> Option<(Duration, [usize; 3])> {
        let st = self.state.lock().expect("recorder lock");
        let mut last = Duration::ZERO;
        let mut counts = [0usize; 3];
        for (d, planned) in journeys {
            let (_, end) = st.watched.get(d)?.iter().find(|(p, _)| p == planned)?;
            let (how, at) = (*end)?;
            last = last.max(at);
            counts[match how {
                JourneyEnd::Completed => 0,
                JourneyEnd::GaveUp => 1,
                JourneyEnd::Pending => 2,
            }] += 1;
        }
        Some((last, counts))
    }

    /// Running totals since the variant started, for the harness's own
    /// `/metrics` (`client_metrics.rs`): what the clients have seen so far.
    pub fn totals(&self) -> ClientTotals {
        let st = self.state.lock().expect("recorder lock");
        let mut t = ClientTotals {
            submitted: st.integrity.submitted,
            distinct_documents: st.seen.len() as u64,
            completed: st.integrity.completed,
            given_up: st.integrity.given_up,
            in_flight: st.in_flight,
            ..ClientTotals::default()
        };
        for b in &st.buckets {
            t.attempts += b.attempts;
            t.ok += b.ok;
            t.rejected += b.rejected;
            t.timeouts += b.timeouts;
            t.errors += b.errors;
        }
        t
    }

    /// Second `t` as [`Recorder::second`] gives it, without folding its
    /// distinct set: with load agents a second's events may still arrive
    /// after it was sampled, and a document attempted again after a fold
    /// would count twice. [`Recorder::refresh`] reads it at the end.
    pub fn peek(&self, t: usize) -> run_report::Second {
        let distinct = {
            let st = self.state.lock().expect("recorder lock");
            st.buckets
                .get(t)
                .map(|b| b.distinct_count.unwrap_or(0) + b.distinct.len() as u64)
        };
        let mut s = self.second_with(t, false);
        if let Some(d) = distinct {
            s.distinct_documents = d;
        }
        s
    }

    /// Sets the client-side fields of `row` to what the recorder holds now
    /// (every field [`Recorder::second`] fills except the sampled `in_flight`).
    pub fn refresh(&self, row: &mut run_report::Second) {
        let c = self.second(row.t as usize);
        row.arrivals = c.arrivals;
        row.repeat_submissions = c.repeat_submissions;
        row.attempts = c.attempts;
        row.distinct_documents = c.distinct_documents;
        row.ok = c.ok;
        row.rejected = c.rejected;
        row.timeouts = c.timeouts;
        row.errors = c.errors;
        row.p50_ms = c.p50_ms;
        row.p99_ms = c.p99_ms;
        row.latency = c.latency;
        row.documents_completed = c.documents_completed;
        row.pages_delivered = c.pages_delivered;
        row.documents_given_up = c.documents_given_up;
        row.injected_attempts_done = c.injected_attempts_done;
        row.injected_attempts_failed = c.injected_attempts_failed;
        row.injected_given_up = c.injected_given_up;
    }

    /// Client-side fields of second `t` (the distinct set is folded into a count).
    pub fn second(&self, t: usize) -> run_report::Second {
        self.second_with(t, true)
    }

    fn second_with(&self, t: usize, fold: bool) -> run_report::Second {
        let mut st = self.state.lock().expect("recorder lock");
        let in_flight = st.in_flight;
        let Some(b) = st.buckets.get_mut(t) else {
            return run_report::Second {
                t: t as u32,
                ..Default::default()
            };
        };
        let distinct = match b.distinct_count {
            Some(c) => c + b.distinct.len() as u64,
            None => b.distinct.len() as u64,
        };
        if fold {
            b.distinct_count = Some(distinct);
            b.distinct = IdSet::default();
        }
        let (p50, p99) = match &b.latency {
            Some(h) if !h.is_empty() => (
                h.value_at_quantile(0.5) as f64 / 1000.0,
                h.value_at_quantile(0.99) as f64 / 1000.0,
            ),
            _ => (0.0, 0.0),
        };
        let mut latency = run_report::LatencyCounts::default();
        for v in b.latency.iter().flat_map(|h| h.iter_recorded()) {
            latency.record_n(v.value_iterated_to() as f64 / 1000.0, v.count_at_value());
        }
        run_report::Second {
            t: t as u32,
            arrivals: b.arrivals,
            repeat_submissions: b.repeats,
            attempts: b.attempts,
            distinct_documents: distinct,
            ok: b.ok,
            rejected: b.rejected,
            timeouts: b.timeouts,
            errors: b.errors,
            p50_ms: p50,
            p99_ms: p99,
            latency,
            in_flight,
            documents_completed: b.completed,
            pages_delivered: b.pages_delivered,
            documents_given_up: b.given_up,
            injected_attempts_done: b.injected_done,
            injected_attempts_failed: b.injected_failed,
            injected_given_up: b.injected_given_up,
            ..Default::default()
        }
    }

    pub fn latency(&self) -> LatencySummary {
        summary(&self.state.lock().expect("recorder lock").overall)
    }

    pub fn tenant_traffic(&self) -> BTreeMap<String, run_report::TenantTraffic> {
        self.state.lock().expect("recorder lock").traffic.clone()
    }

    pub fn tenant_latency(&self) -> BTreeMap<String, LatencySummary> {
        let st = self.state.lock().expect("recorder lock");
        st.tenants
            .iter()
            .map(|(k, h)| (k.clone(), summary(h)))
            .collect()
    }

    pub fn integrity(&self) -> Integrity {
        let st = self.state.lock().expect("recorder lock");
        Integrity {
            pending_agent_lost: st.agent_lost,
            ..st.integrity.clone()
        }
    }

    pub fn late_arrivals(&self) -> u64 {
        self.state.lock().expect("recorder lock").late
    }
}

#[cfg(test)]
mod tests;
