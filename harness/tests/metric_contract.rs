//! The metric contract between the system under test and the harness: every
//! series the scraper reads is exported by the system, in every shape the
//! harness drives (one zone, several zones). A series renamed or dropped on
//! either side fails here, not as a report that silently reads 0.

use gpu_executor::CpuExecutor;
use std::sync::Arc;
use sut::{System, SystemConfig};

async fn exported(yaml: &str) -> harness::observe::scrape::Scrape {
    let cfg = SystemConfig::from_yaml(yaml).unwrap();
    let sys = System::start_with_executor(cfg, Arc::new(CpuExecutor::new()))
        .await
        .unwrap();
    let text = sys.render_metrics();
    sys.shutdown();
    harness::observe::scrape::parse(&text)
}

#[tokio::test]
async fn every_series_the_scraper_reads_is_exported() {
    for yaml in ["zones: [z1]\n", "zones: [az1, az2, az3]\n"] {
        let s = exported(yaml).await;
        let missing = harness::observe::scrape::missing(&s);
        assert!(missing.is_empty(), "{yaml}: not exported: {missing:?}");
    }
}

#[tokio::test]
async fn a_target_without_a_series_is_told_which_figures_it_blanks() {
    let s = harness::observe::scrape::parse("sut_pool_slots{zone=\"z1\"} 4\n");
    let missing = harness::observe::scrape::missing(&s);
    let lost = missing
        .iter()
        .find(|(name, _)| *name == sut::metric_names::CACHE_WRITES_LOST_TOTAL.name)
        .expect("cache writes lost is read");
    assert_eq!(lost.1, &[run_report::Metric::CacheWritesLost]);
    assert!(!missing.iter().any(|(n, _)| *n == "sut_pool_slots"));
}
