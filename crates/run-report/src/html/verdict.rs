//! The verdict sections of index.html: each variant's class with what it
//! rests on (its triggers and their residues, each episode's judgement, the
//! sustaining effect against the baseline), and the rules with their numbers.

use super::table::{head, row};
use crate::analysis::{Analysis, EffectFigures, EpisodeOutcome, Verdict};
use crate::format::{ms, num, opt_num, opt_pct, pct};
use crate::model::RunData;
use crate::xml::escape;
use std::fmt::Write;

/// The verdict as a coloured label.
pub fn verdict_html(v: &Verdict) -> String {
    let class = if v.is_bad() {
        "verdict-bad"
    } else if matches!(v, Verdict::Inconclusive { .. }) {
        "verdict-unknown"
    } else {
        "verdict-good"
    };
    format!("<span class=\"{class}\">{}</span>", escape(&v.label()))
}

fn secs(x: Option<f64>) -> String {
    x.map_or("—".to_string(), |x| format!("{} s", num(x)))
}

fn outcome(o: &EpisodeOutcome) -> String {
    match o {
        EpisodeOutcome::Recovered { at_s } => format!("recovered at {at_s} s"),
        EpisodeOutcome::StillDegraded => "<b>still degraded</b> for the recovery window".into(),
        EpisodeOutcome::Undecided { reason, .. } => format!("undecided: {}", escape(reason)),
    }
}

/// Why each variant got its verdict: triggers, residues, episodes, sustaining effect.
pub fn explained(h: &mut String, run: &RunData, analysis: &Analysis) {
    h.push_str("<section id=\"verdict\">\n<h2>Why each verdict</h2>\n");
    for v in &run.variants {
        let a = &*analysis.variant_for(v, &run.analysis);
        let _ = writeln!(
            h,
            "<h3>{} — {}</h3>\n<p>{}</p>",
            escape(&v.name),
            verdict_html(&a.verdict),
            escape(&a.verdict.explanation())
        );
        let triggers = crate::analysis::verdict::triggers_of(v);
        if !triggers.is_empty() {
            head(
                h,
                &[
                    "trigger",
                    "started",
                    "fault undone",
                    "residue ended",
                    "residue",
                ],
            );
            for t in &triggers {
                row(
                    h,
                    if t.residue_end_s.is_none() {
                        "failed"
                    } else {
                        ""
                    },
                    &[
                        escape(&t.label),
                        secs(Some(t.start_s)),
                        secs(t.end_s),
                        t.residue_end_s
                            .map_or("<span class=\"fail\">still present</span>".into(), |r| {
                                format!("{} s", num(r))
                            }),
                        escape(&t.residue),
                    ],
                );
            }
            h.push_str("</table>\n");
        }
        if !a.episodes.is_empty() {
            head(
                h,
                &[
                    "episode",
                    "triggers",
                    "residue ended",
                    "judged until",
                    "outcome",
                ],
            );
            for (i, e) in a.episodes.iter().enumerate() {
                row(
                    h,
                    if e.outcome == EpisodeOutcome::StillDegraded {
                        "failed"
                    } else {
                        ""
                    },
                    &[
                        (i + 1).to_string(),
                        escape(&e.labels.join(", ")),
                        secs(e.residue_end_s),
                        format!(
                            "{} s ({})",
                            e.horizon_s,
                            if e.horizon_is_end {
                                "end of the load"
                            } else {
                                "next trigger"
                            }
                        ),
                        outcome(&e.outcome),
                    ],
                );
            }
            h.push_str("</table>\n");
        }
        if let Verdict::Metastable { sustaining, .. } = &a.verdict {
            let _ = writeln!(
                h,
                "<p><b>Sustaining effect</b> over {}-{} s against the baseline:</p>",
                sustaining.from_s, sustaining.to_s
            );
            effect_table(h, &sustaining.measured, &sustaining.baseline);
        }
    }
    h.push_str("</section>\n");
}

