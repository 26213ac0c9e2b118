//! The `/metrics` endpoint: hyper's HTTP/1.1 server, and prometheus-client's OpenMetrics text
//! encoder fed by a collector that reads the runs' latest snapshots at scrape time (nothing is
//! kept up to date between scrapes).

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;

use crate::families::Value;
use crate::Shared;

/// The collector: every watched run's families, and the exporter's own push counts.
#[derive(Debug)]
struct Runs(Arc<Shared>);

impl Collector for Runs {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut families = self.0.families(false);
        if self.0.push.is_some() {
            for (result, n) in [
                ("ok", self.0.pushes.load(Ordering::Relaxed)),
                ("failed", self.0.push_failures.load(Ordering::Relaxed)),
            ] {
                families.add(
                    "throng_metrics_pushes",
                    "Remote write pushes of this process, by result.",
                    None,
                    vec![("result".into(), result.to_string())],
                    Value::Count(n),
                );
            }
        }
        for f in &families.0 {
            f.encode(&mut encoder)?;
        }
        Ok(())
    }
}

/// The text of one scrape.
pub(crate) fn scrape(shared: &Arc<Shared>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Runs(shared.clone())));
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

/// Serves `/metrics` on `listener` until the exporter stops.
pub(crate) async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, most likely: try again a little later.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| answer(req, shared.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    req: http::Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let response = |status: http::StatusCode, kind: &str, body: String| {
        let mut r = http::Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        if let Ok(v) = http::HeaderValue::from_str(kind) {
            r.headers_mut().insert(http::header::CONTENT_TYPE, v);
        }
        Ok(r)
    };
    if req.uri().path() != "/metrics" {
        return response(
            http::StatusCode::NOT_FOUND,
            "text/plain",
            "throng serves its metrics at /metrics\n".into(),
        );
    }
    let seq = shared.scrapes_started.fetch_add(1, Ordering::SeqCst) + 1;
    let text = scrape(&shared);
    shared.scrapes_served.send_modify(|s| *s = (*s).max(seq));
    response(
        http::StatusCode::OK,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        text,
    )
}
