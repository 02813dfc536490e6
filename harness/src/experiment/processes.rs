//! `environment: processes`: the user's own service, started by the harness
//! from its commands (`system.processes`), as written and as validated.
//!
//! Each process is a component named by its key, so every generic fault
//! (`cpu_limit`, `pause`, `kill` with restart, `network`) applies to it;
//! `target: { process: NAME }` names the one the load goes to (default: the
//! only process). A variant overrides a process's `command`, `env`, `cwd`
//! or `config` under `variants.V.system.processes`, merged key by key onto
//! the base as every `system:` override is, so a before-fix and an
//! after-fix are two configurations of the same binary. `{port}` (the
//! process's own port) and `{port.NAME}` (another process's) are replaced
//! in the command, the environment's values and a config file's template;
//! nothing runs through a shell. Such a service has no admin API and no
//! `/metrics` unless `target.metrics` names one; the validator refuses
//! timeline entries that need the admin API (`validate/timeline.rs`).
//!
//! `RawSystem` is `system:` as written: this project's `SystemConfig`
//! (parsed by its own strict rules, located as before) beside
//! `processes` (or `compose`, a docker-compose file whose services are the
//! processes), split off while the file is read.

use indexmap::IndexMap;
use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use sut::SystemConfig;

/// `system:` as written: this project's configuration and, for
/// `environment: processes`, the user's processes.
#[derive(Debug, Clone, Default)]
pub struct RawSystem {
    pub config: SystemConfig,
    pub processes: Option<Spanned<IndexMap<String, Spanned<RawProcess>>>>,
    /// `compose: FILE`: a docker-compose file whose services are the processes.
    pub compose: Option<Spanned<String>>,
    /// The keys of `config` the file wrote (refused beside `processes`).
    pub config_keys: Vec<String>,
}

impl std::ops::Deref for RawSystem {
    type Target = SystemConfig;
    fn deref(&self) -> &SystemConfig {
        &self.config
    }
}

/// One process of your own service (its name is the map's key); in a
/// variant's `system.processes`, only what it changes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProcess {
    /// The program and its arguments, e.g. `[python3, -m, http.server, "{port}"]`
    /// (never through a shell). `{port}` is this process's port,
    /// `{port.NAME}` another process's, `{config}` its config file's path.
    /// Required, except with `image` (absent: the image's own command).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// A local image (`myapp:local`) run as a container instead of a
    /// command: `command` is then its command, `port` (a number) the port
    /// it listens on inside, published on a free loopback port.
    #[serde(default)]
    pub image: Option<String>,
    /// Environment variables added to the harness's own (values substituted like the command).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The working folder, relative to the experiment file's folder (default: that folder).
    #[serde(default)]
    pub cwd: Option<String>,
    /// `auto` (a free loopback port, the default) or a fixed port number.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub port: Option<serde_json::Value>,
    /// When it is ready: `{ http: /health }` (a GET answered with any
    /// status below 500) or `{ tcp: true }` (a connection accepted, the
    /// default), within `timeout` (default 30s).
    #[serde(default)]
    pub ready: Option<RawReady>,
    /// A config file written for the process from a template, its
    /// placeholders filled; `{config}` in the command is its path.
    #[serde(default)]
    pub config: Option<RawConfigFile>,
}

/// How the harness knows a process is ready: exactly one of `http` and
/// `tcp` (absent: `tcp`), within `timeout`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawReady {
    /// A path (`/health`) asked with GET on the process's port.
    #[serde(default)]
    pub http: Option<String>,
    /// A TCP connection to its port is accepted.
    #[serde(default)]
    pub tcp: Option<bool>,
    /// How long it may take (100ms to 10m), e.g. `60s`.
    #[serde(default)]
    #[schemars(default = "super::schema_defaults::ready_timeout")]
    pub timeout: Option<String>,
}

/// `config:` a file written for the process: `template` (a file relative
/// to the experiment file's folder) or `text`, and its name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawConfigFile {
    /// A template file, relative to the experiment file's folder (exactly
    /// one of `template` and `text`).
    #[serde(default)]
    pub template: Option<String>,
    /// The template's text itself, written in the experiment file.
    #[serde(default)]
    pub text: Option<String>,
    /// Its file name in the variant's process folder (default: `NAME.conf`).
    #[serde(default)]
    pub name: Option<String>,
}

/// One process, validated for one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    pub name: String,
    /// A local image run as a container (`command` its command, `port`
    /// the port inside it); `None`: `command` is run as a process.
    pub image: Option<String>,
    /// argv, placeholders not yet replaced (ports are chosen at start).
    pub command: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Absolute.
    pub cwd: PathBuf,
    /// `None`: a free loopback port chosen at start.
    pub port: Option<u16>,
    pub ready: Ready,
    pub ready_timeout: Duration,
    /// The config file's name and its template text.
    pub config: Option<(String, String)>,
}

/// How a process says it is ready.
#[derive(Debug, Clone, PartialEq)]
pub enum Ready {
    Tcp,
    /// GET this path answers below 500.
    Http(String),
}

