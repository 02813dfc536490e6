//! The `README.md` written beside the rendered manifests: the exact
//! `kubectl` steps, how each fault of the experiment maps to a Kubernetes
//! operation, and what has (and has not) been checked.

use super::k8s::{K8sOptions, Manifest};
use crate::experiment::{Experiment, TimelineOp};
use std::fmt::Write;

/// How one kind of timeline entry is carried out on the cluster: a fault's
/// or command's row says (`GenericFault::row`, `AdminCommand::row`).
fn mapping(op: &TimelineOp) -> (&'static str, &'static str) {
    match op {
        TimelineOp::OversizedDocuments(_) => (
            "oversized_documents",
            "client traffic: the agents submit them (their shards of the seeded schedule), nothing changes in the cluster",
        ),
        TimelineOp::LoadSpike(_) => (
            "load_spike (and arrival steps marked `trigger: true`)",
            "client traffic: the agents submit the extra arrivals (their shards of the seeded schedule), nothing changes in the cluster",
        ),
        TimelineOp::Generic(f) => {
            let k = f.row().k8s;
            (k.entry, k.how)
        }
        TimelineOp::Admin(c) => {
            let k = c.row().k8s;
            (k.entry, k.how)
        }
    }
}

/// The README of the rendered manifests, section by section.
pub fn readme(exp: &Experiment, o: &K8sOptions, manifests: &[Manifest]) -> String {
    let mut r = Readme {
        exp,
        o,
        s: String::new(),
    };
    r.header();
    r.files(manifests);
    r.steps();
    r.how_it_runs();
    r.faults();
    r.s
}

/// The grep pattern of the summary: the one line of the coordinator's
/// output that is JSON.
const SUMMARY_LINE: &str = "'^{'";

/// The README being written: the experiment and options it describes, and
/// the text so far.
struct Readme<'a> {
    exp: &'a Experiment,
    o: &'a K8sOptions,
    s: String,
}

