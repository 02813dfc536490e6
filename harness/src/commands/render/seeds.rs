//! `harness render k8s FILE --seeds 1..20`: a campaign as Kubernetes Jobs.
//!
//! One Indexed Job per variant whose `JOB_COMPLETION_INDEX` picks the seed
//! (`harness FILE --variant V --seeds 1..20`: index `i` runs the `i`-th
//! seed). Unlike a single run's manifests (`k8s.rs`), which deploy the
//! system as Deployments and spread the load over agents, each pod here is
//! one whole run with its system embedded in the pod: a campaign needs a
//! fresh system per run (its cache, queues and retry budgets start empty),
//! and many small independent pods schedule where one large run would not.
//! Each pod writes its report to a shared PersistentVolumeClaim under
//! `/reports/<variant>/`; a reader pod mounts the claim so that the reports
//! can be copied out (`kubectl cp`) and judged with `harness campaign merge`.
//!
//! Checked offline like the rest (`kubernetes-validate`); never applied to a
//! cluster here.

use super::k8s::policies::policy;
use super::k8s::run_jobs::Jobs;
use super::k8s::{
    check_renderable, config_volume, labels, meta, namespace_and_config, needs_redis, obj,
    requests, K8sOptions, Manifest, RenderError, CONFIG_DIR,
};
use super::objects::*;
use crate::experiment::Experiment;
use std::fmt::Write;

/// The claim every pod writes its report to.
pub(crate) const REPORTS_CLAIM: &str = "harness-reports";
const REPORTS_DIR: &str = "/reports";

/// A campaign to render: which seeds, and how many pods of a variant run at once.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// As written (`1..20` or `1, 4, 7`); passed to every pod unchanged.
    pub spec: String,
    pub seeds: Vec<u64>,
    pub parallel: u32,
    /// The image of the reader pod that mounts the reports' claim (it needs
    /// `tar` for `kubectl cp`, which the harness image, FROM scratch, lacks).
    pub reader_image: String,
}

/// Every manifest of the campaign, in the order `kubectl apply` should see them.
pub fn render(
    exp: &Experiment,
    o: &K8sOptions,
    seeds: &SeedOptions,
) -> Result<Vec<Manifest>, RenderError> {
    check(exp, o, seeds)?;
    let ns = o.namespace.as_str();
    let mut out = namespace_and_config(exp, ns)?;
    out.push(Manifest {
        file: "02-reports.yaml".into(),
        documents: vec![claim(ns, exp, seeds)?, reader(ns, seeds)?],
    });
    for v in &exp.variants {
        out.push(Manifest {
            file: format!("20-{}-seeds.yaml", v.name),
            documents: vec![seed_job(exp, &v.name, o, seeds)?],
        });
    }
    out.push(Manifest {
        file: "30-network-policies.yaml".into(),
        // A pod holds its whole run on loopback: it needs no network at all.
        documents: vec![policy(ns, "default-deny", Labels::new(), None)?],
    });
    Ok(out)
}

/// What a pod cannot run: besides `check_renderable`'s names and alert
/// rules, a Redis cache (the image has no redis-server) and load agents (a
/// pod's run is self-contained).
fn check(exp: &Experiment, o: &K8sOptions, seeds: &SeedOptions) -> Result<(), RenderError> {
    check_renderable(exp, o)?;
    if o.agents != 1 {
        return Err(RenderError::Environment(format!(
            "--seeds renders one self-contained run per pod; --agents {} applies to one run's manifests (render without --seeds)",
            o.agents
        )));
    }
    if let Some(v) = exp.variants.iter().find(|v| needs_redis(&v.system)) {
        return Err(RenderError::Environment(format!(
            "variant {} caches in Redis; a --seeds pod runs its system embedded and the image carries no redis-server (render without --seeds for the deployed split)",
            v.name
        )));
    }
    if !(1..=1000).contains(&seeds.parallel) {
        return Err(RenderError::Environment(format!(
            "--parallel must be between 1 and 1000, not {}",
            seeds.parallel
        )));
    }
    Ok(())
}

/// The run of pod `i` of variant `n`: its seed is the `i`-th of `--seeds`
/// (`JOB_COMPLETION_INDEX`, read by the harness), its system embedded.
pub(crate) fn seed_args(n: &str, o: &K8sOptions, seeds: &SeedOptions) -> Vec<String> {
    let mut a: Vec<String> = [
        &format!("{CONFIG_DIR}/experiment.yaml"),
        "--variant",
        n,
        "--environment",
        "embedded",
        "--seeds",
        &seeds.spec,
        "--out",
        &format!("{REPORTS_DIR}/{n}"),
        "--quiet",
        "--json",
    ]
    .map(String::from)
    .to_vec();
    if o.quick {
        a.push("--quick".into());
    }
    a
}

/// Variant `n`'s Indexed Job: one pod per seed, `parallel` at a time.
fn seed_job(
    exp: &Experiment,
    n: &str,
    o: &K8sOptions,
    seeds: &SeedOptions,
) -> Result<serde_json::Value, RenderError> {
    let jobs = Jobs {
        ns: &o.namespace,
        // Every pod's run, `parallel` at a time, with room for calibration and the drain.
        deadline: (exp.duration.as_secs() + 300)
            * seeds.seeds.len().div_ceil(seeds.parallel as usize) as u64,
        independent_indexes: true,
    };
    let (config, config_mount) = config_volume();
    let container = Container {
        name: "run".into(),
        image: o.image.clone(),
        image_pull_policy: "IfNotPresent",
        command: vec!["/usr/local/bin/harness".into()],
        args: seed_args(n, o, seeds),
        env: vec![EnvVar {
            name: "XDG_RUNTIME_DIR".into(),
            value: "/tmp".into(),
        }],
        ports: Vec::new(),
        volume_mounts: vec![config_mount, reports_mount(false)],
        readiness_probe: None,
        // The system, the GPU model and the load path of one run.
        resources: requests("2", "2Gi"),
    };
    let count = seeds.seeds.len() as u32;
    jobs.job(
        format!("{n}-seeds"),
        labels(&[("variant", n), ("role", "seed-run")]),
        container,
        vec![config, reports_volume()],
        Some((count, seeds.parallel.min(count))),
    )
}

