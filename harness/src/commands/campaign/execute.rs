//! Runs a campaign's jobs as child processes, N at once.
//!
//! Each child is `harness FILE --seed S --variant V --out runs/V/sS --quiet`
//! in a process group of its own, its output in its folder's `harness.log`.
//! It is bounded in time (three times its planned length, then SIGINT, then
//! SIGKILL), and it gets SIGINT if the campaign dies (`PR_SET_PDEATHSIG`),
//! so no run outlives the campaign. On Ctrl-C the campaign sends each
//! running child one SIGINT (each writes the report of what it measured),
//! starts nothing more, and waits for them.

use super::collect::{self, Exit};
use super::plan::{Job, Outcome, Plan};
use crate::base::exit::CliError;
use crate::base::interrupt::StopSignal;
use run_report::campaign::{CampaignRun, RunStatus};
use std::collections::VecDeque;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The campaign's Ctrl-C handler (a second Ctrl-C exits at once; the
/// children then get SIGINT from the kernel as their parent dies).
pub(crate) fn install_stop() -> Result<Arc<StopSignal>, CliError> {
    let stop = Arc::new(StopSignal::default());
    crate::base::interrupt::install_ctrl_c(stop.clone());
    Ok(stop)
}

struct Running {
    job: Job,
    rel: PathBuf,
    child: Child,
    started: Instant,
    /// This is the second try of a run whose load was late.
    retry: bool,
    /// When SIGINT was sent for overrunning (SIGKILL follows).
    interrupted_at: Option<Instant>,
}

/// Runs every job of `plan`; returns what each left.
pub(crate) fn run_all(plan: &Plan, stop: &StopSignal) -> Outcome {
    run_jobs(plan, plan.jobs(), plan.parallel, stop)
}

/// Runs `jobs` of `plan`, `parallel` at once (a sequential campaign's
/// batch); returns what each left.
pub(crate) fn run_jobs(plan: &Plan, jobs: Vec<Job>, parallel: usize, stop: &StopSignal) -> Outcome {
    let mut s = Scheduler {
        plan,
        queue: VecDeque::new(),
        running: Vec::new(),
        runs: Vec::new(),
        parallel,
        total: 0,
        kept: 0,
    };
    s.queue_unfinished(jobs);
    let mut forwarded = false;
    loop {
        if stop.is_set() && !forwarded {
            forwarded = true;
            s.queue.clear();
            for r in &s.running {
                signal(&r.child, libc::SIGINT);
            }
        }
        s.fill();
        if s.running.is_empty() && (s.queue.is_empty() || stop.is_set()) {
            break;
        }
        std::thread::sleep(REAP_EVERY);
        s.reap(stop.is_set());
    }
    Outcome {
        runs: s.runs,
        parallel_end: s.parallel,
    }
}

/// How often ended runs are looked for. A virtual run takes about half a
/// second: at 200 ms each slot stood idle a tenth of a second after every
/// run, a sixth of the campaign's wall time; a `waitpid` per child every
/// 20 ms costs nothing measurable.
const REAP_EVERY: Duration = Duration::from_millis(20);

/// The campaign's runs: waiting, running and done.
struct Scheduler<'a> {
    plan: &'a Plan,
    /// (job, this is its second try).
    queue: VecDeque<(Job, bool)>,
    running: Vec<Running>,
    runs: Vec<CampaignRun>,
    parallel: usize,
    /// Runs to make (not counting those `--resume` found done).
    total: usize,
    /// Runs `--resume` found done.
    kept: usize,
}

