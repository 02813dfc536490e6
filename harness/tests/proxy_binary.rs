//! A proxy gateway whose binary is not installed: `harness validate` runs
//! nothing, so the file is valid (exit 0); `harness FILE` exits 2 before
//! anything runs, at the variant's line, naming the Debian package.

use std::process::Command;

#[test]
fn missing_proxy_binary_exits_2_naming_the_package() {
    let dir = std::env::temp_dir().join(format!("harness-proxy-binary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("nginx.conf"),
        "{{listen}} {{pool:z1}} {{access_log}}",
    )
    .unwrap();
    let exp = dir.join("exp.yaml");
    std::fs::write(
        &exp,
        "name: t\nduration: 10s\nsystem:\n  gateway: { proxy: { nginx: { config: nginx.conf } } }\nworkload:\n  arrival: { constant: { rate: 10 } }\n  documents: { pages: { fixed: 2 }, tenants: 2 }\n  client: { timeout: 1s, retry: { max_attempts: 2 } }\nvariants:\n  a: {}\n",
    )
    .unwrap();
    // A PATH with no nginx on it (an empty folder).
    let empty = dir.join("bin");
    std::fs::create_dir_all(&empty).unwrap();
    let reports = dir.join("reports").display().to_string();
    let harness = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
        c.env("PATH", &empty);
        c
    };
    let out = harness().arg("validate").arg(&exp).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "validate: {text}{err}");
    assert!(text.contains("exp.yaml: ok"), "{text}");
    let out = harness()
        .arg(&exp)
        .args(["--out", reports.as_str()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "run: {err}");
    assert!(
        err.contains("exp.yaml:10:"),
        "located at the variant: {err}"
    );
    assert!(err.contains("apt-get install nginx-light"), "{err}");
    assert!(!dir.join("reports").exists(), "nothing ran");
}
