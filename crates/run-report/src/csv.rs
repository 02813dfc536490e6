//! `timeseries.csv`: one row per (variant, second) with every [`Second`]
//! field, so the raw series can be re-plotted or diffed with any tool. Zones
//! are flattened as `zone_<name>_<field>` columns (the union of all zones of
//! all variants, sorted; empty cells where a second lacks the zone). Non-finite
//! numbers are written as empty cells.
//!
//! Two columns carry the verdict's judgement of each second, so a verdict
//! can be checked second by second: `health` (warmup, baseline, residue,
//! healthy, degraded or drain, as [`crate::analysis::verdict::second_roles`]
//! labels it; empty when nothing was judged) and `slow_attempts` (attempts
//! slower than the variant's slow limit, `summary.json`'s
//! `baseline.slow_above_ms`; empty when latency was not judged).
//!
//! An external target's `target_series:` expressions follow as `target_<name>`
//! columns (the union of the variants' names; empty where a second has no
//! sample).

use crate::analysis::verdict::second_roles;
use crate::analysis::Analysis;
use crate::model::{RunData, Second, ZoneSecond};

type Col<T> = (&'static str, fn(&T) -> String);

fn u(x: u64) -> String {
    x.to_string()
}

fn f(x: f64) -> String {
    if x.is_finite() {
        x.to_string()
    } else {
        String::new()
    }
}

/// Every scalar field of [`Second`], in declaration order (`zones` is flattened separately).
pub const SECOND_COLUMNS: &[Col<Second>] = &[
    ("t", |s| s.t.to_string()),
    ("arrivals", |s| u(s.arrivals)),
    ("attempts", |s| u(s.attempts)),
    ("distinct_documents", |s| u(s.distinct_documents)),
    ("ok", |s| u(s.ok)),
    ("rejected", |s| u(s.rejected)),
    ("timeouts", |s| u(s.timeouts)),
    ("errors", |s| u(s.errors)),
    ("p50_ms", |s| f(s.p50_ms)),
    ("p99_ms", |s| f(s.p99_ms)),
    ("in_flight", |s| u(s.in_flight)),
    ("documents_completed", |s| u(s.documents_completed)),
    ("documents_given_up", |s| u(s.documents_given_up)),
    ("offered_rate", |s| f(s.offered_rate)),
    ("pages_delivered", |s| u(s.pages_delivered)),
    ("injected_attempts_done", |s| u(s.injected_attempts_done)),
    (
        "injected_attempts_failed",
        |s| u(s.injected_attempts_failed),
    ),
    ("injected_given_up", |s| u(s.injected_given_up)),
    ("slots_total", |s| f(s.slots_total)),
    ("slots_busy", |s| f(s.slots_busy)),
    ("slots_held_by_waiters", |s| f(s.slots_held_by_waiters)),
    ("queue_depth", |s| f(s.queue_depth)),
    ("gpu_queue_pages", |s| f(s.gpu_queue_pages)),
    ("gateway_attempts", |s| u(s.gateway_attempts)),
    ("admitted", |s| u(s.admitted)),
    ("cache_writes_acked", |s| u(s.cache_writes_acked)),
    ("cache_writes_lost", |s| u(s.cache_writes_lost)),
    ("cache_write_errors", |s| u(s.cache_write_errors)),
    ("cache_hits", |s| u(s.cache_hits)),
    ("cache_misses", |s| u(s.cache_misses)),
    ("repeat_submissions", |s| u(s.repeat_submissions)),
    ("pages_computed", |s| u(s.pages_computed)),
    ("pages_recomputed", |s| u(s.pages_recomputed)),
    ("rejected_early", |s| u(s.rejected_early)),
    ("orphan_pages", |s| u(s.orphan_pages)),
    ("zombie_pages", |s| u(s.zombie_pages)),
];

/// The verdict's judgement of each second (see the module doc).
pub const JUDGEMENT_COLUMNS: &[&str] = &["health", "slow_attempts"];

/// Every field of [`ZoneSecond`], in declaration order.
pub const ZONE_COLUMNS: &[Col<ZoneSecond>] = &[
    ("requests", |z| u(z.requests)),
    ("failures", |z| u(z.failures)),
    ("slots_busy", |z| f(z.slots_busy)),
    ("queue_depth", |z| f(z.queue_depth)),
    ("zombie_work", |z| u(z.zombie_work)),
];

/// Quote a cell when it contains a comma, quote or line break (RFC 4180).
fn cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The whole CSV, header first, rows ordered by variant then second; lines end with `\n`.
pub fn timeseries_csv(run: &RunData, analysis: &Analysis) -> String {
    let zones = crate::series::run_zone_names(run);
    let targets = crate::target_series::names(run);
    let mut header = vec!["variant".to_string()];
    header.extend(SECOND_COLUMNS.iter().map(|(n, _)| n.to_string()));
    header.extend(JUDGEMENT_COLUMNS.iter().map(|n| n.to_string()));
    for z in &zones {
        header.extend(
            ZONE_COLUMNS
                .iter()
                .map(|(n, _)| cell(&format!("zone_{z}_{n}"))),
        );
    }
    header.extend(targets.iter().map(|n| cell(&format!("target_{n}"))));
    let mut out = header.join(",");
    out.push('\n');
    for v in &run.variants {
        let name = cell(&v.name);
        let judged = analysis.variant(&v.name);
        let baseline = judged.and_then(|a| a.baseline.as_ref());
        let roles = match judged {
            Some(a) => second_roles(v, a, &run.analysis),
            None => vec![None; v.seconds.len()],
        };
        let slow_limit = baseline
            .filter(|b| b.latency_judged)
            .map(|b| b.slow_above_ms);
        for (s, role) in v.seconds.iter().zip(roles) {
            out.push_str(&name);
            for (_, get) in SECOND_COLUMNS {
                out.push(',');
                out.push_str(&get(s));
            }
            out.push(',');
            out.push_str(role.map_or("", |r| r.as_str()));
            out.push(',');
            if let Some(limit) = slow_limit {
                out.push_str(&u(s.latency.count_slower_than(limit)));
            }
            for z in &zones {
                let zs = s.zones.get(z);
                for (_, get) in ZONE_COLUMNS {
                    out.push(',');
                    if let Some(zs) = zs {
                        out.push_str(&get(zs));
                    }
                }
            }
            for n in &targets {
                out.push(',');
                if let Some(x) = crate::target_series::value_at(v, n, s.t as usize) {
                    out.push_str(&f(x));
                }
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::VariantRun;

    #[test]
    fn columns_cover_every_field_of_the_model() {
        let keys = |v: serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        let mut second = keys(serde_json::to_value(Second::default()).unwrap());
        second.retain(|k| k != "zones");
        let mut ours: Vec<String> = SECOND_COLUMNS.iter().map(|(n, _)| n.to_string()).collect();
        second.sort();
        ours.sort();
        assert_eq!(ours, second, "timeseries.csv must list every Second field");
        let mut zone = keys(serde_json::to_value(ZoneSecond::default()).unwrap());
        let mut ours: Vec<String> = ZONE_COLUMNS.iter().map(|(n, _)| n.to_string()).collect();
        zone.sort();
        ours.sort();
        assert_eq!(
            ours, zone,
            "timeseries.csv must list every ZoneSecond field"
        );
    }

    #[test]
    fn rows_flatten_zones_and_quote_names() {
        let mut s0 = Second {
            t: 0,
            attempts: 3,
            p99_ms: f64::NAN,
            ..Second::default()
        };
        s0.zones.insert(
            "az1".into(),
            ZoneSecond {
                requests: 9,
                ..ZoneSecond::default()
            },
        );
        let s1 = Second {
            t: 1,
            ..Second::default()
        };
        let run = RunData {
            variants: vec![VariantRun {
                name: "a,b".into(),
                seconds: vec![s0, s1],
                ..VariantRun::default()
            }],
            ..RunData::default()
        };
        let csv = timeseries_csv(&run, &crate::analysis::analyse(&run));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("variant,t,arrivals,attempts,"));
        assert!(lines[0].contains(",zombie_pages,health,slow_attempts,zone_az1_requests,"));
        assert!(lines[0].ends_with("zone_az1_requests,zone_az1_failures,zone_az1_slots_busy,zone_az1_queue_depth,zone_az1_zombie_work"));
        assert!(lines[1].starts_with("\"a,b\",0,0,3,"));
        assert!(lines[1].ends_with(",9,0,0,0,0"));
        assert!(lines[2].ends_with(",,,,,"));
        let n = lines[0].split(',').count();
        assert!(lines
            .iter()
            .skip(1)
            .all(|l| l.replace("\"a,b\"", "x").split(',').count() == n));
        assert!(lines[1].contains(",,"), "NaN p99 is an empty cell");
    }

    #[test]
    fn target_series_follow_as_columns() {
        let series = |name: &str, values| crate::model::TargetSeries {
            name: name.into(),
            values,
            ..Default::default()
        };
        let seconds = vec![
            Second::default(),
            Second {
                t: 1,
                ..Second::default()
            },
        ];
        let run = RunData {
            variants: vec![
                VariantRun {
                    name: "a".into(),
                    seconds: seconds.clone(),
                    target_series: vec![series("dup", vec![Some(2.5), None])],
                    ..VariantRun::default()
                },
                VariantRun {
                    name: "b".into(),
                    seconds,
                    target_series: vec![series("queue", vec![Some(1.0), Some(3.0)])],
                    ..VariantRun::default()
                },
            ],
            ..RunData::default()
        };
        let csv = timeseries_csv(&run, &crate::analysis::analyse(&run));
        let lines: Vec<&str> = csv.lines().collect();
        assert!(
            lines[0].ends_with(",target_dup,target_queue"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("a,0,") && lines[1].ends_with(",2.5,"),
            "{}",
            lines[1]
        );
        assert!(lines[2].ends_with(",,"), "{}", lines[2]);
        assert!(
            lines[4].starts_with("b,1,") && lines[4].ends_with(",,3"),
            "{}",
            lines[4]
        );
    }
}
