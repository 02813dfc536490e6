//! The recorder's unit tests: per-second counts, integrity, schedule lag.

use super::*;

#[tokio::test(start_paused = true)]
async fn buckets_by_second_and_accounts_documents() {
    let r = Recorder::new(Instant::now(), 5);
    r.submitted(1, "t1");
    r.attempt_sent(1, "t1");
    r.attempt_done(1, AttemptOutcome::Rejected, Duration::from_millis(3));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    r.attempt_sent(1, "t1");
    r.attempt_sent(1, "t1");
    r.attempt_done(1, AttemptOutcome::Ok, Duration::from_millis(10));
    r.result_checked(1, true, 5, 5);
    r.completed("t1", 3, Duration::from_millis(1200));
    let s0 = r.second(0);
    let s1 = r.second(1);
    assert_eq!(
        (s0.arrivals, s0.attempts, s0.rejected, s0.distinct_documents),
        (1, 1, 1, 1)
    );
    assert_eq!(
        (
            s1.attempts,
            s1.ok,
            s1.distinct_documents,
            s1.documents_completed,
            s1.pages_delivered
        ),
        (2, 1, 1, 1, 3)
    );
    let i = r.integrity();
    assert!(i.accounted());
    assert_eq!(
        (
            i.submitted,
            i.completed,
            i.results_checked,
            i.incorrect_results
        ),
        (1, 1, 1, 0)
    );
    assert_eq!(r.totals().in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn a_second_keeps_every_attempts_latency_for_the_verdict() {
    let r = Recorder::new(Instant::now(), 5);
    for ms in [40, 41, 42, 43, 900] {
        r.attempt_done(1, AttemptOutcome::Ok, Duration::from_millis(ms));
    }
    r.attempt_done(2, AttemptOutcome::Timeout, Duration::from_millis(875));
    let s = r.second(0);
    assert_eq!(s.latency.count(), 6, "{:?}", s.latency);
    assert_eq!(s.latency.count_slower_than(100.0), 2);
    assert_eq!(s.latency.count_slower_than(880.0), 1);
    // refresh() carries them too (the agents' path).
    let mut row = run_report::Second::default();
    r.refresh(&mut row);
    assert_eq!(row.latency, s.latency);
}

#[tokio::test(start_paused = true)]
async fn watched_documents_end_when_their_last_journey_does() {
    let r = Recorder::new(Instant::now(), 5);
    let z = Duration::ZERO;
    r.watch([(1, z), (2, z), (3, z)]);
    r.journey_ended(1, z, JourneyEnd::Completed);
    r.journey_ended(9, z, JourneyEnd::Completed); // not watched: ignored
    assert_eq!(r.watched_ended(&[(1, z), (2, z), (3, z)]), None);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    r.journey_ended(2, z, JourneyEnd::GaveUp);
    r.journey_ended(3, z, JourneyEnd::Pending);
    r.journey_ended(3, z, JourneyEnd::Completed); // the first end counts
    let (last, counts) = r
        .watched_ended(&[(1, z), (2, z), (3, z)])
        .expect("all ended");
    assert_eq!(last, Duration::from_millis(1500));
    assert_eq!(counts, [1, 1, 1]);
    assert_eq!(r.watched_ended(&[(4, z)]), None);
}

#[tokio::test(start_paused = true)]
async fn a_watched_journey_is_told_from_other_draws_of_the_same_member() {
    // A population's member 5, drawn by a load spike at 20 s and 21 s and
    // by the regular traffic at 3 s: only the spike's journeys are watched.
    let r = Recorder::new(Instant::now(), 30);
    let (a, b) = (Duration::from_secs(20), Duration::from_secs(21));
    r.watch([(5, a), (5, b)]);
    r.journey_ended(5, Duration::from_secs(3), JourneyEnd::Completed);
    assert_eq!(r.watched_ended(&[(5, a), (5, b)]), None);
    r.journey_ended(5, a, JourneyEnd::GaveUp);
    assert_eq!(r.watched_ended(&[(5, a), (5, b)]), None);
    r.journey_ended(5, b, JourneyEnd::Completed);
    let (_, counts) = r.watched_ended(&[(5, a), (5, b)]).expect("both ended");
    assert_eq!(counts, [1, 1, 0]);
}

#[tokio::test(start_paused = true)]
async fn outcomes_of_injected_documents_are_counted_apart() {
    // Document 7 is a trigger's (watched); 1 is an ordinary customer's.
    let r = Recorder::new(Instant::now(), 2);
    r.watch([(7, Duration::ZERO)]);
    for doc in [1, 7] {
        r.submitted(doc, "t");
        r.attempt_sent(doc, "t");
    }
    r.attempt_done(7, AttemptOutcome::Timeout, Duration::from_millis(900));
    r.attempt_done(1, AttemptOutcome::Rejected, Duration::from_millis(3));
    r.attempt_done(7, AttemptOutcome::Ok, Duration::from_millis(5));
    r.given_up(7);
    r.given_up(1);
    let s = r.second(0);
    assert_eq!(
        (s.ok, s.rejected, s.timeouts, s.documents_given_up),
        (1, 1, 1, 2)
    );
    assert_eq!(
        (
            s.injected_attempts_done,
            s.injected_attempts_failed,
            s.injected_given_up
        ),
        (2, 1, 1)
    );
}

#[test]
fn schedule_lag_counts_what_was_sent_behind() {
    let r = Recorder::new(Instant::now(), 1);
    assert_eq!(r.schedule_lag().p99_ms, None);
    for _ in 0..98 {
        r.first_sent(Duration::from_micros(200));
    }
    r.first_sent(Duration::from_millis(20));
    r.first_sent(Duration::from_millis(40));
    let l = r.schedule_lag();
    assert_eq!((l.sent, l.behind), (100, 2));
    assert!(l.p50_ms.unwrap() < 0.3, "{l:?}");
    assert!(l.p99_ms.unwrap() > 19.0, "{l:?}");
    assert!((l.max_ms.unwrap() - 40.0).abs() < 0.1, "{l:?}");
}

#[tokio::test(start_paused = true)]
async fn an_agents_schedule_lag_reaches_the_coordinator() {
    // A run with --agents judges the load's delivery from the events the
    // agents stream: the lag of their first sends must be among them.
    let start = Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let agent = Recorder::with_tap(start, 2, tx);
    agent.first_sent(Duration::from_micros(300));
    agent.first_sent(Duration::from_millis(30));
    let coordinator = Recorder::new(start, 2);
    while let Ok((at, e)) = rx.try_recv() {
        coordinator.apply(at, e);
    }
    let (a, c) = (agent.schedule_lag(), coordinator.schedule_lag());
    assert_eq!((c.sent, c.behind), (2, 1), "{c:?}");
    assert_eq!(
        (a.p50_ms, a.p99_ms, a.max_ms),
        (c.p50_ms, c.p99_ms, c.max_ms)
    );
}

#[tokio::test(start_paused = true)]
async fn incorrect_results_are_kept_as_examples() {
    let r = Recorder::new(Instant::now(), 1);
    r.result_checked(9, false, 1, 2);
    let i = r.integrity();
    assert_eq!(i.incorrect_results, 1);
    assert!(i.incorrect_examples[0].contains("document 9"));
}
