//! Load agents for one variant: the coordinator, where the agents come from
//! (this process, or containers on the variant's network), and the drive
//! that hands them their shards.

use super::Clock;
use crate::env::Target;
use crate::experiment::{Experiment, Variant};
use crate::load::Capacity;
use crate::load::{self, LoadPlan};
use crate::run::agent::coordinator::Coordinator;
use crate::run::AgentOptions;
use crate::run::RunError;
use std::time::Duration;

/// Starts the coordinator and waits for every agent's handshake.
pub(super) async fn join_agents(
    exp: &Experiment,
    a: &AgentOptions,
    target: &Target,
) -> Result<Coordinator, RunError> {
    let expected = crate::run::agent::coordinator::Expected {
        experiment_hash: crate::run::agent::protocol::experiment_hash(&exp.source, exp.quick),
        seed: exp.seed,
        of: a.count,
    };
    let (listen, source) = agent_source(exp, a, target).await?;
    let mut c = Coordinator::start(listen, expected, &source).await?;
    c.wait_for_agents(a.join_timeout).await?;
    Ok(c)
}

/// In the containers environment the agents are containers on the
/// variant's network, and the coordinator listens on that network's gateway.
async fn agent_source(
    exp: &Experiment,
    a: &AgentOptions,
    target: &Target,
) -> Result<
    (
        std::net::SocketAddr,
        crate::run::agent::coordinator::AgentSource,
    ),
    RunError,
> {
    use crate::run::agent::coordinator::AgentSource;
    match (&a.source, target.network(), &exp.environment) {
        (
            AgentSource::Children {
                quick,
                seed,
                experiment,
            },
            Some(network),
            crate::experiment::Environment::Containers { images },
        ) => {
            let gateway = crate::env::containers::network_gateway(network).await?;
            // The alert rules beside the file, at the same relative paths.
            let mut files = Vec::new();
            if let Some(alerts) = &exp.alerts {
                let dir = experiment
                    .parent()
                    .unwrap_or(std::path::Path::new("."))
                    .canonicalize()
                    .map_err(RunError::Folder)?;
                let inside = std::path::Path::new(crate::env::containers::AGENT_EXPERIMENT)
                    .parent()
                    .expect("an absolute path");
                for rule in &alerts.rules {
                    let abs = rule.canonicalize().map_err(|error| RunError::Rule {
                        path: rule.clone(),
                        error,
                    })?;
                    let rel = abs
                        .strip_prefix(&dir)
                        .map_err(|_| RunError::RuleOutside(rule.clone()))?;
                    let bytes = std::fs::read(&abs).map_err(|error| RunError::ReadRule {
                        path: abs.clone(),
                        error,
                    })?;
                    files.push((inside.join(rel).to_string_lossy().into_owned(), bytes));
                }
            }
            Ok((
                std::net::SocketAddr::new(gateway, 0),
                AgentSource::Containers {
                    image: images.sut.clone(),
                    network: network.to_string(),
                    experiment_text: exp.source.clone(),
                    files,
                    quick: *quick,
                    seed: *seed,
                },
            ))
        }
        _ => Ok((a.listen, a.source.clone())),
    }
}

/// Hands the agents their shards of `plan` and waits for them; returns
/// goose's counts summed over the agents and what became of each.
pub(super) async fn drive_agents(
    c: &mut Coordinator,
    exp: &Experiment,
    v: &Variant,
    plan: LoadPlan,
    capacity: Capacity,
    clock: &Clock,
) -> (load::LoadOutcome, Vec<run_report::AgentRecord>) {
    let hard_stop = clock.hard_stop;
    let shards = crate::run::agent::shard::shard_plans(
        &plan,
        c.count(),
        &v.name,
        capacity,
        exp.duration,
        hard_stop,
        clock.total_secs,
    );
    let recorder = plan.journeys.recorder.clone();
    c.release(shards.plans, recorder.clone());
    c.finish(
        &recorder,
        &shards.planned,
        hard_stop + Duration::from_secs(10),
        &plan.stop,
    )
    .await
}
