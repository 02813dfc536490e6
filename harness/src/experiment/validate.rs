//! From the raw file to a checked `Experiment`, with located errors.

use super::raw::*;
use super::*;
use run_report::{CompareOp, METRICS, WINDOWED_METRICS, ZONE_METRICS};
use serde_saphyr::{Location, Spanned};
use std::path::Path;

/// A bad experiment file: where, which field, what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{column}: {field}: {message}")]
pub struct ExperimentError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub field: String,
    pub message: String,
}

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(
        &self,
        at: &Location,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ExperimentError {
        ExperimentError {
            file: self.file.to_string(),
            line: at.line(),
            column: at.column(),
            field: field.into(),
            message: message.into(),
        }
    }

    fn duration(
        &self,
        at: &Location,
        field: &str,
        text: &str,
    ) -> Result<Duration, ExperimentError> {
        humantime::parse_duration(text.trim()).map_err(|e| {
            self.err(
                at,
                field,
                format!("{text:?} is not a duration ({e}); write e.g. 30s, 500ms, 2m"),
            )
        })
    }
}

/// Reads and validates an experiment file.
pub fn load(path: &Path, quick: bool) -> Result<Experiment, ExperimentError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ExperimentError {
        file: file.clone(),
        line: 0,
        column: 0,
        field: "(file)".into(),
        message: format!("cannot read: {e}"),
    })?;
    parse(&text, &file, quick)
}

