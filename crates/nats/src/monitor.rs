//! The server's own figures beside a run (`--nats-monitor URL`): nats-server's monitoring
//! endpoint (`-m PORT`), `/varz`, read once by [`Varz`], a [`Server`] that core's
//! [`throng_core::watch`] reads through an idle window, the load and once after it.
//!
//! The figures ([`figures`]): messages and bytes the server received from publishers and
//! delivered to subscribers, the clients it cut off for not reading fast enough, the
//! connections it accepted since it started (counters: rates and totals), and the connections
//! open at each reading (a gauge: minimum, mean, maximum and last).

use std::time::Duration;

use throng_core::watch::{ReadError, Server};
use throng_core::{DatabaseInfo, ErrorClass, Figure};
use throng_net::get::Endpoint;

/// The figures read from `/varz`, in this order: each its key in `/varz`, label and unit.
pub fn figures() -> Vec<Figure> {
    vec![
        Figure::counter("in_msgs", "messages received", "messages"),
        Figure::counter("out_msgs", "messages delivered", "messages"),
        Figure::counter("in_bytes", "bytes received", "bytes"),
        Figure::counter("out_bytes", "bytes delivered", "bytes"),
        Figure::counter("slow_consumers", "clients cut off as slow", "clients"),
        Figure::counter("total_connections", "connections accepted", "connections"),
        Figure::gauge("connections", "connections open", "connections"),
    ]
}

/// A nats-server's monitoring endpoint.
#[derive(Debug, Clone)]
pub struct Varz {
    endpoint: Endpoint,
    timeout: Duration,
    keys: Vec<String>,
}

impl Varz {
    /// The endpoint at `url` (`http://HOST[:PORT]`, 8222 by default; `/varz` unless the URL
    /// names a path), each reading within `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Varz, String> {
        let endpoint = Endpoint::parse(url, 8222, "/varz").map_err(|e| {
            format!(
                "{e}: the monitoring endpoint is http://HOST:PORT (nats-server's -m PORT, \
                 e.g. http://127.0.0.1:8222)"
            )
        })?;
        Ok(Varz {
            endpoint,
            timeout,
            keys: figures().into_iter().map(|f| f.name).collect(),
        })
    }

    /// What the result calls it.
    pub fn name(&self) -> String {
        format!("nats-server {}", self.endpoint.shown())
    }
}

impl Server for Varz {
    fn info(&self) -> DatabaseInfo {
        DatabaseInfo {
            name: self.name(),
            kind: "Broker".into(),
            figures: figures(),
            ..DatabaseInfo::default()
        }
    }

    async fn read(&mut self) -> Result<Vec<u64>, ReadError> {
        let v = self.endpoint.get_json(self.timeout).await?;
        let shown = self.endpoint.shown();
        self.keys
            .iter()
            .map(|k| {
                v.get(k).and_then(|x| x.as_u64()).ok_or_else(|| {
                    ReadError::new(
                        ErrorClass::Protocol,
                        format!("{shown} has no {k}: is it a nats-server's monitoring port?"),
                    )
                })
            })
            .collect()
    }
}