fn effect_table(h: &mut String, m: &EffectFigures, b: &EffectFigures) {
    head(h, &["figure", "after the residue", "baseline"]);
    type Figure = fn(&EffectFigures) -> Option<f64>;
    let rows: [(&str, Figure, bool); 8] = [
        (
            "attempts per new document",
            |f| f.attempts_per_new_document,
            false,
        ),
        (
            "gateway attempts per client attempt",
            |f| f.gateway_attempts_per_attempt,
            false,
        ),
        (
            "GPU pages computed per page delivered",
            |f| f.gpu_pages_per_page_delivered,
            false,
        ),
        ("recomputed share of GPU pages", |f| f.duplicate_share, true),
        ("orphan share of GPU pages", |f| f.orphan_share, true),
        ("zombie share of GPU pages", |f| f.zombie_share, true),
        (
            "slots held by waiting duplicates (mean)",
            |f| f.slots_held_by_waiters,
            false,
        ),
        (
            "cache writes lost per second",
            |f| f.cache_writes_lost_per_s,
            false,
        ),
    ];
    for (label, get, share) in rows {
        let fmt = |x: Option<f64>| if share { opt_pct(x) } else { opt_num(x) };
        row(h, "", &[label.to_string(), fmt(get(m)), fmt(get(b))]);
    }
    h.push_str("</table>\n");
}

/// The verdict and wave rules, and each variant's baseline.
pub fn rules(h: &mut String, run: &RunData, analysis: &Analysis) {
    let _ = write!(
        h,
        "<section id=\"rules\">\n<h2>How the verdicts are decided</h2>\n\
         <p class=\"rule\"><b>Verdict rule.</b> {}</p>\n<p class=\"rule\"><b>Wave rule.</b> {}</p>\n",
        escape(&analysis.verdict_rule),
        escape(&analysis.wave_rule)
    );
    head(
        h,
        &[
            "variant",
            "baseline seconds",
            "baseline failure ratio",
            "baseline p95 / p99",
            "offered load",
            "healthy if failure ratio ≤",
            "an attempt is slow above",
            "judged until",
            "verdict",
        ],
    );
    for a in &analysis.variants {
        let b = a.baseline.as_ref();
        row(
            h,
            "",
            &[
                escape(&a.name),
                b.map_or("—".into(), |b| b.seconds.to_string()),
                opt_pct(b.map(|b| b.failure_ratio)),
                b.map_or("—".into(), |b| {
                    if b.latency_judged {
                        format!("{} / {}", ms(b.p95_ms), ms(b.p99_ms))
                    } else {
                        format!("— / {}", ms(b.p99_ms))
                    }
                }),
                b.map_or("—".into(), |b| {
                    format!(
                        "{} documents/s ({})",
                        num(b.offered_per_s),
                        if b.offered_is_planned {
                            "planned"
                        } else {
                            "counted"
                        }
                    )
                }),
                opt_pct(b.map(|b| b.ratio_limit)),
                b.map_or("—".into(), |b| {
                    if b.latency_judged {
                        ms(b.slow_above_ms)
                    } else {
                        "not judged (recorded without latency counts)".into()
                    }
                }),
                format!("{} s", a.judged_end_s),
                verdict_html(&a.verdict),
            ],
        );
    }
    h.push_str("</table>\n");
    let c = &run.analysis;
    let _ = write!(
        h,
        "<p class=\"muted\">Thresholds: wave threshold {}, merge gap {} s, minimum wave {} s, recovery factor {}, \
         recovery window {} s, warm-up {} s, minimum baseline {} s.</p>\n</section>\n",
        pct(c.wave_threshold),
        c.wave_merge_gap_s,
        c.wave_min_duration_s,
        num(c.recovery_factor),
        c.recovery_window_s,
        c.warmup_s,
        c.min_baseline_s
    );
}
