//! What one finished run left: its report's `summary.json`, read back into
//! a [`CampaignRun`]: judged, left out (its load was not delivered as
//! planned), or errored (crashed, killed, interrupted, no report), named
//! with why.

use super::plan::Job;
use run_report::campaign::read::judged_variants;
use run_report::campaign::{CampaignRun, JudgedRun, RunStatus};
use std::path::{Path, PathBuf};

/// How the run's process ended, when it was one of ours.
pub(crate) enum Exit {
    /// Exit code (0 and 1 judged; 130 interrupted; 2 a setup error).
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Found already finished (`--resume`, `merge`).
    Recorded,
}

/// The run of `job` whose folder is `campaign_dir/rel`.
pub(crate) fn finished(campaign_dir: &Path, rel: &Path, job: &Job, exit: Exit) -> CampaignRun {
    let dir = campaign_dir.join(rel);
    let summary = find_summary(&dir);
    let report = summary.as_ref().and_then(|s| {
        s.parent()
            .and_then(|p| p.strip_prefix(campaign_dir).ok())
            .map(|p| p.display().to_string())
    });
    let status = match (&exit, summary) {
        (Exit::Signal(sig), _) => errored(&dir, format!("killed by signal {sig}")),
        (Exit::Code(130), _) => errored(&dir, "interrupted before its end".into()),
        (Exit::Code(2), _) => errored(&dir, "could not start (exit 2)".into()),
        (_, None) => errored(&dir, "wrote no summary.json".into()),
        (_, Some(path)) => {
            judged(&path, &job.variant).unwrap_or_else(|why| errored(&dir, why.to_string()))
        }
    };
    CampaignRun {
        variant: job.variant.clone(),
        seed: job.seed,
        repeat: job.repeat,
        report,
        status,
    }
}

/// An error with the last line the run printed, where it printed one.
fn errored(dir: &Path, reason: String) -> RunStatus {
    let last = std::fs::read_to_string(dir.join("harness.log"))
        .ok()
        .and_then(|log| {
            log.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        });
    RunStatus::Errored {
        reason: match last {
            Some(l) => format!("{reason}; its log ends: {}", l.trim()),
            None => reason,
        },
    }
}

/// Why a run's summary.json says nothing of a variant.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SummaryError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error}", path.display())]
    Parse {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error(transparent)]
    Unreadable(#[from] run_report::campaign::read::UnreadableSummary),
    #[error("{} has no variant {variant}", path.display())]
    NoVariant { path: PathBuf, variant: String },
}

/// The variant's verdict and figures from a summary.json.
pub(crate) fn judged(path: &Path, variant: &str) -> Result<RunStatus, SummaryError> {
    let text = std::fs::read_to_string(path).map_err(|error| SummaryError::Read {
        path: path.into(),
        error,
    })?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| SummaryError::Parse {
            path: path.into(),
            error,
        })?;
    let found = judged_variants(&json)?
        .into_iter()
        .find(|(name, _)| name == variant)
        .map(|(_, j)| j)
        .ok_or_else(|| SummaryError::NoVariant {
            path: path.into(),
            variant: variant.into(),
        })?;
    Ok(status_of(found))
}

fn status_of(j: JudgedRun) -> RunStatus {
    if j.interrupted {
        return RunStatus::Errored {
            reason: "interrupted before its end".into(),
        };
    }
    match j.not_as_planned.clone() {
        Some(reason) => RunStatus::Excluded { reason, judged: j },
        None => RunStatus::Judged(j),
    }
}

/// The newest summary.json under `dir` (a run writes one folder per run).
pub(crate) fn find_summary(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    collect_summaries(dir, &mut found, 4);
    found.sort();
    found.pop()
}

/// Every summary.json under `dir`, at most `depth` folders down (links not followed).
pub(crate) fn collect_summaries(dir: &Path, found: &mut Vec<PathBuf>, depth: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_file() && path.file_name().is_some_and(|n| n == "summary.json") {
            found.push(path);
        } else if kind.is_dir() && depth > 0 {
            collect_summaries(&path, found, depth - 1);
        }
    }
}