impl Scheduler<'_> {
    /// Queues every job without a finished report; `--resume` keeps the
    /// runs that were judged or left out, and runs again those that were
    /// interrupted or errored.
    fn queue_unfinished(&mut self, jobs: Vec<Job>) {
        for job in jobs {
            let rel = super::run_dir(&job.variant, job.seed, job.repeat);
            let kept = collect::find_summary(&self.plan.dir.join(&rel))
                .map(|_| collect::finished(&self.plan.dir, &rel, &job, Exit::Recorded))
                .filter(|run| !matches!(run.status, RunStatus::Errored { .. }));
            match kept {
                Some(run) => self.runs.push(run),
                None => self.queue.push_back((job, false)),
            }
        }
        self.kept = self.runs.len();
        self.total = self.queue.len();
    }

    /// Starts runs until `parallel` are running or none is left.
    fn fill(&mut self) {
        while self.running.len() < self.parallel {
            let Some((job, retry)) = self.queue.pop_front() else {
                break;
            };
            match spawn(self.plan, &job, retry) {
                Ok(r) => self.running.push(r),
                Err(why) => self.runs.push(CampaignRun {
                    variant: job.variant.clone(),
                    seed: job.seed,
                    repeat: job.repeat,
                    report: None,
                    status: RunStatus::Errored {
                        reason: why.to_string(),
                    },
                }),
            }
        }
    }

    /// Collects the runs that ended; a late one is queued again once, with
    /// one run fewer at once.
    fn reap(&mut self, stopping: bool) {
        let limit = self.plan.per_run() * 3 + Duration::from_secs(60);
        let mut i = 0;
        while i < self.running.len() {
            overrun(&mut self.running[i], limit);
            let Ok(Some(status)) = self.running[i].child.try_wait() else {
                i += 1;
                continue;
            };
            let r = self.running.swap_remove(i);
            let exit = match (status.code(), status.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(s)) => Exit::Signal(s),
                (None, None) => Exit::Code(-1),
            };
            let run = collect::finished(&self.plan.dir, &r.rel, &r.job, exit);
            let done = self.runs.len() + 1 - self.kept;
            report_progress(&run, done, self.total, r.started.elapsed());
            if matches!(run.status, RunStatus::Excluded { .. }) && !r.retry && !stopping {
                self.parallel = self.parallel.saturating_sub(1).max(1);
                eprintln!(
                    "  its load was not delivered as planned: left out, run again; now {} at once",
                    self.parallel
                );
                self.queue.push_front((r.job.clone(), true));
                self.total += 1;
            }
            self.runs.push(run);
        }
    }
}

/// Why a run's process could not be started.
#[derive(Debug, thiserror::Error)]
enum SpawnError {
    #[error("creating {}: {error}", dir.display())]
    Folder { dir: PathBuf, error: std::io::Error },
    #[error("creating its log: {0}")]
    Log(std::io::Error),
    #[error("finding the harness binary: {0}")]
    Binary(std::io::Error),
    #[error("starting the run: {0}")]
    Start(std::io::Error),
}

/// Starts one run in a process group of its own.
fn spawn(plan: &Plan, job: &Job, retry: bool) -> Result<Running, SpawnError> {
    let mut rel = super::run_dir(&job.variant, job.seed, job.repeat);
    if retry {
        rel.set_file_name(format!(
            "{}-again",
            rel.file_name().unwrap_or_default().to_string_lossy()
        ));
    }
    let dir = plan.dir.join(&rel);
    std::fs::create_dir_all(&dir).map_err(|error| SpawnError::Folder {
        dir: dir.clone(),
        error,
    })?;
    let log = std::fs::File::create(dir.join("harness.log")).map_err(SpawnError::Log)?;
    let exe = std::env::current_exe().map_err(SpawnError::Binary)?;
    let mut cmd = Command::new(exe);
    cmd.arg(&plan.file)
        .args(["--seed", &job.seed.to_string()])
        .args(["--variant", &job.variant])
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(SpawnError::Log)?)
        .stderr(log)
        .process_group(0);
    if plan.exp.quick {
        cmd.arg("--quick");
    }
    if let Some(n) = plan.agents {
        cmd.args(["--agents", &n.to_string()]);
    }
    if plan.clock.is_virtual() {
        cmd.args(["--clock", plan.clock.name()]);
    }
    if plan.without_alerts {
        cmd.arg("--without-alerts");
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT);
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(SpawnError::Start)?;
    Ok(Running {
        job: job.clone(),
        rel,
        child,
        started: Instant::now(),
        retry,
        interrupted_at: None,
    })
}

/// A run past `limit` gets SIGINT (it writes what it measured), and
/// SIGKILL 30 s later.
fn overrun(r: &mut Running, limit: Duration) {
    match r.interrupted_at {
        None if r.started.elapsed() > limit => {
            eprintln!(
                "  {} {}: past {} s, interrupting it",
                r.job.variant,
                r.job.seed,
                limit.as_secs()
            );
            signal(&r.child, libc::SIGINT);
            r.interrupted_at = Some(Instant::now());
        }
        Some(at) if at.elapsed() > Duration::from_secs(30) => {
            let _ = r.child.kill();
        }
        _ => {}
    }
}

fn signal(child: &Child, sig: i32) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

fn report_progress(run: &CampaignRun, done: usize, total: usize, took: Duration) {
    let outcome = match &run.status {
        RunStatus::Judged(j) => run_report::class_words(&j.verdict),
        RunStatus::Excluded { judged, reason } => {
            format!(
                "{} (left out: {reason})",
                run_report::class_words(&judged.verdict)
            )
        }
        RunStatus::Errored { reason } => format!("ERRORED: {reason}"),
    };
    eprintln!(
        "[{done}/{total}] {} {}: {outcome} ({} s)",
        run.variant,
        run.label(),
        took.as_secs()
    );
}
