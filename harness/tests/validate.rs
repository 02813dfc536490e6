//! Malformed experiment files: each must fail with the file, the line and the
//! field named, and none may panic. The seed experiments must validate.

mod common;

use harness::experiment::parse;

const BASE: &str = r#"name: t
duration: 10s
quick: { duration: 5s }
system:
  pool: { slots: 4 }
workload:
  arrival: { constant: { rate: 10 } }
  documents: { pages: { fixed: 2 }, tenants: 2 }
  client: { timeout: 1s, retry: { max_attempts: 2 } }
timeline:
  - { at: 1s, fault: { cache_fill: { entries: 10 } }, trigger: false }
variants:
  a: {}
  b: { system: { pool: { slots: 8 } } }
expect:
  a: { waves: 0 }
"#;

/// Replaces `from` in the base file by `to` (which must occur once) and parses.
fn broken(from: &str, to: &str) -> harness::experiment::ExperimentError {
    assert_eq!(
        BASE.matches(from).count(),
        1,
        "{from:?} must occur once in BASE"
    );
    let text = BASE.replace(from, to);
    parse(&text, "exp.yaml", false).expect_err(&format!("should fail: {to}"))
}

fn check(err: &harness::experiment::ExperimentError, line: u64, field: &str) {
    let msg = err.to_string();
    assert!(msg.starts_with("exp.yaml:"), "names the file: {msg}");
    assert_eq!(err.line, line, "line of {msg}");
    assert!(msg.contains(field), "names {field:?}: {msg}");
}

#[test]
fn base_is_valid_and_variants_merge() {
    let e = parse(BASE, "exp.yaml", false).unwrap();
    assert_eq!(e.variants.len(), 2);
    assert_eq!(e.variants[0].system.pool.slots, 4);
    assert_eq!(e.variants[1].system.pool.slots, 8);
    assert_eq!(
        e.variants[1].system.pool.deadline, e.variants[0].system.pool.deadline,
        "untouched keys keep the base"
    );
    let q = parse(BASE, "exp.yaml", true).unwrap();
    assert_eq!(q.duration, std::time::Duration::from_secs(5));
}

#[test]
fn a_trigger_must_leave_the_minimum_baseline() {
    // Warm-up 3 s (the default) + 5 s of baseline: a trigger at 7 s is too early.
    let e = broken("trigger: false }", "trigger: true }");
    check(&e, 11, "timeline[0].at");
    assert!(e.message.contains("min_baseline = 5s"), "{e}");
    let late = BASE.replace(
        "at: 1s, fault: { cache_fill: { entries: 10 } }, trigger: false",
        "at: 8s, fault: { cache_fill: { entries: 10 } }",
    );
    assert!(parse(&late, "exp.yaml", false).is_ok());
    // A shorter minimum is honoured; zero is refused.
    let short = BASE
        .replacen(
            "\nsystem:",
            "\nanalysis: { min_baseline: 1s, warmup: 0s }\nsystem:",
            1,
        )
        .replace("trigger: false", "trigger: true");
    parse(&short, "exp.yaml", false).unwrap();
    check(
        &broken("\nsystem:\n", "\nanalysis: { min_baseline: 0s }\nsystem:\n"),
        4,
        "analysis.min_baseline",
    );
}

#[test]
fn verdict_expectations_name_classes() {
    let ok = BASE.replace("a: { waves: 0 }", "a: { verdict: \"stable|recovered\" }");
    let e = parse(&ok, "exp.yaml", false).unwrap();
    assert_eq!(e.expectations[0].classes, vec!["stable", "recovered"]);
    let e = broken("a: { waves: 0 }", "a: { verdict: metastabel }");
    check(&e, 16, "expect.a.verdict");
    assert!(e.message.contains("not a verdict"), "{e}");
    let e = broken("a: { waves: 0 }", "a: { verdict: 1 }");
    assert!(e.message.contains("a class, not a number"), "{e}");
}

#[test]
fn unknown_top_level_key() {
    check(
        &broken("duration: 10s\n", "duration: 10s\ndurration: 5s\n"),
        3,
        "durration",
    );
}