/// `environment: processes` validated: every variant's processes, in the
/// file's order, the one the load goes to, and its metrics if any.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcessesEnv {
    pub variants: BTreeMap<String, Vec<ProcessSpec>>,
    /// The process the load (and `target.metrics`) goes to.
    pub target: String,
    /// `target.metrics`: a path on the target process (`/metrics`) or a URL
    /// template (`http://127.0.0.1:{port.exporter}/metrics`); `None`: no
    /// server-side metrics.
    pub metrics: Option<String>,
}

impl ProcessesEnv {
    /// The names of the processes (the same in every variant).
    pub fn names(&self) -> Vec<String> {
        self.variants
            .values()
            .next()
            .map(|ps| ps.iter().map(|p| p.name.clone()).collect())
            .unwrap_or_default()
    }
}

/// A process name: ASCII letters, digits, `-` or `_` (it names a component,
/// a log file and a placeholder).
pub(crate) fn good_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 40
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The placeholders of `text`: `port`, `port.NAME`, `config` (anything else
/// between braces is left as written, e.g. JSON in an environment value).
pub(crate) fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        rest = &rest[i + 1..];
        let Some(j) = rest.find('}') else { break };
        let inner = &rest[..j];
        if inner == "port" || inner == "config" || inner.starts_with("port.") {
            out.push(inner.to_string());
        }
        rest = &rest[j + 1..];
    }
    out
}

/// `text` with `{port}`, `{port.NAME}` and `{config}` replaced from `values`
/// (keys as [`placeholders`] names them).
pub(crate) fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in values {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// As this project's configuration (the schema's default for `system:`).
impl serde::Serialize for RawSystem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.config.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawSystem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawSystem, D::Error> {
        d.deserialize_map(SystemVisitor)
    }
}

struct SystemVisitor;

impl<'de> Visitor<'de> for SystemVisitor {
    type Value = RawSystem;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the system's configuration (a mapping)")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSystem, A::Error> {
        let mut processes = None;
        let mut compose = None;
        let mut config_keys = Vec::new();
        let split = Split {
            inner: map,
            processes: &mut processes,
            compose: &mut compose,
            keys: &mut config_keys,
        };
        let config =
            SystemConfig::deserialize(serde::de::value::MapAccessDeserializer::new(split))?;
        Ok(RawSystem {
            config,
            processes,
            compose,
            config_keys,
        })
    }
}

type RawProcesses = Spanned<IndexMap<String, Spanned<RawProcess>>>;

/// The `system:` mapping as `SystemConfig` reads it, `processes` taken out
/// on the way (read by the same deserializer, so its errors and spans are
/// located as the rest of the file's).
struct Split<'a, A> {
    inner: A,
    processes: &'a mut Option<RawProcesses>,
    compose: &'a mut Option<Spanned<String>>,
    keys: &'a mut Vec<String>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Split<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key::<String>()? else {
                return Ok(None);
            };
            if key == "processes" {
                *self.processes = Some(self.inner.next_value()?);
                continue;
            }
            if key == "compose" {
                *self.compose = Some(self.inner.next_value()?);
                continue;
            }
            self.keys.push(key.clone());
            let de: serde::de::value::StringDeserializer<A::Error> = key.into_deserializer();
            return seed.deserialize(de).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

impl schemars::JsonSchema for RawSystem {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SystemConfig".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = SystemConfig::json_schema(generator);
        let processes = generator.subschema_for::<Option<IndexMap<String, RawProcess>>>();
        if let Some(props) = schema
            .ensure_object()
            .entry("properties")
            .or_insert_with(|| serde_json::json!({}))
            .as_object_mut()
        {
            let mut p = processes.to_value();
            if let Some(o) = p.as_object_mut() {
                o.insert(
                    "description".into(),
                    "`environment: processes`: your own service's processes, by name (each a component generic faults act on).".into(),
                );
            }
            props.insert("processes".into(), p);
            props.insert(
                "compose".into(),
                serde_json::json!({
                    "description": "`environment: processes`: a docker-compose file (relative to this file) whose services are the processes, each a local image.",
                    "type": ["string", "null"]
                }),
            );
        }
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_ports_and_the_config_only() {
        assert_eq!(
            placeholders("--bind 127.0.0.1:{port} --up {port.api} {\"a\": 1} {config}"),
            vec!["port", "port.api", "config"]
        );
        let mut v = BTreeMap::new();
        v.insert("port".into(), "8080".into());
        v.insert("port.api".into(), "9090".into());
        assert_eq!(
            substitute("{port}/{port.api}/{portx}", &v),
            "8080/9090/{portx}"
        );
    }

    #[test]
    fn system_splits_processes_from_the_configuration() {
        let s: RawSystem =
            serde_saphyr::from_str("zones: [a]\nprocesses:\n  app: { command: [x] }\n").unwrap();
        assert_eq!(s.config.zones, vec!["a".to_string()]);
        assert_eq!(s.config_keys, vec!["zones".to_string()]);
        let p = s.processes.unwrap();
        assert_eq!(p.value["app"].value.command, Some(vec!["x".to_string()]));
        assert_eq!(p.value["app"].referenced.line(), 3);
        let e = serde_saphyr::from_str::<RawSystem>("zones: [a]\nzonez: 1\n").unwrap_err();
        assert!(e.to_string().contains("zonez"), "{e}");
        let e = serde_saphyr::from_str::<RawSystem>("processes:\n  app: { comand: [x] }\n")
            .unwrap_err();
        assert!(e.to_string().contains("comand"), "{e}");
    }
}
