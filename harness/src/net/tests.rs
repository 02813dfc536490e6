//! The transports together: the load path's HTTP client over an
//! in-process pipe, as a virtual run drives the system.

use super::http::HttpClient;
use super::in_process::{tests::echo_peer, PEER};

#[tokio::test(start_paused = true)]
async fn a_pipe_carries_http_1_with_a_loopback_peer_on_a_paused_clock() {
    let target = echo_peer();
    let http = HttpClient::in_process(target, 2);
    for _ in 0..3 {
        let a = http
            .request(
                hyper::Method::GET,
                "/peer".parse().unwrap(),
                None,
                std::time::Duration::from_secs(1),
            )
            .await
            .expect("an answer");
        assert_eq!(a.status, 200);
        assert_eq!(&a.body.unwrap()[..], PEER.to_string().as_bytes());
    }
    // Keep-alive: one connection served all three.
    assert_eq!(http.connections_opened(), 1);
}
