//! One variant's run on Kubernetes (`render k8s` without `--seeds`): the
//! coordinator (the `harness` run, `--deployed` at the gateway's Service) as
//! a Job with the Service its agents reach, and the load agents as an
//! Indexed Job whose `JOB_COMPLETION_INDEX` is the shard. `Jobs` is shared
//! with the campaign's Indexed Jobs (`seeds.rs`).

use super::{
    config_volume, labels, meta, obj, port, requests, service, K8sOptions, RenderError, CONFIG_DIR,
    COORDINATOR_PORT, SUT_PORT,
};
use crate::commands::render::objects::*;
use crate::experiment::Experiment;

/// The coordinator's command line (also quoted in the README).
pub(crate) fn coordinator_args(exp: &Experiment, variant: &str, o: &K8sOptions) -> Vec<String> {
    let mut a: Vec<String> = vec![
        format!("{CONFIG_DIR}/experiment.yaml"),
        "--variant".into(),
        variant.into(),
        "--deployed".into(),
        format!("http://{variant}-gateway:{SUT_PORT}"),
        "--allow-remote".into(),
        "--agents".into(),
        o.agents.to_string(),
        "--agent-listen".into(),
        format!("0.0.0.0:{COORDINATOR_PORT}"),
        "--seed".into(),
        exp.seed.to_string(),
        "--out".into(),
        "/reports".into(),
        "--quiet".into(),
        "--json".into(),
    ];
    if o.quick {
        a.push("--quick".into());
    }
    a
}

/// The agents' command line; the shard comes from `JOB_COMPLETION_INDEX`.
/// They read the same file as the coordinator (the handshake checks it).
pub(crate) fn agent_args(exp: &Experiment, variant: &str, o: &K8sOptions) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "agent".into(),
        format!("{CONFIG_DIR}/experiment.yaml"),
        "--coordinator".into(),
        format!("http://{variant}-coordinator:{COORDINATOR_PORT}"),
        "--of".into(),
        o.agents.to_string(),
        "--seed".into(),
        exp.seed.to_string(),
    ];
    if o.quick {
        a.push("--quick".into());
    }
    a
}

/// A variant's run: the coordinator as a Job with the Service its agents
/// reach, and the agents as an Indexed Job (the index is the shard).
pub(crate) fn run_objects(
    exp: &Experiment,
    ns: &str,
    n: &str,
    o: &K8sOptions,
) -> Result<Vec<serde_json::Value>, RenderError> {
    let jobs = Jobs {
        ns,
        // The run's bound, with room for calibration, agents joining and the drain.
        deadline: exp.duration.as_secs() + 600,
        independent_indexes: false,
    };
    let coordinator_labels = labels(&[("variant", n), ("role", "coordinator")]);
    let (config, mount) = config_volume();
    let reports = Volume {
        name: "reports".into(),
        config_map: None,
        empty_dir: Some(Empty {}),
        persistent_volume_claim: None,
    };
    Ok(vec![
        jobs.job(
            format!("{n}-coordinator"),
            coordinator_labels.clone(),
            coordinator_container(exp, n, o, mount),
            vec![config, reports],
            None,
        )?,
        service(
            ns,
            &format!("{n}-coordinator"),
            coordinator_labels,
            ("agents", COORDINATOR_PORT),
        )?,
        jobs.job(
            format!("{n}-agents"),
            labels(&[("variant", n), ("role", "agent")]),
            agent_container(exp, n, o),
            vec![config_volume().0],
            Some((o.agents, o.agents)),
        )?,
    ])
}

/// The `harness` run of variant `n`, waiting for its agents, its reports
/// written to `/reports`; `config`: the mounted experiment.
fn coordinator_container(
    exp: &Experiment,
    n: &str,
    o: &K8sOptions,
    config: VolumeMount,
) -> Container {
    Container {
        name: "coordinator".into(),
        image: o.image.clone(),
        image_pull_policy: "IfNotPresent",
        command: vec!["/usr/local/bin/harness".into()],
        args: coordinator_args(exp, n, o),
        env: vec![EnvVar {
            name: "XDG_RUNTIME_DIR".into(),
            value: "/tmp".into(),
        }],
        ports: vec![port("agents", COORDINATOR_PORT)],
        volume_mounts: vec![
            config,
            VolumeMount {
                name: "reports".into(),
                mount_path: "/reports".into(),
                read_only: false,
            },
        ],
        readiness_probe: None,
        resources: requests("1", "1Gi"),
    }
}

/// A load agent of variant `n` (`harness agent`).
fn agent_container(exp: &Experiment, n: &str, o: &K8sOptions) -> Container {
    Container {
        name: "agent".into(),
        image: o.image.clone(),
        image_pull_policy: "IfNotPresent",
        command: vec!["/usr/local/bin/harness".into()],
        args: agent_args(exp, n, o),
        env: Vec::new(),
        ports: Vec::new(),
        volume_mounts: vec![config_volume().1],
        readiness_probe: None,
        resources: requests("1", "512Mi"),
    }
}

/// The Jobs of one variant's run: in namespace `ns`, never retried, ended
/// by Kubernetes after `deadline` seconds.
pub(crate) struct Jobs<'a> {
    pub ns: &'a str,
    pub deadline: u64,
    /// Each index is a run of its own (`--seeds`): a failed one (exit 1 when
    /// an expectation failed, as before-fix's may) ends only that index.
    pub independent_indexes: bool,
}

impl Jobs<'_> {
    /// A Job of one pod, or (`indexed: Some((n, at_once))`) an Indexed Job
    /// of `n` pods, `at_once` of them running at a time.
    pub(crate) fn job(
        &self,
        name: String,
        labels: Labels,
        container: Container,
        volumes: Vec<Volume>,
        indexed: Option<(u32, u32)>,
    ) -> Result<serde_json::Value, RenderError> {
        obj(
            "batch/v1",
            "Job",
            meta(&name, self.ns, labels.clone()),
            Spec {
                spec: JobSpec {
                    completion_mode: indexed.map(|_| "Indexed"),
                    completions: indexed.map_or(1, |(n, _)| n),
                    parallelism: indexed.map_or(1, |(_, at_once)| at_once),
                    backoff_limit: (!self.independent_indexes).then_some(0),
                    backoff_limit_per_index: self.independent_indexes.then_some(0),
                    active_deadline_seconds: self.deadline,
                    template: PodTemplate {
                        metadata: TemplateMeta { labels },
                        spec: PodSpec {
                            containers: vec![container],
                            restart_policy: Some("Never"),
                            volumes,
                            automount_service_account_token: false,
                        },
                    },
                },
            },
        )
    }
}
