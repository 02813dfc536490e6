//! `bench --agents N`: the load ceiling of step 1 through load agents, one
//! agent and then N, against the same fixed-503 endpoint.
//!
//! The path measured is the whole agent path: `harness agent` child
//! processes computing their shard of a seeded schedule (offered 50,000/s,
//! more than any of them can send), goose + journeys in each, every event
//! streamed to the coordinator and replayed into its recorder, which counts
//! the attempts done per second. The combined figure is what N agents on
//! this machine reach together; on a host with few cores they share the
//! same CPUs, so no speed-up is expected here: the point of agents is more
//! hosts, not more processes on one.

use super::error::during;
use super::BenchError;
use super::{server, Windows};
use crate::base::interrupt::StopSignal;
use crate::load::Capacity;
use crate::load::{LoadPlan, LoadWindow};
use crate::observe::recorder::Recorder;
use crate::run::agent::coordinator::{AgentSource, Coordinator, Expected};
use crate::run::agent::shard::shard_plans;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub struct AgentCeilings {
    /// (agents, attempts done per second over the window, agents lost).
    pub runs: Vec<(u32, f64, usize)>,
}

/// The experiment the agents load over the window, no retries: the highest
/// rate a file may ask for (the in-process ceiling offers more, 250,000/s,
/// but a file above the validator's limit is refused; the agents' ceilings
/// measured here are far below it).
fn experiment(total: Duration) -> String {
    format!(
        "name: bench-agents\nduration: {}s\nsystem:\n  executor: cpu\n  page: {{ words: 1, rounds: 1 }}\n\
         workload:\n  arrival: {{ constant: {{ rate: {} }} }}\n  documents: {{ pages: {{ fixed: 1 }}, tenants: 1 }}\n\
         \x20 client: {{ timeout: 2s, retry: {{ max_attempts: 1 }} }}\n  max_in_flight: {}\nvariants:\n  only: {{}}\n",
        total.as_secs(),
        crate::experiment::MAX_RATE,
        super::ceiling::MAX_IN_FLIGHT
    )
}

pub fn run(w: &Windows, n: u32) -> Result<AgentCeilings, BenchError> {
    let server_rt = super::runtime("bench-server")?;
    let client_rt = super::runtime("bench-load")?;
    let srv = server_rt.block_on(server::start(super::ceiling::busy_reply()))?;
    let dir = std::env::temp_dir().join(format!("harness-bench-agents-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(during("a folder for the agents' experiment"))?;
    let file = dir.join("bench-agents.yaml");
    std::fs::write(&file, experiment(w.warmup + w.measure))?;
    let mut runs = Vec::new();
    for agents in [1, n] {
        let (rps, lost) = client_rt.block_on(ceiling(&srv.url(""), w, &file, agents))?;
        runs.push((agents, rps, lost));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(AgentCeilings { runs })
}

/// One run through `n` agents: attempts done per second over the window,
/// combined, and how many agents were lost.
async fn ceiling(
    base: &str,
    w: &Windows,
    file: &std::path::Path,
    n: u32,
) -> Result<(f64, usize), BenchError> {
    let exp = crate::experiment::load(file, false)?;
    let mut c = start_agents(&exp, file, n).await?;
    // The clock starts once every agent is there.
    let total = w.warmup + w.measure;
    let start = Instant::now() + Duration::from_millis(1500);
    let window = LoadWindow {
        start,
        load_end: start + total,
        hard_stop: start + total + Duration::from_secs(2),
    };
    let seconds = total.as_secs() as usize + 4;
    let recorder = Arc::new(Recorder::new(start, seconds));
    let stop = Arc::new(StopSignal::default());
    let capacity = Capacity {
        pages_per_sec: 1.0,
        docs_per_sec: 1.0,
    };
    let v = &exp.variants[0];
    let (load_end, hard_stop) = (window.load_end, window.hard_stop);
    let plan = LoadPlan::for_variant(
        &exp,
        v,
        base.to_string(),
        crate::load::plan_documents(&exp, capacity),
        window,
        recorder.clone(),
        stop.clone(),
    );
    let shards = shard_plans(
        &plan,
        n,
        &v.name,
        capacity,
        exp.duration,
        hard_stop,
        seconds,
    );
    c.release(shards.plans, recorder.clone());
    // The arrivals planned exceed what can be sent: end the run at the window's end.
    let stopper = super::stop_at(load_end, &stop);
    let (_, records) = c
        .finish(
            &recorder,
            &shards.planned,
            hard_stop + Duration::from_secs(10),
            &stop,
        )
        .await;
    stopper.abort();
    let lost = records.iter().filter(|r| r.lost.is_some()).count();
    Ok((super::done_per_s(&recorder, w), lost))
}

/// Starts `n` agents as child processes loading `file` and waits (30 s at
/// most) for all of them to say hello.
async fn start_agents(
    exp: &crate::experiment::Experiment,
    file: &std::path::Path,
    n: u32,
) -> Result<Coordinator, BenchError> {
    let expected = Expected {
        experiment_hash: crate::run::agent::protocol::experiment_hash(&exp.source, false),
        seed: exp.seed,
        of: n,
    };
    let source = AgentSource::Children {
        experiment: file.to_path_buf(),
        quick: false,
        seed: exp.seed,
    };
    let mut c = Coordinator::start(([127, 0, 0, 1], 0).into(), expected, &source).await?;
    c.wait_for_agents(Duration::from_secs(30)).await?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    /// The agents' experiment is a file the validator accepts: its rate is
    /// the highest a file may ask for (the in-process ceiling's 250,000/s
    /// was refused, and `bench --agents N` failed).
    #[test]
    fn the_agents_experiment_validates_at_the_highest_rate() {
        let text = super::experiment(std::time::Duration::from_secs(5));
        let exp = crate::experiment::parse(&text, "bench-agents.yaml", false)
            .unwrap_or_else(|e| panic!("{e}"));
        use crate::experiment::{Arrival, Rate, MAX_RATE};
        assert!(matches!(
            exp.workload.arrival,
            Arrival::Constant(Rate::PerSec(r)) if r == MAX_RATE
        ));
    }
}
