//! `system.compose: FILE`: a docker-compose file whose services are the
//! processes of `environment: processes`, each a local image (`image:`).
//!
//! The subset read is what names a service's container: `image`,
//! `command` (a list, or words split on spaces), `environment` (a map or
//! `K=V` list), `ports` (the first one's container port is where it
//! listens) and `depends_on` (started first). Any other key, a build
//! instead of an image, a cycle of dependencies, is refused at its line
//! and column in the compose file, before anything runs. Variants override
//! a service as any process (`variants.V.system.processes.SERVICE`).

use super::super::processes::{good_name, RawProcess};
use super::{Ctx, ExperimentError};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Compose {
    #[serde(default)]
    #[allow(dead_code)]
    version: Option<serde_json::Value>,
    services: IndexMap<String, Spanned<Service>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Service {
    image: String,
    #[serde(default)]
    command: Option<Words>,
    #[serde(default)]
    environment: Option<Environment>,
    #[serde(default)]
    ports: Vec<Port>,
    #[serde(default)]
    depends_on: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Words {
    List(Vec<String>),
    Text(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Environment {
    Map(BTreeMap<String, Scalar>),
    List(Vec<String>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Number(f64),
    Bool(bool),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Port {
    Number(u16),
    Text(String),
}

/// The compose file `file` (relative to `dir`) as processes, in an order
/// where each comes after what it depends on; `at` is `system.compose`.
pub(super) fn services(
    cx: &Ctx,
    at: &Location,
    file: &str,
    dir: &Path,
) -> Result<IndexMap<String, RawProcess>, ExperimentError> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        cx.err(
            at,
            "system.compose",
            format!("reading {}: {e}", path.display()),
        )
    })?;
    let name = path.display().to_string();
    let compose: Compose =
        serde_saphyr::from_str(&text).map_err(|e| super::yaml_error(&name, &e))?;
    let ccx = Ctx { file: &name };
    let mut out = IndexMap::new();
    for (n, s) in &compose.services {
        let loc = &s.referenced;
        if !good_name(n) {
            return Err(ccx.err(loc, format!("services.{n}"), "a service name is 1 to 40 ASCII letters, digits, '-' or '_' (it names a component)"));
        }
        out.insert(n.clone(), process(&ccx, loc, n, &s.value)?);
    }
    ordered(&ccx, &compose, out)
}

/// One service as a process of its image.
fn process(cx: &Ctx, at: &Location, n: &str, s: &Service) -> Result<RawProcess, ExperimentError> {
    let port = match s.ports.first() {
        Some(Port::Number(p)) => *p,
        Some(Port::Text(t)) => {
            let inner = t.rsplit(':').next().unwrap_or("");
            let inner = inner.split('/').next().unwrap_or("");
            inner.parse().map_err(|_| {
                cx.err(
                    at,
                    format!("services.{n}.ports"),
                    format!("{t:?}: no container port"),
                )
            })?
        }
        None => {
            return Err(cx.err(
                at,
                format!("services.{n}.ports"),
                "needs a port (the first is where it listens inside its container)",
            ))
        }
    };
    let env = match &s.environment {
        None => BTreeMap::new(),
        Some(Environment::Map(m)) => m
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Scalar::Text(t) => t.clone(),
                    Scalar::Number(x) => x.to_string(),
                    Scalar::Bool(b) => b.to_string(),
                };
                (k.clone(), v)
            })
            .collect(),
        Some(Environment::List(l)) => l
            .iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (kv.clone(), String::new()),
            })
            .collect(),
    };
    Ok(RawProcess {
        image: Some(s.image.clone()),
        command: s.command.as_ref().map(|w| match w {
            Words::List(l) => l.clone(),
            Words::Text(t) => t.split_whitespace().map(str::to_string).collect(),
        }),
        env,
        port: Some(serde_json::json!(port)),
        ..RawProcess::default()
    })
}

/// `services` with each after what it `depends_on` (otherwise in the
/// file's order); an unknown dependency or a cycle is refused.
fn ordered(
    cx: &Ctx,
    compose: &Compose,
    mut services: IndexMap<String, RawProcess>,
) -> Result<IndexMap<String, RawProcess>, ExperimentError> {
    let mut out = IndexMap::new();
    while !services.is_empty() {
        let next = services.keys().find(|n| {
            compose.services[n.as_str()]
                .value
                .depends_on
                .iter()
                .all(|d| out.contains_key(d))
        });
        let Some(n) = next.cloned() else {
            let (n, s) = services
                .keys()
                .map(|n| (n, &compose.services[n.as_str()]))
                .next()
                .expect("not empty");
            let missing: Vec<&String> = s
                .value
                .depends_on
                .iter()
                .filter(|d| !compose.services.contains_key(d.as_str()))
                .collect();
            let why = match missing.first() {
                Some(d) => format!("no service {d:?}"),
                None => "a cycle of depends_on".to_string(),
            };
            return Err(cx.err(&s.referenced, format!("services.{n}.depends_on"), why));
        };
        let p = services.shift_remove(&n).expect("found above");
        out.insert(n, p);
    }
    Ok(out)
}
