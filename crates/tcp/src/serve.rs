//! The raw TCP testbed target (to become `throng serve tcp`): an echo server in any
//! [`Framing`], each request's payload answered as one frame, after an optional delay, written
//! whole or in pieces; or a fault on every request; over TLS with a fresh self-signed
//! certificate when asked (`tcps://`). It counts the requests it read whole, so tests compare
//! its count with the client's.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::frame::Framing;

/// What the target does with every request it has read whole, instead of echoing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Closes the connection (FIN) without answering.
    CloseAfterRead,
    /// Resets the connection (RST) without answering.
    Reset,
    /// Answers 64 KiB of `0xff`: no delimiter, and a length prefix past any sane limit.
    Garbage,
    /// Answers a well-formed frame of this many bytes.
    Oversized(usize),
    /// Never answers; keeps the connection open until the peer or the target closes it.
    Hang,
}

/// `close`, `reset`, `garbage`, `oversized:N` or `hang`: a `--fault` flag's value.
impl std::str::FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "close" => Ok(Fault::CloseAfterRead),
            "reset" => Ok(Fault::Reset),
            "garbage" => Ok(Fault::Garbage),
            "hang" => Ok(Fault::Hang),
            _ => match s.strip_prefix("oversized:").map(str::parse::<usize>) {
                Some(Ok(n)) => Ok(Fault::Oversized(n)),
                _ => Err(format!(
                    "`{s}` is not a fault: expected close, reset, garbage, oversized:N or hang"
                )),
            },
        }
    }
}

/// A raw TCP target. Fields are public; [`TcpTarget::default`] echoes lines at once.
#[derive(Debug, Clone)]
pub struct TcpTarget {
    /// How requests are read and answers written.
    pub framing: Framing,
    /// The delay before each answer.
    pub delay: Duration,
    /// Write each answer in three pieces (its first byte, then up to half, then the rest),
    /// a few milliseconds apart, so a reader meets a frame (and a length prefix) split across
    /// reads.
    pub split: bool,
    /// A fault on every request instead of its echo.
    pub fault: Option<Fault>,
    /// The largest request read; a larger one closes the connection.
    pub max_request: usize,
    /// Serve `tcps://`: TLS with a fresh self-signed certificate for `localhost` and
    /// `127.0.0.1` ([`RunningTcp::cert_pem`]).
    pub tls: bool,
    /// With `tls`, require every client to present a certificate this CA (PEM) signed (mutual
    /// TLS).
    pub client_ca: Option<String>,
}

impl Default for TcpTarget {
    fn default() -> Self {
        TcpTarget {
            framing: Framing::default(),
            delay: Duration::ZERO,
            split: false,
            fault: None,
            max_request: crate::DEFAULT_MAX_REPLY,
            tls: false,
            client_ca: None,
        }
    }
}

/// A target that is serving; dropping it stops it.
#[derive(Debug)]
pub struct RunningTcp {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The certificate in PEM when serving `tcps://` (give it to `--cacert`).
    pub cert_pem: Option<String>,
    requests: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    shutdown: watch::Sender<bool>,
}

