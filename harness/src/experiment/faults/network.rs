//! The `network` generic fault's values: what it does to the path into a
//! component (the fault proxy's impairment) and which values are
//! impossible. Its row is in `GenericFault::row`, its effect in
//! `Injector::apply`.

use serde::Deserialize;

/// `network: { component, delay, jitter, loss, bandwidth, reset }`.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkFault {
    /// The component whose incoming path it impairs: `gateway`, `pool-ZONE`,
    /// a process of `system.processes` or a `target.components` name.
    pub component: String,
    /// Added to every chunk, each way (`50ms`). Absent: no delay.
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub delay: Option<std::time::Duration>,
    /// The delay varies uniformly by up to this much either way (at most
    /// the delay). Absent: no jitter.
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub jitter: Option<std::time::Duration>,
    /// Percent of chunks lost (0-100), each resent 200 ms later.
    #[serde(default)]
    pub loss: f64,
    /// Kilobytes per second, each way and connection (> 0). Absent: no limit.
    #[serde(default)]
    pub bandwidth: Option<u64>,
    /// Percent of new connections reset (0-100).
    #[serde(default)]
    pub reset: f64,
}

impl NetworkFault {
    /// No delay, jitter, loss, bandwidth limit or reset: the fault proxy
    /// would pass everything through unchanged.
    fn does_nothing(&self) -> bool {
        self.delay.unwrap_or_default().is_zero()
            && self.jitter.unwrap_or_default().is_zero()
            && self.loss == 0.0
            && self.bandwidth.is_none()
            && self.reset == 0.0
    }

    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [("loss", self.loss), ("reset", self.reset)] {
            if !(0.0..=100.0).contains(&v) {
                return Err((field, format!("a percentage, 0 to 100, not {v}")));
            }
        }
        if self.bandwidth == Some(0) {
            return Err((
                "bandwidth",
                "must be > 0 KB/s (leave it out for no limit)".into(),
            ));
        }
        if self
            .jitter
            .is_some_and(|j| j > self.delay.unwrap_or_default())
        {
            return Err(("jitter", "must not exceed the delay".into()));
        }
        if self.does_nothing() {
            return Err((
                "delay",
                "the fault does nothing: give delay, loss, bandwidth or reset".into(),
            ));
        }
        Ok(())
    }
}
