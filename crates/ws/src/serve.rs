//! A testbed WebSocket server on loopback (to become `throng serve ws`): it echoes, or pushes
//! a known number of messages at a known interval, after a known delay, with pings between if
//! asked, or fails in a known way (the upgrade refused, a close code, silence, a reset,
//! garbage). It counts what it did, so that tests can check throng's counts against the
//! server's own.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What the server answers a message with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The message itself (text for text, binary for binary).
    Echo,
    /// `count` messages, one every `interval` (the first after one interval), each the JSON
    /// `{"n": i, "of": count}` (i from 1).
    Push {
        /// Messages per message received.
        count: u32,
        /// The time between them.
        interval: Duration,
    },
    /// Nothing: from the handshake on, it pushes `{"n": i}` every `interval` whatever it is
    /// sent, until the connection closes.
    Stream {
        /// The time between messages.
        interval: Duration,
    },
}

/// A fault applied to every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsFault {
    /// Answer the upgrade with this HTTP status instead of 101.
    Refuse(u16),
    /// Answer `after` messages, then close with `code` instead of answering the next.
    Close {
        /// The close code.
        code: u16,
        /// Messages answered first.
        after: u32,
    },
    /// Accept the TCP connection and never answer (the handshake hangs).
    Hang,
    /// Complete the handshake, then read messages and never answer.
    Silent,
    /// Complete the handshake, then reset the connection (RST) at the first message.
    Reset,
    /// Answer the upgrade request with bytes that are not HTTP, and close.
    Garbage,
}

impl std::str::FromStr for Mode {
    type Err = String;

    /// A flag's value: `echo`, `push:COUNT:INTERVAL` (`push:5:100ms`) or `stream:INTERVAL`.
    fn from_str(text: &str) -> Result<Mode, String> {
        let duration =
            |d: &str| throng_core::stages::parse_duration(d).map_err(|e| format!("{text:?}: {e}"));
        let parts: Vec<&str> = text.trim().split(':').collect();
        match parts.as_slice() {
            ["echo"] => Ok(Mode::Echo),
            ["push", count, interval] => Ok(Mode::Push {
                count: count
                    .parse()
                    .map_err(|_| format!("{text:?}: the count is a whole number"))?,
                interval: duration(interval)?,
            }),
            ["stream", interval] => Ok(Mode::Stream {
                interval: duration(interval)?.max(Duration::from_millis(1)),
            }),
            _ => Err(format!(
                "{text:?}: a mode is echo, push:COUNT:INTERVAL or stream:INTERVAL"
            )),
        }
    }
}

impl std::str::FromStr for WsFault {
    type Err = String;

    /// A flag's value: `refuse:STATUS`, `close:CODE[:AFTER]`, `hang`, `silent`, `reset` or
    /// `garbage`.
    fn from_str(text: &str) -> Result<WsFault, String> {
        let number = |n: &str, what: &str| {
            n.parse::<u32>()
                .map_err(|_| format!("{text:?}: {what} is a whole number"))
        };
        let parts: Vec<&str> = text.trim().split(':').collect();
        match parts.as_slice() {
            ["hang"] => Ok(WsFault::Hang),
            ["silent"] => Ok(WsFault::Silent),
            ["reset"] => Ok(WsFault::Reset),
            ["garbage"] => Ok(WsFault::Garbage),
            ["refuse", code] => match number(code, "the HTTP status")? {
                c @ 200..=599 if c != 101 => Ok(WsFault::Refuse(c as u16)),
                _ => Err(format!("{text:?}: the HTTP status is 200 to 599, not 101")),
            },
            ["close", code, rest @ ..] if rest.len() <= 1 => {
                let code = match number(code, "the close code")? {
                    c @ 1000..=4999 => c as u16,
                    _ => return Err(format!("{text:?}: a close code is 1000 to 4999")),
                };
                let after = match rest {
                    [a] => number(a, "the count of messages answered first")?,
                    _ => 0,
                };
                Ok(WsFault::Close { code, after })
            }
            _ => Err(format!(
                "{text:?}: a fault is refuse:STATUS, close:CODE[:AFTER], hang, silent, reset or \
                 garbage"
            )),
        }
    }
}

