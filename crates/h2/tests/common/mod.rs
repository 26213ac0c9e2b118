//! What the client's tests against real servers share: the bound on every request, a request
//! sent keeping everything, a test's `LocalSet`, and a gRPC health call.
#![allow(dead_code)] // each test file uses its share

use std::time::Duration;

use bytes::Bytes;
use throng_h2::client::Client;
use throng_h2::conn::{Keep, Request, Response, StreamError};
use throng_h2::hpack::Block;
use tokio::task::LocalSet;
use tokio::time::timeout;

/// No request in a test outlives this.
pub(crate) const BOUND: Duration = Duration::from_secs(20);

/// Keep the response's headers and body.
pub(crate) fn keep_all() -> Keep {
    Keep {
        headers: true,
        body: true,
        parts: false,
    }
}

/// Sends a request keeping its whole response, within [`BOUND`].
pub(crate) async fn send(c: &Client, headers: &[u8], body: Bytes) -> Result<Response, StreamError> {
    let req = Request {
        headers,
        body,
        keep: keep_all(),
    };
    timeout(BOUND, c.send(req))
        .await
        .expect("no request outlives its bound")
}

/// Runs `f` on a current-thread runtime's `LocalSet`, as one of the engine's workers.
pub(crate) fn local<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(LocalSet::new().run_until(f))
}

/// A call of `grpc.health.v1.Health/{method}` for `service`: its header block and its body
/// (HealthCheckRequest{service} in one gRPC frame).
pub(crate) fn health_call(authority: &str, method: &str, service: &str) -> (Vec<u8>, Bytes) {
    let headers = Block::builder()
        .field(":method", b"POST")
        .field(":scheme", b"http")
        .field(
            ":path",
            format!("/grpc.health.v1.Health/{method}").as_bytes(),
        )
        .field(":authority", authority.as_bytes())
        .field("content-type", b"application/grpc")
        .field("te", b"trailers")
        .build()
        .fixed()
        .expect("fixed")
        .to_vec();
    // Field 1, length-delimited.
    let mut msg = vec![0x0a, service.len() as u8];
    msg.extend_from_slice(service.as_bytes());
    let mut body = vec![0u8];
    body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    body.extend_from_slice(&msg);
    (headers, Bytes::from(body))
}
