//! `harness render k8s`: the experiment as Kubernetes manifests.
//!
//! The same split as the containers environment (ARCHITECTURE.md, "The
//! system under test: one request"), one set per variant because variants differ in
//! the system's configuration: a pool Deployment + Service per zone
//! (`sut --role pool`), the gateway Deployment + Service (`sut --role
//! gateway --pool ZONE=URL ...`), Redis when the cache is Redis; then the
//! coordinator (the `harness` run of that variant, `--deployed` at the
//! gateway's Service, waiting for agents on `--agent-listen`) as a Job with a
//! Service, and the load agents as an Indexed Job whose
//! `JOB_COMPLETION_INDEX` is the shard. NetworkPolicies deny everything in
//! the namespace except traffic between its own pods (and DNS), one allow
//! policy per pod group so a zone outage can be *deleting its pool's policy*
//! (see `readme.rs`).
//!
//! Nothing here talks to a cluster: the output is files, checked offline
//! against a pinned Kubernetes schema by `kubernetes-validate`.

pub(super) mod policies;
pub(super) mod run_jobs;

use super::objects::*;
use crate::experiment::Experiment;
use std::collections::BTreeMap;
use sut::config::CacheBackend;

/// The port every sut process listens on in its pod (as in its container).
pub(crate) use crate::env::containers::{REDIS_PORT, SUT_PORT};
/// Where a coordinator waits for its agents.
pub(crate) const COORDINATOR_PORT: u16 = 7070;
pub(crate) const CONFIG_DIR: &str = "/etc/harness";

/// What to render.
#[derive(Debug, Clone)]
pub struct K8sOptions {
    pub namespace: String,
    pub agents: u32,
    /// The image with `sut` and `harness` (ci/images.sh builds it locally;
    /// push it to a registry the cluster pulls from).
    pub image: String,
    pub redis_image: String,
    /// Render the experiment's quick form (passes `--quick` to the coordinator).
    pub quick: bool,
}

/// One manifest file: its name in the output folder and its documents.
pub struct Manifest {
    pub file: String,
    pub documents: Vec<serde_json::Value>,
}

/// Why the experiment cannot be rendered, or its files not written.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{what} {name:?} is not a valid Kubernetes name (lowercase letters, digits and '-', starting and ending with a letter or digit, at most {max} characters{extra})")]
    BadName {
        what: &'static str,
        name: String,
        max: usize,
        extra: &'static str,
    },
    #[error("--agents must be between 1 and 1000, not {0}")]
    Agents(u32),
    #[error("{0}")]
    Environment(String),
    #[error("serializing a manifest: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The experiment file itself is invalid.
    #[error(transparent)]
    Experiment(#[from] crate::experiment::ExperimentError),
    /// A manifest's documents could not be written as YAML.
    #[error("{file}: {error}")]
    Yaml {
        file: String,
        error: serde_saphyr::SerializeError,
    },
    /// The output folder could not be created.
    #[error("creating {}: {error}", path.display())]
    CreateDir {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    /// A file could not be written.
    #[error("writing {}: {error}", path.display())]
    Write {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

/// A DNS-1123 label (names of namespaces, services, and the variant/zone
/// parts of object names).
pub(crate) fn check_name(what: &'static str, name: &str, max: usize) -> Result<(), RenderError> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(RenderError::BadName {
            what,
            name: name.to_string(),
            max,
            extra: if max < 63 {
                ", so that the object names built from it stay within 63"
            } else {
                ""
            },
        })
    }
}

pub(crate) fn labels(pairs: &[(&str, &str)]) -> Labels {
    let mut l: Labels = pairs
        .iter()
        .map(|(k, v)| (format!("overload-harness/{k}"), v.to_string()))
        .collect();
    l.insert(
        "app.kubernetes.io/part-of".into(),
        "overload-harness".into(),
    );
    l
}

pub(crate) fn meta(name: &str, ns: &str, labels: Labels) -> ObjectMeta {
    ObjectMeta {
        name: name.to_string(),
        namespace: Some(ns.to_string()),
        labels,
    }
}

pub(crate) fn obj<T: serde::Serialize>(
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    body: T,
) -> Result<serde_json::Value, RenderError> {
    Ok(serde_json::to_value(Object {
        api_version,
        kind,
        metadata,
        body,
    })?)
}

pub(crate) fn requests(cpu: &str, memory: &str) -> Resources {
    Resources {
        requests: [("cpu", cpu.to_string()), ("memory", memory.to_string())]
            .into_iter()
            .collect(),
    }
}

pub(crate) fn port(name: &str, p: u16) -> ContainerPort {
    ContainerPort {
        name: name.into(),
        container_port: p,
        protocol: "TCP",
    }
}

pub(crate) fn config_volume() -> (Volume, VolumeMount) {
    (
        Volume {
            name: "harness-config".into(),
            config_map: Some(ConfigMapVolume {
                name: "harness-config".into(),
            }),
            empty_dir: None,
            persistent_volume_claim: None,
        },
        VolumeMount {
            name: "harness-config".into(),
            mount_path: CONFIG_DIR.into(),
            read_only: true,
        },
    )
}

