//! The NetworkPolicies of `render k8s`: deny everything in the namespace,
//! then one allow policy per pod group (same namespace, and DNS), so that a
//! zone outage can be the deletion of one policy (see `readme.rs` for why
//! that rather than scaling to 0).

use super::{labels, meta, needs_redis, obj, RenderError};
use crate::commands::render::objects::*;
use crate::experiment::{Experiment, TimelineOp};
use sut::command_row::Host;

/// The pod groups that each get their own allow policy: (policy name, selector labels).
pub(crate) fn pod_groups(exp: &Experiment) -> Vec<(String, Labels)> {
    let mut out = Vec::new();
    for v in &exp.variants {
        let n = &v.name;
        for z in &v.system.zones {
            out.push((
                format!("{n}-allow-pool-{z}"),
                labels(&[("variant", n), ("role", "pool"), ("zone", z)]),
            ));
        }
        out.push((
            format!("{n}-allow-gateway"),
            labels(&[("variant", n), ("role", "gateway")]),
        ));
        if needs_redis(&v.system) {
            out.push((
                format!("{n}-allow-redis"),
                labels(&[("variant", n), ("role", "redis")]),
            ));
        }
        out.push((
            format!("{n}-allow-coordinator"),
            labels(&[("variant", n), ("role", "coordinator")]),
        ));
        out.push((
            format!("{n}-allow-agents"),
            labels(&[("variant", n), ("role", "agent")]),
        ));
    }
    out
}

fn same_namespace() -> Vec<Peer> {
    vec![Peer {
        pod_selector: Some(LabelSelector::default()),
        namespace_selector: None,
    }]
}

/// A NetworkPolicy on the pods labelled `selector`, both directions;
/// `egress: None` denies everything (no rule at all).
pub(crate) fn policy(
    ns: &str,
    name: &str,
    selector: Labels,
    egress: Option<Vec<Rule>>,
) -> Result<serde_json::Value, RenderError> {
    obj(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        meta(name, ns, labels(&[])),
        Spec {
            spec: NetworkPolicySpec {
                pod_selector: LabelSelector {
                    match_labels: selector,
                },
                policy_types: vec!["Ingress", "Egress"],
                ingress: egress.as_ref().map(|_| {
                    vec![Rule {
                        from: Some(same_namespace()),
                        ..Rule::default()
                    }]
                }),
                egress,
            },
        },
    )
}

pub(crate) fn network_policies(
    exp: &Experiment,
    ns: &str,
) -> Result<Vec<serde_json::Value>, RenderError> {
    let policy =
        |name: &str, selector: Labels, rules: Option<Vec<Rule>>| policy(ns, name, selector, rules);
    // Deny all, in and out, for every pod of the namespace ...
    let mut docs = vec![policy("default-deny", Labels::new(), None)?];
    // ... then each pod group may talk to the namespace's own pods, and ask
    // the cluster's DNS for their Services' addresses.
    let dns = Rule {
        to: Some(vec![Peer {
            pod_selector: None,
            namespace_selector: Some(LabelSelector {
                match_labels: [(
                    "kubernetes.io/metadata.name".to_string(),
                    "kube-system".to_string(),
                )]
                .into_iter()
                .collect(),
            }),
        }]),
        ports: Some(vec![
            PolicyPort {
                protocol: "UDP",
                port: 53,
            },
            PolicyPort {
                protocol: "TCP",
                port: 53,
            },
        ]),
        from: None,
    };
    for (name, selector) in pod_groups(exp) {
        let egress = vec![
            Rule {
                to: Some(same_namespace()),
                ..Rule::default()
            },
            dns.clone(),
        ];
        docs.push(policy(&name, selector, Some(egress))?);
    }
    Ok(docs)
}

/// The zones a timeline takes off the network (`zone_outage`: a command
/// whose row makes the zone's host unreachable), per variant: the allow
/// policies whose deletion is that outage.
pub(crate) fn outage_zones(exp: &Experiment) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for v in &exp.variants {
        for e in exp.timeline.iter().filter(|e| e.applies_to(&v.name)) {
            let TimelineOp::Admin(cmd) = &e.op else {
                continue;
            };
            if let Host::Unreachable(zone) = cmd.row().host {
                let pair = (v.name.clone(), zone.to_string());
                if !out.contains(&pair) {
                    out.push(pair);
                }
            }
        }
    }
    out
}
