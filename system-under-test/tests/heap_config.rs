//! `pool.heap` in a configuration file: parsed, checked by field, and
//! absent (not even written) when a pool has no heap, so every file without
//! one serialises as before.

use sut::config::SystemConfig;

#[test]
fn a_heap_parses_and_needs_cpu_work_to_slow() {
    let cfg = SystemConfig::from_yaml(
        "pool: { split_time: 20ms, heap: { capacity_mb: 1024, request_mb: 2, page_mb: 8, collector_cost: 0.1, admit_below: 0.5 } }\n",
    )
    .unwrap();
    assert_eq!(cfg.pool.heap.as_ref().unwrap().admit_below, Some(0.5));
    let err = SystemConfig::from_yaml(
        "pool: { heap: { capacity_mb: 1024, request_mb: 2, page_mb: 8, collector_cost: 0.1 } }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("split_time"), "{err}");
    let err = SystemConfig::from_yaml(
        "pool: { split_time: 20ms, heap: { capacity_mb: 0, request_mb: 2, page_mb: 8, collector_cost: 0.1 } }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("pool.heap.capacity_mb"), "{err}");
    // Off by default, and then not written at all.
    let text = serde_json::to_string(&SystemConfig::default().pool).unwrap();
    assert!(!text.contains("heap"), "{text}");
}
