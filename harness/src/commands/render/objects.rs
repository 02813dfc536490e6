//! The Kubernetes API objects `harness render k8s` writes, as typed structs.
//!
//! Only the fields the rendered manifests use, spelled as the API spells them
//! (camelCase, `apiVersion`/`kind` first). Typed rather than templated so a
//! manifest cannot be malformed YAML, a misspelt field is a compile error,
//! and the offline schema check (`kubernetes-validate` in `.ci/run`) only
//! has the values left to judge.

use serde::Serialize;
use std::collections::BTreeMap;

pub(crate) type Labels = BTreeMap<String, String>;

/// Any object: apiVersion, kind, metadata and its body flattened beside them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Object<T: Serialize> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: ObjectMeta,
    #[serde(flatten)]
    pub body: T,
}

#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectMeta {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: Labels,
}

/// A Namespace has no spec we set.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Empty {}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConfigMapBody {
    pub data: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Spec<T: Serialize> {
    pub spec: T,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeploymentSpec {
    pub replicas: u32,
    pub selector: LabelSelector,
    pub template: PodTemplate,
}

#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LabelSelector {
    /// Serialized even when empty: `podSelector: {}` selects every pod.
    pub match_labels: Labels,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PodTemplate {
    pub metadata: TemplateMeta,
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TemplateMeta {
    pub labels: Labels,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec {
    pub containers: Vec<Container>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// The harness and the system speak to nothing in the cluster's API.
    pub automount_service_account_token: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Container {
    pub name: String,
    pub image: String,
    pub image_pull_policy: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<Probe>,
    pub resources: Resources,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EnvVar {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContainerPort {
    pub name: String,
    pub container_port: u16,
    pub protocol: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VolumeMount {
    pub name: String,
    pub mount_path: String,
    pub read_only: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Volume {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapVolume>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<ClaimVolume>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimVolume {
    pub claim_name: String,
}

/// A PersistentVolumeClaim's spec: the modes it is mounted in and its size.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimSpec {
    pub access_modes: Vec<&'static str>,
    pub resources: ClaimResources,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ClaimResources {
    pub requests: BTreeMap<&'static str, String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConfigMapVolume {
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Probe {
    pub http_get: HttpGet,
    pub period_seconds: u32,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct HttpGet {
    pub path: String,
    pub port: u16,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Resources {
    pub requests: BTreeMap<&'static str, String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ServiceSpec {
    pub selector: Labels,
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServicePort {
    pub name: String,
    pub port: u16,
    pub target_port: u16,
    pub protocol: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_mode: Option<&'static str>,
    pub completions: u32,
    pub parallelism: u32,
    /// A failed coordinator or agent is not retried: a rerun would be a
    /// different run with a different clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<u32>,
    /// An Indexed Job whose pods are independent runs: a failed index is
    /// not retried, and does not stop the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit_per_index: Option<u32>,
    pub active_deadline_seconds: u64,
    pub template: PodTemplate,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NetworkPolicySpec {
    pub pod_selector: LabelSelector,
    pub policy_types: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Vec<Rule>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<Rule>>,
}

/// One ingress (`from`) or egress (`to`) rule.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Rule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<Peer>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Peer>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<PolicyPort>>,
}

#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Peer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PolicyPort {
    pub protocol: &'static str,
    pub port: u16,
}
