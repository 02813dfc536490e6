//! A real Prometheus server for one variant: it evaluates the experiment's
//! alert rules (`alerts:`) on what it scrapes, and the harness reads the
//! alert history back over its HTTP API.
//!
//! Why a real server rather than an evaluator of our own: the rules are the
//! ones a team already runs, and `for:`, `rate()` windows, staleness and
//! evaluation timing are Prometheus' semantics, not an approximation of them.
//!
//! Lifecycle per variant: write a config (the SUT's `/metrics` and the
//! harness's own client-side endpoint as scrape targets, the rule files),
//! start `prometheus` on a free loopback port with its TSDB in a fresh
//! temporary folder, wait for `/-/ready`, and after the variant query
//! `ALERTS` with `query_range` at the evaluation step. The server is killed
//! and waited for in [`Drop`], so an error, an early return or Ctrl-C (the
//! variant ends early and unwinds normally) never leaves a process or a
//! port behind; it runs in its own process group so the terminal's Ctrl-C
//! does not kill it before its history is read, and with a parent-death
//! signal so it does not outlive a harness that is killed outright.

use crate::experiment::Alerts;
use run_report::AlertHistory;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// The Debian package that provides `prometheus` and `promtool`.
pub const PACKAGE: &str = "prometheus";

/// How long a starting server may take to answer `/-/ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum PromError {
    #[error("`{0}` is not installed (the experiment has `alerts:`); install the Debian package `{PACKAGE}` (apt-get install {PACKAGE}), version 2.42 or later")]
    Missing(&'static str),
    #[error("promtool check rules failed:\n{0}")]
    BadRules(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("prometheus did not become ready: {0}")]
    NotReady(String),
    #[error("reading the alert history from prometheus: {0}")]
    Query(QueryError),
}

/// Why a range query gave no matrix: the request failed, or Prometheus
/// answered with its own error (its text).
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    Url(#[from] url::ParseError),
    #[error("{0}")]
    Request(#[from] reqwest::Error),
    #[error("{0}")]
    Prometheus(String),
}

/// True when `name` is an executable on `PATH`.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            let f = d.join(name);
            f.is_file()
                && std::fs::metadata(&f)
                    .map(|m| {
                        use std::os::unix::fs::PermissionsExt;
                        m.permissions().mode() & 0o111 != 0
                    })
                    .unwrap_or(false)
        })
    })
}

/// Both binaries are there (checked before anything runs).
pub fn check_installed() -> Result<(), PromError> {
    for bin in ["prometheus", "promtool"] {
        if !on_path(bin) {
            return Err(PromError::Missing(bin));
        }
    }
    Ok(())
}

/// `promtool check rules` on every rule file: a syntax error or an unknown
/// function fails, with promtool's message naming the file and the rule.
pub fn check_rules(alerts: &Alerts) -> Result<(), PromError> {
    check_installed()?;
    match promtool_check_rules(&alerts.rules)
        .map_err(|e| PromError::Io("running promtool".into(), e))?
    {
        None => Ok(()),
        Some(text) => Err(PromError::BadRules(text)),
    }
}

/// `promtool check rules FILES`: `None` when they pass, else what promtool
/// said (stdout and stderr, trimmed).
pub(crate) fn promtool_check_rules(
    files: &[impl AsRef<std::ffi::OsStr>],
) -> std::io::Result<Option<String>> {
    let out = Command::new("promtool")
        .arg("check")
        .arg("rules")
        .args(files)
        .output()?;
    if out.status.success() {
        return Ok(None);
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(Some(text.trim().to_string()))
}

/// A running Prometheus server, stopped (killed and waited for) on drop.
pub struct Prometheus {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

/// A loopback port nobody listens on now.
fn free_port() -> Result<u16, PromError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| PromError::Io("finding a free loopback port".into(), e))
}

