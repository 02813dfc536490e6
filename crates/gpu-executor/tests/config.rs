//! Scheduler configuration: the YAML forms experiment files use, and validation.

use gpu_executor::{SchedulerConfig, SchedulingPolicy};
use std::time::Duration;

fn parse(yaml: &str) -> Result<SchedulerConfig, String> {
    serde_saphyr::from_str(yaml).map_err(|e| e.to_string())
}

#[test]
fn yaml_policy_forms() {
    let base = "lanes: 4\npage_time: 10ms\npage_queue: 100\n";
    let c = parse(base).expect("default policy");
    assert_eq!(c.policy, SchedulingPolicy::Shared);
    assert_eq!(c.page_time, Duration::from_millis(10));
    let c = parse(&format!("{base}policy: fifo\n")).expect("fifo");
    assert_eq!(c.policy, SchedulingPolicy::Fifo);
    let c = parse(&format!("{base}policy: shared\n")).expect("shared");
    assert_eq!(c.policy, SchedulingPolicy::Shared);
    let c = parse(&format!(
        "{base}policy: {{ tenant_fair_share: {{ max_share: 0.25 }} }}\n"
    ))
    .expect("tfs");
    assert_eq!(
        c.policy,
        SchedulingPolicy::TenantFairShare { max_share: 0.25 }
    );
    assert!(c.validate().is_ok());
}

#[test]
fn yaml_rejects_unknown_fields() {
    assert!(parse("lanes: 4\npage_time: 10ms\npage_queue: 100\nlane: 3\n").is_err());
    assert!(parse(
        "lanes: 4\npage_time: 10ms\npage_queue: 100\npolicy: { tenant_fair_share: { max_share: 0.5, x: 1 } }\n"
    )
    .is_err());
}

#[test]
fn validation_names_the_field() {
    let ok = SchedulerConfig {
        lanes: 2,
        page_time: Duration::from_millis(5),
        page_queue: 10,
        policy: SchedulingPolicy::Fifo,
    };
    assert_eq!(ok.validate(), Ok(()));
    let bad = |f: &dyn Fn(&mut SchedulerConfig)| {
        let mut c = ok.clone();
        f(&mut c);
        c.validate().expect_err("invalid").to_string()
    };
    assert!(bad(&|c| c.lanes = 0).contains("lanes"));
    assert!(bad(&|c| c.page_queue = 0).contains("page_queue"));
    for share in [0.0, -0.1, 1.01, f64::NAN] {
        let msg = bad(&|c| c.policy = SchedulingPolicy::TenantFairShare { max_share: share });
        assert!(msg.contains("max_share"), "{msg}");
    }
    let mut one = ok.clone();
    one.policy = SchedulingPolicy::TenantFairShare { max_share: 1.0 };
    assert_eq!(one.validate(), Ok(()));
}
