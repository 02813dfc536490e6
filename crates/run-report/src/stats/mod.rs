//! Exact statistics for campaigns: one experiment run over many seeds.
//!
//! A campaign report compares the variants over 3 to 100 runs, e.g.
//! "after-fix removes the waves: 0/10 runs with a wave [0–31 %] against
//! 10/10 [69–100 %], Fisher's exact test p < 0.001; documents given up 0
//! against a median of 189, Mann–Whitney p < 0.001". At such sizes
//! large-sample approximations (Wald intervals, chi-squared, t-tests) are
//! wrong exactly where a report makes its claims, at 0/10 and 10/10, so each
//! question gets the test that is right for small samples:
//!
//! * how often something happened (a share of runs): [`Share`], with the
//!   [`clopper_pearson`] interval, which never covers less than it says;
//! * whether two shares differ: [`fisher_exact`], exact at any size;
//! * how a figure is spread over the runs: [`Spread`] (median and
//!   quartiles, which one wild run does not move);
//! * whether a figure differs between variants: [`mann_whitney_u`], which
//!   compares orders, not means, as such figures are far from normal;
//! * when a campaign may stop: [`Sprt`] and [`PairedSprt`], Wald's
//!   sequential tests at stated error rates ([`sprt`]).
//!
//! Each matches scipy (the library a reader would check a report with) to
//! within 1e-9 relative; the reference values and the script that computed
//! them are in `tests.rs` and `ci/stats_reference.py`.

mod binomial;
mod fisher;
mod mann_whitney;
pub mod sprt;
mod summary;

pub use binomial::{clopper_pearson, Interval, Share, CONFIDENCE};
pub use fisher::fisher_exact;
pub use mann_whitney::{mann_whitney_u, MannWhitney, Method};
pub use sprt::{Decision, Pair, PairedSprt, Sprt, SprtError};
pub use summary::Spread;

/// A p-value as a report prints it: `p < 0.001`, else to three places
/// (`p = 0.034`). Below 0.001 more digits would claim a precision that the
/// model of a few runs does not have.
pub fn format_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

#[cfg(test)]
mod tests;