/// A Deployment of one replica and the Service in front of it.
fn deployment_and_service(
    ns: &str,
    name: &str,
    labels: Labels,
    container: Container,
    volumes: Vec<Volume>,
    service_port: (&str, u16),
) -> Result<Vec<serde_json::Value>, RenderError> {
    let deployment = obj(
        "apps/v1",
        "Deployment",
        meta(name, ns, labels.clone()),
        Spec {
            spec: DeploymentSpec {
                replicas: 1,
                selector: LabelSelector {
                    match_labels: labels.clone(),
                },
                template: PodTemplate {
                    metadata: TemplateMeta {
                        labels: labels.clone(),
                    },
                    spec: PodSpec {
                        containers: vec![container],
                        restart_policy: None,
                        volumes,
                        automount_service_account_token: false,
                    },
                },
            },
        },
    )?;
    let service = service(ns, name, labels, service_port)?;
    Ok(vec![deployment, service])
}

/// A Service named `name` in front of the pods labelled `labels`, on one TCP
/// port (`(name, number)`, the same number on the pods).
pub(crate) fn service(
    ns: &str,
    name: &str,
    labels: Labels,
    (port_name, number): (&str, u16),
) -> Result<serde_json::Value, RenderError> {
    obj(
        "v1",
        "Service",
        meta(name, ns, labels.clone()),
        Spec {
            spec: ServiceSpec {
                selector: labels,
                ports: vec![ServicePort {
                    name: port_name.into(),
                    port: number,
                    target_port: number,
                    protocol: "TCP",
                }],
            },
        },
    )
}

pub(crate) fn needs_redis(s: &sut::SystemConfig) -> bool {
    matches!(&s.cache.backend, CacheBackend::Redis(r) if r.url.is_none())
}

/// Every manifest of the experiment, in the order `kubectl apply` should see them.
pub fn render(exp: &Experiment, o: &K8sOptions) -> Result<Vec<Manifest>, RenderError> {
    check_renderable(exp, o)?;
    let ns = o.namespace.as_str();
    let mut out = namespace_and_config(exp, ns)?;
    for v in &exp.variants {
        out.push(Manifest {
            file: format!("10-{}-system.yaml", v.name),
            documents: system_objects(ns, v, o)?,
        });
        out.push(Manifest {
            file: format!("20-{}-run.yaml", v.name),
            documents: run_jobs::run_objects(exp, ns, &v.name, o)?,
        });
    }
    out.push(Manifest {
        file: "30-network-policies.yaml".into(),
        documents: policies::network_policies(exp, ns)?,
    });
    Ok(out)
}

/// What every rendering starts with: the namespace, and the ConfigMap with
/// the experiment file and each variant's system configuration.
pub(crate) fn namespace_and_config(
    exp: &Experiment,
    ns: &str,
) -> Result<Vec<Manifest>, RenderError> {
    Ok(vec![
        Manifest {
            file: "00-namespace.yaml".into(),
            documents: vec![obj(
                "v1",
                "Namespace",
                ObjectMeta {
                    name: ns.into(),
                    namespace: None,
                    labels: labels(&[]),
                },
                Empty {},
            )?],
        },
        Manifest {
            file: "01-config.yaml".into(),
            documents: vec![config_map(exp, ns)?],
        },
    ])
}

/// Refuses what the manifests cannot carry: names Kubernetes would reject
/// (or that grow past 63 characters in the object names built from them),
/// an agent count out of range, a system the harness does not start, and
/// alert rules (no Prometheus is deployed).
pub(crate) fn check_renderable(exp: &Experiment, o: &K8sOptions) -> Result<(), RenderError> {
    check_name("the namespace", &o.namespace, 63)?;
    if !(1..=1000).contains(&o.agents) {
        return Err(RenderError::Agents(o.agents));
    }
    if let crate::experiment::Environment::Processes(_) = exp.environment {
        return Err(RenderError::Environment(format!(
            "{} runs its own processes; only an embedded or containers experiment can be rendered",
            exp.name
        )));
    }
    if let crate::experiment::Environment::External { .. } = exp.environment {
        return Err(RenderError::Environment(format!(
            "{} drives an external target; only an embedded or containers experiment (whose system the harness starts) can be rendered",
            exp.name
        )));
    }
    if exp.alerts.is_some() {
        return Err(RenderError::Environment(format!(
            "{} evaluates alert rules on a Prometheus (`alerts:`), which the image does not carry and these manifests do not deploy; render a copy without `alerts:` (its expectations on alerts removed)",
            exp.name
        )));
    }
    if let Some(v) = exp
        .variants
        .iter()
        .find(|v| v.system.gateway.proxy.is_some())
    {
        return Err(RenderError::Environment(format!(
            "{}: variant {} has a proxy gateway (HAProxy or nginx), which these manifests do not deploy (they run the system's own gateway); render a copy without `system.gateway.proxy`",
            exp.name, v.name
        )));
    }
    for v in &exp.variants {
        // "<variant>-coordinator" and "<variant>-allow-coordinator" must fit in 63.
        check_name("a variant name", &v.name, 40)?;
        for z in &v.system.zones {
            check_name("a zone name", z, 20)?;
        }
    }
    Ok(())
}

