//! The sections of an experiment file other than the timeline, the
//! workload (`workload.rs`) and the expectations, one function each: name,
//! the form to run (full or quick), environment, analysis thresholds,
//! variants (overrides merged onto the base system and validated again)
//! and the incident's figures.

use super::super::raw::*;
use super::super::*;
use super::{Ctx, ExperimentError};
use serde_saphyr::{Location, Spanned};

/// The name, which also names the report folder.
pub(super) fn name(cx: &Ctx, raw: &RawExperiment) -> Result<String, ExperimentError> {
    let name = raw.name.value.trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(cx.err(
            &raw.name.referenced,
            "name",
            "must be non-empty ASCII letters, digits, '-' or '_' (it names the report folder)",
        ));
    }
    Ok(name)
}

/// The parts of the file the chosen form runs: the full form, or `quick:`
/// with its own duration and, where given, its own timeline, expectations
/// and analysis.
pub(super) struct Form {
    pub duration: Duration,
    pub timeline: Vec<Spanned<RawTimelineEntry>>,
    pub expect: RawExpect,
    pub analysis: RawAnalysis,
    /// `campaign:` of the form (the quick form's own, else the file's).
    pub campaign: Option<Spanned<RawCampaign>>,
}

pub(super) fn form(cx: &Ctx, raw: &RawExperiment, quick: bool) -> Result<Form, ExperimentError> {
    let full_duration = cx.duration(&raw.duration.referenced, "duration", &raw.duration.value)?;
    let (duration, timeline_raw, expect_raw, analysis_raw) = match (&raw.quick, quick) {
        (Some(q), true) => (
            cx.duration(&q.duration.referenced, "quick.duration", &q.duration.value)?,
            q.timeline.clone().unwrap_or_else(|| raw.timeline.clone()),
            q.expect.clone().unwrap_or_else(|| raw.expect.clone()),
            q.analysis.clone().unwrap_or_else(|| raw.analysis.clone()),
        ),
        (None, true) => {
            return Err(cx.err(&raw.duration.referenced, "quick", "--quick needs a `quick:` section in the experiment (its duration, and optionally its own timeline and expect)"))
        }
        _ => (full_duration, raw.timeline.clone(), raw.expect.clone(), raw.analysis.clone()),
    };
    if duration < Duration::from_secs(2) || duration > Duration::from_secs(3600) {
        return Err(cx.err(
            &raw.duration.referenced,
            "duration",
            "must be between 2s and 1h",
        ));
    }

    let campaign = match (&raw.quick, quick) {
        (Some(q), true) if q.campaign.is_some() => q.campaign.clone(),
        _ => raw.campaign.clone(),
    };
    Ok(Form {
        duration,
        timeline: timeline_raw,
        expect: expect_raw,
        analysis: analysis_raw,
        campaign,
    })
}

/// Where the system under test runs.
pub(super) fn environment(cx: &Ctx, raw: &RawExperiment) -> Result<Environment, ExperimentError> {
    Ok(match &raw.environment {
        None => Environment::Embedded,
        Some(s) => match s.value {
            EnvironmentKind::Embedded => Environment::Embedded,
            EnvironmentKind::External => {
                let t = raw.target.as_ref().ok_or_else(|| {
                    cx.err(
                        &s.referenced,
                        "target",
                        "environment external needs `target: { url: ... }`",
                    )
                })?;
                let url = t.url.as_ref().ok_or_else(|| {
                    cx.err(
                        &s.referenced,
                        "target.url",
                        "environment external needs `target: { url: ... }`",
                    )
                })?;
                Environment::External {
                    url: target_url(cx, url, "target.url", t.allow_remote)?,
                    admin_token: t.admin_token.clone(),
                    components: t.components.clone(),
                    metrics: t
                        .metrics
                        .as_ref()
                        .map(|m| target_url(cx, m, "target.metrics", t.allow_remote))
                        .transpose()?,
                }
            }
            EnvironmentKind::Containers => Environment::Containers {
                images: container_images(raw),
            },
            // Filled per variant once the variants are known (`processes.rs`).
            EnvironmentKind::Processes => Environment::Processes(Default::default()),
        },
    })
}