fn reports_volume() -> Volume {
    Volume {
        name: "reports".into(),
        config_map: None,
        empty_dir: None,
        persistent_volume_claim: Some(ClaimVolume {
            claim_name: REPORTS_CLAIM.into(),
        }),
    }
}

fn reports_mount(read_only: bool) -> VolumeMount {
    VolumeMount {
        name: "reports".into(),
        mount_path: REPORTS_DIR.into(),
        read_only,
    }
}

/// The claim: written by many pods at once (ReadWriteMany), about 20 MiB a run.
fn claim(
    ns: &str,
    exp: &Experiment,
    seeds: &SeedOptions,
) -> Result<serde_json::Value, RenderError> {
    let runs = seeds.seeds.len() * exp.variants.len();
    obj(
        "v1",
        "PersistentVolumeClaim",
        meta(REPORTS_CLAIM, ns, labels(&[("role", "reports")])),
        Spec {
            spec: ClaimSpec {
                access_modes: vec!["ReadWriteMany"],
                resources: ClaimResources {
                    requests: [("storage", format!("{}Mi", (runs * 20).max(1024)))]
                        .into_iter()
                        .collect(),
                },
            },
        },
    )
}

/// A pod that only holds the claim open, read-only, for `kubectl cp`.
fn reader(ns: &str, seeds: &SeedOptions) -> Result<serde_json::Value, RenderError> {
    obj(
        "v1",
        "Pod",
        meta("reports-reader", ns, labels(&[("role", "reports-reader")])),
        Spec {
            spec: PodSpec {
                containers: vec![Container {
                    name: "reader".into(),
                    image: seeds.reader_image.clone(),
                    image_pull_policy: "IfNotPresent",
                    command: vec!["sleep".into(), "infinity".into()],
                    args: Vec::new(),
                    env: Vec::new(),
                    ports: Vec::new(),
                    volume_mounts: vec![reports_mount(true)],
                    readiness_probe: None,
                    resources: requests("50m", "32Mi"),
                }],
                restart_policy: Some("Never"),
                volumes: vec![reports_volume()],
                automount_service_account_token: false,
            },
        },
    )
}

/// The README beside the manifests: what runs where, and the kubectl steps
/// from the image to `harness campaign merge`.
pub fn readme(exp: &Experiment, o: &K8sOptions, seeds: &SeedOptions) -> String {
    let ns = &o.namespace;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {name} as a campaign on Kubernetes\n\n\
         Rendered by `harness render k8s` from `{name}` ({form} form), seeds `{spec}` ({count} seeds), \
         namespace `{ns}`: per variant an Indexed Job `VARIANT-seeds` of {count} pods, {at_once} at a time. \
         Pod `i` runs `harness {args}`; the harness reads `JOB_COMPLETION_INDEX` (set by Kubernetes) and runs the `i`-th seed, \
         with the system embedded in the pod. Reports go to the claim `{REPORTS_CLAIM}` (ReadWriteMany: your cluster needs a \
         storage class that offers it, such as NFS, CephFS, EFS or Filestore; set `storageClassName` in `02-reports.yaml` if it is not the default).\n\n\
         **What has been checked:** every manifest passes `kubernetes-validate` offline. **What has not:** none of it has been applied to a cluster by this project.\n",
        name = exp.name,
        form = if o.quick { "quick" } else { "full" },
        spec = seeds.spec,
        count = seeds.seeds.len(),
        at_once = seeds.parallel.min(seeds.seeds.len() as u32),
        args = seed_args("VARIANT", o, seeds).join(" "),
    );
    let _ = writeln!(
        s,
        "## Steps\n\n\
         ```sh\n# the image (ci/images.sh builds it locally; push it where the cluster pulls from)\n\
         bash ci/images.sh --release && docker tag overload-harness/sut:local {img} && docker push {img}\n\
         kubectl apply -f 00-namespace.yaml -f 01-config.yaml -f 30-network-policies.yaml -f 02-reports.yaml\n",
        img = o.image
    );
    for v in &exp.variants {
        let _ = writeln!(s, "kubectl apply -f 20-{}-seeds.yaml", v.name);
    }
    let _ = writeln!(
        s,
        "# a Job ends Complete, or Failed when a run exited non-zero (1: an expectation failed, as before-fix's may)"
    );
    for v in &exp.variants {
        let _ = writeln!(
            s,
            "until kubectl -n {ns} get job/{}-seeds -o jsonpath='{{.status.conditions[*].type}}' | grep -qE 'Complete|Failed'; do sleep 10; done",
            v.name
        );
    }
    let _ = writeln!(
        s,
        "kubectl -n {ns} cp reports-reader:{REPORTS_DIR} ./{name}-k8s-reports\n\
         harness campaign merge ./{name}-k8s-reports\n```\n\n\
         A run is not retried (`backoffLimitPerIndex: 0`: a rerun would be another run) and a failed one does not stop the others; \
         `campaign merge` judges the runs that wrote a report and names none it did not find, so compare its run count with {runs}.\n",
        name = exp.name,
        runs = seeds.seeds.len() * exp.variants.len(),
    );
    s
}