/// Validates an experiment given as text; `file` names it in errors.
pub fn parse(text: &str, file: &str, quick: bool) -> Result<Experiment, ExperimentError> {
    let cx = Ctx { file };
    let raw: RawExperiment = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        ExperimentError {
            file: file.to_string(),
            line,
            column,
            field: field_of(&e.to_string()),
            message: e.to_string(),
        }
    })?;
    // The untyped tree, for merging variant overrides key by key.
    let tree: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| ExperimentError {
        file: file.to_string(),
        line: 0,
        column: 0,
        field: "(file)".into(),
        message: e.to_string(),
    })?;

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

    let environment = match &raw.environment {
        None => Environment::Embedded,
        Some(s) => match s.value.as_str() {
            "embedded" => Environment::Embedded,
            "external" => {
                let t = raw.target.as_ref().ok_or_else(|| {
                    cx.err(
                        &s.referenced,
                        "target",
                        "environment external needs `target: { url: ... }`",
                    )
                })?;
                let url = t.url.value.trim_end_matches('/').to_string();
                let parsed = reqwest::Url::parse(&url)
                    .map_err(|e| cx.err(&t.url.referenced, "target.url", e.to_string()))?;
                let host = parsed.host_str().unwrap_or("");
                let loopback = host == "localhost"
                    || host
                        .trim_matches(['[', ']'])
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback());
                if !loopback && !t.allow_remote {
                    return Err(cx.err(&t.url.referenced, "target.url", "is not a loopback address; load tests send traffic to this machine only unless `allow_remote: true` is set"));
                }
                Environment::External {
                    url,
                    admin_token: t.admin_token.clone(),
                }
            }
            "containers" => containers_environment(&raw),
            other => {
                return Err(cx.err(
                    &s.referenced,
                    "environment",
                    format!(
                        "unknown environment {other:?}; expected embedded, containers or external"
                    ),
                ))
            }
        },
    };

    let analysis = analysis_config(&cx, &analysis_raw)?;
    let workload = workload(&cx, &raw.workload, duration)?;
    let base_client = client(&cx, &raw.workload.client, "workload.client")?;

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
        let mut merged = base_system_tree.clone();
        if let Some(over) = tree.pointer(&format!("/variants/{}/system", escape_pointer(vname))) {
            merge(&mut merged, over);
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
        let mut client_b = base_client.clone();
        if let Some(c) = &v.value.client {
            if let Some(r) = &c.retry {
                r.validate()
                    .map_err(|m| cx.err(at, format!("variants.{vname}.client.retry"), m))?;
                client_b.retry = r.clone();
            }
            if let Some(t) = &c.timeout {
                client_b.timeout =
                    cx.duration(at, &format!("variants.{vname}.client.timeout"), t)?;
            }
        }
        if let Environment::External { .. } = environment {
            if v.value.system.is_some() {
                return Err(cx.err(at, format!("variants.{vname}.system"), "an external target's configuration cannot be changed by the harness; variants of an external experiment may only change `client`"));
            }
        }
        variants.push(Variant {
            name: vname.clone(),
            description: v.value.description.clone(),
            system,
            client: client_b,
        });
    }

    let zones: Vec<String> = variants[0].system.zones.clone();
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let mut timeline = Vec::new();
    for (i, e) in timeline_raw.iter().enumerate() {
        let entry = timeline_entry(&cx, i, e, duration, &zones, &environment)?;
        if let Some(only) = &entry.variants {
            if entry.is_fault {
                return Err(cx.err(&e.referenced, format!("timeline[{i}].variants"), "a fault applies to every variant (same trigger for before and after); only actions can be limited to variants"));
            }
            if let Some(bad) = only.iter().find(|n| !names.contains(n)) {
                return Err(cx.err(
                    &e.referenced,
                    format!("timeline[{i}].variants"),
                    format!("no such variant {bad:?}"),
                ));
            }
        }
        timeline.push(entry);
    }
    baseline_room(&cx, &timeline, &timeline_raw, &analysis)?;
    timeline.sort_by_key(|e| e.at);

    let variant_names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let mut expectations = Vec::new();
    for (vname, metrics) in &expect_raw {
        if !variant_names.contains(&vname.as_str()) {
            let at = metrics
                .first()
                .map(|(_, v)| v.referenced)
                .unwrap_or(raw.name.referenced);
            return Err(cx.err(
                &at,
                format!("expect.{vname}"),
                format!("no such variant; variants are {variant_names:?}"),
            ));
        }
        for (key, value) in metrics {
            expectations.push(expectation(&cx, vname, key, value, &zones)?);
        }
    }
    let mut incident = Vec::new();
    for (i, f) in raw.incident.iter().enumerate() {
        let known = run_report::MetricRef::parse(&f.value.metric)
            .filter(|m| METRICS.contains(&m.name.as_str()));
        if known.is_none() {
            return Err(cx.err(
                &f.referenced,
                format!("incident[{i}].metric"),
                format!(
                    "{:?} is not a metric: write NAME, NAME{{ZONE}} or NAME[FROMs..TOs] with NAME one of {}",
                    f.value.metric,
                    METRICS.join(", ")
                ),
            ));
        }
        if !variant_names.contains(&f.value.variant.as_str()) {
            return Err(cx.err(
                &f.referenced,
                format!("incident[{i}].variant"),
                format!("no such variant {:?}", f.value.variant),
            ));
        }
        incident.push(IncidentFigure {
            metric: f.value.metric.clone(),
            variant: f.value.variant.clone(),
            incident_value: f.value.value,
            label: f.value.label.clone(),
        });
    }

    Ok(Experiment {
        name,
        description: raw.description.trim().to_string(),
        seed: raw.seed,
        duration,
        quick,
        environment,
        analysis,
        workload,
        timeline,
        variants,
        expectations,
        incident,
        source: text.to_string(),
        container_images: match containers_environment(&raw) {
            Environment::Containers { images } => images,
            _ => unreachable!("containers_environment gives Containers"),
        },
    })
}

/// The first trigger must leave `analysis.min_baseline` seconds after the
/// warm-up: the verdict compares everything with that baseline. `timeline`
/// is still in file order, so its indexes are those of `raw_timeline`.
fn baseline_room(
    cx: &Ctx,
    timeline: &[TimelineEntry],
    raw_timeline: &[Spanned<RawTimelineEntry>],
    analysis: &AnalysisConfig,
) -> Result<(), ExperimentError> {
    let Some((i, first)) = timeline
        .iter()
        .enumerate()
        .filter(|(_, e)| e.trigger)
        .min_by_key(|(_, e)| e.at)
    else {
        return Ok(());
    };
    let room = first.at.as_secs_f64() - f64::from(analysis.warmup_s);
    let need = f64::from(analysis.min_baseline_s.max(1));
    if room >= need {
        return Ok(());
    }
    Err(cx.err(
        &raw_timeline[i].referenced,
        format!("timeline[{i}].at"),
        format!(
            "the first trigger at {}s leaves {:.0}s of baseline after the {}s warm-up; the \
             verdict needs at least analysis.min_baseline = {need:.0}s (move the trigger to {}s or \
             later, or shorten the warm-up)",
            first.at.as_secs_f64(),
            room.max(0.0),
            analysis.warmup_s,
            f64::from(analysis.warmup_s) + need
        ),
    ))
}