/// One ConfigMap: the experiment file and each variant's system
/// configuration, its Redis URL pointing at the variant's Redis Service.
pub(crate) fn config_map(exp: &Experiment, ns: &str) -> Result<serde_json::Value, RenderError> {
    let mut data = BTreeMap::new();
    data.insert("experiment.yaml".to_string(), exp.source.clone());
    for v in &exp.variants {
        let mut system = v.system.clone();
        if let CacheBackend::Redis(r) = &mut system.cache.backend {
            if r.url.is_none() {
                r.url = Some(format!("redis://{}-redis:{REDIS_PORT}", v.name));
            }
        }
        data.insert(
            format!("system-{}.json", v.name),
            serde_json::to_string_pretty(&system)?,
        );
    }
    obj(
        "v1",
        "ConfigMap",
        meta("harness-config", ns, labels(&[])),
        ConfigMapBody { data },
    )
}

/// A variant's system: Redis (when the cache asks for one), a pool per
/// zone, and the gateway in front of the pools, each a Deployment with its
/// Service.
fn system_objects(
    ns: &str,
    v: &crate::experiment::Variant,
    o: &K8sOptions,
) -> Result<Vec<serde_json::Value>, RenderError> {
    let n = &v.name;
    let config = format!("{CONFIG_DIR}/system-{n}.json");
    let mut docs = Vec::new();
    if let CacheBackend::Redis(r) = &v.system.cache.backend {
        if r.url.is_none() {
            docs.extend(redis_objects(ns, n, r, o)?);
        }
    }
    let mut pools = Vec::new();
    for z in &v.system.zones {
        let name = format!("{n}-pool-{z}");
        docs.extend(deployment_and_service(
            ns,
            &name,
            labels(&[("variant", n), ("role", "pool"), ("zone", z)]),
            sut_container(
                o,
                "pool",
                crate::env::containers::sut_args(&config, "pool", Some(z)),
            ),
            vec![config_volume().0],
            ("http", SUT_PORT),
        )?);
        pools.push("--pool".to_string());
        pools.push(format!("{z}=http://{name}:{SUT_PORT}"));
    }
    let mut args = crate::env::containers::sut_args(&config, "gateway", None);
    args.extend(pools);
    docs.extend(deployment_and_service(
        ns,
        &format!("{n}-gateway"),
        labels(&[("variant", n), ("role", "gateway")]),
        sut_container(o, "gateway", args),
        vec![config_volume().0],
        ("http", SUT_PORT),
    )?);
    Ok(docs)
}

/// The variant's Redis (`<variant>-redis`), run with the experiment's
/// memory limit and eviction policy.
fn redis_objects(
    ns: &str,
    n: &str,
    r: &sut::config::RedisCacheConfig,
    o: &K8sOptions,
) -> Result<Vec<serde_json::Value>, RenderError> {
    let redis = Container {
        name: "redis".into(),
        image: o.redis_image.clone(),
        image_pull_policy: "IfNotPresent",
        command: Vec::new(),
        args: crate::env::containers::redis_server_args(r),
        env: Vec::new(),
        ports: vec![port("redis", REDIS_PORT)],
        volume_mounts: Vec::new(),
        readiness_probe: None,
        resources: requests("250m", "256Mi"),
    };
    deployment_and_service(
        ns,
        &format!("{n}-redis"),
        labels(&[("variant", n), ("role", "redis")]),
        redis,
        Vec::new(),
        ("redis", REDIS_PORT),
    )
}

/// A sut process of the image (`name`: its role), reading the mounted
/// configuration, ready once `/healthz` answers.
fn sut_container(o: &K8sOptions, name: &str, args: Vec<String>) -> Container {
    let (_, mount) = config_volume();
    Container {
        name: name.into(),
        image: o.image.clone(),
        image_pull_policy: "IfNotPresent",
        command: vec!["/usr/local/bin/sut".into()],
        args,
        env: vec![EnvVar {
            name: "XDG_RUNTIME_DIR".into(),
            value: "/tmp".into(),
        }],
        ports: vec![port("http", SUT_PORT)],
        volume_mounts: vec![mount],
        readiness_probe: Some(Probe {
            http_get: HttpGet {
                path: "/healthz".into(),
                port: SUT_PORT,
            },
            period_seconds: 2,
        }),
        resources: requests("1", "512Mi"),
    }
}

/// A manifest as YAML: its documents separated by `---`.
pub fn to_yaml(m: &Manifest) -> Result<String, RenderError> {
    let mut s = String::new();
    for d in &m.documents {
        s.push_str("---\n");
        s.push_str(
            &serde_saphyr::to_string(d).map_err(|error| RenderError::Yaml {
                file: m.file.clone(),
                error,
            })?,
        );
        if !s.ends_with('\n') {
            s.push('\n');
        }
    }
    Ok(s)
}