/// A WebSocket target. Fields are public; [`WsTarget::default`] echoes at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsTarget {
    /// What a message is answered with.
    pub mode: Mode,
    /// The wait before each answer.
    pub delay: Duration,
    /// Send a ping before each answer (the client's pongs are counted).
    pub ping: bool,
    /// A fault on every connection.
    pub fault: Option<WsFault>,
    /// Serve `wss` with a fresh self-signed certificate for `localhost` and `127.0.0.1`.
    pub tls: bool,
    /// With `tls`, require every client to present a certificate this CA (PEM) signed (mutual
    /// TLS).
    pub client_ca: Option<String>,
    /// Pad each pushed message with spaces to at least this many bytes (still JSON): a large
    /// message on demand.
    pub pad: usize,
}

impl Default for WsTarget {
    fn default() -> Self {
        WsTarget {
            mode: Mode::Echo,
            delay: Duration::ZERO,
            ping: false,
            fault: None,
            tls: false,
            client_ca: None,
            pad: 0,
        }
    }
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ServeError {
    /// Binding failed.
    Io(std::io::Error),
    /// The certificate could not be made.
    Cert(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Io(e) => write!(f, "cannot listen: {e}"),
            ServeError::Cert(e) => write!(f, "cannot make a certificate: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// What the server did, counted.
#[derive(Debug, Default)]
struct Counts {
    connections: AtomicU64,
    handshakes: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
    pongs: AtomicU64,
    /// Connections the client closed with a close frame of code 1000.
    closed_normally: AtomicU64,
    /// Connections that ended, the client reading, without a close frame (1006).
    closed_abnormally: AtomicU64,
}

impl Counts {
    /// A connection the client ended: `frame`, its close frame if it sent one.
    fn ended(&self, frame: Option<Option<&CloseFrame>>) {
        match frame {
            Some(Some(f)) if f.code == CloseCode::Normal => &self.closed_normally,
            Some(_) => return,
            None => &self.closed_abnormally,
        }
        .fetch_add(1, Ordering::Relaxed);
    }
}

/// A server that is serving. Dropping it stops the server.
#[derive(Debug)]
pub struct RunningWs {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The certificate in PEM when serving `wss` (give it to `--cacert`).
    pub cert_pem: Option<String>,
    counts: Arc<Counts>,
    shutdown: watch::Sender<bool>,
}

impl RunningWs {
    /// `ws://addr/` or `wss://addr/`.
    pub fn url(&self) -> String {
        let scheme = if self.cert_pem.is_some() { "wss" } else { "ws" };
        format!("{scheme}://{}/", self.addr)
    }

    /// TCP connections accepted.
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// Upgrades completed.
    pub fn handshakes(&self) -> u64 {
        self.counts.handshakes.load(Ordering::Relaxed)
    }

    /// Messages received (text or binary).
    pub fn received(&self) -> u64 {
        self.counts.received.load(Ordering::Relaxed)
    }

    /// Messages sent (text or binary).
    pub fn sent(&self) -> u64 {
        self.counts.sent.load(Ordering::Relaxed)
    }

    /// Pongs received (answers to the server's pings).
    pub fn pongs(&self) -> u64 {
        self.counts.pongs.load(Ordering::Relaxed)
    }

    /// Connections the client closed with code 1000 (normal closure).
    pub fn closed_normally(&self) -> u64 {
        self.counts.closed_normally.load(Ordering::Relaxed)
    }

    /// Connections that ended without a close frame from the client (seen as 1006, abnormal
    /// closure), the server waiting for its next message.
    pub fn closed_abnormally(&self) -> u64 {
        self.counts.closed_abnormally.load(Ordering::Relaxed)
    }

    /// Stops accepting and drops every connection without a close frame (a server killed).
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for RunningWs {
    fn drop(&mut self) {
        self.stop();
    }
}

struct State {
    cfg: WsTarget,
    counts: Arc<Counts>,
}

impl WsTarget {
    /// Serves on `127.0.0.1` at a free port.
    pub async fn start(self) -> Result<RunningWs, ServeError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(ServeError::Io)?;
        self.serve(listener).await
    }

    /// Serves on a bound listener, in a background task of the current runtime.
    pub async fn serve(self, listener: TcpListener) -> Result<RunningWs, ServeError> {
        let addr = listener.local_addr().map_err(ServeError::Io)?;
        let (acceptor, cert_pem) = match self.tls {
            true => {
                let (a, pem) = tls_acceptor(self.client_ca.as_deref())?;
                (Some(a), Some(pem))
            }
            false => (None, None),
        };
        let counts = Arc::new(Counts::default());
        let (shutdown, mut stop_rx) = watch::channel(false);
        let state = Arc::new(State {
            cfg: self,
            counts: counts.clone(),
        });
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop_rx.changed() => break,
                };
                let Ok((tcp, _)) = accepted else { continue };
                state.counts.connections.fetch_add(1, Ordering::Relaxed);
                let _ = tcp.set_nodelay(true);
                let state = state.clone();
                let acceptor = acceptor.clone();
                let mut stop = stop_rx.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = connection(tcp, state, acceptor) => {}
                        _ = stop.changed() => {}
                    }
                });
            }
        });
        Ok(RunningWs {
            addr,
            cert_pem,
            counts,
            shutdown,
        })
    }
}

