//! The tools around runs: `bench` (its steps), `render k8s`, and the load
//! agent that a run with `--agents` starts.

use crate::experiment::images::{DEFAULT_REDIS_IMAGE, DEFAULT_SUT_IMAGE};
use std::path::PathBuf;

/// One step of the benchmark (`--only`); `storm` is also how the memory step
/// runs itself in a fresh process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchStep {
    Storm,
    Ceiling,
    /// The generic HTTP path (`workload.http`) against wrk.
    Generic,
    Openloop,
    Hotpath,
    Pages,
    Instructions,
}

#[derive(clap::Subcommand)]
pub enum RenderCommand {
    /// Kubernetes manifests: namespace, the system per variant (pools,
    /// gateway, Redis), the coordinator Job + Service, the agents as an
    /// Indexed Job, NetworkPolicies, and a README with the kubectl steps.
    K8s(K8sArgs),
}

#[derive(clap::Args)]
pub struct K8sArgs {
    /// The experiment file (YAML).
    pub experiment: PathBuf,
    /// Load agents per variant (the Indexed Job's completions).
    #[arg(long, default_value_t = 1)]
    pub agents: u32,
    #[arg(long, default_value = "overload-harness")]
    pub namespace: String,
    /// Output folder (created; existing manifests in it are replaced).
    #[arg(long)]
    pub out: PathBuf,
    /// Render the experiment's quick form.
    #[arg(long)]
    pub quick: bool,
    /// The image holding `sut` and `harness` (ci/images.sh builds it as
    /// overload-harness/sut:local; push it under a name the cluster pulls).
    #[arg(long, default_value = DEFAULT_SUT_IMAGE)]
    pub image: String,
    #[arg(long, default_value = DEFAULT_REDIS_IMAGE)]
    pub redis_image: String,
    /// A campaign instead of one run: per variant an Indexed Job of one
    /// self-contained run per seed (`1..20` or `1,4,7`); the pod's
    /// `JOB_COMPLETION_INDEX` picks its seed.
    #[arg(long)]
    pub seeds: Option<String>,
    /// With --seeds: pods of a variant running at once.
    #[arg(long, default_value_t = 10, requires = "seeds")]
    pub parallel: u32,
    /// With --seeds: the image of the pod that mounts the reports for
    /// `kubectl cp` (it needs `tar`).
    #[arg(long, default_value = "debian:bookworm-slim", requires = "seeds")]
    pub reader_image: String,
}

#[derive(clap::Args, Debug, Clone)]
pub struct AgentArgs {
    /// The experiment file: the same one, in the same form, as the coordinator's.
    pub experiment: PathBuf,
    /// The coordinator's agent API, e.g. http://127.0.0.1:7070.
    #[arg(long)]
    pub coordinator: String,
    /// This agent's shard; default: $JOB_COMPLETION_INDEX (a Kubernetes
    /// Indexed Job's pod index).
    #[arg(long)]
    pub shard: Option<u32>,
    /// How many agents share the load.
    #[arg(long)]
    pub of: u32,
    #[arg(long)]
    pub quick: bool,
    #[arg(long)]
    pub seed: Option<u64>,
}
