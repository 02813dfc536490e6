//! What a run on the virtual clock (`--clock virtual`, `clock.rs`) cannot
//! do, refused before anything runs, at the file's line and column: parts
//! that live on the wall clock, outside the one paused runtime. A Redis
//! cache is another process; containers and an external target are other
//! processes reached over sockets; generic faults and a proxy gateway act
//! on real processes (cgroups, signals, HAProxy or nginx). Each is an error
//! naming the option. `alerts:` (a real Prometheus, scraping on its own
//! clock) is the one part a virtual run leaves out instead, saying so
//! loudly (`clock::WITHOUT_ALERTS`): the rest of the file still runs, and
//! its alert expectations are reported as not evaluated.

use super::Ctx;
use super::ExperimentError;
use indexmap::IndexMap;
use serde::Deserialize;
use serde_saphyr::Spanned;

/// The parts of the file that decide whether it can run in virtual time;
/// the rest is ignored (the file was validated already).
#[derive(Deserialize)]
struct View {
    #[serde(default)]
    environment: Option<Spanned<String>>,
    #[serde(default)]
    system: Option<SystemView>,
    #[serde(default)]
    variants: IndexMap<String, VariantView>,
    #[serde(default)]
    timeline: Vec<Spanned<TimelineView>>,
}

#[derive(Deserialize)]
struct TimelineView {
    #[serde(default)]
    fault: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct VariantView {
    #[serde(default)]
    system: Option<SystemView>,
}

#[derive(Deserialize)]
struct SystemView {
    #[serde(default)]
    cache: Option<CacheView>,
    #[serde(default)]
    gateway: Option<GatewayView>,
}

#[derive(Deserialize)]
struct GatewayView {
    #[serde(default)]
    proxy: Option<Spanned<serde_json::Value>>,
}

#[derive(Deserialize)]
struct CacheView {
    #[serde(default)]
    backend: Option<Spanned<serde_json::Value>>,
}

/// Refuses what `text` (the experiment file `file`) asks that virtual time
/// cannot run, with its location (`alerts:` is left out, not refused).
pub fn check_virtual_clock(text: &str, file: &str) -> Result<(), ExperimentError> {
    let cx = Ctx { file };
    let view: View = serde_saphyr::from_str(text).map_err(|e| super::yaml_error(file, &e))?;
    if let Some(env) = &view.environment {
        if env.value != "embedded" {
            return Err(cx.err(
                &env.referenced,
                "environment",
                format!(
                    "`{}` cannot run with --clock virtual: only the embedded environment runs in virtual time (its system in this process, on one paused runtime)",
                    env.value
                ),
            ));
        }
    }
    for (i, e) in view.timeline.iter().enumerate() {
        let kind = e.value.fault.as_ref().and_then(|f| {
            crate::experiment::faults::GenericFault::kinds()
                .into_iter()
                .find(|k| f.get(k).is_some())
        });
        if let Some(kind) = kind {
            return Err(cx.err(
                &e.referenced,
                format!("timeline[{i}].fault.{kind}"),
                "a generic fault cannot run with --clock virtual: it acts on a real process (a cgroup, a signal, a fault proxy on a socket), on the wall clock; run with --clock real",
            ));
        }
    }
    let systems = view.system.iter().map(|s| ("system".to_string(), s)).chain(
        view.variants.iter().filter_map(|(name, v)| {
            v.system
                .as_ref()
                .map(|s| (format!("variants.{name}.system"), s))
        }),
    );
    for (at, s) in systems {
        if let Some(p) = s.gateway.as_ref().and_then(|g| g.proxy.as_ref()) {
            return Err(cx.err(
                &p.referenced,
                format!("{at}.gateway.proxy"),
                "a proxy gateway cannot run with --clock virtual: HAProxy or nginx is another process, on the wall clock; run with --clock real",
            ));
        }
        let field = format!("{at}.cache.backend");
        let Some(backend) = s.cache.as_ref().and_then(|c| c.backend.as_ref()) else {
            continue;
        };
        if backend.value.get("redis").is_some() {
            return Err(cx.err(
                &backend.referenced,
                field,
                "a Redis cache cannot run with --clock virtual: redis-server is another process, on the wall clock; use the memory backend or --clock real",
            ));
        }
    }
    Ok(())
}
