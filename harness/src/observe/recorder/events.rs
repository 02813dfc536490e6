//! The recorder's events: what a load agent's recorder sends (through its
//! tap) and the coordinator's recorder applies, so both count with the same
//! code. Also the accounting of a lost agent's documents.

use super::{id_digest, AttemptOutcome, JourneyEnd, Recorder};
use std::time::Duration;
use tokio::time::Instant;

/// One thing the recorder counted: what a load agent streams to the
/// coordinator (the wire format of `agent::protocol`'s reports).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Submitted {
        doc: u64,
        tenant: String,
    },
    Late,
    /// A journey's first attempt left `lag_us` after its planned time.
    FirstSent {
        lag_us: u64,
    },
    AttemptSent {
        doc: u64,
        tenant: String,
    },
    AttemptDone {
        doc: u64,
        outcome: AttemptOutcome,
        latency_us: u64,
    },
    AttemptCutOff,
    ResultChecked {
        doc: u64,
        correct: bool,
        got: u64,
        expected: u64,
    },
    Completed {
        tenant: String,
        pages: u32,
        end_to_end_us: u64,
    },
    GivenUp {
        doc: u64,
    },
    Pending,
    JourneyEnded {
        doc: u64,
        how: JourneyEnd,
        /// The document's planned time (ns since the start): which journey
        /// of a population's member this was.
        #[serde(default)]
        planned_ns: u64,
    },
}

/// Where a recorder with a tap sends each event, with its offset from the start.
pub type Tap = tokio::sync::mpsc::UnboundedSender<(Duration, Event)>;

impl Recorder {
    /// A recorder that also sends every event to `tap` (a load agent's).
    pub fn with_tap(start: Instant, seconds: usize, tap: Tap) -> Self {
        Recorder {
            tap: Some(tap),
            ..Recorder::new(start, seconds)
        }
    }

    pub(super) fn tap(&self, at: Instant, e: impl FnOnce() -> Event) {
        if let Some(t) = &self.tap {
            let _ = t.send((at.saturating_duration_since(self.start), e()));
        }
    }

    /// Counts an event another process recorded `at` after the start.
    pub fn apply(&self, at: Duration, e: Event) {
        let when = self.start + at;
        match e {
            Event::Submitted { doc, tenant } => self.submitted_at(when, doc, &tenant),
            Event::Late => self.late(),
            Event::FirstSent { lag_us } => self.first_sent(Duration::from_micros(lag_us)),
            Event::AttemptSent { doc, tenant } => self.attempt_sent_at(when, doc, &tenant),
            Event::AttemptDone {
                doc,
                outcome,
                latency_us,
            } => self.attempt_done_at(when, doc, outcome, Duration::from_micros(latency_us)),
            Event::AttemptCutOff => self.attempt_cut_off(),
            Event::ResultChecked {
                doc,
                correct,
                got,
                expected,
            } => self.result_checked(doc, correct, got, expected),
            Event::Completed {
                tenant,
                pages,
                end_to_end_us,
            } => self.completed_at(when, &tenant, pages, Duration::from_micros(end_to_end_us)),
            Event::GivenUp { doc } => self.given_up_at(when, doc),
            Event::Pending => self.pending(),
            Event::JourneyEnded {
                doc,
                how,
                planned_ns,
            } => self.journey_ended_at(at, doc, Duration::from_nanos(planned_ns), how),
        }
    }

    /// A lost load agent's document that had been submitted and not ended:
    /// pending (agent lost).
    pub fn pending_agent_lost(&self) {
        let mut st = self.state.lock().expect("recorder lock");
        st.integrity.pending += 1;
        st.agent_lost += 1;
        st.in_flight = st.in_flight.saturating_sub(1);
    }

    /// A lost load agent's document it never reported submitting: counted
    /// as submitted and pending (agent lost), so nothing goes missing.
    pub fn unreported_agent_lost(&self, doc: u64) {
        let mut st = self.state.lock().expect("recorder lock");
        st.integrity.submitted += 1;
        st.integrity.submitted_digest = st.integrity.submitted_digest.wrapping_add(id_digest(doc));
        st.integrity.pending += 1;
        st.agent_lost += 1;
    }

    /// Documents pending because their load agent was lost.
    pub fn agent_lost(&self) -> u64 {
        self.state.lock().expect("recorder lock").agent_lost
    }
}