/// Best effort: the field a serde message talks about (`unknown field `x``).
fn field_of(msg: &str) -> String {
    for marker in ["unknown field `", "missing field `", "unknown variant `"] {
        if let Some(i) = msg.find(marker) {
            let rest = &msg[i + marker.len()..];
            if let Some(j) = rest.find('`') {
                return rest[..j].to_string();
            }
        }
    }
    "(syntax)".into()
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Deep merge: maps merge key by key, anything else replaces.
fn merge(base: &mut serde_json::Value, over: &serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn analysis_config(cx: &Ctx, a: &RawAnalysis) -> Result<AnalysisConfig, ExperimentError> {
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

fn rate(
    cx: &Ctx,
    at: &Location,
    field: &str,
    r: Option<f64>,
    c: Option<f64>,
) -> Result<Rate, ExperimentError> {
    match (r, c) {
        (Some(r), None) if r > 0.0 && r.is_finite() && r <= 100_000.0 => Ok(Rate::PerSec(r)),
        (Some(r), None) => Err(cx.err(
            at,
            format!("{field}.rate"),
            format!("{r} is not a usable rate: must be > 0 and <= 100000 documents/s"),
        )),
        (None, Some(c)) if c > 0.0 && c.is_finite() && c <= 10.0 => Ok(Rate::Capacity(c)),
        (None, Some(c)) => Err(cx.err(
            at,
            format!("{field}.capacity"),
            format!("{c} is not a usable share of capacity: must be in (0, 10]"),
        )),
        _ => Err(cx.err(
            at,
            field,
            "give exactly one of `rate` (documents/s) or `capacity` (share of calibrated capacity)",
        )),
    }
}

fn workload(cx: &Ctx, w: &RawWorkload, duration: Duration) -> Result<Workload, ExperimentError> {
    let at = &w.arrival.referenced;
    let arrival = match &w.arrival.value {
        RawArrival::Constant(r) => Arrival::Constant(rate(
            cx,
            at,
            "workload.arrival.constant",
            r.rate,
            r.capacity,
        )?),
        RawArrival::Ramp { from, to } => Arrival::Ramp {
            from: rate(
                cx,
                at,
                "workload.arrival.ramp.from",
                from.rate,
                from.capacity,
            )?,
            to: rate(cx, at, "workload.arrival.ramp.to", to.rate, to.capacity)?,
        },
        RawArrival::Steps(steps) => {
            if steps.is_empty() {
                return Err(cx.err(at, "workload.arrival.steps", "needs at least one step"));
            }
            let mut out = Vec::new();
            for (i, s) in steps.iter().enumerate() {
                let f = format!("workload.arrival.steps[{i}]");
                let t = cx.duration(at, &format!("{f}.at"), &s.at)?;
                if t >= duration {
                    return Err(cx.err(at, format!("{f}.at"), "is after the end of the run"));
                }
                out.push((t, rate(cx, at, &f, s.rate, s.capacity)?));
            }
            out.sort_by_key(|(t, _)| *t);
            Arrival::Steps(out)
        }
    };
    let pages = w.documents.pages.value;
    let pat = &w.documents.pages.referenced;
    match pages {
        PageDistribution::Fixed(0) => {
            return Err(cx.err(pat, "workload.documents.pages.fixed", "must be >= 1"))
        }
        PageDistribution::Uniform { min, max } if min == 0 || min > max => {
            return Err(cx.err(
                pat,
                "workload.documents.pages.uniform",
                "needs 1 <= min <= max",
            ))
        }
        PageDistribution::Lognormal { median, sigma, max }
            if !(median >= 1.0 && (0.0..5.0).contains(&sigma) && max >= 1) =>
        {
            return Err(cx.err(
                pat,
                "workload.documents.pages.lognormal",
                "needs median >= 1, 0 <= sigma < 5, max >= 1",
            ))
        }
        _ => {}
    }
    if w.documents.tenants.value == 0 || w.documents.tenants.value > 1000 {
        return Err(cx.err(
            &w.documents.tenants.referenced,
            "workload.documents.tenants",
            "must be in 1..=1000",
        ));
    }
    let max_in_flight = match &w.max_in_flight {
        Some(m) if m.value == 0 || m.value > 15_000 => {
            return Err(cx.err(
                &m.referenced,
                "workload.max_in_flight",
                "must be in 1..=15000 (each in-flight journey may hold a socket)",
            ))
        }
        Some(m) => m.value,
        None => 5_000,
    };
    Ok(Workload {
        arrival,
        pages,
        tenants: w.documents.tenants.value,
        max_in_flight,
    })
}

fn client(cx: &Ctx, c: &RawClient, field: &str) -> Result<ClientBehaviour, ExperimentError> {
    let timeout = cx.duration(
        &c.timeout.referenced,
        &format!("{field}.timeout"),
        &c.timeout.value,
    )?;
    if timeout.is_zero() {
        return Err(cx.err(
            &c.timeout.referenced,
            format!("{field}.timeout"),
            "must be > 0",
        ));
    }
    c.retry
        .validate()
        .map_err(|m| cx.err(&c.timeout.referenced, format!("{field}.retry"), m))?;
    Ok(ClientBehaviour {
        retry: c.retry.clone(),
        timeout,
    })
}

fn timeline_entry(
    cx: &Ctx,
    i: usize,
    e: &Spanned<RawTimelineEntry>,
    duration: Duration,
    zones: &[String],
    env: &Environment,
) -> Result<TimelineEntry, ExperimentError> {
    let at_loc = &e.referenced;
    let f = format!("timeline[{i}]");
    let v = &e.value;
    let at = cx.duration(at_loc, &format!("{f}.at"), &v.at)?;
    if at >= duration {
        return Err(cx.err(
            at_loc,
            format!("{f}.at"),
            format!(
                "{} is not inside the run ({})",
                v.at,
                humantime::format_duration(duration)
            ),
        ));
    }
    let dur = match &v.duration {
        Some(d) => Some(cx.duration(at_loc, &format!("{f}.duration"), d)?),
        None => None,
    };
    let (value, is_fault, kind) = match (&v.fault, &v.action) {
        (Some(x), None) => (x, true, "fault"),
        (None, Some(x)) => (x, false, "action"),
        _ => return Err(cx.err(at_loc, &f, "give exactly one of `fault` or `action`")),
    };
    let field = format!("{f}.{kind}");
    let op = if let Some(o) = value.get("oversized_documents") {
        let od: OversizedDocuments = serde_json::from_value(o.clone()).map_err(|e| {
            cx.err(
                at_loc,
                format!("{field}.oversized_documents"),
                e.to_string(),
            )
        })?;
        if od.count == 0
            || od.count > 10_000
            || od.min_pages == 0
            || od.min_pages > od.max_pages
            || od.max_pages > 100_000
        {
            return Err(cx.err(
                at_loc,
                format!("{field}.oversized_documents"),
                "needs 1 <= count <= 10000 and 1 <= min_pages <= max_pages <= 100000",
            ));
        }
        TimelineOp::OversizedDocuments(od)
    } else {
        let cmd: sut::AdminCommand = serde_json::from_value(value.clone()).map_err(|e| {
            cx.err(at_loc, &field, format!("{e}; expected one of cache_fill, cache_fill_to_limit, cache_on_full, set_slots, set_gpu_lanes, set_gpu_speed, set_gateway_attempts, zone_fail, zone_recover, zone_outage, zone_restore, stop_allocations, resume_allocations, throttle, oversized_documents"))
        })?;
        if let Some(z) = command_zone(&cmd) {
            if !zones.iter().any(|x| x == z) {
                return Err(cx.err(
                    at_loc,
                    &field,
                    format!("unknown zone {z:?}; zones are {zones:?}"),
                ));
            }
        }
        if let Environment::External {
            admin_token: None, ..
        } = env
        {
            return Err(cx.err(at_loc, &field, "this target has no admin API (`target.admin_token` not set), so this entry cannot run; remove it or give the token"));
        }
        TimelineOp::Admin(cmd)
    };
    if let Some(d) = dur {
        if op.revert().is_none() {
            return Err(cx.err(at_loc, format!("{f}.duration"), "only zone_fail, zone_outage, set_gpu_speed, stop_allocations and throttle can have a duration (they are undone at its end)"));
        }
        if at + d > duration {
            return Err(cx.err(at_loc, format!("{f}.duration"), "ends after the run"));
        }
    }
    let label = v.label.clone().unwrap_or_else(|| default_label(&op));
    Ok(TimelineEntry {
        at,
        duration: dur,
        variants: v.variants.clone(),
        trigger: v.trigger.unwrap_or(is_fault),
        op,
        is_fault,
        label,
    })
}

/// `environment: containers` with the images of the `containers:` section.
pub fn containers_environment(raw: &RawExperiment) -> Environment {
    let c = raw.containers.as_ref();
    Environment::Containers {
        images: crate::containers::ContainerImages::resolve(
            c.and_then(|c| c.sut_image.clone()),
            c.and_then(|c| c.redis_image.clone()),
        ),
    }
}

fn command_zone(cmd: &sut::AdminCommand) -> Option<&str> {
    use sut::AdminCommand::*;
    match cmd {
        SetSlots { zone, .. } | SetGpuLanes { zone, .. } | SetGpuSpeed { zone, .. } => {
            zone.as_deref()
        }
        ZoneFail { zone, .. }
        | ZoneRecover { zone }
        | ZoneOutage { zone }
        | ZoneRestore { zone }
        | StopAllocations { zone }
        | ResumeAllocations { zone }
        | Throttle { zone, .. } => Some(zone),
        _ => None,
    }
}

fn default_label(op: &TimelineOp) -> String {
    use sut::AdminCommand::*;
    match op {
        TimelineOp::OversizedDocuments(o) => format!(
            "{} x{} ({}-{} pages)",
            o.tenant, o.count, o.min_pages, o.max_pages
        ),
        TimelineOp::Admin(c) => match c {
            CacheFill { entries } => format!("cache fill {entries}"),
            CacheFillToLimit => "cache at limit".into(),
            CacheOnFull { on_full } => format!("cache on_full {on_full:?}"),
            SetSlots { slots, .. } => format!("slots {slots}"),
            SetGpuLanes { lanes, .. } => format!("GPU lanes {lanes}"),
            SetGpuSpeed { factor, .. } => format!("GPU speed x{factor}"),
            SetGatewayAttempts { attempts } => format!("gateway attempts {attempts}"),
            ZoneFail { zone, ratio } => format!("{zone} failing {:.0}%", ratio * 100.0),
            ZoneRecover { zone } => format!("{zone} recovers"),
            ZoneOutage { zone } => format!("{zone} out"),
            ZoneRestore { zone } => format!("{zone} back"),
            StopAllocations { zone } => format!("stop {zone}"),
            ResumeAllocations { zone } => format!("resume {zone}"),
            Throttle { zone, per_sec } => match per_sec {
                Some(r) => format!("throttle {zone} {r}/s"),
                None => format!("unthrottle {zone}"),
            },
        },
    }
}

/// `waves`, `failure_ratio_mean[40s..70s]`, `zone_failure_ratio_peak{az2}` with `">= 3"` or `0`.
fn expectation(
    cx: &Ctx,
    variant: &str,
    key: &str,
    value: &Spanned<ExpectValue>,
    zones: &[String],
) -> Result<ExpectationSpec, ExperimentError> {
    let at = &value.referenced;
    let field = format!("expect.{variant}.{key}");
    let mut metric = key.trim().to_string();
    let mut window = None;
    if let Some(i) = metric.find('[') {
        let inner = metric[i + 1..].trim_end_matches(']').to_string();
        metric.truncate(i);
        let (a, b) = inner.split_once("..").ok_or_else(|| {
            cx.err(
                at,
                &field,
                "a window is written [FROM..TO], e.g. [40s..70s]",
            )
        })?;
        let a = cx.duration(at, &field, a)?.as_secs_f64();
        let b = cx.duration(at, &field, b)?.as_secs_f64();
        if b <= a {
            return Err(cx.err(at, &field, "window end must be after its start"));
        }
        window = Some((a, b));
    }
    let mut zone = None;
    if let Some(i) = metric.find('{') {
        zone = Some(metric[i + 1..].trim_end_matches('}').to_string());
        metric.truncate(i);
    }
    if !METRICS.contains(&metric.as_str()) {
        return Err(cx.err(
            at,
            &field,
            format!(
                "unknown metric {metric:?}; known metrics: {}",
                METRICS.join(", ")
            ),
        ));
    }
    if window.is_some() && !WINDOWED_METRICS.contains(&metric.as_str()) {
        return Err(cx.err(
            at,
            &field,
            format!(
                "{metric} does not take a window; windowed metrics: {}",
                WINDOWED_METRICS.join(", ")
            ),
        ));
    }
    let is_zone_metric = ZONE_METRICS.contains(&metric.as_str());
    match (&zone, is_zone_metric) {
        (Some(z), true) if !zones.contains(z) => {
            return Err(cx.err(
                at,
                &field,
                format!("unknown zone {z:?}; zones are {zones:?}"),
            ))
        }
        (None, true) => {
            return Err(cx.err(
                at,
                &field,
                format!("{metric} needs a zone: {metric}{{ZONE}}"),
            ))
        }
        (Some(_), false) => {
            return Err(cx.err(at, &field, format!("{metric} is not a per-zone metric")))
        }
        _ => {}
    }
    if metric == "verdict" {
        return verdict_expectation(cx, variant, value);
    }
    let (op, num, source) = match &value.value {
        ExpectValue::Number(n) => (CompareOp::Eq, *n, format!("== {n}")),
        ExpectValue::Text(t) => {
            let t = t.trim();
            let (op, rest) = [
                (">=", CompareOp::Ge),
                ("<=", CompareOp::Le),
                ("==", CompareOp::Eq),
                (">", CompareOp::Gt),
                ("<", CompareOp::Lt),
            ]
            .iter()
            .find_map(|(p, op)| t.strip_prefix(p).map(|r| (*op, r)))
            .unwrap_or((CompareOp::Eq, t));
            let n: f64 = rest.trim().parse().map_err(|_| {
                cx.err(
                    at,
                    &field,
                    format!("{t:?} is not a comparison; write e.g. \">= 3\", \"<= 1.3\" or 0"),
                )
            })?;
            (op, n, t.to_string())
        }
    };
    if !num.is_finite() {
        return Err(cx.err(at, &field, "the expected value must be a finite number"));
    }
    Ok(ExpectationSpec {
        variant: variant.to_string(),
        metric,
        zone,
        window,
        op,
        value: num,
        source,
        classes: Vec::new(),
    })
}

/// `verdict: metastable` or `verdict: "stable|recovered"`.
fn verdict_expectation(
    cx: &Ctx,
    variant: &str,
    value: &Spanned<ExpectValue>,
) -> Result<ExpectationSpec, ExperimentError> {
    let field = format!("expect.{variant}.verdict");
    let known = run_report::VERDICT_CLASSES;
    let ExpectValue::Text(text) = &value.value else {
        return Err(cx.err(
            &value.referenced,
            &field,
            format!(
                "the verdict is a class, not a number: one of {}, or several joined by |",
                known.join(", ")
            ),
        ));
    };
    let classes: Vec<String> = text
        .split('|')
        .map(|c| c.trim().replace(' ', "_"))
        .collect();
    if let Some(bad) = classes.iter().find(|c| !known.contains(&c.as_str())) {
        return Err(cx.err(
            &value.referenced,
            &field,
            format!(
                "{bad:?} is not a verdict; verdicts are {}",
                known.join(", ")
            ),
        ));
    }
    Ok(ExpectationSpec {
        variant: variant.to_string(),
        metric: "verdict".into(),
        zone: None,
        window: None,
        op: CompareOp::Eq,
        value: 0.0,
        source: classes.join(" | "),
        classes,
    })
}
