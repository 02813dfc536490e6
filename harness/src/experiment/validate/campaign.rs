//! `campaign:`: the seeds a campaign runs by default, the pairs it compares,
//! and what must hold over its runs:
//!
//! ```yaml
//! campaign:
//!   seeds: 1..10
//!   compare: [[before-fix, after-fix]]
//!   expect:
//!     before-fix:
//!       "runs with verdict metastable|recovered": ">= 90% (alpha 0.05, beta 0.1)"
//!       "runs with waves >= 1": ">= 90% (alpha 0.05, beta 0.1, delta 0.4)"
//!       "median waves": ">= 4"
//!     after-fix:
//!       "runs with waves >= 1": "<= 10% (alpha 0.05, beta 0.1)"
//! ```
//!
//! Keys: `runs with verdict CLASS[|CLASS]`, `runs with METRIC OP NUMBER`
//! (shares, written as percentages with the error rates they are claimed
//! at: `">= 90% (alpha 0.05, beta 0.1)"`, see `claim.rs`),
//! `median METRIC`, `min METRIC`, `max METRIC` (compared like a per-run
//! expectation).

use super::super::raw::*;
use super::super::*;
use super::claim;
use super::expect::{self, Labels, Site};
use super::{Ctx, ExperimentError};
use run_report::campaign::{CampaignExpectation, CampaignSpec, ClaimRates, OverRuns};
use run_report::{CompareOp, Metric, MetricRef};
use serde_saphyr::Spanned;

/// The validated `campaign:` section (defaults when there is none).
pub(super) fn campaign(
    cx: &Ctx,
    raw: Option<&Spanned<RawCampaign>>,
    variants: &[Variant],
    labels: &Labels,
) -> Result<CampaignSpec, ExperimentError> {
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let Some(raw) = raw else {
        return Ok(CampaignSpec {
            compare: default_compare(&names),
            ..CampaignSpec::default()
        });
    };
    let at = &raw.referenced;
    let raw = &raw.value;
    let seeds = match &raw.seeds {
        Some(s) => parse_seeds(&s.value)
            .map_err(|why| cx.err(&s.referenced, "campaign.seeds", why.to_string()))?,
        None => Vec::new(),
    };
    let compare = match &raw.compare {
        Some(c) => pairs(cx, c, &names)?,
        None => default_compare(&names),
    };
    let mut expectations = Vec::new();
    for (variant, entries) in &raw.expect {
        if !names.contains(variant) {
            let at = entries.first().map_or(*at, |(_, v)| v.referenced);
            let why = format!("no such variant; variants are {names:?}");
            return Err(cx.err(&at, format!("campaign.expect.{variant}"), why));
        }
        for (key, value) in entries {
            expectations.push(expectation(cx, variant, key, value, labels)?);
        }
    }
    Ok(CampaignSpec {
        seeds,
        compare,
        expectations,
    })
}

/// before-fix against after-fix when both exist; else the first variant
/// against each other.
fn default_compare(names: &[String]) -> Vec<(String, String)> {
    let has = |n: &str| names.iter().any(|x| x == n);
    if has("before-fix") && has("after-fix") {
        return vec![("before-fix".into(), "after-fix".into())];
    }
    names
        .iter()
        .skip(1)
        .map(|n| (names[0].clone(), n.clone()))
        .collect()
}

fn pairs(
    cx: &Ctx,
    raw: &Spanned<Vec<Vec<String>>>,
    names: &[String],
) -> Result<Vec<(String, String)>, ExperimentError> {
    let err = |why: String| cx.err(&raw.referenced, "campaign.compare", why);
    raw.value
        .iter()
        .map(|pair| match pair.as_slice() {
            [a, b] if a == b => Err(err(format!("{a} is compared with itself"))),
            [a, b] => match [a, b].iter().find(|n| !names.contains(n)) {
                Some(bad) => Err(err(format!(
                    "no such variant {bad:?}; variants are {names:?}"
                ))),
                None => Ok((a.clone(), b.clone())),
            },
            _ => Err(err("each pair is [BASELINE, CANDIDATE]".into())),
        })
        .collect()
}

