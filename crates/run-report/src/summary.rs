//! `summary.json`: the machine-readable verdicts, with a stable schema so CI
//! and dashboards can read it without parsing HTML. Schema version 4 (what
//! changed between versions is in git and CHANGELOG.md):
//!
//! ```text
//! {
//!   "schema_version": 4, "run_schema": u32 (run.json's, see RUN_SCHEMA),
//!   "experiment": str, "description": str, "run_id": str, "started_at": str (RFC 3339),
//!   "seed": u64, "quick": bool,
//!   "clock": { "kind": "real" | "virtual", and for a live run: "wall_s", "clock_s",
//!              "clock_to_wall" (seconds of its clock per wall second) },
//!   "run_json_sha256": str (hex digest of run.json: a virtual run replays byte for byte),
//!   "environment": { kind, gpu_adapter, gpu_fallback, gpu_fallback_reason, calibrated_pages_per_sec,
//!                    calibrated_docs_per_sec, harness_version, hostname, cpus, extra },
//!   "analysis_config": { wave_threshold, wave_merge_gap_s, wave_min_duration_s, recovery_factor,
//!                        recovery_window_s, warmup_s, min_baseline_s },
//!   "rules": { "waves": str, "verdict": str },
//!   "variants": [{
//!     "name": str,
//!     "verdict": { "verdict": "stable" | "recovered" | "metastable" | "overloaded" | "inconclusive"
//!                             | "never_healthy" | "no_trigger",
//!                  recovered: "after_s", "degraded_s", "slow"?: { residue_end_s, recovered_at_s,
//!                             took_s, window_s, drained: [str] };
//!                  metastable: "residue_end_s", "degraded_for_s", "recovered_at_s", "ended_by"?,
//!                  "sustaining": { from_s, to_s, measured, baseline, named: [str] };
//!                  overloaded: "since_s", "before_trigger", "offered_per_s", "baseline_per_s";
//!                  inconclusive: "reason", "needed_s"; never_healthy: "reason" },
//!     "verdict_text": str (the verdict with what it rests on),
//!     "baseline": null | { seconds, failure_ratio, p99_ms, p95_ms (pooled), ratio_limit,
//!                          slow_above_ms, latency_judged, offered_per_s, offered_is_planned,
//!                          effect, backlog: { in_flight, queue_depth, gpu_queue_pages },
//!                          excluded_s?: [u32] },
//!     "triggers": [{ label, start_s, end_s, residue_end_s, residue }],
//!     "episodes": [{ labels, start_s, trigger_end_s, residue_end_s, horizon_s, horizon_is_end,
//!                    outcome: { "outcome": "recovered", at_s } | { "outcome": "still_degraded" }
//!                           | { "outcome": "undecided", reason, needed_s } }],
//!     "judged_end_s": u32,
//!     "first_trigger_start_s": f64 | null, "last_trigger_end_s": f64 | null, "last_residue_end_s": f64 | null,
//!     "waves": [{ start_s, duration_s, peak_failure_ratio, mean_failure_ratio, peak_amplification }],
//!     "metrics": { <every run-scope Metric>: f64 | null, "<zone or alert Metric>{<zone or rule>}": f64 | null,
//!                  "<Metric>{<label>}[<from>s..<to>s]": f64 | null (the windowed metrics the campaign names) },
//!     "integrity": { submitted, completed, given_up, pending, results_checked, incorrect_results,
//!                    incorrect_examples, pending_agent_lost, submitted_digest: hex str,
//!                    accounted: bool, ok: bool, problems: [str] },
//!     "latency": { count, p50_ms, p90_ms, p99_ms, p999_ms, max_ms },
//!     "interrupted": bool, "interrupted_reason": str | null, "late_arrivals": u64,
//!     "agents": [{ name, shard, of, documents, lost: str | null, pending_agent_lost, cpu_s: float | null }]
//!     "harness_cost": null | { wall_s, cpus, method, cpu: [{ name, role: "load_path" | "harness"
//!                     | "system_under_test" | "unattributed", cpu_s }], not_measured: [str],
//!                     arrivals_sent, late_arrivals, behind_schedule, lag_p50_ms, lag_p99_ms,
//!                     lag_max_ms, machine_share: f64 | null, delivered_as_planned: bool,
//!                     warnings: [str] },
//!     "gpu_pacing": null | { run_s, model_s (back-to-back GPU batches as run and as modeled),
//!                     slower_by: f64 | null, warning: str | null, left_out_zones: [str]
//!                     (zones whose pool the timeline paused, CPU-limited or killed) },
//!     "target_series": [{ name, expr, samples, mean, max, before_trigger, after_residue,
//!                     after_residue_from_s (f64 | null each), unmeasured: str | null }]
//!                     (an external target's `target_series:` expressions; empty without them)
//!   }],
//!   "expectations": [{ variant, metric (as written, with {zone} and [window]), metric_name, zone, window,
//!                      op, value, expected (the source text), measured: f64 | null, passed,
//!                      not_evaluated: str | null (why: an alert metric on the virtual clock;
//!                      then passed is false and it does not count against all_passed), message }],
//!   "fidelity": [{ variant, metric, label, incident_value, measured, difference, ratio, note }],
//!   "all_passed": bool
//! }
//! ```
//!
//! Undefined numbers (and NaN) are `null`. New fields may be added; existing
//! ones keep their meaning while `schema_version` stays 4.

