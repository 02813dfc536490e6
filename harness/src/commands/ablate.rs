//! `harness ablate`: which defect caused it?
//!
//! A postmortem says "two independent defects combined". This runs, from the
//! same seed, load and timeline: the before-fix variant; before-fix with one
//! fix applied at a time; the after-fix variant; and after-fix with one fix
//! taken back at a time. The fixes are found, not listed: they are the
//! configuration values in which after-fix differs from before-fix, grouped
//! by the layer they belong to (`pool.dedup`, `cache`, `gateway`, ...).
//!
//! Classification (waves are the analysis' waves of the run):
//! - a defect is **necessary** when fixing it alone removes every wave;
//!   **contributing** when fixing it alone lowers the failure (fewer waves,
//!   or a mean failure ratio at least 20% lower); otherwise **neither** — and
//!   **harmful alone** when fixing it alone makes the failure worse (more
//!   waves or a mean failure ratio 20% higher), the interaction a user would
//!   not guess;
//! - a fix is **sufficient alone** when before-fix with only that fix shows no
//!   wave, and **needed** when after-fix without it shows waves again.

use crate::experiment::{Experiment, Variant};
use run_report::ablation::{Classification, GroupVerdict, RunOutcome};
use run_report::{Analysis, Metric, VariantAnalysis};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// One switch group that differs between the two variants.
#[derive(Debug, Clone, Serialize)]
pub struct FixGroup {
    /// e.g. `pool.dedup`, `cache`.
    pub name: String,
    /// Each differing leaf: path, before value, after value.
    pub changes: Vec<(String, Value, Value)>,
    /// The group's whole subtree in each variant: applying or reverting a fix
    /// swaps the subtree, since an enum switch (`fixed` -> `estimated`) is not
    /// a set of independent leaves.
    #[serde(skip)]
    pub before: Value,
    #[serde(skip)]
    pub after: Value,
}

/// The group a configuration path belongs to: the layer's key (two levels
/// inside `pool`, whose switches are independent mechanisms).
fn group_path(path: &[String]) -> Vec<String> {
    let n = if path.first().is_some_and(|f| f == "pool") {
        2
    } else {
        1
    };
    path.iter().take(n).cloned().collect()
}

fn subtree<'a>(v: &'a Value, path: &[String]) -> &'a Value {
    path.iter().fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

fn leaves(v: &Value, path: &mut Vec<String>, out: &mut BTreeMap<Vec<String>, Value>) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, x) in map {
                path.push(k.clone());
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => {
            out.insert(path.clone(), v.clone());
        }
    }
}

fn set_path(v: &mut Value, path: &[String], value: Value) {
    match path {
        [] => *v = value,
        [k, rest @ ..] => {
            if !v.is_object() {
                *v = Value::Object(Default::default());
            }
            if let Value::Object(map) = v {
                set_path(map.entry(k.clone()).or_insert(Value::Null), rest, value);
            }
        }
    }
}