async fn connection(
    mut tcp: TcpStream,
    state: Arc<State>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) {
    match state.cfg.fault {
        Some(WsFault::Hang) => return std::future::pending().await,
        Some(WsFault::Garbage) => {
            let mut buf = [0u8; 1024];
            let _ = tcp.read(&mut buf).await;
            let _ = tcp.write_all(b"THIS IS NOT HTTP\r\n\r\n").await;
            let _ = tcp.shutdown().await;
            return;
        }
        Some(WsFault::Reset) => {
            // Zero linger makes the close send RST instead of FIN.
            #[allow(deprecated)]
            let _ = tcp.set_linger(Some(Duration::ZERO));
        }
        _ => {}
    }
    match acceptor {
        None => websocket(tcp, &state).await,
        Some(a) => {
            if let Ok(tls) = a.accept(tcp).await {
                websocket(tls, &state).await;
            }
        }
    }
}

/// The upgrade, then the messages.
async fn websocket<S: AsyncRead + AsyncWrite + Unpin>(stream: S, state: &State) {
    let refuse = match state.cfg.fault {
        Some(WsFault::Refuse(code)) => Some(code),
        _ => None,
    };
    // Its error type is tungstenite's, as its callback trait says.
    #[allow(clippy::result_large_err)]
    let callback = move |request: &Request, mut response: Response| {
        if let Some(code) = refuse {
            let mut no = ErrorResponse::new(Some("no upgrade here\n".into()));
            *no.status_mut() = http::StatusCode::from_u16(code).unwrap_or_default();
            return Err(no);
        }
        // The first subprotocol offered, if any, is the one spoken.
        let offered = request.headers().get(http::header::SEC_WEBSOCKET_PROTOCOL);
        if let Some(first) = offered
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|p| http::HeaderValue::from_str(p.trim()).ok())
        {
            response
                .headers_mut()
                .insert(http::header::SEC_WEBSOCKET_PROTOCOL, first);
        }
        Ok(response)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    state.counts.handshakes.fetch_add(1, Ordering::Relaxed);
    let counts = &state.counts;
    if let Mode::Stream { interval } = state.cfg.mode {
        return stream_to(ws, interval, state.cfg.pad, counts).await;
    }
    let mut answered = 0u32;
    loop {
        let Some(Ok(message)) = ws.next().await else {
            counts.ended(None);
            return;
        };
        let message = match message {
            Message::Pong(_) => {
                counts.pongs.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Message::Close(frame) => {
                counts.ended(Some(frame.as_ref()));
                return;
            }
            Message::Text(_) | Message::Binary(_) => message,
            _ => continue,
        };
        counts.received.fetch_add(1, Ordering::Relaxed);
        match state.cfg.fault {
            Some(WsFault::Reset) => return,
            Some(WsFault::Silent) => continue,
            Some(WsFault::Close { code, after }) if answered >= after => {
                let frame = CloseFrame {
                    code: CloseCode::from(code),
                    reason: "testbed".into(),
                };
                let _ = ws.close(Some(frame)).await;
                // The client's close, if it answers, within a bound.
                let _ = tokio::time::timeout(Duration::from_secs(1), ws.next()).await;
                return;
            }
            _ => {}
        }
        answered += 1;
        if !state.cfg.delay.is_zero() {
            tokio::time::sleep(state.cfg.delay).await;
        }
        if state.cfg.ping
            && ws
                .send(Message::Ping(Bytes::from_static(b"tb")))
                .await
                .is_err()
        {
            return;
        }
        let ok = match state.cfg.mode {
            Mode::Push { count, interval } => {
                let mut ok = true;
                for i in 1..=count {
                    tokio::time::sleep(interval).await;
                    let m = padded(format!("{{\"n\": {i}, \"of\": {count}}}"), state.cfg.pad);
                    ok = ws.send(Message::text(m)).await.is_ok();
                    if !ok {
                        break;
                    }
                    counts.sent.fetch_add(1, Ordering::Relaxed);
                }
                ok
            }
            _ => {
                let ok = ws.send(message).await.is_ok();
                if ok {
                    counts.sent.fetch_add(1, Ordering::Relaxed);
                }
                ok
            }
        };
        if !ok {
            return;
        }
    }
}

/// Pushes `{"n": i}` every `interval` until the connection closes, reading (pongs, a close) in
/// between.
async fn stream_to<S: AsyncRead + AsyncWrite + Unpin>(
    mut ws: WebSocketStream<S>,
    interval: Duration,
    pad: usize,
    counts: &Counts,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    let mut n = 0u64;
    loop {
        tokio::select! {
            m = ws.next() => match m {
                Some(Ok(Message::Pong(_))) => {
                    counts.pongs.fetch_add(1, Ordering::Relaxed);
                }
                Some(Ok(Message::Text(_) | Message::Binary(_))) => {
                    counts.received.fetch_add(1, Ordering::Relaxed);
                }
                Some(Ok(Message::Close(frame))) => return counts.ended(Some(frame.as_ref())),
                Some(Ok(_)) => {}
                _ => return counts.ended(None),
            },
            _ = tick.tick() => {
                n += 1;
                let m = padded(format!("{{\"n\": {n}}}"), pad);
                if ws.send(Message::text(m)).await.is_err() {
                    return;
                }
                counts.sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// `m` with spaces after it up to `pad` bytes.
fn padded(mut m: String, pad: usize) -> String {
    if m.len() < pad {
        m.extend(std::iter::repeat_n(' ', pad - m.len()));
    }
    m
}

/// A TLS acceptor with a fresh self-signed certificate for `localhost` and `127.0.0.1`,
/// requiring clients' certificates signed by `client_ca` if given, and the certificate in PEM.
fn tls_acceptor(
    client_ca: Option<&str>,
) -> Result<(tokio_rustls::TlsAcceptor, String), ServeError> {
    throng_net::self_signed_requiring(&[b"http/1.1"], client_ca)
        .map_err(|e| ServeError::Cert(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_faults_read_from_flag_values() {
        assert_eq!("echo".parse(), Ok(Mode::Echo));
        assert_eq!(
            "push:5:100ms".parse(),
            Ok(Mode::Push {
                count: 5,
                interval: Duration::from_millis(100)
            })
        );
        assert_eq!(
            "stream:1s".parse(),
            Ok(Mode::Stream {
                interval: Duration::from_secs(1)
            })
        );
        for bad in ["", "push:x:1s", "push:5", "stream:soon", "shout"] {
            assert!(bad.parse::<Mode>().is_err(), "{bad}");
        }
        assert_eq!("refuse:403".parse(), Ok(WsFault::Refuse(403)));
        assert_eq!(
            "close:1011".parse(),
            Ok(WsFault::Close {
                code: 1011,
                after: 0
            })
        );
        assert_eq!(
            "close:1000:3".parse(),
            Ok(WsFault::Close {
                code: 1000,
                after: 3
            })
        );
        assert_eq!("reset".parse(), Ok(WsFault::Reset));
        for bad in [
            "refuse:101",
            "refuse:x",
            "close:999",
            "close:1000:1:2",
            "explode",
        ] {
            assert!(bad.parse::<WsFault>().is_err(), "{bad}");
        }
    }
}
