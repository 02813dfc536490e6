//! `environment: processes` checked: every process of every variant (the
//! base `system.processes` with the variant's overrides merged key by key),
//! its program found, its placeholders naming known processes, its folder,
//! port, readiness and config file; `target:` naming a process. Everything
//! is refused here, located, before anything runs.

use super::super::processes::*;
use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use indexmap::IndexMap;
use serde_saphyr::Location;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Fills `environment`'s processes for every variant; refuses
/// `system.processes` in any other environment.
pub(super) fn processes(
    cx: &Ctx,
    raw: &RawExperiment,
    tree: &serde_json::Value,
    environment: &mut Environment,
    variants: &[Variant],
) -> Result<(), ExperimentError> {
    let Environment::Processes(env) = environment else {
        return refuse_elsewhere(cx, raw);
    };
    let env_at = raw
        .environment
        .as_ref()
        .map(|e| e.referenced)
        .unwrap_or(raw.name.referenced);
    let dir = file_dir(cx.file());
    let (at, base, locs) = base(cx, raw, tree, &env_at, &dir)?;
    if let Some(k) = raw.system.config_keys.first() {
        return Err(cx.err(&at, format!("system.{k}"), "configures this project's own service; environment processes runs only your processes (`system.processes`)"));
    }
    let names: Vec<String> = locs.keys().cloned().collect();
    for v in variants {
        let (at, field, merged) = merged(cx, raw, tree, &base, &v.name, &names)?;
        let mut specs = Vec::new();
        for (n, p) in &merged {
            let at = match &field {
                None => locs[n],
                Some(_) => at,
            };
            let f = format!("{}system.processes.{n}", field.as_deref().unwrap_or(""));
            specs.push(spec(cx, &at, &f, n, p, &names, &dir)?);
        }
        fixed_ports_differ(cx, &at, &specs)?;
        env.variants.insert(v.name.clone(), specs);
    }
    target(cx, raw, env, &names, &env_at)
}

/// The base processes as a tree (from `system.processes`, or the services
/// of `system.compose`), where they are written, and where each is.
fn base(
    cx: &Ctx,
    raw: &RawExperiment,
    tree: &serde_json::Value,
    env_at: &Location,
    dir: &Path,
) -> Result<(Location, serde_json::Value, IndexMap<String, Location>), ExperimentError> {
    let (at, base, locs) = match (&raw.system.processes, &raw.system.compose) {
        (Some(p), None) => {
            let locs: IndexMap<String, Location> =
                p.value.iter().map(|(n, s)| (n.clone(), s.referenced)).collect();
            let base = tree.pointer("/system/processes").cloned().unwrap_or_default();
            (p.referenced, base, locs)
        }
        (None, Some(c)) => {
            let ps = super::compose::services(cx, &c.referenced, &c.value, dir)?;
            let locs = ps.keys().map(|n| (n.clone(), c.referenced)).collect();
            let base = serde_json::to_value(&ps).unwrap_or_default();
            (c.referenced, base, locs)
        }
        (Some(p), Some(_)) => return Err(cx.err(&p.referenced, "system.compose", "give `system.processes` or `system.compose`, not both")),
        (None, None) => return Err(cx.err(env_at, "system.processes", "environment processes needs `system.processes: { NAME: { command: [...] } }` or `system.compose: FILE`")),
    };
    if locs.is_empty() {
        return Err(cx.err(&at, "system.processes", "needs at least one process"));
    }
    for (n, loc) in &locs {
        if !good_name(n) {
            return Err(cx.err(
                loc,
                format!("system.processes.{n}"),
                "a process name is 1 to 40 ASCII letters, digits, '-' or '_'",
            ));
        }
    }
    Ok((at, base, locs))
}

/// `system.processes` or a variant's outside `environment: processes`.
fn refuse_elsewhere(cx: &Ctx, raw: &RawExperiment) -> Result<(), ExperimentError> {
    let why = "needs `environment: processes`";
    if let Some(p) = &raw.system.processes {
        return Err(cx.err(&p.referenced, "system.processes", why));
    }
    if let Some(c) = &raw.system.compose {
        return Err(cx.err(&c.referenced, "system.compose", why));
    }
    for (n, v) in &raw.variants {
        if let Some(p) = v.value.system.as_ref().and_then(|s| s.processes.as_ref()) {
            return Err(cx.err(&p.referenced, format!("variants.{n}.system.processes"), why));
        }
    }
    Ok(())
}