/// A URL of the target (`field`), its trailing `/` trimmed: it must parse,
/// and be loopback unless `allow_remote`.
fn target_url(
    cx: &Ctx,
    u: &Spanned<String>,
    field: &str,
    allow_remote: bool,
) -> Result<String, ExperimentError> {
    let url = u.value.trim().trim_end_matches('/').to_string();
    let parsed =
        reqwest::Url::parse(&url).map_err(|e| cx.err(&u.referenced, field, e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(cx.err(&u.referenced, field, "must be an http:// or https:// URL"));
    }
    if !loopback_host(parsed.host_str().unwrap_or("")) && !allow_remote {
        return Err(cx.err(&u.referenced, field, "is not a loopback address; load tests send traffic to this machine only unless `allow_remote: true` is set"));
    }
    Ok(url)
}

/// Whether a URL's host is this machine: `localhost` or a loopback address
/// (`[::1]` with or without its brackets). Load goes nowhere else unless allowed.
pub(crate) fn loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The images `environment: containers` (or `--environment containers`) runs.
pub(super) fn container_images(raw: &RawExperiment) -> crate::experiment::images::ContainerImages {
    let c = raw.containers.as_ref();
    crate::experiment::images::ContainerImages::resolve(
        c.and_then(|c| c.sut_image.clone()),
        c.and_then(|c| c.redis_image.clone()),
    )
}

pub(super) fn analysis_config(
    cx: &Ctx,
    a: &RawAnalysis,
) -> Result<AnalysisConfig, ExperimentError> {
    let mut c = AnalysisConfig::default();
    let secs =
        |s: &Option<Spanned<String>>, field: &str, into: &mut u32| -> Result<(), ExperimentError> {
            if let Some(s) = s {
                let d = cx.duration(&s.referenced, field, &s.value)?;
                *into = d.as_secs_f64().round() as u32;
            }
            Ok(())
        };
    if let Some(t) = &a.wave_threshold {
        if !(t.value > 0.0 && t.value < 1.0) {
            return Err(cx.err(
                &t.referenced,
                "analysis.wave_threshold",
                "must be in (0, 1)",
            ));
        }
        c.wave_threshold = t.value;
    }
    if let Some(t) = &a.customer_failure_threshold {
        if !(t.value > 0.0 && t.value < 1.0) {
            return Err(cx.err(
                &t.referenced,
                "analysis.customer_failure_threshold",
                "must be in (0, 1)",
            ));
        }
        c.customer_failure_threshold = t.value;
    }
    if let Some(f) = &a.recovery_factor {
        if !(f.value >= 1.0 && f.value.is_finite()) {
            return Err(cx.err(&f.referenced, "analysis.recovery_factor", "must be >= 1"));
        }
        c.recovery_factor = f.value;
    }
    secs(
        &a.wave_merge_gap,
        "analysis.wave_merge_gap",
        &mut c.wave_merge_gap_s,
    )?;
    secs(
        &a.wave_min_duration,
        "analysis.wave_min_duration",
        &mut c.wave_min_duration_s,
    )?;
    secs(
        &a.recovery_window,
        "analysis.recovery_window",
        &mut c.recovery_window_s,
    )?;
    secs(&a.warmup, "analysis.warmup", &mut c.warmup_s)?;
    secs(
        &a.min_baseline,
        "analysis.min_baseline",
        &mut c.min_baseline_s,
    )?;
    if let Some(b) = &a.min_baseline {
        if c.min_baseline_s == 0 {
            return Err(cx.err(
                &b.referenced,
                "analysis.min_baseline",
                "must be at least 1s: a verdict needs a baseline to compare with",
            ));
        }
    }
    if let Some(w) = &a.recovery_window {
        if c.recovery_window_s == 0 {
            return Err(cx.err(
                &w.referenced,
                "analysis.recovery_window",
                "must be at least 1s",
            ));
        }
    }
    Ok(c)
}

/// Every variant: the base system with the variant's overrides merged key by
/// key, validated again (typed first, so a misspelt key is an error with its
/// line), and the base client with the variant's changes.
pub(super) fn variants(
    cx: &Ctx,
    raw: &RawExperiment,
    tree: &serde_json::Value,
    environment: &Environment,
) -> Result<Vec<Variant>, ExperimentError> {
    let base_client = super::client::client(
        cx,
        &raw.workload.client,
        "workload.client",
        super::workload::raw_tenants(&raw.workload),
    )?;
    // Base system: validated on its own first (its errors are the clearest).
    let sys_loc = raw
        .variants
        .first()
        .map(|(_, v)| v.referenced)
        .unwrap_or(raw.name.referenced);
    raw.system
        .validate()
        .map_err(|e| cx.err(&sys_loc, format!("system.{}", e.field), e.message))?;

    if raw.variants.is_empty() {
        return Err(cx.err(
            &raw.name.referenced,
            "variants",
            "at least one variant is required",
        ));
    }
    let base_system_tree = tree.get("system").cloned().unwrap_or(serde_json::json!({}));
    let mut variants = Vec::new();
    for (vname, v) in &raw.variants {
        let at = &v.referenced;
        variant_name(cx, at, vname)?;
        let system = variant_system(cx, at, vname, &base_system_tree, tree)?;
        let client = variant_client(cx, at, vname, &base_client, v.value.client.as_ref())?;
        if let Environment::External { .. } = environment {
            if v.value.system.is_some() {
                return Err(cx.err(at, format!("variants.{vname}.system"), "an external target's configuration cannot be changed by the harness; variants of an external experiment may only change `client`"));
            }
        }
        variants.push(Variant {
            name: vname.clone(),
            description: v.value.description.clone(),
            system,
            client,
        });
    }

    Ok(variants)
}

/// A variant's name names its report folder and its part of object names:
/// ASCII letters, digits, '-' or '_'.
fn variant_name(cx: &Ctx, at: &Location, vname: &str) -> Result<(), ExperimentError> {
    if vname.is_empty()
        || !vname
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(cx.err(
            at,
            format!("variants.{vname}"),
            "variant names are ASCII letters, digits, '-' or '_'",
        ));
    }
    Ok(())
}

