//! Retry policies for the retry-storm harness.
//!
//! The same policies drive the load generator's simulated clients and the
//! system-under-test gateway's internal retry layer, so an experiment can show
//! how retries at two layers multiply load and which published mechanism
//! stops it. Each mechanism is one module, implemented and tested against its
//! source:
//!
//! * [`backoff`](crate::backoff_delay): fixed, or exponential with full /
//!   equal / no jitter (AWS Architecture Blog, "Exponential Backoff and Jitter");
//! * Retry-After, honoured up to a cap;
//! * ratio retry budget (Google SRE book, ch. 21 "Handling Overload");
//! * token bucket retry quota (AWS SDK standard retry mode);
//! * gRPC retry throttling (gRFC A6);
//! * client-side adaptive throttling (Google SRE book, ch. 21).
//!
//! [`RetryConfig`] is what experiment YAML files contain; [`RetryPolicy`] is
//! the runtime state of one client. Time (`Instant`) and randomness (the
//! caller's `rand::Rng`) are passed in, so runs are reproducible from a seed.

mod adaptive;
mod backoff;
mod budget;
mod config;
mod grpc_throttle;
mod outcome;
mod policy;
mod ratio;
mod token_bucket;
mod validate;
mod window;

pub use adaptive::rejection_probability;
pub use backoff::{backoff_delay, exponential_ceiling};
pub use config::{Backoff, Budget, Jitter, RetryConfig};
pub use outcome::{Decision, Failure, GiveUpReason};
pub use policy::{RetryPolicy, RetryStats};
pub use validate::ConfigError;
