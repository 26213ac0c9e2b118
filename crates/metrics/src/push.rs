//! Prometheus remote write (version 1): the families as a protobuf `WriteRequest`, compressed
//! by snappy's raw format, posted over HTTP/1.1 (TLS for `https://`) by hyper on a connection of
//! throng-net's, one push at a time.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;

use crate::families::{Families, Value};

/// `prometheus.WriteRequest` (remote write 1.0), the fields throng sends.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WriteRequest {
    /// The series, each with one sample.
    #[prost(message, repeated, tag = "1")]
    pub(crate) timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TimeSeries {
    /// Sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub(crate) labels: Vec<Label>,
    /// The samples, oldest first.
    #[prost(message, repeated, tag = "2")]
    pub(crate) samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Label {
    /// The label's name.
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    /// Its value.
    #[prost(string, tag = "2")]
    pub(crate) value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub(crate) value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub(crate) timestamp: i64,
}

/// The families as remote write's series, each with one sample at `timestamp` (ms): a counter
/// under its name with `_total`, a histogram as its `_bucket` (cumulative, `le`), `_sum` and
/// `_count` series, as a scrape of the exposition would store them.
pub(crate) fn write_request(families: &Families, timestamp: i64) -> WriteRequest {
    let mut out = Vec::new();
    for f in &families.0 {
        let name = f.stored_name();
        for (labels, value) in &f.series {
            let mut one = |suffix: &str, extra: Option<(Cow<'static, str>, String)>, v: f64| {
                let mut l: Vec<Label> = labels
                    .iter()
                    .chain(extra.as_ref())
                    .map(|(n, v)| Label {
                        name: n.to_string(),
                        value: v.clone(),
                    })
                    .collect();
                l.push(Label {
                    name: "__name__".into(),
                    value: format!("{name}{suffix}"),
                });
                l.sort_by(|a, b| a.name.cmp(&b.name));
                out.push(TimeSeries {
                    labels: l,
                    samples: vec![Sample {
                        value: v,
                        timestamp,
                    }],
                });
            };
            match value {
                Value::Count(n) => one("", None, *n as f64),
                Value::Gauge(g) => one("", None, *g),
                Value::Histogram(b) => {
                    let mut cumulative = 0u64;
                    for (bound, n) in b.pairs() {
                        cumulative += n;
                        let le = match bound.is_finite() {
                            true => bound.to_string(),
                            false => "+Inf".to_string(),
                        };
                        one("_bucket", Some(("le".into(), le)), cumulative as f64);
                    }
                    one("_sum", None, b.sum);
                    one("_count", None, b.count as f64);
                }
            }
        }
    }
    WriteRequest { timeseries: out }
}

/// Milliseconds since the Unix epoch now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Where pushes go: a remote write URL, checked.
#[derive(Debug)]
pub(crate) struct Target {
    /// The URL as given (its password hidden in messages).
    pub(crate) shown: String,
    uri: http::Uri,
    host: String,
    port: u16,
    tls: Option<throng_net::TlsTarget>,
    authorization: Option<String>,
}

impl Target {
    /// Reads `http://[user:password@]host[:port]/path` or `https://...`.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("not a URL ({e}); e.g. http://127.0.0.1:9090/api/v1/write"))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(
                    "the URL must start with http:// or https://, e.g. http://127.0.0.1:9090/api/v1/write"
                        .into(),
                )
            }
        };
        let authority = uri
            .authority()
            .ok_or("the URL names no host")?
            .as_str()
            .to_string();
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_string()), h.to_string()),
            None => (None, authority.clone()),
        };
        let hp: http::uri::Authority = hostport.parse().map_err(|e| format!("bad host ({e})"))?;
        let host = hp.host().trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err("the URL names no host".into());
        }
        let port = hp.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let tls = match tls {
            false => None,
            true => {
                let config = throng_net::client_config(&throng_net::TlsOptions::default())
                    .map_err(|e| e.to_string())?;
                let name = rustls_name(host)?;
                Some((config, name))
            }
        };
        let authorization = userinfo.map(|u| {
            use base64::Engine as _;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(u.as_bytes())
            )
        });
        let shown = throng_core::redact(url);
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        let uri = http::Uri::builder()
            .path_and_query(path)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Target {
            shown,
            uri,
            host: host.to_string(),
            port,
            tls,
            authorization,
        })
    }

    /// Posts one write request, within `limit` for all of it (connect, send, answer).
    pub(crate) async fn post(&self, request: &WriteRequest, limit: Duration) -> Result<(), String> {
        let body = snap::raw::Encoder::new()
            .compress_vec(&prost::Message::encode_to_vec(request))
            .map_err(|e| format!("snappy: {e}"))?;
        match tokio::time::timeout(limit, self.send(body)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {limit:?}")),
        }
    }

    async fn send(&self, body: Vec<u8>) -> Result<(), String> {
        let addrs: Vec<std::net::SocketAddr> =
            tokio::net::lookup_host((self.host.as_str(), self.port))
                .await
                .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
                .collect();
        let authority = format!("{}:{}", self.host, self.port);
        let (stream, _) = throng_net::open(
            &addrs,
            &authority,
            self.tls.as_ref(),
            Duration::from_secs(3600),
        )
        .await
        .map_err(|o| o.message.unwrap_or_else(|| "cannot connect".into()))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        let conn = tokio::spawn(conn);
        let mut req = http::Request::post(self.uri.clone())
            .header(http::header::HOST, authority)
            .header(http::header::CONTENT_ENCODING, "snappy")
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .header(
                http::header::USER_AGENT,
                concat!("throng/", env!("CARGO_PKG_VERSION")),
            );
        if let Some(a) = &self.authorization {
            req = req.header(http::header::AUTHORIZATION, a);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let answer = sender.send_request(req).await.map_err(|e| e.to_string());
        let result = match answer {
            Ok(resp) if resp.status().is_success() => Ok(()),
            Ok(resp) => {
                let status = resp.status();
                let text = resp
                    .into_body()
                    .collect()
                    .await
                    .map(|b| String::from_utf8_lossy(&b.to_bytes()).trim().to_string())
                    .unwrap_or_default();
                Err(format!(
                    "HTTP {status}: {}",
                    text.chars().take(200).collect::<String>()
                ))
            }
            Err(e) => Err(e),
        };
        conn.abort();
        result
    }
}