#[test]
fn unknown_system_key() {
    check(
        &broken("pool: { slots: 4 }", "pool: { slotz: 4 }"),
        5,
        "slotz",
    );
}

#[test]
fn zero_slots_rejected() {
    check(
        &broken("pool: { slots: 4 }", "pool: { slots: 0 }"),
        13,
        "pool.slots",
    );
}

#[test]
fn negative_rate_rejected() {
    check(&broken("rate: 10", "rate: -5"), 7, "rate");
}

#[test]
fn zero_rate_rejected() {
    check(&broken("rate: 10", "rate: 0"), 7, "rate");
}

#[test]
fn bad_duration_text() {
    check(
        &broken("duration: 10s", "duration: ten seconds"),
        2,
        "duration",
    );
}

#[test]
fn timeline_after_the_end() {
    check(&broken("at: 1s", "at: 30s"), 11, "timeline[0].at");
}

#[test]
fn unknown_fault() {
    check(
        &broken("cache_fill: { entries: 10 }", "cache_explode: {}"),
        11,
        "timeline[0].fault",
    );
}

#[test]
fn fault_and_action_together() {
    check(
        &broken(
            "fault: { cache_fill: { entries: 10 } }",
            "fault: cache_fill_to_limit, action: cache_fill_to_limit",
        ),
        11,
        "timeline[0]",
    );
}

#[test]
fn duration_on_a_fault_that_cannot_be_undone() {
    check(
        &broken("at: 1s,", "at: 1s, duration: 2s,"),
        11,
        "timeline[0].duration",
    );
}

#[test]
fn unknown_zone() {
    check(
        &broken(
            "fault: { cache_fill: { entries: 10 } }",
            "fault: { zone_fail: { zone: nowhere, ratio: 0.5 } }",
        ),
        11,
        "unknown zone",
    );
}

#[test]
fn unknown_metric_in_expect() {
    check(&broken("a: { waves: 0 }", "a: { wavez: 0 }"), 16, "wavez");
}

#[test]
fn expect_for_unknown_variant() {
    check(
        &broken("a: { waves: 0 }", "c: { waves: 0 }"),
        16,
        "expect.c",
    );
}

#[test]
fn malformed_comparison() {
    check(
        &broken("a: { waves: 0 }", "a: { waves: \"about 3\" }"),
        16,
        "expect.a.waves",
    );
}

