//! A closed-loop tokio + reqwest client: the stand-in for wrk when it is missing.
//!
//! `connections` tasks share one client; each sends the next request as soon
//! as the previous answer is read. Both sides of a comparison are driven by
//! the same client, so the ratio still means something, but the absolute
//! numbers are lower than wrk's (reqwest costs more per request).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Requests/s over `duration` (after a short warm-up), POSTing `json` or GETting.
pub async fn closed_loop(
    url: &str,
    json: Option<&str>,
    connections: u64,
    duration: Duration,
) -> anyhow::Result<f64> {
    anyhow::ensure!(
        url.starts_with("http://127.0.0.1:"),
        "refusing to send benchmark traffic to {url}: 127.0.0.1 only"
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections as usize)
        .timeout(Duration::from_secs(5))
        .build()?;
    let warm = Instant::now() + Duration::from_millis(300);
    let end = warm + duration;
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (client, url, json, done) = (
            client.clone(),
            url.to_string(),
            json.map(str::to_string),
            done.clone(),
        );
        tasks.spawn(async move {
            loop {
                let req = match &json {
                    Some(b) => client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(b.clone()),
                    None => client.get(&url),
                };
                let ok = match req.send().await {
                    Ok(r) => r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                let now = Instant::now();
                if now >= end {
                    return;
                }
                if ok && now >= warm {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(done.load(Ordering::Relaxed) as f64 / duration.as_secs_f64())
}