/// Prometheus durations: whole milliseconds.
fn prom_duration(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// The server's configuration: the rule files and one job per target
/// (`(job, URL of its /metrics)`).
fn config(alerts: &Alerts, targets: &[(&str, String)]) -> String {
    let mut s = format!(
        "global:\n  scrape_interval: {i}\n  scrape_timeout: {i}\n  evaluation_interval: {e}\nrule_files:\n",
        i = prom_duration(alerts.scrape_interval),
        e = prom_duration(alerts.evaluation_interval)
    );
    if alerts.rules.is_empty() {
        // Only `target_series:` expressions: the server scrapes, no rules.
        s = s.replace("rule_files:\n", "rule_files: []\n");
    }
    for r in &alerts.rules {
        // JSON strings are valid YAML scalars, whatever the path holds.
        s.push_str(&format!("  - {}\n", serde_json::json!(r)));
    }
    s.push_str("scrape_configs:\n");
    for (job, url) in targets {
        let (scheme, addr, path) = match reqwest::Url::parse(url) {
            Ok(u) => (
                u.scheme().to_string(),
                format!(
                    "{}:{}",
                    u.host_str().unwrap_or("127.0.0.1"),
                    u.port_or_known_default().unwrap_or(80)
                ),
                u.path().to_string(),
            ),
            Err(_) => ("http".into(), url.clone(), "/metrics".into()),
        };
        s.push_str(&format!(
            "  - job_name: {}\n    scheme: {}\n    metrics_path: {}\n    static_configs:\n      - targets: [{}]\n",
            serde_json::json!(job),
            serde_json::json!(scheme),
            serde_json::json!(path),
            serde_json::json!(addr)
        ));
    }
    s
}

impl Prometheus {
    /// Starts a server scraping `targets` (`(job, "host:port")`) and waits until it is ready.
    pub async fn start(
        alerts: &Alerts,
        targets: &[(&str, String)],
        label: &str,
    ) -> Result<Prometheus, PromError> {
        check_installed()?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let safe: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let dir = std::env::temp_dir().join(format!(
            "harness-prometheus-{}-{n}-{safe}",
            std::process::id()
        ));
        let io = |what: &str, e| PromError::Io(format!("{what} {}", dir.display()), e);
        std::fs::create_dir_all(dir.join("data")).map_err(|e| io("creating", e))?;
        let cfg = dir.join("prometheus.yml");
        std::fs::write(&cfg, config(alerts, targets)).map_err(|e| io("writing into", e))?;
        // The port is free when chosen; another process may take it before
        // prometheus binds it, so a server that exits at once is retried.
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            let mut p = Prometheus {
                child: Some(spawn(&cfg, &dir, port)?),
                port,
                dir: dir.clone(),
            };
            match p.wait_ready().await {
                Ok(()) => return Ok(p),
                Err(e) => {
                    last = e.to_string();
                    p.kill();
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(PromError::NotReady(last))
    }

    /// The server's base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The process id, while it runs (for tests).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    async fn wait_ready(&mut self) -> Result<(), PromError> {
        let http = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        let url = format!("{}/-/ready", self.url());
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(PromError::NotReady(format!(
                    "it exited ({status}); its log: {}",
                    self.log_tail()
                )));
            }
            if let Ok(r) = http.get(&url).timeout(Duration::from_secs(1)).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(PromError::NotReady(format!(
                    "no answer on {url} within {READY_TIMEOUT:?}; its log: {}",
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until every target has been scraped once: Prometheus hands
    /// even static targets to its scrapers in batches (every 5 s), and a
    /// variant whose clock started before that would lose its first seconds.
    async fn wait_scraping(&self, targets: usize) -> Result<(), PromError> {
        let http = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        let url = format!("{}/api/v1/targets", self.url());
        loop {
            let up = match http.get(&url).timeout(Duration::from_secs(1)).send().await {
                Ok(r) => r.json::<serde_json::Value>().await.ok().map(|b| {
                    b["data"]["activeTargets"]
                        .as_array()
                        .map(|ts| ts.iter().filter(|t| t["health"] == "up").count())
                        .unwrap_or(0)
                }),
                Err(_) => None,
            };
            if up.unwrap_or(0) >= targets {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(PromError::NotReady(format!(
                    "{} of {targets} targets scraped within {READY_TIMEOUT:?}; its log: {}",
                    up.unwrap_or(0),
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(5).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Every rule's history between `from` (the variant's second 0) and now,
    /// in seconds since `from`. Rules in `names` that never became active
    /// get an empty history.
    pub async fn alert_history(
        &self,
        http: &reqwest::Client,
        from: SystemTime,
        step: Duration,
        names: &[String],
    ) -> Result<Vec<AlertHistory>, PromError> {
        let unix = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64()
        };
        let (start, end) = (unix(from), unix(SystemTime::now()));
        let step_s = step.as_secs_f64();
        let result = query_range(http, &self.url(), "ALERTS", (start, end), step_s)
            .await
            .map_err(PromError::Query)?;
        Ok(histories(&result, start, end, step_s, names))
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the server and removes its folder (also done on drop).
    pub fn stop(mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(cfg: &Path, dir: &Path, port: u16) -> Result<Child, PromError> {
    let log = std::fs::File::create(dir.join("prometheus.log"))
        .map_err(|e| PromError::Io("creating prometheus.log".into(), e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| PromError::Io("prometheus.log".into(), e))?;
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--storage.tsdb.retention.time=1d")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        // Its own process group: the terminal's Ctrl-C reaches the harness,
        // which reads the history and then stops the server itself.
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; it only sets this child's
    // parent-death signal, so a harness killed outright takes it along.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| PromError::Io("starting prometheus".into(), e))
}

/// One variant's monitoring: its Prometheus and the harness's client-side
/// endpoint it scrapes. Started before the variant's clock, so its first
/// scrapes see second 0; the recorder is attached once it exists (until
/// then the endpoint serves zeros).
pub struct Monitor {
    prometheus: Prometheus,
    _client: crate::observe::client_metrics::ClientMetrics,
    recorder: Arc<OnceLock<Arc<crate::observe::recorder::Recorder>>>,
    names: Vec<String>,
    step: Duration,
}

impl Monitor {
    /// Starts both; `sut_base` is the system's base URL (its `/metrics` is scraped).
    pub async fn start(
        alerts: &Alerts,
        sut_base: &str,
        variant: &str,
    ) -> Result<Monitor, PromError> {
        let metrics = format!("{}/metrics", sut_base.trim_end_matches('/'));
        Self::start_on(alerts, &metrics, variant).await
    }

    /// Starts both, the `sut` job scraping `metrics` (the URL of the
    /// system's metrics: an external target's `target.metrics`).
    pub(crate) async fn start_on(
        alerts: &Alerts,
        metrics: &str,
        variant: &str,
    ) -> Result<Monitor, PromError> {
        let recorder = Arc::new(OnceLock::new());
        let client = crate::observe::client_metrics::ClientMetrics::serve(recorder.clone())
            .await
            .map_err(|e| PromError::Io("serving the client-side /metrics".into(), e))?;
        let targets = [
            ("sut", metrics.to_string()),
            ("harness", format!("http://{}/metrics", client.addr)),
        ];
        let prometheus = Prometheus::start(alerts, &targets, variant).await?;
        prometheus.wait_scraping(targets.len()).await?;
        Ok(Monitor {
            prometheus,
            _client: client,
            recorder,
            names: alerts.rule_names.clone(),
            step: alerts.evaluation_interval,
        })
    }

    /// Its Prometheus server's base URL (for `target_series:` queries).
    pub(crate) fn url(&self) -> String {
        self.prometheus.url()
    }

    pub fn attach(&self, recorder: Arc<crate::observe::recorder::Recorder>) {
        let _ = self.recorder.set(recorder);
    }

    /// After the variant: waits one evaluation so its last seconds are
    /// judged, reads the history (second 0 at `t0`), stops the server.
    pub async fn finish(
        self,
        http: &reqwest::Client,
        t0: SystemTime,
    ) -> Result<Vec<AlertHistory>, PromError> {
        tokio::time::sleep(self.step).await;
        let h = self
            .prometheus
            .alert_history(http, t0, self.step, &self.names)
            .await;
        self.prometheus.stop();
        h
    }
}

/// `query` evaluated by the Prometheus at `base` (its URL) from `start` to
/// `end` (Unix seconds) every `step_s` seconds: the result's matrix, or why
/// not (the request failed, or Prometheus's own error). Alert histories and
/// an external target's `target_series:` expressions both read through it.
pub(crate) async fn query_range(
    http: &reqwest::Client,
    base: &str,
    query: &str,
    (start, end): (f64, f64),
    step_s: f64,
) -> Result<Vec<serde_json::Value>, QueryError> {
    let url = reqwest::Url::parse_with_params(
        &format!("{base}/api/v1/query_range"),
        &[
            ("query", query.to_string()),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
            ("step", format!("{step_s}")),
        ],
    )?;
    let body: serde_json::Value = http
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await?
        .json()
        .await?;
    if body["status"] != "success" {
        return Err(QueryError::Prometheus(
            body["error"]
                .as_str()
                .map_or_else(|| body.to_string(), String::from),
        ));
    }
    Ok(body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// `ALERTS` samples (a query_range matrix) into one history per rule name:
/// consecutive samples of a state, one step apart, make an interval
/// `[first, last + step)`.
fn histories(
    result: &[serde_json::Value],
    start: f64,
    end: f64,
    step: f64,
    names: &[String],
) -> Vec<AlertHistory> {
    // name -> state -> sample times (seconds since `start`).
    let mut times: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for series in result {
        let name = series["metric"]["alertname"].as_str().unwrap_or_default();
        let state = series["metric"]["alertstate"].as_str().unwrap_or_default();
        let at = times
            .entry(name.to_string())
            .or_default()
            .entry(state.to_string())
            .or_default();
        for v in series["values"].as_array().into_iter().flatten() {
            if let Some(t) = v[0].as_f64() {
                at.push(t - start);
            }
        }
    }
    let until = end - start;
    let intervals = |ts: Option<&Vec<f64>>| -> Vec<(f64, f64)> {
        let mut ts = ts.cloned().unwrap_or_default();
        ts.sort_by(f64::total_cmp);
        ts.dedup();
        let mut out: Vec<(f64, f64)> = Vec::new();
        for t in ts {
            match out.last_mut() {
                Some(last) if t - last.1 < step * 0.5 + 1e-9 => last.1 = (t + step).min(until),
                _ => out.push((t, (t + step).min(until))),
            }
        }
        out
    };
    let mut all: Vec<String> = names.to_vec();
    all.extend(times.keys().filter(|k| !names.contains(k)).cloned());
    all.into_iter()
        .map(|name| {
            let s = times.get(&name);
            AlertHistory {
                pending: intervals(s.and_then(|s| s.get("pending"))),
                firing: intervals(s.and_then(|s| s.get("firing"))),
                observed_until_s: Some(until),
                name,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn samples_become_intervals_per_rule() {
        let start = 1000.0;
        let result = vec![
            json!({"metric": {"alertname": "A", "alertstate": "pending"},
                   "values": [[1005.0, "1"], [1006.0, "1"]]}),
            json!({"metric": {"alertname": "A", "alertstate": "firing"},
                   "values": [[1007.0, "1"], [1008.0, "1"], [1009.0, "1"], [1020.0, "1"]]}),
        ];
        let h = histories(&result, start, 1030.0, 1.0, &["A".into(), "B".into()]);
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].pending, vec![(5.0, 7.0)]);
        assert_eq!(h[0].firing, vec![(7.0, 10.0), (20.0, 21.0)]);
        assert_eq!(h[1].name, "B");
        assert!(h[1].firing.is_empty() && h[1].pending.is_empty());
        assert_eq!(h[1].observed_until_s, Some(30.0));
    }

    #[test]
    fn the_config_names_rules_and_targets() {
        let alerts = Alerts {
            rules: vec!["/x/r.yml".into()],
            rule_names: vec![],
            scrape_interval: Duration::from_secs(1),
            evaluation_interval: Duration::from_millis(500),
        };
        let c = config(
            &alerts,
            &[("sut", "http://127.0.0.1:9/base/metrics".into())],
        );
        assert!(c.contains("metrics_path: \"/base/metrics\""), "{c}");
        assert!(c.contains("scrape_interval: 1000ms"), "{c}");
        assert!(c.contains("evaluation_interval: 500ms"), "{c}");
        assert!(c.contains("- \"/x/r.yml\""), "{c}");
        assert!(c.contains("targets: [\"127.0.0.1:9\"]"), "{c}");
    }
}
