//! The server's own numbers beside a run (`--nats-monitor URL`): nats-server's monitoring
//! endpoint (`-m PORT`), `/varz`, read once a second through an idle window before the load,
//! through the load, and once after it, handed to the run as core's [`Watched`] servers, the
//! shape SQL's `--db-stats` gives (core's [`DatabaseEvent`]s: named counters and readings).
//!
//! The counters: `in_msgs`, `out_msgs`, `in_bytes`, `out_bytes` (messages and bytes the server
//! received from publishers and delivered to subscribers), `slow_consumers` (clients it cut
//! off because they did not read fast enough) and `total_connections` (connections accepted
//! since it started), all cumulative, so their rates idle and under load, totals and per
//! request are right; and `connections`, the connections open at each reading, a gauge: its
//! "rates" in the tables mean nothing, its readings (in the JSON's `samples`) are what to read.
//!
//! `/varz` is read with a plain HTTP/1.0 GET on a TCP connection of its own, within the
//! connect timeout: one small request a second needs no HTTP client.

use std::time::Duration;

use throng_core::watch::{Readings, Watched};
use throng_core::{DatabaseEvent, DatabaseInfo, DatabaseSample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The counters read from `/varz`, in this order.
pub const COUNTERS: [&str; 7] = [
    "in_msgs",
    "out_msgs",
    "in_bytes",
    "out_bytes",
    "slow_consumers",
    "total_connections",
    "connections",
];

/// How often the server is read.
pub const PERIOD: Duration = Duration::from_secs(1);

/// A nats-server's monitoring endpoint.
#[derive(Debug, Clone)]
pub struct Varz {
    /// `host:port`.
    addr: String,
    timeout: Duration,
}

impl Varz {
    /// The endpoint at `url` (`http://HOST:PORT`, a path ignored), each reading within
    /// `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Varz, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!(
                "{url}: the monitoring endpoint is http://HOST:PORT (nats-server's -m PORT, \
                 e.g. http://127.0.0.1:8222)"
            )
        })?;
        let addr = rest.split('/').next().unwrap_or_default();
        if addr.is_empty() || addr.starts_with(':') {
            return Err(format!("{url}: no host"));
        }
        let addr = match addr.contains(':') {
            true => addr.to_string(),
            false => format!("{addr}:80"),
        };
        Ok(Varz { addr, timeout })
    }

    /// What the result calls it.
    pub fn name(&self) -> String {
        format!("nats-server http://{}/varz", self.addr)
    }

    /// One reading: the [`COUNTERS`]' values.
    pub async fn read(&self) -> Result<Vec<u64>, String> {
        let got = tokio::time::timeout(self.timeout, self.get()).await;
        let body = match got {
            Ok(r) => r?,
            Err(_) => {
                return Err(format!(
                    "http://{}/varz did not answer within {:?}",
                    self.addr, self.timeout
                ))
            }
        };
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| format!("http://{}/varz: not JSON ({e})", self.addr))?;
        COUNTERS
            .iter()
            .map(|c| {
                v.get(c).and_then(|x| x.as_u64()).ok_or_else(|| {
                    format!(
                        "http://{}/varz has no {c}: is it a nats-server's monitoring port?",
                        self.addr
                    )
                })
            })
            .collect()
    }

    async fn get(&self) -> Result<Vec<u8>, String> {
        let mut s = tokio::net::TcpStream::connect(&self.addr)
            .await
            .map_err(|e| format!("http://{}/varz: {e}", self.addr))?;
        let req = format!(
            "GET /varz HTTP/1.0\r\nHost: {}\r\nUser-Agent: throng\r\n\r\n",
            self.addr
        );
        s.write_all(req.as_bytes())
            .await
            .map_err(|e| format!("http://{}/varz: {e}", self.addr))?;
        let mut buf = Vec::with_capacity(8192);
        // Bounded: /varz is a few KiB.
        (&mut s)
            .take(4 << 20)
            .read_to_end(&mut buf)
            .await
            .map_err(|e| format!("http://{}/varz: {e}", self.addr))?;
        let head_end = buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| format!("http://{}/varz: not an HTTP answer", self.addr))?;
        let status = buf.split(|b| *b == b'\n').next().unwrap_or_default();
        if !status.windows(5).any(|w| w == b" 200 ") {
            return Err(format!(
                "http://{}/varz answered {}",
                self.addr,
                String::from_utf8_lossy(status).trim()
            ));
        }
        Ok(buf.split_off(head_end + 4))
    }
}

/// A server read through its idle window, ready for the load.
#[derive(Debug)]
pub struct Monitor {
    varz: Varz,
    idle: Vec<(Instant, Vec<u64>)>,
}

impl Monitor {
    /// Reads the server now (an error here is the caller's: it cannot be read), then once a
    /// second for `idle`, the last reading at its end.
    pub async fn start(varz: Varz, idle: Duration) -> Result<Monitor, String> {
        let t0 = Instant::now();
        let mut readings = vec![(t0, varz.read().await?)];
        let mut at = t0;
        while at < t0 + idle {
            at = (at + PERIOD).min(t0 + idle);
            tokio::time::sleep_until(at).await;
            readings.push((Instant::now(), varz.read().await?));
        }
        Ok(Monitor {
            varz,
            idle: readings,
        })
    }

    /// Watches the server through a run's load: the idle readings (negative `t`), then one a
    /// second from now, then, once the load has ended, one more after `settle`; the channel
    /// closes after it. The task returns the watch's warnings (readings that failed).
    pub fn watch_load(self, settle: Duration) -> Readings {
        let origin = Instant::now();
        let (tx, rx) = mpsc::channel(self.idle.len() + 64);
        let info = DatabaseInfo {
            name: self.varz.name(),
            counters: COUNTERS.iter().map(|c| c.to_string()).collect(),
            ..DatabaseInfo::default()
        };
        let _ = tx.try_send(DatabaseEvent::Info(info));
        for (at, values) in self.idle {
            let t = -(origin - at).as_secs_f64();
            let _ = tx.try_send(DatabaseEvent::Sample(0, DatabaseSample { t, values }));
        }
        let (ended_tx, mut ended) = oneshot::channel::<()>();
        let varz = self.varz;
        let task = tokio::spawn(async move {
            let mut failed = 0u64;
            let mut first: Option<String> = None;
            let mut dropped = 0u64;
            let mut tick = tokio::time::interval_at(origin + PERIOD, PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let cut_off = loop {
                tokio::select! {
                    r = &mut ended => break r.is_err(),
                    _ = tick.tick() => {}
                }
                match varz.read().await {
                    Ok(values) => {
                        let t = origin.elapsed().as_secs_f64();
                        if tx
                            .try_send(DatabaseEvent::Sample(0, DatabaseSample { t, values }))
                            .is_err()
                        {
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
                match varz.read().await {
                    Ok(values) => {
                        let t = origin.elapsed().as_secs_f64();
                        let _ = tx
                            .send(DatabaseEvent::Sample(0, DatabaseSample { t, values }))
                            .await;
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
                    varz.name(),
                    first.unwrap_or_default()
                ));
            }
            if dropped > 0 {
                warnings.push(format!(
                    "{}: {dropped} readings were dropped (the run was too busy to take them)",
                    varz.name()
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

    /// The server, ready to be watched by a run.
    pub fn watched(self, settle: Duration) -> Watched {
        Watched::new(move || self.watch_load(settle))
    }
}