fn rustls_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>, String> {
    rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| format!("bad host name {host:?} for TLS: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{Buckets, Families};

    #[test]
    fn a_histogram_is_written_as_scraped_buckets_sum_and_count() {
        let mut h = throng_core::histogram::new();
        throng_core::histogram::record(&mut h, 1_000);
        throng_core::histogram::record(&mut h, 2_000);
        let mut f = Families::default();
        let labels = vec![
            ("shard".into(), "1/3".to_string()),
            ("label".into(), "GET /".to_string()),
        ];
        f.add(
            "throng_latency",
            "h",
            Some(prometheus_client::registry::Unit::Seconds),
            labels.clone(),
            Value::Histogram(Buckets::of(&h)),
        );
        f.add("throng_requests", "c", None, labels, Value::Count(7));
        let w = write_request(&f, 42);
        let names: Vec<String> = w
            .timeseries
            .iter()
            .map(|t| {
                t.labels
                    .iter()
                    .find(|l| l.name == "__name__")
                    .expect("a name")
                    .value
                    .clone()
            })
            .collect();
        assert_eq!(names.len(), crate::families::BOUNDS.len() + 1 + 2 + 1);
        assert_eq!(
            names.last().map(String::as_str),
            Some("throng_requests_total")
        );
        assert!(names.contains(&"throng_latency_seconds_count".to_string()));
        let inf = &w.timeseries[crate::families::BOUNDS.len()];
        assert!(inf
            .labels
            .iter()
            .any(|l| l.name == "le" && l.value == "+Inf"));
        assert_eq!(inf.samples[0].value, 2.0);
        for t in &w.timeseries {
            let sorted = t.labels.windows(2).all(|p| p[0].name < p[1].name);
            assert!(sorted, "{:?}", t.labels);
            assert_eq!(t.samples[0].timestamp, 42);
        }
    }

    #[test]
    fn urls_are_checked_and_passwords_hidden() {
        let t = Target::parse("http://u:secret@127.0.0.1:9090/api/v1/write").expect("a target");
        assert_eq!(t.port, 9090);
        assert_eq!(t.shown, "http://u:***@127.0.0.1:9090/api/v1/write");
        assert!(t.authorization.is_some());
        assert_eq!(t.uri.to_string(), "/api/v1/write");
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("127.0.0.1:9090").is_err());
        assert!(Target::parse("https://example.com/w")
            .expect("https")
            .tls
            .is_some());
    }
}
