//! The coordinator's side of the load agents: it serves the agents' HTTP
//! API (`protocol.rs`), starts them as child processes (embedded) or waits
//! for them to come (`--agent-listen`, e.g. the Indexed Job of `render
//! k8s`), hands out the plan and the clock, replays every event they report
//! into the variant's one [`Recorder`], and notices an agent that dies or
//! falls silent.
//!
//! A lost agent is named in the variant's `agents`; its documents that
//! never reported an end are counted as pending (agent lost), those it
//! never reported submitting as submitted and pending (agent lost), so the
//! integrity check still accounts for every planned document and fails.
//!
//! Children never outlive the run: they are killed when the coordinator
//! drops them (`kill_on_drop`), when it dies (`PR_SET_PDEATHSIG`), and they
//! stop themselves when the coordinator stops answering.

use super::launch::{spawn_children, start_containers, AgentArgs};
use super::protocol::{self, Finished, Hello, Plan, Report};
use super::AgentError;
use crate::load::LoadOutcome;
use crate::observe::recorder::{Event, Recorder};
use run_report::AgentRecord;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How the agents come to be.
#[derive(Debug, Clone)]
pub enum AgentSource {
    /// Child processes of this harness: `harness agent FILE ...`.
    Children {
        experiment: PathBuf,
        quick: bool,
        seed: u64,
    },
    /// Agents started elsewhere connect to the listening address.
    Remote,
    /// Containers of the sut image on the variant's Docker network (the
    /// containers environment); they drive the gateway by its name there.
    Containers {
        image: String,
        network: String,
        experiment_text: String,
        /// Files the experiment refers to (alert rules), as (path in the
        /// container, contents): the agents validate the same file.
        files: Vec<(String, Vec<u8>)>,
        quick: bool,
        seed: u64,
    },
}

/// What every agent must agree with.
#[derive(Debug, Clone)]
pub struct Expected {
    pub experiment_hash: String,
    pub seed: u64,
    pub of: u32,
}

#[derive(Default)]
struct AgentState {
    hello: Option<Hello>,
    last_seen: Option<Instant>,
    next_seq: u64,
    done: Option<Finished>,
    lost: Option<String>,
    submitted: HashMap<u64, u32>,
    ended: HashMap<u64, u32>,
}

struct State {
    expected: Expected,
    agents: Vec<AgentState>,
    refused: Vec<String>,
    plans: Option<Vec<Plan>>,
    recorder: Option<Arc<Recorder>>,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, tokio::sync::Notify)>;

/// The agents of one variant.
pub struct Coordinator {
    shared: Shared,
    pub url: String,
    server: tokio::task::JoinHandle<()>,
    children: Vec<Option<tokio::process::Child>>,
    /// Agent containers, removed when dropped.
    containers: Vec<testcontainers::ContainerAsync<testcontainers::GenericImage>>,
    /// The system's URL as the agents see it, when it differs from ours.
    agent_base_url: Option<String>,
    /// The agents run on this machine (children, containers), so their CPU
    /// is part of the harness's share of it.
    on_this_machine: bool,
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.server.abort();
        // kill_on_drop: every child still running is killed here.
    }
}

/// Why an agent's hello is refused: it would not drive the run's plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloRefused {
    /// Another harness version (plans and events must mean the same).
    #[error("agent {shard} runs harness {agent}, the coordinator {coordinator}")]
    Version {
        shard: u32,
        agent: String,
        coordinator: &'static str,
    },
    /// Another experiment file, or the same in another form.
    #[error("agent {shard} loaded a different experiment (hash {agent}, the coordinator's {coordinator}): the same file and form (--quick) on both sides")]
    Experiment {
        shard: u32,
        agent: String,
        coordinator: String,
    },
    /// Another seed (another schedule).
    #[error("agent {shard} runs seed {agent}, the coordinator seed {coordinator}")]
    Seed {
        shard: u32,
        agent: u64,
        coordinator: u64,
    },
    /// A shard the run does not have.
    #[error("agent says shard {shard} of {of}, the coordinator runs {agents} agents")]
    Shard { shard: u32, of: u32, agents: u32 },
}