/// Why a list of seeds, or an index into one, is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedsError {
    #[error("{0:?} is not a list of seeds; write e.g. 1..10 or 1, 4, 7")]
    NotSeeds(String),
    #[error("{0:?}: the last seed is before the first")]
    Backwards(String),
    #[error("{0:?}: more than 10,000 seeds")]
    TooMany(String),
    #[error("{0:?}: a seed is listed twice")]
    Twice(String),
    #[error("seed index {0:?} is not a number")]
    IndexNotNumber(String),
    #[error("seed index {index} is past the {count} seeds of {spec:?} (indexes 0..{})", count - 1)]
    PastTheEnd {
        index: usize,
        count: usize,
        spec: String,
    },
}

/// The `index`-th seed (from 0) of `spec`: how a pod of the Indexed Job of
/// `render k8s --seeds` finds its seed from its `JOB_COMPLETION_INDEX`.
pub fn seed_at_index(spec: &str, index: &str) -> Result<u64, SeedsError> {
    let seeds = parse_seeds(spec)?;
    let i: usize = index
        .trim()
        .parse()
        .map_err(|_| SeedsError::IndexNotNumber(index.to_string()))?;
    seeds.get(i).copied().ok_or_else(|| SeedsError::PastTheEnd {
        index: i,
        count: seeds.len(),
        spec: spec.to_string(),
    })
}

/// `1..10` (inclusive), `1, 4, 7` or `7`: at least one, at most 10,000.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, SeedsError> {
    let bad = || SeedsError::NotSeeds(text.to_string());
    let seeds: Vec<u64> = match text.split_once("..") {
        Some((a, b)) => {
            let a: u64 = a.trim().parse().map_err(|_| bad())?;
            let b: u64 = b
                .trim()
                .trim_start_matches('=')
                .parse()
                .map_err(|_| bad())?;
            if b < a {
                return Err(SeedsError::Backwards(text.to_string()));
            }
            if b - a >= 10_000 {
                return Err(SeedsError::TooMany(text.to_string()));
            }
            (a..=b).collect()
        }
        None => text
            .split(',')
            .map(|s| s.trim().parse::<u64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?,
    };
    let mut unique = seeds.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != seeds.len() {
        return Err(SeedsError::Twice(text.to_string()));
    }
    Ok(seeds)
}

fn expectation(
    cx: &Ctx,
    variant: &str,
    key: &str,
    value: &Spanned<ExpectValue>,
    labels: &Labels,
) -> Result<CampaignExpectation, ExperimentError> {
    let site = Site {
        cx,
        at: &value.referenced,
        field: format!("campaign.expect.{variant}.{key}"),
    };
    let key = key.trim();
    let (statistic, is_share) = if let Some(rest) = key.strip_prefix("runs with ") {
        (condition(&site, rest.trim(), labels)?, true)
    } else {
        let (word, metric) = key.split_once(' ').ok_or_else(|| site.err(KEYS))?;
        let metric = metric_ref(&site, metric.trim(), labels)?;
        let statistic = match word {
            "median" => OverRuns::Median { metric },
            "min" => OverRuns::Min { metric },
            "max" => OverRuns::Max { metric },
            _ => return Err(site.err(KEYS)),
        };
        (statistic, false)
    };
    let (op, number, text, rates) = if is_share {
        share_value(&site, &value.value)?
    } else {
        let (op, number, text) = expect::comparison(&site, &value.value)?;
        if let OverRuns::Median { metric } | OverRuns::Min { metric } | OverRuns::Max { metric } =
            &statistic
        {
            expect::satisfiable(&site, metric.metric, op, number)?;
        }
        (op, number, text, None)
    };
    Ok(CampaignExpectation {
        variant: variant.to_string(),
        statistic,
        op,
        value: number,
        source: format!("{key}: {text}"),
        rates,
    })
}

const KEYS: &str = "write `runs with verdict CLASS`, `runs with METRIC OP NUMBER`, \
                    `median METRIC`, `min METRIC` or `max METRIC`";