/// An expectation no value of its metric can satisfy (outside the
/// catalogue's range, or a fraction of a count) is refused where it is
/// written, saying why; one at the range's edge, which can hold, is not.
#[test]
fn expectations_that_can_never_hold() {
    for (bad, field) in [
        (
            "a: { \"failure_ratio_mean[2s..10s]\": \"<= -1\" }",
            "expect.a.failure_ratio_mean[2s..10s]",
        ),
        (
            "a: { peak_failure_ratio: \"> 1\" }",
            "expect.a.peak_failure_ratio",
        ),
        ("a: { waves: \"< 0\" }", "expect.a.waves"),
        ("a: { waves: 2.5 }", "expect.a.waves"),
        ("a: { p99_ms: \"<= -5\" }", "expect.a.p99_ms"),
    ] {
        let e = broken("a: { waves: 0 }", bad);
        check(&e, 16, field);
        assert!(e.message.contains("can never hold"), "{e}");
    }
    for ok in [
        "a: { peak_failure_ratio: \"<= 0\" }",
        "a: { peak_failure_ratio: \">= 1\" }",
        "a: { unaccounted_documents: \"<= -1\" }",
    ] {
        let text = BASE.replace("a: { waves: 0 }", ok);
        parse(&text, "exp.yaml", false).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    let campaign = "campaign:\n  expect:\n    a: { \"runs with failure_ratio_peak > 1\": \">= 50% (alpha 0.05, beta 0.1)\" }\n";
    let e = parse(&format!("{BASE}{campaign}"), "exp.yaml", false).unwrap_err();
    assert_eq!(e.line, 19, "{e}");
    assert!(e.message.contains("can never hold"), "{e}");
}

/// The whole run's attempts per document has its own name; the old
/// spelling is refused where it is written, naming the new one, and the
/// windowed figure keeps its name.
#[test]
fn amplification_mean_needs_a_window_and_names_attempts_per_document() {
    let e = broken("a: { waves: 0 }", "a: { amplification_mean: \"<= 1.3\" }");
    check(&e, 16, "expect.a.amplification_mean");
    assert!(e.message.contains("attempts_per_document"), "{e}");
    for ok in [
        "a: { attempts_per_document: \"<= 1.3\" }",
        "a: { \"amplification_mean[2s..8s]\": \"<= 1.3\" }",
    ] {
        let text = BASE.replace("a: { waves: 0 }", ok);
        parse(&text, "exp.yaml", false).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

#[test]
fn zero_tenants() {
    check(&broken("tenants: 2", "tenants: 0"), 8, "tenants");
}

#[test]
fn impossible_page_distribution() {
    check(
        &broken("fixed: 2", "uniform: { min: 5, max: 2 }"),
        8,
        "pages.uniform",
    );
}

#[test]
fn wrong_type() {
    check(
        &broken("max_attempts: 2", "max_attempts: many"),
        9,
        "(syntax)",
    );
}

#[test]
fn zero_attempts_in_client_retry() {
    check(
        &broken("max_attempts: 2", "max_attempts: 0"),
        9,
        "max_attempts",
    );
}

#[test]
fn unknown_key_in_variant_override() {
    check(
        &broken(
            "b: { system: { pool: { slots: 8 } } }",
            "b: { system: { pool: { slotz: 8 } } }",
        ),
        14,
        "slotz",
    );
}

#[test]
fn invalid_override_value() {
    check(
        &broken(
            "b: { system: { pool: { slots: 8 } } }",
            "b: { system: { cache: { drop_ratio: 2 } } }",
        ),
        14,
        "cache.drop_ratio",
    );
}

#[test]
fn remote_external_target_needs_opt_in() {
    check(
        &broken(
            "duration: 10s\n",
            "duration: 10s\nenvironment: external\ntarget: { url: \"http://10.1.2.3:80\" }\n",
        ),
        4,
        "target.url",
    );
}

#[test]
fn quick_without_quick_section() {
    let text = BASE.replace("quick: { duration: 5s }\n", "");
    let err = parse(&text, "exp.yaml", true).unwrap_err();
    assert!(err.to_string().contains("quick"), "{err}");
}

#[test]
fn not_yaml_at_all() {
    let err = parse("name: [unclosed\n", "exp.yaml", false).unwrap_err();
    assert!(err.to_string().starts_with("exp.yaml:1:"), "{err}");
}

#[test]
fn seed_experiments_validate() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../experiments");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            if let Some(why) = common::proxy_missing(&std::fs::read_to_string(&path).unwrap()) {
                eprintln!("SKIPPED {}: {why}", path.display());
                continue;
            }
            harness::experiment::load(&path, false).unwrap_or_else(|e| panic!("{e}"));
            harness::experiment::load(&path, true).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 1);
}

#[test]
fn actions_may_be_limited_to_variants_faults_may_not() {
    let e = parse(
        &BASE.replace(
            "  - { at: 1s, fault: { cache_fill: { entries: 10 } }, trigger: false }\n",
            "  - { at: 1s, fault: { cache_fill: { entries: 10 } }, trigger: false }\n  - { at: 2s, action: { set_gateway_attempts: { attempts: 1 } }, variants: [a] }\n",
        ),
        "exp.yaml",
        false,
    )
    .unwrap();
    assert!(e.timeline[1].applies_to("a") && !e.timeline[1].applies_to("b"));
    assert!(e.timeline[0].applies_to("b"));
    check(
        &broken("at: 1s,", "at: 1s, variants: [a],"),
        11,
        "timeline[0].variants",
    );
}

