//! The target of `benches/h2.sh`: hyper's HTTP/2 server by prior knowledge (h2c) on one
//! thread, answering a GET with 200 and a short body, and a POST with `content-type:
//! application/grpc` as a gRPC unary call (a 10-byte message and `grpc-status: 0` in the
//! trailers), as `throng serve http` and `throng serve grpc` answer.
//!
//! ```text
//! cargo run --release -p throng-h2 --example h2_target -- 8080
//! ```

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};

async fn handle(
    req: http::Request<Incoming>,
) -> Result<http::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>, Infallible> {
    let grpc = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return Ok(http::Response::new(
            Full::new(Bytes::from_static(b"hello")).boxed(),
        ));
    }
    let _ = req.into_body().collect().await;
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    // HelloReply{message: "Hello thr"}: a 5-byte prefix and an 11-byte message.
    let body = Full::new(Bytes::from_static(b"\x00\x00\x00\x00\x0b\x0a\x09Hello thr"))
        .with_trailers(async move { Some(Ok(trailers)) })
        .boxed();
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/grpc"),
    );
    Ok(resp)
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind");
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .max_concurrent_streams(1000)
                    .serve_connection(TokioIo::new(tcp), service_fn(handle))
                    .await;
            });
        }
    });
}
