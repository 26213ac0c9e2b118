//! The broker's own numbers beside a run (`--amqp-monitor URL`): RabbitMQ's management API
//! (the `rabbitmq_management` plugin), `/api/overview`, read once a second through an idle
//! window before the load, through the load, and once after it, handed to the run as core's
//! [`Watched`] servers, the shape SQL's `--db-stats` gives (core's [`DatabaseEvent`]s: named
//! counters and readings).
//!
//! The counters ([`COUNTERS`]): the broker's `message_stats` (messages published, delivered
//! and fetched, acknowledged, redelivered, confirmed, returned as unroutable), cumulative, so
//! their rates idle and under load, totals and per request are right; and gauges read at each
//! reading (in the JSON's `samples`): `queue_totals`' messages (ready and unacknowledged, the
//! queues' depth) and the connections and channels open. The broker refreshes these figures
//! every `collect_statistics_interval` (5 s by default), and they lag the messages by about
//! that much (measured on Debian's 3.10.8: 10 messages appeared in `publish` 4.9 s after they
//! were published), so a run reads the broker once more 5.5 s after its load (`SETTLE` of the
//! flags), and its per-second readings show the load's shape late and in steps. Without the
//! plugin there is no API to read:
//! `rabbitmqctl list_queues` gives depths but no message rates, and is not read here.
//!
//! The API is read with a plain HTTP/1.0 GET with basic authentication on a TCP connection of
//! its own, within the connect timeout.

use std::time::Duration;

use throng_core::watch::{Readings, Watched};
use throng_core::{DatabaseEvent, DatabaseInfo, DatabaseSample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The counters read, in this order: each its name in the result and its path in
/// `/api/overview`.
pub const COUNTERS: [(&str, &str); 12] = [
    ("publish", "message_stats.publish"),
    ("deliver_get", "message_stats.deliver_get"),
    ("ack", "message_stats.ack"),
    ("redeliver", "message_stats.redeliver"),
    ("confirm", "message_stats.confirm"),
    ("return_unroutable", "message_stats.return_unroutable"),
    ("drop_unroutable", "message_stats.drop_unroutable"),
    ("messages", "queue_totals.messages"),
    ("messages_ready", "queue_totals.messages_ready"),
    (
        "messages_unacknowledged",
        "queue_totals.messages_unacknowledged",
    ),
    ("connections", "object_totals.connections"),
    ("channels", "object_totals.channels"),
];

/// How often the broker is read.
pub const PERIOD: Duration = Duration::from_secs(1);

/// A RabbitMQ management API.
#[derive(Debug, Clone)]
pub struct Overview {
    /// `host:port`.
    addr: String,
    /// `user:pass` in base64.
    auth: String,
    timeout: Duration,
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl Overview {
    /// The API at `url` (`http://[USER:PASS@]HOST:PORT`, guest:guest by default, a path
    /// ignored), each reading within `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Overview, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!(
                "{url}: the management API is http://[USER:PASS@]HOST:PORT (the \
                 rabbitmq_management plugin's, e.g. http://guest:guest@127.0.0.1:15672)"
            )
        })?;
        let authority = rest.split('/').next().unwrap_or_default();
        let (user, addr) = authority
            .rsplit_once('@')
            .unwrap_or(("guest:guest", authority));
        if addr.is_empty() || addr.starts_with(':') {
            return Err(format!("{url}: no host"));
        }
        let user = percent_encoding::percent_decode_str(user).decode_utf8_lossy();
        let addr = match addr.contains(':') {
            true => addr.to_string(),
            false => format!("{addr}:15672"),
        };
        Ok(Overview {
            addr,
            auth: base64(user.as_bytes()),
            timeout,
        })
    }

    /// What the result calls it.
    pub fn name(&self) -> String {
        format!("rabbitmq http://{}/api/overview", self.addr)
    }

    /// One reading: the [`COUNTERS`]' values (a figure the broker does not show yet, as
    /// `message_stats` before any message, is 0).
    pub async fn read(&self) -> Result<Vec<u64>, String> {
        let body = match tokio::time::timeout(self.timeout, self.get()).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(format!(
                    "http://{}/api/overview did not answer within {:?}",
                    self.addr, self.timeout
                ))
            }
        };
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| format!("http://{}/api/overview: not JSON ({e})", self.addr))?;
        if v.get("queue_totals").is_none() {
            return Err(format!(
                "http://{}/api/overview has no queue_totals: is it RabbitMQ's management API?",
                self.addr
            ));
        }
        Ok(COUNTERS
            .iter()
            .map(|(_, path)| {
                path.split('.')
                    .try_fold(&v, |v, k| v.get(k))
                    .and_then(|x| x.as_u64())
                    .unwrap_or(0)
            })
            .collect())
    }

    async fn get(&self) -> Result<Vec<u8>, String> {
        let fail = |e: std::io::Error| format!("http://{}/api/overview: {e}", self.addr);
        let mut s = tokio::net::TcpStream::connect(&self.addr)
            .await
            .map_err(fail)?;
        let req = format!(
            "GET /api/overview HTTP/1.0\r\nHost: {}\r\nAuthorization: Basic {}\r\n\
             User-Agent: throng\r\n\r\n",
            self.addr, self.auth
        );
        s.write_all(req.as_bytes()).await.map_err(fail)?;
        let mut buf = Vec::with_capacity(16384);
        // Bounded: the overview is a few KiB.
        (&mut s)
            .take(4 << 20)
            .read_to_end(&mut buf)
            .await
            .map_err(fail)?;
        let head_end = buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| format!("http://{}/api/overview: not an HTTP answer", self.addr))?;
        let status = buf.split(|b| *b == b'\n').next().unwrap_or_default();
        if !status.windows(5).any(|w| w == b" 200 ") {
            return Err(format!(
                "http://{}/api/overview answered {}",
                self.addr,
                String::from_utf8_lossy(status).trim()
            ));
        }
        Ok(buf.split_off(head_end + 4))
    }
}