/// A variant's processes: where to locate their errors, the field prefix
/// (`variants.V.` when the variant overrides them) and the processes.
type Merged = (Location, Option<String>, IndexMap<String, RawProcess>);

/// The variant's processes: the base's tree with its overrides merged, read
/// again; `(where, "variants.V." when overridden, processes)`.
fn merged(
    cx: &Ctx,
    raw: &RawExperiment,
    tree: &serde_json::Value,
    base: &serde_json::Value,
    vname: &str,
    names: &[String],
) -> Result<Merged, ExperimentError> {
    let v = &raw.variants[vname];
    let field = format!("variants.{vname}.system");
    let mut base = base.clone();
    let over = v.value.system.as_ref();
    if let Some(k) = over.and_then(|s| s.config_keys.first()) {
        return Err(cx.err(&v.referenced, format!("{field}.{k}"), "configures this project's own service; a variant of environment processes changes `system.processes` only"));
    }
    if let Some(c) = over.and_then(|s| s.compose.as_ref()) {
        return Err(cx.err(
            &c.referenced,
            format!("{field}.compose"),
            "a variant changes a service under `processes.SERVICE`, not the compose file",
        ));
    }
    let Some(p) = over.and_then(|s| s.processes.as_ref()) else {
        let ps = serde_json::from_value(base)
            .map_err(|e| cx.err(&v.referenced, "system.processes", e.to_string()))?;
        return Ok((v.referenced, None, ps));
    };
    if let Some(n) = p.value.keys().find(|n| !names.contains(n)) {
        return Err(cx.err(&p.value[n].referenced, format!("{field}.processes.{n}"), format!("no such process in `system.processes` ({names:?}); a variant changes a process, it does not add one")));
    }
    let over = tree
        .pointer(&format!(
            "/variants/{}/system/processes",
            vname.replace('~', "~0").replace('/', "~1")
        ))
        .cloned()
        .unwrap_or_default();
    super::merge(&mut base, &over);
    let ps = serde_json::from_value(base)
        .map_err(|e| cx.err(&p.referenced, format!("{field}.processes"), e.to_string()))?;
    Ok((p.referenced, Some(format!("variants.{vname}.")), ps))
}

/// The experiment file's folder, absolute.
fn file_dir(file: &str) -> PathBuf {
    let parent = Path::new(file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::env::current_dir()
        .map(|c| c.join(parent))
        .unwrap_or_else(|_| parent.to_path_buf())
}

/// One process checked (`f` is its field path).
fn spec(
    cx: &Ctx,
    at: &Location,
    f: &str,
    name: &str,
    p: &RawProcess,
    names: &[String],
    dir: &Path,
) -> Result<ProcessSpec, ExperimentError> {
    let cwd = match &p.cwd {
        None => dir.to_path_buf(),
        Some(c) => dir.join(c),
    };
    if !cwd.is_dir() {
        return Err(cx.err(
            at,
            format!("{f}.cwd"),
            format!("{} is not a folder", cwd.display()),
        ));
    }
    let command = match &p.image {
        None => command(cx, at, f, p, &cwd)?,
        Some(image) => image_process(cx, at, f, image, p)?,
    };
    let config = config_file(cx, at, f, name, p, dir)?;
    let texts = command
        .iter()
        .map(|c| (format!("{f}.command"), c))
        .chain(p.env.iter().map(|(k, v)| (format!("{f}.env.{k}"), v)))
        .chain(config.iter().map(|(_, t)| (format!("{f}.config"), t)));
    for (field, text) in texts {
        for ph in placeholders(text) {
            let ok = match ph.strip_prefix("port.") {
                Some(other) => names.iter().any(|n| n == other),
                None => ph == "port" || (ph == "config" && config.is_some()),
            };
            if !ok {
                return Err(cx.err(at, field, format!("`{{{ph}}}` names nothing: write `{{port}}`, `{{port.NAME}}` with NAME one of {names:?}, or `{{config}}` with a `config:` file")));
            }
        }
    }
    for k in p.env.keys() {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(cx.err(
                at,
                format!("{f}.env"),
                format!("{k:?} is not a variable name"),
            ));
        }
    }
    let (ready, ready_timeout) = ready(cx, at, f, p.ready.as_ref())?;
    Ok(ProcessSpec {
        name: name.to_string(),
        image: p.image.clone(),
        command,
        env: p.env.clone(),
        cwd,
        port: port(cx, at, f, p.port.as_ref())?,
        ready,
        ready_timeout,
        config,
    })
}

