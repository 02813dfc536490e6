//! What the tests share: a process's live children, read from /proc,
//! whether a pid is still alive (a zombie is not), why an experiment
//! with a proxy gateway or Prometheus cannot run here, and the `sut`
//! binary a test starts by hand.
// Each test crate uses part of this module.
#![allow(dead_code)]

/// The pids of `parent`'s live children whose command line contains `needle`.
pub fn children(parent: u32, needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the comm may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) || !alive(pid) {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// Alive and not a zombie (a zombie only waits for its parent to read its status).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

/// Why an experiment with a proxy gateway cannot be validated here: its
/// proxy's binary is not installed (and `HARNESS_REQUIRE_PROXIES` is unset,
/// as it is in `.ci/run`, which installs them).
pub fn proxy_missing(text: &str) -> Option<String> {
    if std::env::var_os("HARNESS_REQUIRE_PROXIES").is_some_and(|v| v == "1") {
        return None;
    }
    let on_path = |b: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join(b).is_file())
    };
    let proxy = ["haproxy", "nginx"]
        .into_iter()
        .find(|b| text.contains(&format!("proxy: {{ {b}:")) && !on_path(b))
        .map(|b| {
            format!(
                "`{b}` is not installed (apt-get install {})",
                if b == "nginx" { "nginx-light" } else { b }
            )
        });
    // The real servers of an experiment's own processes (gunicorn from
    // PyPI, HAProxy from Debian), refused at validation where missing.
    let tree: serde_json::Value = serde_saphyr::from_str(text).unwrap_or_default();
    let programs = tree["system"]["processes"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
        .filter_map(|p| p["command"][0].as_str().map(str::to_string))
        .collect::<Vec<_>>();
    proxy.or_else(|| {
        programs
            .into_iter()
            .find(|b| !b.contains('/') && !on_path(b))
            .map(|b| format!("`{b}` is not installed (the experiment's processes run it)"))
    })
}

/// Why a test that needs `prometheus` and `promtool` cannot run here;
/// `None` when they are installed. With `HARNESS_REQUIRE_PROMETHEUS=1` (as
/// in `.ci/run`) a missing installation fails the test instead.
pub fn prometheus_missing() -> Option<String> {
    harness::observe::prometheus::check_installed()
        .err()
        .map(|_| {
            let why = "prometheus/promtool not installed (Debian package `prometheus`)";
            if std::env::var("HARNESS_REQUIRE_PROMETHEUS").is_ok_and(|v| v == "1") {
                panic!("HARNESS_REQUIRE_PROMETHEUS=1 but {why}");
            }
            why.to_string()
        })
}

/// The `sut` binary cargo built beside the test binaries.
pub fn sut_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps.join("sut"), deps.parent().unwrap().join("sut")]
        .into_iter()
        .find(|p| p.is_file())
        .expect("the sut binary beside the tests (cargo build -p system-under-test)")
}

/// The system under test started by hand, as a team would, on a free
/// loopback port with the CPU executor (its config `dir/system.yaml`) and
/// no admin token given to the harness; returns once it listens.
pub fn start_sut(dir: &std::path::Path) -> (std::process::Child, u16) {
    use std::time::{Duration, Instant};
    let config = dir.join("system.yaml");
    std::fs::write(&config, "executor: cpu\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sut = std::process::Command::new(sut_binary())
        .args(["--config", &config.display().to_string()])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sut did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (sut, port)
}

/// A fresh folder `harness-<name>-<pid>` under the temporary folder.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("harness-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `harness EXP --quiet --out OUT`, ready to run (a caller may add to it).
pub fn harness_run(exp: &std::path::Path, out: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.arg(exp)
        .args(["--quiet", "--out", &out.display().to_string()]);
    cmd
}

/// Why a containers test cannot run here: no Docker engine, or one of
/// `images` not built (`bash ci/images.sh`). `None` when it can run; a
/// panic instead when `HARNESS_REQUIRE_DOCKER=1` (as in `.ci/run`), or
/// `HARNESS_REQUIRE_PROXIES=1` where `proxy` says a proxy image is wanted.
pub async fn containers_missing(images: &[&str], proxy: bool) -> Option<String> {
    let why = harness::env::containers::check_these(images).await.err()?;
    let required = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    if required("HARNESS_REQUIRE_DOCKER") || (proxy && required("HARNESS_REQUIRE_PROXIES")) {
        panic!("HARNESS_REQUIRE_DOCKER/HARNESS_REQUIRE_PROXIES=1 but: {why}");
    }
    Some(format!("containers environment not available: {why}"))
}

/// The containers and networks of this test process's variant `variant`
/// still there (`overload-<variant>-<pid>-...`), after waiting up to 10 s for
/// their removal to finish.
pub fn containers_left(variant: &str) -> Vec<String> {
    containers_named(&format!("overload-{variant}-{}-", std::process::id()))
}

/// The containers and networks whose names start with `prefix`, after
/// waiting up to 10 s for their removal to finish.
pub fn containers_named(prefix: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = harness::env::docker::names_starting(prefix).expect("docker");
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// HAProxy trying each request three times on a 503 (`{{listen}}` and
/// `{{pool:z1}}` filled by the harness).
pub const HAPROXY_THREE_TRIES: &str = "# three tries on a 503: {{listen}} is filled below\ndefaults\n  mode http\n  timeout connect 500ms\n  timeout client 5s\n  timeout server 3s\n  retries 2\n  retry-on 503\nfrontend api\n  bind {{listen}}\n  default_backend pool\nbackend pool\n  server z1 {{pool:z1}}\n";

/// nginx trying each request three times (the same pool three times).
pub const NGINX_THREE_TRIES: &str = "events {}\nhttp {\n  {{access_log}}\n  upstream pool {\n    server {{pool:z1}} max_fails=0;\n    server {{pool:z1}} max_fails=0;\n    server {{pool:z1}} max_fails=0;\n  }\n  server {\n    listen {{listen}};\n    location / {\n      proxy_pass http://pool;\n      proxy_next_upstream error timeout http_503 non_idempotent;\n      proxy_next_upstream_tries 3;\n    }\n  }\n}\n";

/// Every attempt of `v` failed, and the proxy `kind` tried each request
/// three times, as read from the proxy itself.
pub fn assert_three_tries_each(kind: &str, v: &run_report::VariantRun) {
    assert!(v.events.iter().all(|e| e.ok), "{:?}", v.events);
    assert_eq!(
        v.integrity.completed, 0,
        "every attempt failed: {:?}",
        v.integrity
    );
    let t = &v.system_totals;
    let requests = t["sut_gateway_requests_total"];
    let attempts = t["sut_gateway_attempts_total"];
    assert!(requests >= 20.0, "{kind}: {t:?}");
    assert_eq!(attempts, 3.0 * requests, "{kind}: three tries each: {t:?}");
}

/// No fault proxy listens at any of `addrs` any more.
pub fn assert_not_listening(addrs: &[String]) {
    for addr in addrs {
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "fault proxy {addr} still listens"
        );
    }
}

/// Waits for a harness the test started to exit, killing it (and failing)
/// after `within`.
pub fn wait_exit(
    child: &mut std::process::Child,
    within: std::time::Duration,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("harness did not exit within {within:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
