//! A closed-loop tokio + reqwest client: the stand-in for wrk when it is missing.
//!
//! `connections` tasks share one client; each sends the next request as soon
//! as the previous answer is read. Both sides of a comparison are driven by
//! the same client, so the ratio still means something, but the absolute
//! numbers are lower than wrk's (reqwest costs more per request).

use super::wrk::Driven;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Answers/s over `duration` (after a short warm-up), POSTing `json` or GETting.
pub async fn closed_loop(
    url: &str,
    json: Option<&str>,
    connections: u64,
    duration: Duration,
) -> Result<Driven, super::BenchError> {
    if !url.starts_with("http://127.0.0.1:") {
        return Err(super::BenchError::Invalid(format!(
            "refusing to send benchmark traffic to {url}: 127.0.0.1 only"
        )));
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections as usize)
        .timeout(Duration::from_secs(5))
        .build()?;
    let warm = Instant::now() + Duration::from_millis(300);
    let end = warm + duration;
    let done = Arc::new(AtomicU64::new(0));
    let non_2xx = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (client, url, json, done, non_2xx) = (
            client.clone(),
            url.to_string(),
            json.map(str::to_string),
            done.clone(),
            non_2xx.clone(),
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
                let answered = match req.send().await {
                    Ok(r) => {
                        let success = r.status().is_success() || r.status().is_redirection();
                        r.bytes().await.ok().map(|_| success)
                    }
                    Err(_) => None,
                };
                let now = Instant::now();
                if now >= end {
                    return;
                }
                if let (Some(success), true) = (answered, now >= warm) {
                    done.fetch_add(1, Ordering::Relaxed);
                    if !success {
                        non_2xx.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(Driven {
        requests_per_sec: done.load(Ordering::Relaxed) as f64 / duration.as_secs_f64(),
        non_2xx: non_2xx.load(Ordering::Relaxed),
        seconds: duration.as_secs_f64(),
        cpu_s: None,
        system_s: None,
    })
}