/// An image's process: its command as written (run inside it), a fixed
/// port (where it listens inside), no folder or config file of this
/// machine, and no `{port.NAME}` (its peers' ports are this machine's).
fn image_process(
    cx: &Ctx,
    at: &Location,
    f: &str,
    image: &str,
    p: &RawProcess,
) -> Result<Vec<String>, ExperimentError> {
    if image.trim().is_empty() || image.contains(char::is_whitespace) {
        return Err(cx.err(
            at,
            format!("{f}.image"),
            "a local image name, e.g. myapp:local",
        ));
    }
    let refused = [("cwd", p.cwd.is_some()), ("config", p.config.is_some())];
    if let Some((k, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(cx.err(
            at,
            format!("{f}.{k}"),
            "is for a command; a process with `image:` runs in its container",
        ));
    }
    if !matches!(&p.port, Some(serde_json::Value::Number(_))) {
        return Err(cx.err(
            at,
            format!("{f}.port"),
            "with `image:`, the port the service listens on inside its container (a number)",
        ));
    }
    let command = p.command.clone().unwrap_or_default();
    let texts = command.iter().chain(p.env.values());
    if let Some(ph) = texts.flat_map(|t| placeholders(t)).find(|ph| ph != "port") {
        return Err(cx.err(
            at,
            f,
            format!(
                "`{{{ph}}}`: a container's command and env know only `{{port}}` (its port inside)"
            ),
        ));
    }
    Ok(command)
}

/// The argv: a program found now (on `PATH`, or a path relative to `cwd`,
/// made absolute), so a typo is an error here rather than at start.
fn command(
    cx: &Ctx,
    at: &Location,
    f: &str,
    p: &RawProcess,
    cwd: &Path,
) -> Result<Vec<String>, ExperimentError> {
    let field = format!("{f}.command");
    let mut argv = match &p.command {
        Some(c) if !c.is_empty() && !c[0].trim().is_empty() => c.clone(),
        _ => return Err(cx.err(at, field, "give the program and its arguments as a list, e.g. [python3, -m, http.server, \"{port}\"] (no shell)")),
    };
    let program = argv[0].clone();
    if program.contains('/') {
        let path = cwd.join(&program);
        if !is_executable(&path) {
            return Err(cx.err(
                at,
                field,
                format!(
                    "program {program:?} is not an executable file ({})",
                    path.display()
                ),
            ));
        }
        argv[0] = path.display().to_string();
    } else if super::which(&program).is_none() {
        return Err(cx.err(
            at,
            field,
            format!("program {program:?} is not found on PATH; install it, or give its path"),
        ));
    }
    Ok(argv)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `port:` `auto` (or absent: `None`) or 1..=65535.
fn port(
    cx: &Ctx,
    at: &Location,
    f: &str,
    v: Option<&serde_json::Value>,
) -> Result<Option<u16>, ExperimentError> {
    match v {
        None => Ok(None),
        Some(serde_json::Value::String(s)) if s == "auto" => Ok(None),
        Some(serde_json::Value::Number(n)) => match n.as_u64() {
            Some(p @ 1..=65535) => Ok(Some(p as u16)),
            _ => Err(cx.err(
                at,
                format!("{f}.port"),
                format!("{n} is not a port: 1..=65535, or `auto`"),
            )),
        },
        Some(other) => Err(cx.err(
            at,
            format!("{f}.port"),
            format!("{other} is not a port: a number 1..=65535, or `auto` (a free loopback port)"),
        )),
    }
}

/// `ready:` one of `http` or `tcp`, and its timeout (default 30s).
fn ready(
    cx: &Ctx,
    at: &Location,
    f: &str,
    r: Option<&RawReady>,
) -> Result<(Ready, Duration), ExperimentError> {
    let Some(r) = r else {
        return Ok((Ready::Tcp, Duration::from_secs(30)));
    };
    let field = format!("{f}.ready");
    let ready = match (&r.http, r.tcp) {
        (Some(path), None | Some(false)) if path.starts_with('/') => Ready::Http(path.clone()),
        (Some(_), None | Some(false)) => {
            return Err(cx.err(
                at,
                format!("{field}.http"),
                "a path on the process's port, starting with '/' (e.g. /health)",
            ))
        }
        (None, Some(true)) | (None, None) => Ready::Tcp,
        _ => return Err(cx.err(at, field, "give one of `http: /path` or `tcp: true`")),
    };
    let timeout = match &r.timeout {
        None => Duration::from_secs(30),
        Some(t) => cx.duration(at, &format!("{field}.timeout"), t)?,
    };
    if timeout < Duration::from_millis(100) || timeout > Duration::from_secs(600) {
        return Err(cx.err(
            at,
            format!("{field}.timeout"),
            "must be between 100ms and 10m",
        ));
    }
    Ok((ready, timeout))
}

/// `config:` its file name and template text (read now, relative to `dir`).
fn config_file(
    cx: &Ctx,
    at: &Location,
    f: &str,
    name: &str,
    p: &RawProcess,
    dir: &Path,
) -> Result<Option<(String, String)>, ExperimentError> {
    let Some(c) = &p.config else {
        return Ok(None);
    };
    let field = format!("{f}.config");
    let text = match (&c.template, &c.text) {
        (Some(t), None) => {
            let path = dir.join(t);
            std::fs::read_to_string(&path).map_err(|e| {
                cx.err(
                    at,
                    format!("{field}.template"),
                    format!("reading {}: {e}", path.display()),
                )
            })?
        }
        (None, Some(t)) => t.clone(),
        _ => return Err(cx.err(at, field, "give one of `template: FILE` or `text: ...`")),
    };
    let file = c.name.clone().unwrap_or_else(|| format!("{name}.conf"));
    if file.is_empty() || file.contains('/') || file.starts_with('.') {
        return Err(cx.err(
            at,
            format!("{field}.name"),
            "a plain file name (no '/', not hidden)",
        ));
    }
    Ok(Some((file, text)))
}

/// Two processes cannot listen on the same fixed port.
fn fixed_ports_differ(
    cx: &Ctx,
    at: &Location,
    specs: &[ProcessSpec],
) -> Result<(), ExperimentError> {
    let mut seen = BTreeMap::new();
    for s in specs {
        if let Some(p) = s.port {
            if let Some(other) = seen.insert(p, &s.name) {
                return Err(cx.err(
                    at,
                    format!("system.processes.{}.port", s.name),
                    format!("port {p} is {other}'s too"),
                ));
            }
        }
    }
    Ok(())
}

/// `target:` which process the load goes to (default: the only one), and
/// its metrics; an external target's keys refused.
fn target(
    cx: &Ctx,
    raw: &RawExperiment,
    env: &mut ProcessesEnv,
    names: &[String],
    env_at: &Location,
) -> Result<(), ExperimentError> {
    let t = raw.target.as_ref();
    if let Some(t) = t {
        let bad = [
            ("url", t.url.is_some()),
            ("admin_token", t.admin_token.is_some()),
            ("components", !t.components.is_empty()),
            ("allow_remote", t.allow_remote),
        ];
        if let Some((k, _)) = bad.iter().find(|(_, set)| *set) {
            return Err(cx.err(env_at, format!("target.{k}"), "is for environment external; with environment processes, `target:` takes `process` and `metrics`"));
        }
    }
    env.target = match t.and_then(|t| t.process.as_ref()) {
        Some(p) if names.contains(&p.value) => p.value.clone(),
        Some(p) => {
            return Err(cx.err(
                &p.referenced,
                "target.process",
                format!("no such process; processes are {names:?}"),
            ))
        }
        None if names.len() == 1 => names[0].clone(),
        None => {
            return Err(cx.err(
                env_at,
                "target.process",
                format!("name the process the load goes to, one of {names:?}"),
            ))
        }
    };
    if let Some(m) = t.and_then(|t| t.metrics.as_ref()) {
        env.metrics = Some(metrics(cx, m, names)?);
    }
    Ok(())
}

/// `target.metrics`: a path on the target process, or a loopback URL whose
/// placeholders name processes.
fn metrics(
    cx: &Ctx,
    m: &serde_saphyr::Spanned<String>,
    names: &[String],
) -> Result<String, ExperimentError> {
    let v = m.value.trim();
    if !v.starts_with('/') {
        let ones = placeholders(v).into_iter().map(|p| (p, "1".to_string()));
        let filled = substitute(v, &ones.collect());
        let host = reqwest::Url::parse(&filled)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string));
        if !host.is_some_and(|h| super::loopback_host(&h)) {
            return Err(cx.err(&m.referenced, "target.metrics", "a path on the target process (`/metrics`) or a loopback URL (`http://127.0.0.1:{port.NAME}/metrics`)"));
        }
    }
    let unknown = placeholders(v).into_iter().find(|p| {
        p != "port"
            && p.strip_prefix("port.")
                .is_none_or(|n| !names.iter().any(|x| x == n))
    });
    if let Some(u) = unknown {
        return Err(cx.err(
            &m.referenced,
            "target.metrics",
            format!("`{{{u}}}` names no process"),
        ));
    }
    Ok(v.to_string())
}
