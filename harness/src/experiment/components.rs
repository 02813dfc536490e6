//! The names of a system's components, as a timeline's generic faults name
//! them: `gateway` and one `pool-Z` per zone. The validator checks a fault's
//! component against them; the environments start processes under them.

/// A component's name for a zone's pool.
pub(crate) fn pool_component(zone: &str) -> String {
    format!("pool-{zone}")
}

/// The zone of a pool component's name (`pool-Z`), None for the gateway.
pub(crate) fn pool_zone(component: &str) -> Option<&str> {
    component.strip_prefix("pool-")
}

/// The component names a system with these zones offers: `gateway` and one
/// `pool-Z` per zone.
pub(crate) fn component_names(zones: &[String]) -> Vec<String> {
    std::iter::once("gateway".to_string())
        .chain(zones.iter().map(|z| pool_component(z)))
        .collect()
}