use crate::analysis::verdict::triggers_of;
use crate::analysis::{Analysis, VariantAnalysis};
use crate::metrics::{Metric, MetricRef, Scope};
use crate::model::{RunData, VariantRun};
use crate::series::zone_names;
use serde_json::{json, Map, Value};

/// Version of the summary.json schema described in this module.
pub const SCHEMA_VERSION: u32 = 4;

/// Every catalogue metric by its key: run-scope ones always (null when
/// undefined), zone and alert ones per zone and rule seen.
fn metrics(v: &VariantRun, a: &VariantAnalysis, run: &RunData) -> Value {
    let zones = zone_names(&v.seconds);
    let rules: Vec<&str> = v.alerts.iter().map(|r| r.name.as_str()).collect();
    let mut m = Map::new();
    for &metric in Metric::ALL {
        let labels: Vec<&str> = match metric.scope() {
            Scope::Run if metric.needs_window() => continue,
            Scope::Run => {
                m.insert(metric.name().into(), json!(a.metrics.get(metric)));
                continue;
            }
            Scope::Zone => zones.iter().map(String::as_str).collect(),
            Scope::Alert => rules.clone(),
        };
        for label in labels {
            let value = a.metrics.labelled(metric, label);
            m.insert(format!("{metric}{{{label}}}"), json!(value));
        }
    }
    for windowed in &run.campaign_metrics {
        let value = crate::analysis::metric_value_explained(v, a, windowed, &run.analysis).ok();
        m.insert(windowed.to_string(), json!(value));
    }
    Value::Object(m)
}

