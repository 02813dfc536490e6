//! `environment: processes` with a process that is a local image: run as
//! a container on a network of the variant's own, it becomes ready, takes
//! each generic fault (`cpu_limit`, `pause`, `kill` with restart,
//! `network` delay) and is removed with its network at the end; after a
//! SIGKILL of the harness the next start removes the container (paused)
//! and the network. The image is made here, with no registry: a static
//! HTTP server of a few lines (gcc), imported as an image of one file.
//! A docker-compose file whose service is that image runs the same way.
//! Prints SKIPPED without Docker or a static C toolchain, unless
//! `HARNESS_REQUIRE_DOCKER=1`.

mod common;

use common::scratch;
use harness::env::docker;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const IMAGE: &str = "harness-test-srv";

/// Answers every request with 404 (below 500: ready) and closes.
const SERVER: &str = r#"
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static void die(int sig) { (void)sig; _exit(3); }
int main(int argc, char **argv) {
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons(atoi(argv[1]));
  if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 128)) return 1;
  /* Exits (3) after argv[2] seconds; as pid 1 it needs a handler. */
  if (argc > 2) signal(SIGALRM, die), alarm(atoi(argv[2]));
  const char *r = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  char b[65536];
  for (;;) {
    int f = accept(s, 0, 0);
    if (f < 0) continue;
    (void)read(f, b, sizeof b);
    (void)write(f, r, strlen(r));
    close(f);
  }
}
"#;

/// Builds and imports the image, once per test process (the one an
/// earlier run imported is replaced, not left dangling); why not, if it
/// cannot be here.
fn image() -> Result<(), String> {
    static ONCE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    ONCE.get_or_init(build_image).clone()
}

