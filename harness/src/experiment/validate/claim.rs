//! A share of runs claimed with the error rates it is to be proven at:
//! `">= 90% (alpha 0.05, beta 0.1)"`, optionally `delta 0.2`, the width of
//! the indifference region below the stated share (default
//! `run_report::campaign::sequential::DEFAULT_DELTA`). A sequential campaign
//! (`harness campaign --until-settled`) decides such a claim with Wald's
//! SPRT. A share claimed without rates is refused at the place the file
//! states it, because "100 % of runs" can only ever be refuted.

use super::expect::Site;
use super::ExperimentError;
use run_report::campaign::sequential::{hypotheses, DEFAULT_DELTA};
use run_report::campaign::ClaimRates;
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

/// The error for a share of runs claimed without error rates: "100 % of
/// runs" can only ever be refuted, and any other share is only decided at
/// stated error rates.
pub(super) fn missing_rates(site: &Site, op: CompareOp, share: f64) -> ExperimentError {
    let every = (op == CompareOp::Eq && (share >= 1.0 || share <= 0.0))
        || (matches!(op, CompareOp::Ge | CompareOp::Gt) && share >= 1.0)
        || (matches!(op, CompareOp::Le | CompareOp::Lt) && share <= 0.0);
    site.err(if every {
        "100 % of runs can only be refuted by a finite campaign; state the proportion and alpha/beta, e.g. `>= 90% (alpha 0.05, beta 0.1)`"
    } else {
        "a share of runs is decided at stated error rates; state alpha/beta, e.g. `>= 90% (alpha 0.05, beta 0.1)`"
    })
}