impl Readme<'_> {
    /// Title, where it comes from, and what has (and has not) been checked.
    fn header(&mut self) {
        let (exp, o, s) = (self.exp, self.o, &mut self.s);
        let ns = &o.namespace;
        let _ = writeln!(
            s,
            "# {} on Kubernetes\n\nRendered by `harness render k8s` from `{}` ({} form, seed {}), {} load agent(s) per variant, namespace `{ns}`.\n",
            exp.name,
            exp.name,
            if o.quick { "quick" } else { "full" },
            exp.seed,
            o.agents
        );
        let _ = writeln!(
            s,
            "**What has been checked:** every manifest here passes `kubernetes-validate` offline against the pinned Kubernetes schema that `.ci/run` names. \
             **What has not:** none of it has been applied to a real cluster by this project. Scheduling, the NetworkPolicies' effect (which depends on the cluster's CNI enforcing them), DNS and pulling the image are untested.\n"
        );
    }

    /// Each file and the objects in it.
    fn files(&mut self, manifests: &[Manifest]) {
        let s = &mut self.s;
        let _ = writeln!(s, "## Files\n");
        for m in manifests {
            let kinds: Vec<String> = m
                .documents
                .iter()
                .map(|d| {
                    format!(
                        "{} `{}`",
                        d["kind"].as_str().unwrap_or("?"),
                        d["metadata"]["name"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            let _ = writeln!(s, "- `{}`: {}", m.file, kinds.join(", "));
        }
    }

    /// The kubectl steps: the image, what is shared, then each variant in turn.
    fn steps(&mut self) {
        let (exp, o, s) = (self.exp, self.o, &mut self.s);
        let ns = &o.namespace;
        let _ = writeln!(
            s,
            "\n## Steps\n\n\
             1. Build the image (it carries `sut` and `harness`) and push it where the cluster pulls from:\n\n\
             ```sh\nbash ci/images.sh --release\ndocker tag overload-harness/sut:local {img}\ndocker push {img}\n```\n\n\
             (`--image`/`--redis-image` of `harness render k8s` set the names written here: `{img}`, `{redis}`{default}; push the Redis image the same way when a variant uses Redis.)\n\n\
             2. Namespace, configuration and NetworkPolicies first, so no pod ever runs unconfined:\n\n\
             ```sh\nkubectl apply -f 00-namespace.yaml\nkubectl apply -f 01-config.yaml -f 30-network-policies.yaml\n```\n",
            img = o.image,
            redis = o.redis_image,
            default = if o.image == crate::experiment::images::DEFAULT_SUT_IMAGE {
                ": these are the local tags, so render again with `--image REGISTRY/NAME:TAG` for a cluster that pulls from a registry"
            } else {
                ""
            }
        );
        for (step, v) in (3..).zip(&exp.variants) {
            let n = &v.name;
            let _ = writeln!(
                s,
                "{step}. Variant `{n}` (run the variants one after the other: they must not share the cluster's capacity):\n\n\
                 ```sh\nkubectl apply -f 10-{n}-system.yaml\nkubectl -n {ns} rollout status deployment --selector overload-harness/variant={n} --timeout=180s\n\
                 kubectl apply -f 20-{n}-run.yaml\nkubectl -n {ns} wait --for=condition=complete --timeout={t}s job/{n}-coordinator\n\
                 kubectl -n {ns} logs job/{n}-coordinator | grep {summary_line} > {n}-summary.json\nkubectl -n {ns} delete -f 20-{n}-run.yaml -f 10-{n}-system.yaml\n```\n",
                t = exp.duration.as_secs() + 600,
                summary_line = SUMMARY_LINE,
            );
        }
    }

    /// What the coordinator and the agents run, and what a lost agent means.
    fn how_it_runs(&mut self) {
        let (exp, o, s) = (self.exp, self.o, &mut self.s);
        let _ = writeln!(
            s,
            "The coordinator runs `harness {}` (the variant's name in place of `<variant>`): it calibrates the page function in its own pod, \
             hands each agent the plan and the run's clock, merges what they report and judges the run. \
             The agents run `harness {}`; Kubernetes sets `JOB_COMPLETION_INDEX` in each pod of the Indexed Job, which is the agent's shard \
             (document k of the seeded schedule belongs to shard k mod {}). \
             The summary JSON is on the coordinator's stdout; the report folder is in an `emptyDir` and goes with the pod, so mount a volume at `/reports` to keep it.\n",
            super::k8s::run_jobs::coordinator_args(exp, "<variant>", o).join(" "),
            super::k8s::run_jobs::agent_args(exp, "<variant>", o).join(" "),
            o.agents
        );
        let _ = writeln!(
            s,
            "An agent that dies or stops reporting for 3 s is named in the report and its documents count as pending (agent lost); the run is degraded and the coordinator exits non-zero, so the Job fails (`backoffLimit: 0`: a rerun would be another run with another clock).\n"
        );
    }

    /// How each kind of timeline entry maps to the cluster, why a zone
    /// outage is a NetworkPolicy, and this experiment's outages as kubectl.
    fn faults(&mut self) {
        let (exp, o, s) = (self.exp, self.o, &mut self.s);
        let ns = &o.namespace;
        let _ = writeln!(
            s,
            "## Faults\n\n| timeline entry | on the cluster |\n|---|---|"
        );
        let mut seen = Vec::new();
        for e in &exp.timeline {
            let (what, how) = mapping(&e.op);
            if !seen.contains(&what) {
                seen.push(what);
                let _ = writeln!(s, "| {what} | {how} |");
            }
        }
        let _ = writeln!(
            s,
            "\n**Zone outage: NetworkPolicy, not scale to 0.** Every pod group has its own allow policy on top of `default-deny`, \
             so deleting `<variant>-allow-pool-<zone>` leaves that zone's pool pod running but unreachable: packets are dropped, \
             the gateway's connections hang until its per-hop timeout (pool deadline + 1 s), and the work the pool held is still there when the policy comes back. \
             That is what a zone outage did in the incident and what `docker pause` does in the containers environment. \
             Scaling the Deployment to 0 would instead refuse connections at once (a fast failure the router handles differently) and bring the zone back as a new, cold pod: a restart, not an outage. \
             Caveats: the effect needs a CNI that enforces NetworkPolicies, and some drop only new connections, not established ones."
        );
        let outages = super::k8s::policies::outage_zones(exp);
        if !outages.is_empty() {
            let _ = writeln!(s, "\nThis experiment's outages, as kubectl:\n\n```sh");
            for (v, z) in outages {
                let _ = writeln!(
                    s,
                    "kubectl -n {ns} delete networkpolicy {v}-allow-pool-{z}   # zone_outage {z} ({v})\nkubectl apply -f 30-network-policies.yaml              # zone_restore {z}"
                );
            }
            let _ = writeln!(s, "```");
        }
    }
}