/// Checks an agent's hello against what the run expects.
pub fn check_hello(e: &Expected, h: &Hello) -> Result<(), HelloRefused> {
    if h.harness_version != protocol::harness_version() {
        return Err(HelloRefused::Version {
            shard: h.shard,
            agent: h.harness_version.clone(),
            coordinator: protocol::harness_version(),
        });
    }
    if h.experiment_hash != e.experiment_hash {
        return Err(HelloRefused::Experiment {
            shard: h.shard,
            agent: h.experiment_hash.clone(),
            coordinator: e.experiment_hash.clone(),
        });
    }
    if h.seed != e.seed {
        return Err(HelloRefused::Seed {
            shard: h.shard,
            agent: h.seed,
            coordinator: e.seed,
        });
    }
    if h.of != e.of || h.shard >= e.of {
        return Err(HelloRefused::Shard {
            shard: h.shard,
            of: h.of,
            agents: e.of,
        });
    }
    Ok(())
}

async fn hello(
    axum::extract::State(shared): axum::extract::State<Shared>,
    axum::Json(h): axum::Json<Hello>,
) -> Result<axum::Json<Plan>, (axum::http::StatusCode, String)> {
    let conflict = |m: String| (axum::http::StatusCode::CONFLICT, m);
    {
        let mut st = shared.0.lock().expect("coordinator lock");
        if let Err(refused) = check_hello(&st.expected, &h) {
            let m = refused.to_string();
            st.refused.push(m.clone());
            shared.1.notify_waiters();
            return Err(conflict(m));
        }
        let a = &mut st.agents[h.shard as usize];
        if a.hello.is_some() {
            return Err(conflict(format!("shard {} has an agent already", h.shard)));
        }
        a.hello = Some(h.clone());
        shared.1.notify_waiters();
    }
    // Held until every agent said hello and the clock is set.
    loop {
        let notified = shared.1.notified();
        {
            let st = shared.0.lock().expect("coordinator lock");
            if let Some(plans) = &st.plans {
                return Ok(axum::Json(plans[h.shard as usize].clone()));
            }
            if st.stop {
                return Err(conflict("the run stopped before it started".into()));
            }
        }
        notified.await;
    }
}

async fn report(
    axum::extract::State(shared): axum::extract::State<Shared>,
    axum::Json(r): axum::Json<Report>,
) -> Result<axum::Json<serde_json::Value>, (axum::http::StatusCode, String)> {
    let mut st = shared.0.lock().expect("coordinator lock");
    let stop = st.stop;
    let Some(recorder) = st.recorder.clone() else {
        return Err((axum::http::StatusCode::CONFLICT, "no plan yet".into()));
    };
    let Some(a) = st.agents.get_mut(r.shard as usize) else {
        return Err((axum::http::StatusCode::BAD_REQUEST, "no such shard".into()));
    };
    if a.lost.is_some() {
        return Err((
            axum::http::StatusCode::GONE,
            "this agent was declared lost; its reports are no longer counted".into(),
        ));
    }
    a.last_seen = Some(Instant::now());
    if r.seq < a.next_seq {
        // Its answer was lost and it sent the report again: counted already.
        return Ok(axum::Json(serde_json::json!({ "stop": stop })));
    }
    if r.seq > a.next_seq {
        a.lost = Some(format!(
            "report {} arrived after {}: reports went missing",
            r.seq, a.next_seq
        ));
        shared.1.notify_waiters();
        return Err((axum::http::StatusCode::GONE, "reports went missing".into()));
    }
    a.next_seq += 1;
    for (at_us, e) in r.events {
        match &e {
            Event::Submitted { doc, .. } => *a.submitted.entry(*doc).or_default() += 1,
            Event::JourneyEnded { doc, .. } => *a.ended.entry(*doc).or_default() += 1,
            _ => {}
        }
        recorder.apply(Duration::from_micros(at_us), e);
    }
    if r.done.is_some() {
        a.done = r.done;
        shared.1.notify_waiters();
    }
    Ok(axum::Json(serde_json::json!({ "stop": stop })))
}

