//! A sweep cell's class over its seeds: the side (came back or not) that
//! more than half of its judged runs took, and the text a map cell shows.

use super::SweepCell;
use crate::charts::heatmap::CellClass;

/// Classes in the order a tie between them is decided: the worse first.
const WORST_FIRST: [CellClass; 8] = [
    CellClass::Metastable,
    CellClass::NeverHealthy,
    CellClass::Overloaded,
    CellClass::Recovered,
    CellClass::Stable,
    CellClass::Inconclusive,
    CellClass::NoTrigger,
    CellClass::NotRun,
];

/// A cell's class over its runs: on the side (came back or not) that more
/// than half of its judged runs took, that side's most common class; half
/// and half is the side that did not come back (a cell half metastable is
/// not called safe). With no judged run, the most common of the rest
/// (inconclusive, no trigger); with no run at all, "not run".
pub(super) fn modal_class(runs: &[&SweepCell]) -> CellClass {
    let count = |c: CellClass| runs.iter().filter(|r| r.class == c).count();
    let (back, judged) = came_back_of_judged(runs);
    // The side the cell takes; with no judged run, neither (inconclusive or
    // without trigger), and never "not run" while any run ran.
    let side = (judged > 0).then_some(back * 2 > judged);
    // `max_by_key` keeps the last of equal counts: walked from the end, a
    // tie goes to the worse class.
    WORST_FIRST
        .into_iter()
        .rev()
        .filter(|&c| c != CellClass::NotRun && c.side() == side && count(c) > 0)
        .max_by_key(|&c| count(c))
        .unwrap_or(CellClass::NotRun)
}

/// Of `runs`, how many came back, and how many were judged either way
/// (not inconclusive, without trigger or not run).
fn came_back_of_judged(runs: &[&SweepCell]) -> (usize, usize) {
    let judged: Vec<bool> = runs.iter().filter_map(|r| r.class.side()).collect();
    (judged.iter().filter(|b| **b).count(), judged.len())
}

/// A cell's text: for one run, its recovery time or peak failure; for
/// several, how many of its judged runs came back (`7/10 back`).
pub(super) fn cell_note(runs: &[&SweepCell], class: CellClass) -> String {
    match (runs, class) {
        (_, CellClass::NotRun) => String::new(),
        ([r], CellClass::Recovered) if r.recovered_after_s.is_some() => {
            format!("+{:.0} s", r.recovered_after_s.unwrap_or_default())
        }
        ([r], _) => r
            .peak_failure_ratio
            .map_or(String::new(), |p| format!("{:.0}%", p * 100.0)),
        _ => {
            let (back, judged) = came_back_of_judged(runs);
            format!("{back}/{judged} back")
        }
    }
}
