//! `system.gateway.proxy`: a real HAProxy or nginx as the gateway. Each
//! variant's configuration file is resolved against the experiment file's
//! folder, read, and must carry the harness's placeholders (`{{listen}}`,
//! `{{pool:ZONE}}` for every zone, and for nginx `{{access_log}}`, where the
//! harness's upstream log goes); and the system's own gateway retries must
//! be one attempt, since the proxy is the retry layer. Errors point at the
//! variant. Whether the proxy's binary is installed is the run's concern,
//! not the file's (`programs.rs`: a run in the embedded environment looks
//! it up and names the Debian package; in containers its image must exist,
//! checked when the variant starts, and `ci/images.sh` builds it).

use super::super::programs::NeededProgram;
use super::super::raw::RawExperiment;
use super::super::{Environment, Variant};
use super::{Ctx, ExperimentError};
use std::path::Path;
use sut::config::ProxyConfig;

/// Checks every variant's proxy and makes its file path absolute; returns
/// the proxy binaries a run in the embedded environment needs installed.
pub(super) fn proxies(
    cx: &Ctx,
    raw: &RawExperiment,
    variants: &mut [Variant],
    environment: &Environment,
) -> Result<Vec<NeededProgram>, ExperimentError> {
    let base = Path::new(cx.file()).parent().unwrap_or(Path::new("."));
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    let base = base.as_path();
    let fallback = raw.name.referenced;
    let mut needed = Vec::new();
    for v in variants.iter_mut() {
        let Some(proxy) = v.system.gateway.proxy.clone() else {
            continue;
        };
        let at = raw
            .variants
            .iter()
            .find(|(n, _)| *n == &v.name)
            .map(|(_, s)| s.referenced)
            .unwrap_or(fallback);
        let field = format!("variants.{}.system.gateway.proxy", v.name);
        let resolved = proxy.resolved(base);
        let err = |f: &str, m: String| cx.err(&at, format!("{field}{f}"), m);
        if let Environment::External { .. } | Environment::Processes(_) = environment {
            return Err(err("", format!("a proxy gateway runs where the harness starts the system (embedded, as a child process on loopback; containers, as a container); not in {}", environment.kind())));
        }
        let (kind, text) = read(&resolved).map_err(|m| err(".config", m.to_string()))?;
        // Only where the proxy reads them: a placeholder in a comment is none.
        let live = uncommented(&text);
        for need in placeholders(&resolved, &v.system.zones) {
            if !live.contains(&need) {
                return Err(err(
                    ".config",
                    format!(
                        "{} has no {need} placeholder; the harness puts {} there (see experiments/README.md, \"Real proxies\")",
                        resolved.config().display(),
                        what(&need)
                    ),
                ));
            }
        }
        needed.push(NeededProgram {
            program: kind,
            missing: err(
                "",
                format!("`{kind}` is not installed (PATH), and this run starts it as the gateway; install the Debian package: apt-get install {}, or run with --environment containers", package(kind)),
            ),
        });
        if v.system.gateway.retry.max_attempts != 1 {
            return Err(cx.err(&at, format!("variants.{}.system.gateway.retry.max_attempts", v.name), "must be 1 with a proxy gateway: the proxy is the retry layer, and each pool process's own gateway must not retry too"));
        }
        v.system.gateway.proxy = Some(resolved);
    }
    Ok(needed)
}

/// A proxy's configuration file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {error}", path.display())]
struct Unreadable {
    path: std::path::PathBuf,
    error: std::io::Error,
}

fn read(p: &ProxyConfig) -> Result<(&'static str, String), Unreadable> {
    let text = std::fs::read_to_string(p.config()).map_err(|error| Unreadable {
        path: p.config().to_path_buf(),
        error,
    })?;
    Ok((binary(p), text))
}

/// The proxy's executable.
pub(crate) fn binary(p: &ProxyConfig) -> &'static str {
    match p {
        ProxyConfig::Haproxy { .. } => "haproxy",
        ProxyConfig::Nginx { .. } => "nginx",
    }
}

/// The Debian package that installs `binary`.
fn package(binary: &str) -> &'static str {
    match binary {
        "haproxy" => "haproxy",
        _ => "nginx-light",
    }
}

/// The placeholders `p`'s file must have.
fn placeholders(p: &ProxyConfig, zones: &[String]) -> Vec<String> {
    let mut v = vec!["{{listen}}".to_string()];
    v.extend(zones.iter().map(|z| format!("{{{{pool:{z}}}}}")));
    match p {
        ProxyConfig::Haproxy { .. } => {}
        ProxyConfig::Nginx { .. } => v.push("{{access_log}}".into()),
    }
    v
}

fn what(placeholder: &str) -> &'static str {
    match placeholder {
        "{{listen}}" => "the loopback address the load is sent to",
        "{{access_log}}" => "its log_format and access_log lines (inside `http { }`), from which gateway amplification is read",
        _ => "the zone's pool address (host:port)",
    }
}

/// `binary` on PATH, if installed (Debian puts both in /usr/sbin).
pub(crate) fn which(binary: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(binary))
        .find(|p| p.is_file())
}

/// `text` without its `#` comment lines.
fn uncommented(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}