impl RunningTcp {
    /// `tcp://addr`, or `tcps://addr` over TLS.
    pub fn url(&self) -> String {
        let scheme = if self.cert_pem.is_some() {
            "tcps"
        } else {
            "tcp"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Requests read whole so far (answered or faulted).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes every connection.
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for RunningTcp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Garbage's size: past a 64 KiB limit, in one write.
const GARBAGE: usize = 64 * 1024 + 1;

impl TcpTarget {
    /// Serves on `127.0.0.1` at a free port.
    pub async fn start(self) -> std::io::Result<RunningTcp> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        self.serve(listener)
    }

    /// Serves on a bound listener, in a background task of the current runtime.
    pub fn serve(self, listener: TcpListener) -> std::io::Result<RunningTcp> {
        let addr = listener.local_addr()?;
        let (acceptor, cert_pem) = match self.tls {
            true => {
                let (a, pem) = throng_net::self_signed_requiring(&[], self.client_ca.as_deref())
                    .map_err(std::io::Error::other)?;
                (Some(a), Some(pem))
            }
            false => (None, None),
        };
        let (shutdown, watch) = watch::channel(false);
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let target = Arc::new(self);
        let (reqs, conns) = (requests.clone(), connections.clone());
        tokio::spawn(async move {
            let mut stop = watch.clone();
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop.wait_for(|s| *s) => return,
                };
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: the listener stays, as a server's would.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                conns.fetch_add(1, Ordering::Relaxed);
                let (target, reqs, mut stop) = (target.clone(), reqs.clone(), watch.clone());
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = target.accept(stream, acceptor, &reqs) => {}
                        _ = stop.wait_for(|s| *s) => {}
                    }
                });
            }
        });
        Ok(RunningTcp {
            addr,
            cert_pem,
            requests,
            connections,
            shutdown,
        })
    }

    /// Serves on `listener` until `until` completes (`throng serve tcp`: Ctrl-C), then stops.
    pub async fn serve_until(
        self,
        listener: TcpListener,
        until: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let running = self.serve(listener)?;
        until.await;
        running.stop();
        Ok(())
    }

    /// A connection accepted: its TLS handshake first when serving `tcps://`.
    async fn accept(
        &self,
        stream: TcpStream,
        acceptor: Option<tokio_rustls::TlsAcceptor>,
        requests: &AtomicU64,
    ) {
        let _ = stream.set_nodelay(true);
        if self.fault == Some(Fault::Reset) {
            // Zero linger makes the close send RST instead of FIN (under TLS too, where the
            // socket is out of reach once wrapped).
            let _ = stream.set_zero_linger();
        }
        match acceptor {
            None => self.connection(stream, requests).await,
            Some(a) => {
                if let Ok(tls) = a.accept(stream).await {
                    self.connection(tls, requests).await;
                }
            }
        }
    }

    async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        mut stream: S,
        requests: &AtomicU64,
    ) {
        let mut buf = BytesMut::with_capacity(8 * 1024);
        let mut out = Vec::new();
        loop {
            let mut searched = 0;
            let found = loop {
                match self.framing.find(&buf, self.max_request, &mut searched) {
                    Ok(Some(found)) => break found,
                    Ok(None) => {}
                    Err(_) => return,
                }
                if buf.capacity() - buf.len() < 4 * 1024 {
                    buf.reserve(8 * 1024);
                }
                match stream.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            };
            let frame = buf.split_to(found.len);
            requests.fetch_add(1, Ordering::Relaxed);
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            out.clear();
            match self.fault {
                None => {
                    if self
                        .framing
                        .encode(&frame[found.payload], &mut out)
                        .is_err()
                    {
                        return;
                    }
                }
                Some(Fault::CloseAfterRead) => return,
                // Its zero linger was set when the connection was accepted.
                Some(Fault::Reset) => return,
                Some(Fault::Garbage) => out.resize(GARBAGE, 0xff),
                Some(Fault::Oversized(n)) => {
                    if self.framing.encode(&vec![b'a'; n], &mut out).is_err() {
                        return;
                    }
                }
                Some(Fault::Hang) => {
                    // Reads on (and drops) whatever comes, so a close is seen and the task ends.
                    let mut sink = [0u8; 1024];
                    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
                    return;
                }
            }
            if self.write(&mut stream, &out).await.is_err() {
                return;
            }
        }
    }

    async fn write<S: AsyncWrite + Unpin>(
        &self,
        stream: &mut S,
        out: &[u8],
    ) -> std::io::Result<()> {
        if !self.split || out.len() < 3 {
            // Flushed: TLS holds what is written until then.
            stream.write_all(out).await?;
            return stream.flush().await;
        }
        let mid = out.len() / 2;
        for piece in [&out[..1], &out[1..mid], &out[mid..]] {
            stream.write_all(piece).await?;
            stream.flush().await?;
            // Long enough for the reader to take each piece in a read of its own.
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Fault;

    #[test]
    fn faults_read_from_their_flag_values() {
        assert_eq!("close".parse(), Ok(Fault::CloseAfterRead));
        assert_eq!("oversized:2048".parse(), Ok(Fault::Oversized(2048)));
        let e = "oversized:x".parse::<Fault>().unwrap_err();
        assert!(e.contains("`oversized:x` is not a fault"), "{e}");
    }
}
