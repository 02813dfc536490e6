//! A share of runs claimed with the error rates it is to be proven at:
//! `">= 90% (alpha 0.05, beta 0.1)"`, optionally `delta 0.2`, the width of
//! the indifference region below the stated share (default
//! `run_report::campaign::sequential::DEFAULT_DELTA`). A sequential campaign
//! (`harness campaign --until-settled`) decides such a claim with Wald's
//! SPRT and refuses a share claimed without rates, at the place the file
//! states it, because "100 % of runs" can only ever be refuted.

use super::expect::Site;
use super::ExperimentError;
use run_report::campaign::sequential::{hypotheses, DEFAULT_DELTA};
use run_report::campaign::{CampaignExpectation, ClaimRates, OverRuns};
use run_report::CompareOp;

/// Splits `>= 90% (alpha 0.05, beta 0.1)` into the share and its rates.
pub(super) fn split_rates(
    site: &Site,
    text: &str,
) -> Result<(String, Option<ClaimRates>), ExperimentError> {
    let Some((share, rest)) = text.split_once('(') else {
        return Ok((text.trim().to_string(), None));
    };
    let inner = rest
        .trim()
        .strip_suffix(')')
        .ok_or_else(|| site.err("the error rates end with `)`: `>= 90% (alpha 0.05, beta 0.1)`"))?;
    let (mut alpha, mut beta, mut delta) = (None, None, None);
    for part in inner.split(',') {
        let (name, number) = part.trim().split_once(' ').unwrap_or((part.trim(), ""));
        let number: f64 = number.trim().parse().map_err(|_| {
            site.err(format!(
                "{:?} is not `alpha N`, `beta N` or `delta N`",
                part.trim()
            ))
        })?;
        let slot = match name {
            "alpha" => &mut alpha,
            "beta" => &mut beta,
            "delta" => &mut delta,
            other => {
                return Err(site.err(format!(
                    "{other:?}: a claim's rates are alpha, beta and (optionally) delta"
                )))
            }
        };
        if slot.replace(number).is_some() {
            return Err(site.err(format!("{name} is given twice")));
        }
    }
    let (Some(alpha), Some(beta)) = (alpha, beta) else {
        return Err(
            site.err("state both error rates: `(alpha 0.05, beta 0.1)` (delta is optional)")
        );
    };
    let delta = delta.unwrap_or(DEFAULT_DELTA);
    if !(delta > 0.0 && delta < 1.0) {
        return Err(site.err(format!("delta {delta} is not a share in (0, 1)")));
    }
    Ok((
        share.trim().to_string(),
        Some(ClaimRates { alpha, beta, delta }),
    ))
}

/// Checks that `op share` at `rates` can be decided by a sequential test.
pub(super) fn check(
    site: &Site,
    op: CompareOp,
    share: f64,
    rates: &ClaimRates,
) -> Result<(), ExperimentError> {
    hypotheses(op, share, rates)
        .map(|_| ())
        .map_err(|e| site.err(e.to_string()))
}

/// For `--until-settled`: every share of runs in `claims` must state its
/// error rates; the first that does not is the located error.
pub fn check_sequential_claims(
    file: &str,
    claims: &[CampaignExpectation],
) -> Result<(), ExperimentError> {
    for e in claims {
        let share = matches!(
            e.statistic,
            OverRuns::VerdictShare { .. } | OverRuns::ConditionShare { .. }
        );
        if !share || e.rates.is_some() {
            continue;
        }
        let every = (e.op == CompareOp::Eq && (e.value >= 1.0 || e.value <= 0.0))
            || (e.op == CompareOp::Ge && e.value >= 1.0)
            || (e.op == CompareOp::Le && e.value <= 0.0);
        let why = if every {
            "100 % of runs can only be refuted by a finite campaign; state the proportion and alpha/beta, e.g. `>= 90% (alpha 0.05, beta 0.1)`"
        } else {
            "a sequential campaign decides a share of runs at stated error rates; state alpha/beta, e.g. `>= 90% (alpha 0.05, beta 0.1)`"
        };
        let (line, column, field) =
            e.at.as_ref()
                .map_or((0, 0, format!("campaign.expect.{}", e.variant)), |a| {
                    (a.line, a.column, a.field.clone())
                });
        return Err(ExperimentError {
            file: file.to_string(),
            line,
            column,
            field,
            message: why.to_string(),
        });
    }
    Ok(())
}