/// `verdict metastable|recovered` or `waves >= 1`.
fn condition(site: &Site, text: &str, labels: &Labels) -> Result<OverRuns, ExperimentError> {
    if let Some(classes) = text.strip_prefix("verdict ") {
        let known = run_report::VERDICT_CLASSES;
        let classes: Vec<String> = classes
            .split('|')
            .map(|c| c.trim().replace(' ', "_"))
            .collect();
        if let Some(bad) = classes.iter().find(|c| !known.contains(&c.as_str())) {
            let known = known.join(", ");
            return Err(site.err(format!("{bad:?} is not a verdict; verdicts are {known}")));
        }
        return Ok(OverRuns::VerdictShare { classes });
    }
    let at = text.find(['<', '>', '=']).ok_or_else(|| {
        site.err(format!(
            "{text:?} is not a condition; write e.g. `waves >= 1`"
        ))
    })?;
    let metric = metric_ref(site, text[..at].trim(), labels)?;
    let (op, value, _) = expect::comparison(site, &ExpectValue::Text(text[at..].to_string()))?;
    expect::satisfiable(site, metric.metric, op, value)?;
    Ok(OverRuns::ConditionShare { metric, op, value })
}

/// A metric with its label and window, checked as a per-run expectation's.
fn metric_ref(site: &Site, text: &str, labels: &Labels) -> Result<MetricRef, ExperimentError> {
    let key = expect::split_key(site, text)?;
    let metric = expect::known_metric(site, &key.metric, key.window.is_some())?;
    if metric == Metric::Verdict {
        return Err(site.err("the verdict is a class: write `runs with verdict CLASS`"));
    }
    expect::check_alert_label(site, metric, key.label.as_ref(), labels.alerts)?;
    expect::check_zone_label(site, metric, key.label.as_ref(), labels.zones)?;
    Ok(MetricRef {
        metric,
        label: key.label,
        window: key.window,
    })
}

/// `">= 90%"`, `"100%"`, `0%` or a fraction `">= 0.9"`: a share in [0, 1],
/// with the error rates it is claimed at, if any (`claim.rs`).
fn share_value(
    site: &Site,
    value: &ExpectValue,
) -> Result<(CompareOp, f64, String, Option<ClaimRates>), ExperimentError> {
    let (written, rates) = match value {
        ExpectValue::Number(n) => (n.to_string(), None),
        ExpectValue::Text(t) => claim::split_rates(site, t)?,
    };
    let (text, percent) = match written.strip_suffix('%') {
        Some(rest) => (rest.trim_end().to_string(), true),
        None => (written.clone(), false),
    };
    let (op, number, _) = expect::comparison(site, &ExpectValue::Text(text.clone()))?;
    let share = if percent { number / 100.0 } else { number };
    if !(0.0..=1.0).contains(&share) {
        return Err(site.err(format!(
            "a share of runs is between 0% and 100% (or 0 and 1), not {text}{}",
            if percent { "%" } else { "" }
        )));
    }
    let Some(r) = rates else {
        return Err(claim::missing_rates(site, op, share));
    };
    claim::check(site, op, share, &r)?;
    let shown = format!(
        "{text}{} (alpha {}, beta {}, delta {})",
        if percent { "%" } else { "" },
        r.alpha,
        r.beta,
        r.delta
    );
    Ok((op, share, shown, Some(r)))
}

#[cfg(test)]
mod tests {
    use super::parse_seeds;

    #[test]
    fn seeds_are_ranges_or_lists() {
        assert_eq!(parse_seeds("1..4"), Ok(vec![1, 2, 3, 4]));
        assert_eq!(parse_seeds("1..=2"), Ok(vec![1, 2]));
        assert_eq!(parse_seeds(" 7 "), Ok(vec![7]));
        assert_eq!(parse_seeds("1, 4,7"), Ok(vec![1, 4, 7]));
        assert!(parse_seeds("4..1")
            .unwrap_err()
            .to_string()
            .contains("before"));
        assert_eq!(super::seed_at_index("3..5", "0"), Ok(3));
        assert_eq!(super::seed_at_index("3..5", "2"), Ok(5));
        assert_eq!(super::seed_at_index("1, 4, 7", " 1"), Ok(4));
        assert!(super::seed_at_index("3..5", "3")
            .unwrap_err()
            .to_string()
            .contains("past the 3 seeds"));
        assert!(super::seed_at_index("3..5", "x")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
        assert!(parse_seeds("1,1")
            .unwrap_err()
            .to_string()
            .contains("twice"));
        assert!(parse_seeds("a..b").is_err());
        assert!(parse_seeds("0..20000")
            .unwrap_err()
            .to_string()
            .contains("10,000"));
    }
}