fn build_image() -> Result<(), String> {
    let why = (|| {
        docker::names_starting("harness-").map_err(|e| e.to_string())?;
        let dir = scratch("image-srv");
        std::fs::write(dir.join("srv.c"), SERVER).map_err(|e| e.to_string())?;
        let out = Command::new("gcc")
            .args(["-static", "-O1", "-o"])
            .arg(dir.join("srv"))
            .arg(dir.join("srv.c"))
            .output()
            .map_err(|e| format!("gcc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "gcc -static: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let bytes = std::fs::read(dir.join("srv")).map_err(|e| e.to_string())?;
        let _ = docker::remove_image(&format!("{IMAGE}:latest"));
        docker::import_one_file_image(IMAGE, "srv", &bytes).map_err(|e| e.to_string())
    })();
    if let Err(w) = &why {
        if std::env::var("HARNESS_REQUIRE_DOCKER").is_ok_and(|v| v == "1") {
            panic!("HARNESS_REQUIRE_DOCKER=1 but {w}");
        }
    }
    why
}

fn experiment(name: &str, duration: &str, timeline: &str) -> (PathBuf, PathBuf) {
    experiment_with(name, duration, timeline, "[/srv, \"{port}\"]")
}

fn experiment_with(
    name: &str,
    duration: &str,
    timeline: &str,
    command: &str,
) -> (PathBuf, PathBuf) {
    let dir = scratch(&format!("images-{name}"));
    let text = format!(
        r#"name: {name}
duration: {duration}
environment: processes
analysis: {{ recovery_window: 1s, warmup: 0s, min_baseline: 1s }}
system:
  processes:
    web:
      image: "{IMAGE}:latest"
      command: {command}
      port: 8080
      ready: {{ http: /, timeout: 20s }}
workload:
  arrival: {{ constant: {{ rate: 10 }} }}
  documents: {{ pages: {{ uniform: {{ min: 1, max: 3 }} }}, tenants: 2 }}
  client: {{ timeout: 500ms, retry: {{ max_attempts: 2, backoff: {{ fixed: {{ delay: 50ms }} }} }} }}
timeline:
{timeline}variants:
  only: {{}}
"#
    );
    let file = dir.join("exp.yaml");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

fn spawn(dir: &Path, file: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .env("HARNESS_FAULT_DIR", dir.join("ledger"))
        .arg(file)
        .args(["--quiet", "--out"])
        .arg(dir.join("reports"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap()
}

/// The containers and network of harness `pid`'s variant `only`.
fn left(pid: u32) -> Vec<String> {
    docker::names_starting(&format!("overload-only-{pid}-")).unwrap()
}

#[test]
fn an_image_takes_each_generic_fault_and_is_removed_with_its_network() {
    if let Err(why) = image() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let (dir, file) = experiment(
        "image-faults",
        "10s",
        "  - { at: 1s, duration: 2s, fault: { cpu_limit: { component: web, cpus: 0.2 } } }\n  - { at: 2s, duration: 2s, fault: { pause: { component: web } } }\n  - { at: 5s, duration: 1s, fault: { kill: { component: web } } }\n  - { at: 7s, duration: 2s, fault: { network: { component: web, delay: 100ms } } }\n",
    );
    let mut child = spawn(&dir, &file);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = std::fs::read_to_string(dir.join("stderr.log")).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("reports/image-faults/latest/run.json")).unwrap(),
    )
    .unwrap();
    let ev = run["variants"][0]["events"].as_array().unwrap().clone();
    for label in [
        "web limited to 0.2 CPUs",
        "web paused",
        "web killed",
        "network into web",
    ] {
        for l in [label.to_string(), format!("end: {label}")] {
            let e = ev
                .iter()
                .find(|x| x["label"].as_str() == Some(l.as_str()))
                .unwrap_or_else(|| panic!("no event {l:?} in {ev:?}"));
            assert_eq!(e["ok"], true, "{l}: {e}");
        }
    }
    // Every request is accounted for across the faults.
    let i = &run["variants"][0]["integrity"];
    let sum = i["completed"].as_u64().unwrap()
        + i["given_up"].as_u64().unwrap()
        + i["pending"].as_u64().unwrap();
    assert_eq!(i["submitted"].as_u64().unwrap(), sum, "{i}");
    assert_eq!(left(pid), Vec::<String>::new());
    let ledger: Vec<_> = std::fs::read_dir(dir.join("ledger"))
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(ledger.is_empty(), "ledger left: {ledger:?}");
}

#[test]
fn after_sigkill_the_next_start_removes_the_container_and_its_network() {
    if let Err(why) = image() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let (dir, file) = experiment(
        "image-sigkill",
        "60s",
        "  - { at: 1s, duration: 50s, fault: { pause: { component: web } } }\n",
    );
    let mut child = spawn(&dir, &file);
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let prefix = format!("overload-only-{pid}-");
    while !docker::paused_names()
        .unwrap()
        .iter()
        .any(|n| n.starts_with(&prefix))
    {
        assert!(Instant::now() < deadline, "no paused container");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL: no handler, no drop
    child.wait().unwrap();
    assert_eq!(left(pid).len(), 2, "a container and its network are left");
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .env("HARNESS_FAULT_DIR", dir.join("ledger"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("removed 1 container(s)"), "{err}");
    assert_eq!(left(pid), Vec::<String>::new(), "{err}");
}

#[test]
fn a_compose_files_services_are_the_processes() {
    if let Err(why) = image() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let dir = scratch("images-compose");
    std::fs::write(
        dir.join("docker-compose.yml"),
        format!(
            "version: \"3.8\"\nservices:\n  web:\n    image: {IMAGE}:latest\n    command: /srv 8080\n    environment: {{ MODE: slow }}\n    ports: [\"8080\"]\n"
        ),
    )
    .unwrap();
    let text = r#"name: compose
duration: 4s
environment: processes
analysis: { recovery_window: 1s, warmup: 0s, min_baseline: 1s }
system: { compose: docker-compose.yml }
workload:
  arrival: { constant: { rate: 10 } }
  documents: { pages: { uniform: { min: 1, max: 3 } }, tenants: 2 }
  client: { timeout: 500ms, retry: { max_attempts: 2, backoff: { fixed: { delay: 50ms } } } }
timeline:
  - { at: 1s, duration: 1s, fault: { pause: { component: web } } }
variants:
  before-fix: {}
  after-fix:
    system: { processes: { web: { env: { MODE: fast } } } }
"#;
    let file = dir.join("exp.yaml");
    std::fs::write(&file, text).unwrap();
    let exp = harness::experiment::load(&file, false).unwrap();
    let harness::experiment::Environment::Processes(p) = &exp.environment else {
        panic!("{:?}", exp.environment)
    };
    let after = &p.variants["after-fix"][0];
    assert_eq!(after.image.as_deref(), Some("harness-test-srv:latest"));
    assert_eq!(
        (after.port, after.env["MODE"].as_str()),
        (Some(8080), "fast")
    );
    assert_eq!(after.command, vec!["/srv", "8080"]);
    let mut child = spawn(&dir, &file);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = std::fs::read_to_string(dir.join("stderr.log")).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("reports/compose/latest/run.json")).unwrap(),
    )
    .unwrap();
    for v in run["variants"].as_array().unwrap() {
        let paused = v["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["label"] == "web paused")
            .cloned()
            .unwrap_or_default();
        assert_eq!(paused["ok"], true, "{v}");
    }
    for variant in ["before-fix", "after-fix"] {
        let left = docker::names_starting(&format!("overload-{variant}-{pid}-")).unwrap();
        assert_eq!(left, Vec::<String>::new());
    }
}

#[test]
fn a_container_that_exits_during_the_run_is_named_and_the_run_fails() {
    if let Err(why) = image() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let (dir, file) = experiment_with("image-exits", "5s", "  []\n", "[/srv, \"{port}\", \"2\"]");
    let mut child = spawn(&dir, &file);
    let pid = child.id();
    let status = common::wait_exit(&mut child, Duration::from_secs(120));
    let err = std::fs::read_to_string(dir.join("stderr.log")).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("reports/image-exits/latest/run.json")).unwrap(),
    )
    .unwrap();
    let i = &run["variants"][0]["integrity"];
    let line = i["processes_exited"][0].as_str().unwrap_or_default();
    assert!(
        line.contains("web (container") && line.contains("exited by itself"),
        "{i}"
    );
    let sum = i["completed"].as_u64().unwrap()
        + i["given_up"].as_u64().unwrap()
        + i["pending"].as_u64().unwrap();
    assert_eq!(i["submitted"].as_u64().unwrap(), sum, "{i}");
    assert_eq!(left(pid), Vec::<String>::new());
}
