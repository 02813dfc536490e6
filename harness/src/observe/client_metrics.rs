//! The harness's own `/metrics`: what the clients saw, in the Prometheus
//! text format, on a loopback port for the variant's Prometheus to scrape.
//!
//! The system under test only knows what reached it. Rules written on what
//! customers saw (failed attempts, documents given up, attempts per
//! document) need the client side, and the harness has it: these series are
//! the running totals of the [`Recorder`]. Names start `harness_client_`
//! and are listed in [`SERIES`], the contract rule files may rely on.

use crate::observe::recorder::{ClientTotals, Recorder};
use std::sync::{Arc, OnceLock};

/// Every series served, with its type and help text.
pub const SERIES: &[(&str, &str, &str)] = &[
    ("harness_client_documents_submitted_total", "counter", "Document submissions (journeys begun)."),
    ("harness_client_distinct_documents_total", "counter", "Distinct documents submitted."),
    ("harness_client_attempts_total", "counter", "Attempts sent, first attempts and retries."),
    ("harness_client_attempt_outcomes_total", "counter", "Attempts answered, by outcome (ok, rejected = 503, timeout = client timeout or 504, error)."),
    ("harness_client_documents_completed_total", "counter", "Documents completed with a verified result."),
    ("harness_client_documents_given_up_total", "counter", "Documents whose client gave up."),
    ("harness_client_in_flight", "gauge", "Document journeys in flight."),
];

/// The exposition of one set of totals.
pub fn render(t: &ClientTotals) -> String {
    let mut e = sut::Exposition::default();
    let mut put = |i: usize, labels: &[(&str, &str)], v: u64| {
        let (name, kind, help) = SERIES[i];
        e.sample(name, kind, help, labels, v as f64);
    };
    put(0, &[], t.submitted);
    put(1, &[], t.distinct_documents);
    put(2, &[], t.attempts);
    for (outcome, v) in [
        ("ok", t.ok),
        ("rejected", t.rejected),
        ("timeout", t.timeouts),
        ("error", t.errors),
    ] {
        put(3, &[("outcome", outcome)], v);
    }
    put(4, &[], t.completed);
    put(5, &[], t.given_up);
    put(6, &[], t.in_flight);
    e.finish()
}

/// The endpoint, serving until dropped.
pub struct ClientMetrics {
    pub addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl ClientMetrics {
    /// Serves the totals of the recorder in `recorder` (zeros until it is
    /// set) on a fresh 127.0.0.1 port.
    pub async fn serve(recorder: Arc<OnceLock<Arc<Recorder>>>) -> std::io::Result<ClientMetrics> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let recorder = recorder.clone();
                async move { render(&recorder.get().map(|r| r.totals()).unwrap_or_default()) }
            }),
        );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(ClientMetrics { addr, task })
    }
}

impl Drop for ClientMetrics {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_rendered_and_parses_back() {
        let t = ClientTotals {
            attempts: 7,
            rejected: 2,
            given_up: 1,
            in_flight: 3,
            ..ClientTotals::default()
        };
        let text = render(&t);
        for (name, _, _) in SERIES {
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}: {text}");
        }
        let s = crate::observe::scrape::parse(&text);
        assert!(s.has("harness_client_attempts_total"));
        assert!(
            text.contains("harness_client_attempt_outcomes_total{outcome=\"rejected\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("harness_client_in_flight 3\n"), "{text}");
    }
}