/// A broker read through its idle window, ready for the load.
#[derive(Debug)]
pub struct Monitor {
    api: Overview,
    idle: Vec<(Instant, Vec<u64>)>,
}

impl Monitor {
    /// Reads the broker now (an error here is the caller's: it cannot be read), then once a
    /// second for `idle`, the last reading at its end.
    pub async fn start(api: Overview, idle: Duration) -> Result<Monitor, String> {
        let t0 = Instant::now();
        let mut readings = vec![(t0, api.read().await?)];
        let mut at = t0;
        while at < t0 + idle {
            at = (at + PERIOD).min(t0 + idle);
            tokio::time::sleep_until(at).await;
            readings.push((Instant::now(), api.read().await?));
        }
        Ok(Monitor {
            api,
            idle: readings,
        })
    }

    /// Watches the broker through a run's load: the idle readings (negative `t`), then one a
    /// second, then, once the load has ended, one more after `settle`; the channel closes
    /// after it. The task returns the watch's warnings (readings that failed).
    pub fn watch_load(self, settle: Duration) -> Readings {
        let origin = Instant::now();
        let (tx, rx) = mpsc::channel(self.idle.len() + 64);
        let info = DatabaseInfo {
            name: self.api.name(),
            counters: COUNTERS.iter().map(|(c, _)| c.to_string()).collect(),
            ..DatabaseInfo::default()
        };
        let _ = tx.try_send(DatabaseEvent::Info(info));
        for (at, values) in self.idle {
            let t = -(origin - at).as_secs_f64();
            let _ = tx.try_send(DatabaseEvent::Sample(0, DatabaseSample { t, values }));
        }
        let (ended_tx, mut ended) = oneshot::channel::<()>();
        let api = self.api;
        let task = tokio::spawn(async move {
            let (mut failed, mut dropped) = (0u64, 0u64);
            let mut first: Option<String> = None;
            let mut tick = tokio::time::interval_at(origin + PERIOD, PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let cut_off = loop {
                tokio::select! {
                    r = &mut ended => break r.is_err(),
                    _ = tick.tick() => {}
                }
                match api.read().await {
                    Ok(values) => {
                        let t = origin.elapsed().as_secs_f64();
                        let sample = DatabaseEvent::Sample(0, DatabaseSample { t, values });
                        if tx.try_send(sample).is_err() {
                            dropped += 1;
                        }
                    }
                    Err(e) => {
                        failed += 1;
                        first.get_or_insert(e);
                    }
                }
            };
            if !cut_off {
                tokio::time::sleep(settle).await;
                match api.read().await {
                    Ok(values) => {
                        let t = origin.elapsed().as_secs_f64();
                        let sample = DatabaseEvent::Sample(0, DatabaseSample { t, values });
                        let _ = tx.send(sample).await;
                    }
                    Err(e) => {
                        failed += 1;
                        first.get_or_insert(e);
                    }
                }
            }
            let mut warnings = Vec::new();
            if failed > 0 {
                warnings.push(format!(
                    "{}: {failed} readings failed, the first: {}",
                    api.name(),
                    first.unwrap_or_default()
                ));
            }
            if dropped > 0 {
                warnings.push(format!(
                    "{}: {dropped} readings were dropped (the run was too busy to take them)",
                    api.name()
                ));
            }
            warnings
        });
        Readings {
            events: rx,
            load_ended: ended_tx,
            warnings: task,
        }
    }

    /// The broker, ready to be watched by a run.
    pub fn watched(self, settle: Duration) -> Watched {
        Watched::new(move || self.watch_load(settle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_basic_auth() {
        assert_eq!(base64(b"guest:guest"), "Z3Vlc3Q6Z3Vlc3Q=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        let o = Overview::new("http://u:p@127.0.0.1:15673/x", Duration::from_secs(1)).unwrap();
        assert_eq!(o.addr, "127.0.0.1:15673");
        assert_eq!(o.auth, base64(b"u:p"));
        assert_eq!(
            Overview::new("http://h", Duration::from_secs(1))
                .unwrap()
                .addr,
            "h:15672"
        );
        assert!(Overview::new("https://h", Duration::from_secs(1)).is_err());
        assert!(Overview::new("http://:1", Duration::from_secs(1)).is_err());
    }
}