impl Coordinator {
    /// Listens on `listen` and, for [`AgentSource::Children`], starts `of` agents.
    pub async fn start(
        listen: SocketAddr,
        expected: Expected,
        source: &AgentSource,
    ) -> Result<Coordinator, AgentError> {
        let of = expected.of;
        let shared = State::shared(expected);
        let (server, url) = serve(listen, shared.clone()).await?;
        let mut children = Vec::new();
        let mut containers = Vec::new();
        let mut agent_base_url = None;
        match source {
            AgentSource::Children {
                experiment,
                quick,
                seed,
            } => {
                let args = AgentArgs::new(&url, of, *seed, *quick);
                children = spawn_children(experiment, &args)?;
            }
            AgentSource::Containers {
                image,
                network,
                experiment_text,
                files,
                quick,
                seed,
            } => {
                let args = AgentArgs::new(&url, of, *seed, *quick);
                containers =
                    start_containers(&args, image, network, experiment_text, files).await?;
                agent_base_url = Some(crate::env::containers::gateway_url_inside(network));
            }
            AgentSource::Remote => {}
        }
        Ok(Coordinator {
            shared,
            url,
            server,
            children,
            containers,
            agent_base_url,
            on_this_machine: !matches!(source, AgentSource::Remote),
        })
    }

    /// Whether the agents run on this machine (their CPU counts in its share).
    pub fn on_this_machine(&self) -> bool {
        self.on_this_machine
    }

    /// How many agents share the load.
    pub fn count(&self) -> u32 {
        self.shared.0.lock().expect("coordinator lock").expected.of
    }

    /// Waits until every agent said hello; refused agents, children that
    /// died and the timeout are errors.
    pub async fn wait_for_agents(&mut self, timeout: Duration) -> Result<(), AgentError> {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.shared.1.notified();
            {
                let st = self.shared.0.lock().expect("coordinator lock");
                if let Some(m) = st.refused.first() {
                    return Err(AgentError::RefusedAgent(m.clone()));
                }
                if st.agents.iter().all(|a| a.hello.is_some()) {
                    return Ok(());
                }
            }
            for (shard, c) in self.children.iter_mut().enumerate() {
                if let Some(Ok(Some(status))) = c.as_mut().map(|c| c.try_wait()) {
                    return Err(AgentError::Exited { shard, status });
                }
            }
            if Instant::now() >= deadline {
                let st = self.shared.0.lock().expect("coordinator lock");
                let missing: Vec<String> = st
                    .agents
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.hello.is_none())
                    .map(|(i, _)| i.to_string())
                    .collect();
                return Err(AgentError::NoHandshake {
                    missing: missing.join(", "),
                    timeout,
                    url: self.url.clone(),
                });
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
        }
    }

    /// Hands every agent its plan (and so the clock); from now on their
    /// events go into `recorder`.
    pub fn release(&self, mut plans: Vec<Plan>, recorder: Arc<Recorder>) {
        if let Some(url) = &self.agent_base_url {
            for p in &mut plans {
                p.base_url = url.clone();
            }
        }
        let mut st = self.shared.0.lock().expect("coordinator lock");
        let now = Instant::now();
        for a in &mut st.agents {
            a.last_seen = Some(now);
        }
        st.recorder = Some(recorder);
        st.plans = Some(plans);
        self.shared.1.notify_waiters();
    }

    /// Waits for every agent to finish or be lost (bounded by `limit`:
    /// the hard stop plus a margin); then settles lost agents' documents.
    /// `planned[i]`: shard i's documents planned before the load's end.
    pub async fn finish(
        &mut self,
        recorder: &Recorder,
        planned: &[Vec<u64>],
        limit: Instant,
        stop: &crate::base::interrupt::StopSignal,
    ) -> (LoadOutcome, Vec<AgentRecord>) {
        let shared = self.shared.clone();
        loop {
            let notified = shared.1.notified();
            if self.all_settled(limit, stop) {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
        }
        self.kill_lost();
        for c in self.containers.drain(..) {
            let _ = c.rm().await;
        }
        let st = self.shared.0.lock().expect("coordinator lock");
        st.outcome(recorder, planned)
    }

    /// One look at the agents while the run ends: passes the stop signal on,
    /// declares lost the agents whose process exited, that fell silent or
    /// that outlived `limit`. True once every agent finished or is lost
    /// (and then tells any still reporting to stop).
    fn all_settled(&mut self, limit: Instant, stop: &crate::base::interrupt::StopSignal) -> bool {
        let silence = Duration::from_millis(protocol::SILENCE_LIMIT_MS);
        let now = Instant::now();
        let exits = self.exited_children();
        let mut st = self.shared.0.lock().expect("coordinator lock");
        st.stop = stop.is_set();
        for (i, status) in exits {
            self.children[i] = None;
            let a = &mut st.agents[i];
            if !a.settled() {
                a.lost = Some(format!(
                    "the agent process exited ({status}) before it finished"
                ));
            }
        }
        for a in st.agents.iter_mut().filter(|a| !a.settled()) {
            if a.last_seen
                .is_some_and(|t| now.duration_since(t) >= silence)
            {
                a.lost = Some(format!("stopped reporting for {} s", silence.as_secs()));
            } else if now >= limit {
                a.lost = Some("did not finish by the variant's hard stop".into());
            }
        }
        if st.agents.iter().all(AgentState::settled) {
            st.stop = true;
            return true;
        }
        false
    }

    /// The child agents that exited since the last look, with their status.
    fn exited_children(&mut self) -> Vec<(usize, String)> {
        self.children
            .iter_mut()
            .enumerate()
            .filter_map(|(i, c)| match c.as_mut()?.try_wait() {
                Ok(Some(status)) => Some((i, status.to_string())),
                _ => None,
            })
            .collect()
    }

    /// A lost agent that is still running (silent, stuck) goes now.
    fn kill_lost(&mut self) {
        let st = self.shared.0.lock().expect("coordinator lock");
        for (i, a) in st.agents.iter().enumerate() {
            if let (Some(_), Some(Some(c))) = (&a.lost, self.children.get_mut(i)) {
                let _ = c.start_kill();
            }
        }
    }
}