fn variant(v: &VariantRun, a: &VariantAnalysis, run: &RunData) -> Value {
    let triggers = triggers_of(v);
    let i = &v.integrity;
    let l = &v.latency;
    json!({
        "name": v.name,
        "verdict": a.verdict,
        "verdict_text": a.verdict.explanation(),
        "baseline": a.baseline,
        "triggers": triggers,
        "episodes": a.episodes,
        "judged_end_s": a.judged_end_s,
        "first_trigger_start_s": triggers.iter().map(|t| t.start_s).reduce(f64::min),
        "last_trigger_end_s": triggers.iter().filter_map(|t| t.end_s).reduce(f64::max),
        "last_residue_end_s": a.episodes.last().and_then(|e| e.residue_end_s),
        "waves": a.waves,
        "metrics": metrics(v, a, run),
        "integrity": {
            "submitted": i.submitted,
            "completed": i.completed,
            "given_up": i.given_up,
            "pending": i.pending,
            "results_checked": i.results_checked,
            "incorrect_results": i.incorrect_results,
            "incorrect_examples": i.incorrect_examples,
            "pending_agent_lost": i.pending_agent_lost,
            "submitted_digest": format!("{:016x}", i.submitted_digest),
            "accounted": i.accounted(),
            "ok": a.integrity_ok,
            "problems": a.integrity_problems,
        },
        "latency": {
            "count": l.count, "p50_ms": l.p50_ms, "p90_ms": l.p90_ms, "p99_ms": l.p99_ms,
            "p999_ms": l.p999_ms, "max_ms": l.max_ms,
        },
        "interrupted": v.interrupted,
        "interrupted_reason": v.interrupted_reason,
        "late_arrivals": v.late_arrivals,
        "agents": v.agents.iter().map(|a| json!({
            "name": a.name, "shard": a.shard, "of": a.of, "documents": a.documents,
            "lost": a.lost, "pending_agent_lost": a.pending_agent_lost, "cpu_s": a.cpu_s,
        })).collect::<Vec<_>>(),
        "gpu_pacing": v.gpu_pacing.as_ref().map(|p| json!({
            "run_s": p.run_secs, "model_s": p.model_secs, "slower_by": p.slower_by(),
            "warning": p.warning(), "left_out_zones": p.left_out_zones,
        })),
        "target_series": crate::target_series::summary(v),
        "harness_cost": v.harness_cost.as_ref().map(|c| {
            let mut o = serde_json::to_value(c).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut o {
                m.insert("machine_share".into(), json!(c.machine_share()));
                m.insert("delivered_as_planned".into(), json!(c.delivered_as_planned()));
                m.insert("warnings".into(), json!(c.warnings()));
            }
            o
        }),
    })
}

/// The whole summary.json document (schema in the module doc).
pub fn summary_json(run: &RunData, analysis: &Analysis) -> Value {
    let variants: Vec<Value> = run
        .variants
        .iter()
        .map(|v| variant(v, &analysis.variant_for(v, &run.analysis), run))
        .collect();
    let expectations: Vec<Value> = analysis
        .expectations
        .iter()
        .map(|e| {
            json!({
                "variant": e.spec.variant,
                "metric": MetricRef::of(&e.spec).to_string(),
                "metric_name": e.spec.metric,
                "zone": e.spec.zone,
                "window": e.spec.window,
                "op": e.spec.op,
                "value": e.spec.value,
                "expected": e.spec.source,
                "measured": e.measured,
                "passed": e.passed,
                "not_evaluated": e.not_evaluated,
                "message": e.message,
            })
        })
        .collect();
    json!({
        "schema_version": SCHEMA_VERSION,
        "run_schema": run.schema,
        "experiment": run.experiment,
        "description": run.description,
        "run_id": run.run_id,
        "started_at": run.started_at,
        "seed": run.seed,
        "quick": run.quick,
        "environment": run.environment,
        "analysis_config": run.analysis,
        "rules": { "waves": analysis.wave_rule, "verdict": analysis.verdict_rule },
        "variants": variants,
        "expectations": expectations,
        "fidelity": analysis.fidelity,
        "all_passed": analysis.all_passed,
        "clock": clock(run),
        "run_json_sha256": crate::sha256::sha256_hex(run_json(run).as_bytes()),
    })
}

/// run.json's text, as `write_report` writes it.
pub fn run_json(run: &RunData) -> String {
    serde_json::to_string(run).expect("a run serialises") + "\n"
}

/// Which clock ran, and (for the live run) its time against the wall's.
fn clock(run: &RunData) -> Value {
    let mut c = json!({ "kind": run.clock.name() });
    if let Some(t) = &run.timing {
        c["wall_s"] = json!(t.wall_s);
        c["clock_s"] = json!(t.clock_s);
        c["clock_to_wall"] = json!(t.ratio());
    }
    c
}
