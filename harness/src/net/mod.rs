//! The transports to the system under test: the load path's lean HTTP/1.1
//! client, the in-process pipes of the virtual clock, and the control plane
//! (admin commands, /metrics, the work query).

pub(crate) mod http;
pub(crate) mod in_process;
pub(crate) mod system_client;

#[cfg(test)]
mod tests;
