//! The verdict rule in words, with the configured numbers: the report
//! cites it under "How the verdicts are decided", so it sits apart from the
//! code that applies it (`super`) and must be kept true to it.

use crate::analysis::baseline;
use crate::model::AnalysisConfig;
use crate::series::MIN_ATTEMPTS;

/// The rule in words with the configured numbers; the report cites it.
pub fn verdict_rule_text(cfg: &AnalysisConfig) -> String {
    let w = cfg.recovery_window_s.max(1);
    format!(
        "Baseline = the healthy whole seconds from {warm} s (after warm-up) to the first trigger \
         with at least {MIN_ATTEMPTS} completed attempts (at least {minb} of them; fewer, or a \
         failure ratio above {thr:.0} %, is NEVER HEALTHY): first those with a failure ratio \
         within {thr:.0} %, then those healthy against them; mean failure ratio, p95 of their \
         attempts, offered load (with a planned rate, the highest carried in {w} of those seconds) \
         and work amplification. A second is healthy when at least \
         {MIN_ATTEMPTS} attempts completed, its failures are within L = max(baseline x {f}, \
         baseline + {rs:.0} points) allowing for small counts (at most n L + 2 sqrt(n L) + 1 \
         failed of the n attempts of the 3 seconds around it) or for one isolated second \
         (3-second median ratio within L), and its attempts are no slower by the same test, with \
         {slow:.0} % for L (slow: above max(baseline p95 x {f}, baseline p95 + {ps:.0} ms)). \
         Degraded in most of the last {w} s before the first trigger: OVERLOADED before any \
         trigger, at the load it carried. A trigger is over when its fault is undone and the work \
         it injected has left the system (its residue: injected documents, a load spike's extra \
         arrivals included, done, each of their pages computed once); overlapping triggers form \
         one episode, judged up to the next episode or the end of the load. An episode RECOVERED \
         at the first second less than {w} s after its residue's end that starts {w} healthy \
         seconds (or is healthy to the horizon, if at least {half} remain); if none does but \
         most of those {w} seconds were healthy, at the first later second that starts {w} \
         healthy ones; if most were degraded and it later came back by itself before the \
         horizon (no operator action in between), it RECOVERED slowly, and the report says how \
         long and what drained; if it stayed degraded to the horizon (or until an operator \
         acted, a fault's own end not counting): METASTABLE when the offered load over the {w} s after the residue was at most \
         the baseline's and a sustaining effect (retries, internal retries, wasted GPU pages, \
         slots held by waiters, lost cache writes, a cold cache, a garbage collector's share of the CPU) stood out against the baseline, \
         OVERLOADED when the load was higher. STABLE: no degraded second at all. INCONCLUSIVE: \
         fewer than {w} s between the residue's end and the horizon, healthy and degraded seconds \
         alternated to the end, or it stayed degraded with no sustaining effect measured. NO \
         TRIGGER: nothing to judge.",
        warm = cfg.warmup_s,
        minb = cfg.min_baseline_s.max(1),
        thr = cfg.wave_threshold * 100.0,
        f = cfg.recovery_factor,
        rs = baseline::RATIO_SLACK * 100.0,
        ps = baseline::LATENCY_SLACK_MS,
        slow = baseline::SLOW_SHARE * 100.0,
        half = w.div_ceil(2),
    )
}
