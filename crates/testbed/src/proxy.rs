//! A TCP proxy that puts a fault between throng and a healthy target: the faults of a real
//! network and of a server that breaks mid-answer, applied to the answer's bytes.
//!
//! The requests go through untouched; the answers meet the fault. Working on bytes rather than on
//! HTTP keeps the proxy honest for any protocol on TCP (HTTP/1.1, HTTP/2, gRPC).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What happens to the answers on their way back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProxyFault {
    /// Each chunk of the answer waits `base` plus a uniform random part of `jitter`.
    Latency {
        /// The fixed part.
        base: Duration,
        /// The random part's upper bound.
        jitter: Duration,
    },
    /// After this many bytes of answer on a connection, the connection is reset (RST).
    ResetAfter(u64),
    /// After this many bytes of answer on a connection, it is closed cleanly (FIN): an answer
    /// that stops halfway.
    CloseAfter(u64),
    /// The answer trickles at this many bytes per second.
    SlowBody(u64),
}

/// A proxy in front of `upstream`. Dropping the [`RunningProxy`] stops it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultProxy {
    /// The healthy target behind the proxy.
    pub upstream: SocketAddr,
    /// The fault applied to every connection's answers.
    pub fault: ProxyFault,
}

/// A proxy that is serving.
pub struct RunningProxy {
    /// Where it listens.
    pub addr: SocketAddr,
    connections: Arc<AtomicU64>,
    shutdown: watch::Sender<bool>,
}

impl RunningProxy {
    /// `http://addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

impl FaultProxy {
    /// Binds 127.0.0.1 on a free port and serves on the current runtime.
    pub async fn start(self) -> std::io::Result<RunningProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let connections = Arc::new(AtomicU64::new(0));
        let (shutdown, mut stop) = watch::channel(false);
        let count = connections.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.changed() => break,
                    accepted = listener.accept() => {
                        let Ok((client, _)) = accepted else { continue };
                        count.fetch_add(1, Ordering::Relaxed);
                        let mut stop = stop.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = stop.changed() => {}
                                _ = self.relay(client) => {}
                            }
                        });
                    }
                }
            }
        });
        Ok(RunningProxy {
            addr,
            connections,
            shutdown,
        })
    }

    async fn relay(self, mut client: TcpStream) {
        let Ok(mut upstream) = TcpStream::connect(self.upstream).await else {
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let fault = self.fault;
        // `Some(reset)` when the fault cut the connection.
        let cut = {
            let (mut cr, mut cw) = client.split();
            let (mut ur, mut uw) = upstream.split();
            let requests = async {
                let _ = tokio::io::copy(&mut cr, &mut uw).await;
                let _ = uw.shutdown().await;
            };
            let answers = async {
                let mut buf = vec![0u8; 16 * 1024];
                let mut sent = 0u64;
                loop {
                    let n = match ur.read(&mut buf).await {
                        Ok(0) | Err(_) => return None,
                        Ok(n) => n,
                    };
                    let chunk = &buf[..n];
                    match fault {
                        ProxyFault::Latency { base, jitter } => {
                            let extra = jitter.mul_f64(rand::rng().random::<f64>());
                            tokio::time::sleep(base + extra).await;
                            cw.write_all(chunk).await.ok()?;
                        }
                        ProxyFault::ResetAfter(limit) | ProxyFault::CloseAfter(limit) => {
                            let room = limit.saturating_sub(sent).min(n as u64) as usize;
                            cw.write_all(&chunk[..room]).await.ok()?;
                            sent += room as u64;
                            if sent >= limit {
                                let _ = cw.flush().await;
                                return Some(matches!(fault, ProxyFault::ResetAfter(_)));
                            }
                        }
                        ProxyFault::SlowBody(per_second) => {
                            let gap = Duration::from_secs_f64(1.0 / per_second.max(1) as f64);
                            for byte in chunk.chunks(1) {
                                cw.write_all(byte).await.ok()?;
                                tokio::time::sleep(gap).await;
                            }
                        }
                    }
                }
            };
            tokio::pin!(requests);
            tokio::pin!(answers);
            let mut sent_all = false;
            loop {
                tokio::select! {
                    _ = &mut requests, if !sent_all => sent_all = true,
                    end = &mut answers => break end,
                }
            }
        };
        // The cut: a RST when the socket is closed with a zero linger time, else a plain FIN.
        if cut == Some(true) {
            let _ = socket_linger_zero(&client);
        }
    }
}

/// Sets SO_LINGER to zero, so that closing the socket sends a RST instead of a FIN.
fn socket_linger_zero(stream: &TcpStream) -> std::io::Result<()> {
    #[allow(deprecated)] // tokio steers to socket2 for this; the behaviour is what we want here
    stream.set_linger(Some(Duration::ZERO))
}