#[test]
fn async_clients_poll_at_their_interval_and_variants_may_switch_mode() {
    use harness::experiment::Submission;
    let text = BASE
        .replace(
            "client: { timeout: 1s, retry: { max_attempts: 2 } }",
            "client: { timeout: 1s, retry: { max_attempts: 2 }, mode: async, poll: { interval: 100ms, honour_retry_after: false } }",
        )
        .replace(
            "  b: { system: { pool: { slots: 8 } } }",
            "  b: { client: { mode: sync } }\n  c: { client: { poll: { interval: 1s } } }",
        );
    let e = parse(&text, "exp.yaml", false).unwrap();
    let by = |n: &str| {
        e.variants
            .iter()
            .find(|v| v.name == n)
            .unwrap()
            .client
            .submission
    };
    assert_eq!(
        by("a"),
        Submission::Async {
            poll_interval: std::time::Duration::from_millis(100),
            honour_retry_after: false
        }
    );
    assert_eq!(by("b"), Submission::Sync);
    // A variant's poll policy keeps the base's async mode; honouring is the default.
    assert_eq!(
        by("c"),
        Submission::Async {
            poll_interval: std::time::Duration::from_secs(1),
            honour_retry_after: true
        }
    );
    // Without `mode`, clients are synchronous, as before.
    let e = parse(BASE, "exp.yaml", false).unwrap();
    assert!(e
        .variants
        .iter()
        .all(|v| v.client.submission == Submission::Sync));
}

#[test]
fn generic_fault_on_an_unknown_component() {
    let e = broken(
        "fault: { cache_fill: { entries: 10 } }",
        "fault: { pause: { component: pool-nowhere } }",
    );
    check(&e, 11, "timeline[0].fault.pause.component");
    assert!(e.message.contains("unknown component"), "{e}");
    assert!(e.message.contains("pool-z1"), "lists the components: {e}");
}

#[test]
fn cpu_limit_needs_a_positive_share() {
    for cpus in ["0", "-0.5"] {
        let e = broken(
            "fault: { cache_fill: { entries: 10 } }",
            &format!("fault: {{ cpu_limit: {{ component: gateway, cpus: {cpus} }} }}"),
        );
        check(&e, 11, "timeline[0].fault.cpu_limit.cpus");
    }
    let ok = BASE.replace(
        "fault: { cache_fill: { entries: 10 } }, trigger: false",
        "duration: 2s, fault: { cpu_limit: { component: gateway, cpus: 0.2 } }, trigger: false",
    );
    let exp = parse(&ok, "exp.yaml", false).unwrap();
    assert!(
        exp.needs_components(),
        "a generic fault runs the roles as processes"
    );
}

#[test]
fn generic_faults_need_the_embedded_environment() {
    let text = BASE
        .replace(
            "fault: { cache_fill: { entries: 10 } }",
            "fault: { kill: { component: gateway } }",
        )
        .replacen("\nsystem:", "\nenvironment: containers\nsystem:", 1);
    let e = parse(&text, "exp.yaml", false).unwrap_err();
    assert_eq!(e.line, 12, "{e}");
    assert!(e.message.contains("embedded"), "{e}");
}