/// The variant's system: its `system:` overrides merged onto the base
/// system's tree, read as typed configuration (a misspelt key is an error
/// at the variant) and validated again.
fn variant_system(
    cx: &Ctx,
    at: &Location,
    vname: &str,
    base_system_tree: &serde_json::Value,
    tree: &serde_json::Value,
) -> Result<SystemConfig, ExperimentError> {
    let mut merged = base_system_tree.clone();
    if let Some(over) = tree.pointer(&format!("/variants/{}/system", escape_pointer(vname))) {
        super::merge(&mut merged, over);
    }
    // `processes` and `compose` are the processes environment's (`processes.rs`).
    if let Some(m) = merged.as_object_mut() {
        m.remove("processes");
        m.remove("compose");
    }
    let system: SystemConfig = serde_json::from_value(merged)
        .map_err(|e| cx.err(at, format!("variants.{vname}.system"), e.to_string()))?;
    system.validate().map_err(|e| {
        cx.err(
            at,
            format!("variants.{vname}.system.{}", e.field),
            e.message,
        )
    })?;
    Ok(system)
}

/// The variant's client: the base client with the variant's retry policy,
/// timeout and submission mode (a poll alone keeps the base mode).
fn variant_client(
    cx: &Ctx,
    at: &Location,
    vname: &str,
    base_client: &ClientBehaviour,
    over: Option<&RawClientOverride>,
) -> Result<ClientBehaviour, ExperimentError> {
    let mut client_b = base_client.clone();
    let Some(c) = over else {
        return Ok(client_b);
    };
    if let Some(r) = &c.retry {
        r.validate()
            .map_err(|m| cx.err(at, format!("variants.{vname}.client.retry"), m.to_string()))?;
        client_b.retry = r.clone();
    }
    if let Some(t) = &c.timeout {
        client_b.timeout = cx.duration(at, &format!("variants.{vname}.client.timeout"), t)?;
    }
    if c.mode.is_some() || c.poll.is_some() {
        let mode = c.mode.unwrap_or(match client_b.submission {
            Submission::Sync => ClientMode::Sync,
            Submission::Async { .. } => ClientMode::Async,
        });
        client_b.submission = super::client::submission(
            cx,
            at,
            &format!("variants.{vname}.client"),
            mode,
            c.poll.as_ref(),
        )?;
    }
    Ok(client_b)
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The incident's own figures, for the fidelity panel.
pub(super) fn incident(
    cx: &Ctx,
    raw: &RawExperiment,
    variants: &[Variant],
) -> Result<Vec<IncidentFigure>, ExperimentError> {
    let variant_names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let mut incident = Vec::new();
    for (i, f) in raw.incident.iter().enumerate() {
        let metric = run_report::MetricRef::parse(&f.value.metric).map_err(|why| {
            cx.err(
                &f.referenced,
                format!("incident[{i}].metric"),
                why.to_string(),
            )
        })?;
        if !variant_names.contains(&f.value.variant.as_str()) {
            return Err(cx.err(
                &f.referenced,
                format!("incident[{i}].variant"),
                format!("no such variant {:?}", f.value.variant),
            ));
        }
        incident.push(IncidentFigure {
            metric,
            variant: f.value.variant.clone(),
            incident_value: f.value.value,
            label: f.value.label.clone(),
        });
    }

    Ok(incident)
}
