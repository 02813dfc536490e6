//! Long commands (`ablate`, `sweep`, `threshold`) state their estimate first
//! and refuse plans over `--budget` unless forced: a user must never find
//! out after an hour that a grid was bigger than meant.

use std::time::Duration;

/// A duration as people read it, to the second.
pub fn words(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// A plan whose estimate exceeds its budget (and no `--force`); `smaller`
/// says how to shrink this kind of plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the estimate of {} exceeds the budget of {}; {smaller}, a larger --budget, or --force", words(*estimate), words(*budget))]
pub struct OverBudget {
    pub estimate: Duration,
    pub budget: Duration,
    pub smaller: String,
}

/// Whether a plan estimated at `estimate` may run; `Err` says why not.
/// `smaller` says how to shrink this kind of plan (e.g. "use fewer --seeds").
pub fn check(
    estimate: Duration,
    budget: Duration,
    force: bool,
    smaller: &str,
) -> Result<(), OverBudget> {
    if estimate <= budget || force {
        return Ok(());
    }
    Err(OverBudget {
        estimate,
        budget,
        smaller: smaller.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_needs_force() {
        let (m, h) = (Duration::from_secs(60), Duration::from_secs(3600));
        assert!(check(m, h, false, "x").is_ok());
        assert!(check(h, m, false, "x").is_err());
        assert!(check(h, m, true, "x").is_ok());
        assert_eq!(words(Duration::from_millis(61_500)), "1m 1s");
    }
}