/// A proxy configuration file in a fresh folder, and the experiment
/// that uses it (the file named relative to the experiment's folder).
fn with_proxy(
    kind: &str,
    config: &str,
) -> Result<harness::experiment::Experiment, harness::experiment::ExperimentError> {
    let dir = std::env::temp_dir().join(format!(
        "harness-validate-proxy-{}-{kind}-{}",
        std::process::id(),
        config.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("proxy.cfg"), config).unwrap();
    let text = BASE.replace(
        "  b: { system: { pool: { slots: 8 } } }",
        &format!(
            "  b: {{ system: {{ gateway: {{ proxy: {{ {kind}: {{ config: proxy.cfg }} }} }} }} }}"
        ),
    );
    let file = dir.join("exp.yaml");
    parse(&text, &file.display().to_string(), false)
}

#[test]
fn proxy_config_without_its_placeholders() {
    // The pools' placeholder missing: refused, at the variant, naming it.
    let e = with_proxy("haproxy", "frontend f\n  bind {{listen}}\n").unwrap_err();
    assert_eq!(e.line, 14, "{e}");
    assert!(e.field.ends_with("gateway.proxy.config"), "{e}");
    assert!(e.message.contains("{{pool:z1}}"), "{e}");
    // nginx needs its log placeholder too.
    let e = with_proxy("nginx", "listen {{listen}}; server {{pool:z1}};").unwrap_err();
    assert!(e.message.contains("{{access_log}}"), "{e}");
    // An unreadable file is located too.
    let text = BASE.replace(
        "  b: { system: { pool: { slots: 8 } } }",
        "  b: { system: { gateway: { proxy: { haproxy: { config: /nowhere/x.cfg } } } } }",
    );
    let e = parse(&text, "exp.yaml", false).unwrap_err();
    assert_eq!(e.line, 14, "{e}");
    assert!(e.message.contains("cannot read"), "{e}");
}

/// The proxy experiments switch to containers (`--environment
/// containers`), and a proxy gateway and a `network` fault validate there:
/// the proxy runs as a container, the fault through a fault proxy.
#[test]
fn proxy_gateways_and_network_faults_run_in_containers() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../experiments");
    for name in ["zone-failover-haproxy", "retry-storm-nginx"] {
        let path = std::path::Path::new(dir).join(format!("{name}.yaml"));
        if let Some(why) = common::proxy_missing(&std::fs::read_to_string(&path).unwrap()) {
            eprintln!("SKIPPED {name}: {why}");
            continue;
        }
        let mut exp = harness::experiment::load(&path, true).unwrap();
        exp.set_environment(harness::experiment::EnvironmentSwitch::Containers)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let text = BASE
        .replace(
            "fault: { cache_fill: { entries: 10 } }",
            "fault: { network: { component: pool-z1, delay: 20ms } }, duration: 1s",
        )
        .replacen("\nsystem:", "\nenvironment: containers\nsystem:", 1);
    parse(&text, "exp.yaml", false).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn network_fault_values_are_checked() {
    let with = |spec: &str| {
        BASE.replace(
            "fault: { cache_fill: { entries: 10 } }",
            &format!("fault: {{ network: {{ component: pool-z1, {spec} }} }}"),
        )
    };
    for (spec, field) in [
        ("loss: 101", "network.loss"),
        ("loss: -1", "network.loss"),
        ("delay: 10ms, reset: 150", "network.reset"),
        ("bandwidth: 0", "network.bandwidth"),
        ("delay: 10ms, jitter: 20ms", "network.jitter"),
        ("loss: 0", "network.delay"),
    ] {
        let e = parse(&with(spec), "exp.yaml", false).unwrap_err();
        check(&e, 11, &format!("timeline[0].fault.{field}"));
    }
    let e = parse(&with("delay: soon"), "exp.yaml", false).unwrap_err();
    check(&e, 11, "timeline[0].fault");
    let ok = parse(
        &with("delay: 50ms, jitter: 10ms, loss: 5, bandwidth: 256, reset: 1"),
        "exp.yaml",
        false,
    )
    .unwrap();
    assert!(ok.needs_components());
}

#[test]
fn external_targets_take_generic_faults_on_their_named_components_only() {
    let text = BASE
        .replacen(
            "\nsystem:",
            "\nenvironment: external\ntarget: { url: \"http://127.0.0.1:9\", components: { api: { pid: 1 }, db: { container: db1 } } }\nsystem:",
            1,
        )
        .replace("  b: { system: { pool: { slots: 8 } } }\n", "")
        .replace("expect:\n  a: { waves: 0 }\n", "");
    let with = |fault: &str| text.replace("fault: { cache_fill: { entries: 10 } }", fault);
    // Without an admin token an admin command cannot run; a generic fault can.
    let e = parse(&text, "exp.yaml", false).unwrap_err();
    assert!(e.message.contains("no admin API"), "{e}");
    parse(
        &with("fault: { pause: { component: api } }"),
        "exp.yaml",
        false,
    )
    .unwrap();
    parse(
        &with("fault: { kill: { component: db } }"),
        "exp.yaml",
        false,
    )
    .unwrap();
    let e = parse(
        &with("fault: { pause: { component: gateway } }"),
        "exp.yaml",
        false,
    )
    .unwrap_err();
    assert!(
        e.message.contains("unknown component") && e.message.contains("api"),
        "{e}"
    );
    let e = parse(
        &with("fault: { kill: { component: api } }"),
        "exp.yaml",
        false,
    )
    .unwrap_err();
    assert!(e.message.contains("cannot restart"), "{e}");
    assert_eq!(e.line, 13, "{e}");
}