/// Serves the agents' API on `listen`; returns the server task and its URL.
async fn serve(
    listen: SocketAddr,
    shared: Shared,
) -> Result<(tokio::task::JoinHandle<()>, String), AgentError> {
    let app = axum::Router::new()
        .route(protocol::HELLO_PATH, axum::routing::post(hello))
        .route(protocol::REPORT_PATH, axum::routing::post(report))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| AgentError::Bind { listen, error })?;
    let addr = listener.local_addr().map_err(AgentError::Io)?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((server, format!("http://{addr}")))
}

impl AgentState {
    /// Finished, or declared lost: nothing more is waited for from it.
    fn settled(&self) -> bool {
        self.done.is_some() || self.lost.is_some()
    }

    /// Accounts for a lost agent's documents (`planned`: its shard's, before
    /// the load's end): those submitted but never ended are pending, those
    /// never reported submitted are unreported; returns how many.
    fn settle_lost(&self, planned: &[u64], recorder: &Recorder) -> u64 {
        let mut lost_docs = 0;
        let mut expected: HashMap<u64, u32> = HashMap::new();
        for id in planned {
            *expected.entry(*id).or_default() += 1;
        }
        for (id, n) in &expected {
            let sub = self.submitted.get(id).copied().unwrap_or(0);
            let end = self.ended.get(id).copied().unwrap_or(0);
            for _ in end..sub {
                recorder.pending_agent_lost();
                lost_docs += 1;
            }
            for _ in sub..*n {
                recorder.unreported_agent_lost(*id);
                lost_docs += 1;
            }
        }
        lost_docs
    }
}

impl State {
    /// The state every handler and the coordinator share, before any agent came.
    fn shared(expected: Expected) -> Shared {
        let of = expected.of;
        Arc::new((
            Mutex::new(State {
                expected,
                agents: (0..of).map(|_| AgentState::default()).collect(),
                refused: Vec::new(),
                plans: None,
                recorder: None,
                stop: false,
            }),
            tokio::sync::Notify::new(),
        ))
    }

    /// The load's outcome summed over the agents that finished, and each
    /// agent's record, its lost documents settled into `recorder`.
    fn outcome(
        &self,
        recorder: &Recorder,
        planned: &[Vec<u64>],
    ) -> (LoadOutcome, Vec<AgentRecord>) {
        let mut out = LoadOutcome::default();
        let mut records = Vec::new();
        for (i, a) in self.agents.iter().enumerate() {
            if let Some(d) = &a.done {
                out.goose_requests += d.goose_requests;
                out.goose_failures += d.goose_failures;
                out.journeys += d.journeys;
            }
            let lost_docs = if a.lost.is_some() {
                a.settle_lost(&planned[i], recorder)
            } else {
                0
            };
            records.push(AgentRecord {
                name: format!(
                    "agent-{i} ({})",
                    a.hello
                        .as_ref()
                        .map(|h| h.whereabouts.as_str())
                        .unwrap_or("never connected")
                ),
                shard: i as u32,
                of: self.expected.of,
                documents: planned[i].len() as u64,
                lost: a.lost.clone(),
                pending_agent_lost: lost_docs,
                cpu_s: a.done.as_ref().and_then(|d| d.cpu_s),
            });
        }
        (out, records)
    }
}