/// Why an ablation could not be planned: a variant not in the file, two
/// variants with one configuration, or a configuration that does not
/// round-trip or validate with one fix group applied.
#[derive(Debug, thiserror::Error)]
pub enum AblateError {
    #[error("no variant named {variant:?} in {name}")]
    NoVariant { variant: String, name: String },
    #[error("{before} and {after} have the same system configuration: nothing to ablate")]
    Same { before: String, after: String },
    #[error("{}", crate::base::causes::Causes(.0))]
    Json(#[from] serde_json::Error),
    #[error("{}", crate::base::causes::Causes(.0))]
    Config(#[from] sut::config::SystemConfigError),
}

/// The fix groups between two system configurations.
pub fn fix_groups(
    before: &sut::SystemConfig,
    after: &sut::SystemConfig,
) -> Result<Vec<FixGroup>, AblateError> {
    let (b, a) = (serde_json::to_value(before)?, serde_json::to_value(after)?);
    let (mut lb, mut la) = (BTreeMap::new(), BTreeMap::new());
    leaves(&b, &mut Vec::new(), &mut lb);
    leaves(&a, &mut Vec::new(), &mut la);
    let mut groups: BTreeMap<String, FixGroup> = BTreeMap::new();
    let keys: std::collections::BTreeSet<_> = lb.keys().chain(la.keys()).cloned().collect();
    for k in keys {
        let (vb, va) = (
            lb.get(&k).cloned().unwrap_or(Value::Null),
            la.get(&k).cloned().unwrap_or(Value::Null),
        );
        if vb != va {
            let gp = group_path(&k);
            let name = gp.join(".");
            groups
                .entry(name.clone())
                .or_insert_with(|| FixGroup {
                    name,
                    changes: Vec::new(),
                    before: subtree(&b, &gp).clone(),
                    after: subtree(&a, &gp).clone(),
                })
                .changes
                .push((k.join("."), vb, va));
        }
    }
    Ok(groups.into_values().collect())
}

/// `base` with the changes of `group` set to their `before` (revert) or `after` (apply) values.
fn with_group(
    base: &sut::SystemConfig,
    group: &FixGroup,
    apply: bool,
) -> Result<sut::SystemConfig, AblateError> {
    let mut v = serde_json::to_value(base)?;
    let parts: Vec<String> = group.name.split('.').map(String::from).collect();
    set_path(
        &mut v,
        &parts,
        if apply {
            group.after.clone()
        } else {
            group.before.clone()
        },
    );
    let cfg: sut::SystemConfig = serde_json::from_value(v)?;
    cfg.validate()?;
    Ok(cfg)
}

/// The ablation plan: an experiment whose variants are the ablation runs.
pub struct Plan {
    pub experiment: Experiment,
    pub groups: Vec<FixGroup>,
    pub before: String,
    pub after: String,
}

/// Builds the runs; `before`/`after` name the two variants to compare.
pub fn plan(exp: &Experiment, before: &str, after: &str) -> Result<Plan, AblateError> {
    let find = |n: &str| {
        exp.variants
            .iter()
            .find(|v| v.name == n)
            .cloned()
            .ok_or_else(|| AblateError::NoVariant {
                variant: n.to_string(),
                name: exp.name.clone(),
            })
    };
    let (b, a) = (find(before)?, find(after)?);
    let groups = fix_groups(&b.system, &a.system)?;
    if groups.is_empty() {
        return Err(AblateError::Same {
            before: before.to_string(),
            after: after.to_string(),
        });
    }
    let mut variants = vec![b.clone()];
    for g in &groups {
        variants.push(Variant {
            name: format!("{before}+{}", g.name),
            description: format!("{before} with only the {} fix", g.name),
            system: with_group(&b.system, g, true)?,
            client: b.client.clone(),
        });
    }
    variants.push(a.clone());
    for g in &groups {
        variants.push(Variant {
            name: format!("{after}-{}", g.name),
            description: format!("{after} without the {} fix", g.name),
            system: with_group(&a.system, g, false)?,
            client: a.client.clone(),
        });
    }
    let mut e = exp.clone();
    e.name = format!("{}-ablation", exp.name);
    e.variants = variants;
    e.expectations.clear();
    e.incident.clear();
    // Actions limited to the named variants follow them into their ablations.
    for t in &mut e.timeline {
        if let Some(only) = &mut t.variants {
            let extra: Vec<String> = e
                .variants
                .iter()
                .filter(|v| {
                    only.iter().any(|o| {
                        v.name == *o
                            || v.name.starts_with(&format!("{o}+"))
                            || v.name.starts_with(&format!("{o}-"))
                    })
                })
                .map(|v| v.name.clone())
                .collect();
            *only = extra;
        }
    }
    Ok(Plan {
        experiment: e,
        groups,
        before: before.to_string(),
        after: after.to_string(),
    })
}

/// Estimated wall time of the plan.
pub fn estimate(p: &Plan) -> Duration {
    let per = p.experiment.duration
        + crate::load::drain_time(Duration::from_secs(1), 4)
        + Duration::from_secs(3);
    per * p.experiment.variants.len() as u32
}

fn metric(a: &VariantAnalysis, m: Metric) -> f64 {
    a.metrics.get(m).unwrap_or(f64::NAN)
}

/// Waves, mean failure ratio and verdict of every analysed run, by variant name.
pub fn results_of(analysis: &Analysis) -> BTreeMap<String, RunOutcome> {
    analysis
        .variants
        .iter()
        .map(|a| {
            (
                a.name.clone(),
                RunOutcome {
                    waves: metric(a, Metric::Waves),
                    mean_failure: metric(a, Metric::FailureRatioMean),
                    verdict: a.verdict.class().to_string(),
                },
            )
        })
        .collect()
}

/// Classifies every group from the runs' waves and mean failure ratio (the
/// verdicts are shown beside them): pure, so it is tested on recorded summaries.
pub fn classify(
    groups: &[FixGroup],
    before: &str,
    after: &str,
    results: &BTreeMap<String, RunOutcome>,
) -> Classification {
    let run = |n: &str| {
        results.get(n).cloned().unwrap_or(RunOutcome {
            waves: f64::NAN,
            mean_failure: f64::NAN,
            verdict: "not run".into(),
        })
    };
    let (b, a) = (run(before), run(after));
    let (bw, bf, aw) = (b.waves, b.mean_failure, a.waves);
    let groups = groups
        .iter()
        .map(|g| {
            let alone = run(&format!("{before}+{}", g.name));
            let without = run(&format!("{after}-{}", g.name));
            let (fw, ff, ww) = (alone.waves, alone.mean_failure, without.waves);
            let defect = if fw == 0.0 && bw > 0.0 {
                "necessary"
            } else if fw > bw || ff > bf * 1.2 {
                "harmful alone"
            } else if fw < bw || ff < bf * 0.8 {
                "contributing"
            } else {
                "neither"
            };
            GroupVerdict {
                group: g.name.clone(),
                changes: g
                    .changes
                    .iter()
                    .map(|(p, b, a)| format!("{p}: {b} -> {a}"))
                    .collect(),
                fix_alone: alone,
                without_fix: without,
                defect: defect.into(),
                fix_sufficient_alone: fw == 0.0,
                fix_needed: ww > aw,
            }
        })
        .collect();
    Classification {
        before: b,
        after: a,
        groups,
    }
}

/// `harness ablate FILE`: the plan stated and held to its budget, the runs,
/// and each defect and fix classified, printed and written beside the report.
pub fn cli(
    args: crate::cli::AblateArgs,
) -> Result<crate::base::exit::Finished, crate::base::exit::CliError> {
    use crate::base::exit::{CliError, Finished};
    let mut exp = super::run::load(&args.experiment, args.quick, args.seed)?;
    super::run::apply_clock(&args.experiment, &mut exp, args.clock, args.without_alerts)?;
    let plan = plan(&exp, &args.before, &args.after).map_err(CliError::new)?;
    let est = args.clock.wall_estimate(estimate(&plan));
    eprintln!(
        "ablation of {}: {} fix groups ({}), {} runs, estimated {}",
        exp.name,
        plan.groups.len(),
        plan.groups
            .iter()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        plan.experiment.variants.len(),
        humantime::format_duration(std::time::Duration::from_secs(est.as_secs()))
    );
    crate::commands::budget::check(est, *args.budget, args.force, "use --quick")
        .map_err(CliError::new)?;
    let (rt, stop) = crate::base::interrupt::clock_runtime(args.clock)?;
    let opts = crate::run::RunOptions {
        out_dir: args.out,
        clock: args.clock,
        ..crate::run::RunOptions::default()
    };
    let outcome = rt
        .block_on(crate::run::run(&plan.experiment, &opts, stop.clone()))
        .map_err(CliError::new)?;
    let c = classify(
        &plan.groups,
        &plan.before,
        &plan.after,
        &results_of(&outcome.analysis),
    );
    print!("{}", run_report::ablation::ablation_table(&c));
    let png = std::fs::read(outcome.report_dir.join("charts/waves.png")).ok();
    run_report::ablation::write_ablation(
        &outcome.report_dir,
        &exp.name,
        &c,
        "index.html",
        png.as_deref(),
    )
    .map_err(|e| CliError::new(format_args!("writing the ablation's page: {e}")))?;
    eprintln!("ablation: {}/ablation.html", outcome.report_dir.display());
    if outcome.interrupted {
        return Ok(Finished::Interrupted);
    }
    Ok(Finished::Passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sut::config::{DedupMode, OnFull};

    #[test]
    fn groups_are_the_differing_layers() {
        let before = sut::SystemConfig::default();
        let mut after = before.clone();
        after.pool.dedup = DedupMode::WaitWithoutSlot;
        after.cache.on_full = OnFull::Error;
        after.cache.capacity = 7;
        after.gateway.retry.max_attempts = 1;
        let mut before2 = before.clone();
        before2.pool.dedup = DedupMode::AbandonedDeadlineHoldsSlot;
        before2.cache.on_full = OnFull::AckAndDrop;
        before2.gateway.retry.max_attempts = 3;
        let g = fix_groups(&before2, &after).unwrap();
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, vec!["cache", "gateway", "pool.dedup"]);
        assert_eq!(
            g[0].changes.len(),
            2,
            "capacity and on_full: {:?}",
            g[0].changes
        );
        let applied = with_group(&before2, &g[2], true).unwrap();
        assert_eq!(applied.pool.dedup, DedupMode::WaitWithoutSlot);
        assert_eq!(
            applied.cache.on_full,
            OnFull::AckAndDrop,
            "other groups untouched"
        );
        // An enum switch is swapped whole, not merged leaf by leaf.
        let mut fixed = before2.clone();
        fixed.pool.retry_after = sut::config::RetryAfterMode::Estimated {
            jitter: 0.5,
            min: std::time::Duration::from_millis(1),
            max: std::time::Duration::from_secs(1),
        };
        let g2 = fix_groups(&before2, &fixed).unwrap();
        assert_eq!(
            with_group(&before2, &g2[0], true).unwrap().pool.retry_after,
            fixed.pool.retry_after
        );
        let reverted = with_group(&after, &g[0], false).unwrap();
        assert_eq!(reverted.cache.on_full, OnFull::AckAndDrop);
        assert_eq!(reverted.pool.dedup, DedupMode::WaitWithoutSlot);
    }

    #[test]
    fn classification_rules() {
        let groups: Vec<FixGroup> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| FixGroup {
                name: n.to_string(),
                changes: vec![],
                before: Value::Null,
                after: Value::Null,
            })
            .collect();
        let results: BTreeMap<String, RunOutcome> = [
            ("B", (4.0, 0.5)),
            ("B+a", (0.0, 0.05)), // necessary
            ("B+b", (2.0, 0.3)),  // contributing
            ("B+c", (4.0, 0.5)),  // neither
            ("B+d", (6.0, 0.7)),  // harmful alone
            ("A", (0.0, 0.02)),
            ("A-a", (3.0, 0.4)),
            ("A-b", (0.0, 0.02)),
            ("A-c", (0.0, 0.02)),
            ("A-d", (0.0, 0.03)),
        ]
        .into_iter()
        .map(|(k, (waves, mean_failure))| {
            let verdict = if waves > 0.0 { "recovered" } else { "stable" }.to_string();
            (
                k.to_string(),
                RunOutcome {
                    waves,
                    mean_failure,
                    verdict,
                },
            )
        })
        .collect();
        let c = classify(&groups, "B", "A", &results);
        let d: Vec<(&str, bool, bool)> = c
            .groups
            .iter()
            .map(|g| (g.defect.as_str(), g.fix_sufficient_alone, g.fix_needed))
            .collect();
        assert_eq!(
            d,
            vec![
                ("necessary", true, true),
                ("contributing", false, false),
                ("neither", false, false),
                ("harmful alone", false, false)
            ]
        );
        assert!(run_report::ablation::ablation_table(&c).contains("harmful alone"));
    }
}
