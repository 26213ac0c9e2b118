//! A target's client: a connection per user, opened by throng-net (TCP, then TLS for `wss`,
//! bytes counted) with tokio-tungstenite's handshake over it, and the exchange of a step's
//! messages.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::header::{HeaderName, HeaderValue, SEC_WEBSOCKET_PROTOCOL};
use http::Uri;
use throng_core::step::{Client, ClientOptions, Render, Reply};
use throng_core::{DriverReport, ErrorClass, Outcome, Status};
use throng_net::{Counters, Stream, TlsTarget};
use tokio::time::{timeout_at, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::status::{self, OPEN};
use crate::step::{Until, WsOptions, WsStep};

/// A step keeps at most this many of its messages' timings (a parts row's samples): 1 MiB,
/// whatever a server pushes within a `for`; the messages past it are counted, not timed.
pub const MAX_PARTS: usize = 1 << 16;

/// A `ws://` or `wss://` URL, checked.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    uri: Uri,
    tls: bool,
    host: String,
    authority: String,
}

impl Target {
    /// The target of `url`, or what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("{url}: not a WebSocket URL ({e})"))?;
        let tls = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("ws") => false,
            Some(s) if s.eq_ignore_ascii_case("wss") => true,
            _ => {
                return Err(format!(
                    "{url}: a WebSocket URL is ws://HOST[:PORT]/PATH or wss://…"
                ))
            }
        };
        let host = match uri.host() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => return Err(format!("{url}: no host")),
        };
        let authority = throng_net::authority(&host, uri.port_u16(), tls);
        Ok(Target {
            uri,
            tls,
            host,
            authority,
        })
    }
}

/// One WebSocket target's client (see [`crate::WsProtocol`]).
pub struct WsClient {
    target: Target,
    addrs: Vec<SocketAddr>,
    tls: Option<TlsTarget>,
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
    connect_timeout: Duration,
    config: WebSocketConfig,
    max_message: usize,
    /// Handshakes completed, and connections the server closed (a close frame or not).
    opened: AtomicU64,
    closed: AtomicU64,
}

impl std::fmt::Debug for WsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsClient")
            .field("url", &self.target.uri)
            .finish_non_exhaustive()
    }
}

/// A user's session: its connection, while it is open.
pub struct WsSession {
    conn: Option<Conn>,
}

impl WsSession {
    /// Whether the session holds an open connection.
    pub fn is_connected(&self) -> bool {
        self.conn.is_some()
    }
}

struct Conn {
    ws: WebSocketStream<Stream>,
    counters: Arc<Counters>,
    /// The bytes already reported, so that each call reports its own (the handshake's go to
    /// the first call on the connection).
    taken: (u64, u64),
}

impl Conn {
    fn take_bytes(&mut self) -> (u64, u64) {
        let now = self.counters.read();
        let delta = (now.0 - self.taken.0, now.1 - self.taken.1);
        self.taken = now;
        delta
    }
}

impl WsClient {
    /// A client of the target at `url` with `options` (its [`WsOptions`], or the defaults):
    /// the host resolved and the TLS configuration made now, so that a mistake is said
    /// before any load.
    pub fn new(url: &str, options: &ClientOptions) -> Result<WsClient, String> {
        let target = Target::parse(url)?;
        let own = options.of::<WsOptions>().cloned().unwrap_or_default();
        if own.max_message == 0 {
            return Err("the largest WebSocket message must be at least 1 byte".into());
        }
        let addrs: Vec<SocketAddr> =
            std::net::ToSocketAddrs::to_socket_addrs(target.authority.as_str())
                .map_err(|e| format!("cannot resolve {}: {e}", target.authority))?
                .collect();
        if addrs.is_empty() {
            return Err(format!("cannot resolve {}: no address", target.authority));
        }
        let refused =
            throng_core::flags::tls_refusal(options.cacert.is_some(), options.identity.is_some());
        if let (Some(flags), false) = (refused, target.tls) {
            return Err(format!("{flags} wss:// targets; {url} is plain ws"));
        }
        let tls = match target.tls {
            false => None,
            true => {
                let name = throng_net::server_name(&target.host)?;
                let opts = throng_net::TlsOptions {
                    insecure: options.insecure,
                    cacert: options.cacert.clone(),
                    identity: options.identity.clone(),
                    // WebSocket's handshake is HTTP/1.1 (RFC 8441's HTTP/2 is not spoken here).
                    alpn: vec![b"http/1.1".to_vec()],
                };
                Some((
                    throng_net::client_config(&opts).map_err(|e| e.to_string())?,
                    name,
                ))
            }
        };
        let mut headers = Vec::new();
        for (k, v) in &options.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("header {k:?}: not a header name"))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| format!("header {k}: {v:?} is not a value"))?;
            headers.push((name, value));
        }
        if !own.subprotocols.is_empty() {
            let list = own.subprotocols.join(", ");
            let value = HeaderValue::from_str(&list)
                .map_err(|_| format!("subprotocols {list:?}: not a header value"))?;
            headers.push((SEC_WEBSOCKET_PROTOCOL, value));
        }
        // A small read buffer (tungstenite's is 128 KiB, allocated up front per connection),
        // and every message written at once: a load tester holds many connections and sends
        // little on each.
        let config = WebSocketConfig::default()
            .read_buffer_size(16 * 1024)
            .write_buffer_size(0)
            .max_write_buffer_size(own.max_message.saturating_mul(2).max(64 * 1024))
            .max_message_size(Some(own.max_message))
            .max_frame_size(Some(own.max_message));
        Ok(WsClient {
            target,
            addrs,
            tls,
            headers,
            timeout: options.timeout,
            connect_timeout: options.connect_timeout,
            config,
            max_message: own.max_message,
            opened: AtomicU64::new(0),
            closed: AtomicU64::new(0),
        })
    }

    /// The handshake's request: a fresh key each time, the run's headers.
    fn request(&self) -> Result<http::Request<()>, String> {
        let mut request = self
            .target
            .uri
            .clone()
            .into_client_request()
            .map_err(|e| format!("WebSocket request for {}: {e}", self.target.uri))?;
        for (k, v) in &self.headers {
            request.headers_mut().append(k.clone(), v.clone());
        }
        Ok(request)
    }

    /// Opens a connection: TCP and TLS by throng-net, then the handshake, each within the
    /// connect timeout. A failure's class: `connect`, `tls`, `timeout`, or `protocol` for an
    /// answer that is not `101 Switching Protocols` (or not HTTP at all), `reset` for a server
    /// that closed without answering.
    async fn open(&self) -> Result<Conn, Outcome> {
        let ct = self.connect_timeout;
        let auth = &self.target.authority;
        let (stream, counters) = throng_net::open(&self.addrs, auth, self.tls.as_ref(), ct).await?;
        let request = self
            .request()
            .map_err(|m| Outcome::failed(ErrorClass::Other, m))?;
        let handshake =
            tokio_tungstenite::client_async_with_config(request, stream, Some(self.config));
        let result = tokio::time::timeout(ct, handshake).await;
        let failed = |class, message: String| {
            let (sent, received) = counters.read();
            Outcome {
                bytes_sent: sent,
                bytes_received: received,
                ..Outcome::failed(class, message)
            }
        };
        match result {
            Ok(Ok((ws, _response))) => {
                self.opened.fetch_add(1, Ordering::Relaxed);
                Ok(Conn {
                    ws,
                    counters,
                    taken: (0, 0),
                })
            }
            Ok(Err(WsError::Http(response))) => Err(failed(
                ErrorClass::Protocol,
                format!(
                    "WebSocket handshake with {auth}: the server answered HTTP {}, not 101 \
                     Switching Protocols",
                    response.status()
                ),
            )),
            Ok(Err(e)) => {
                let (class, m) = classify(&e);
                Err(failed(
                    class,
                    format!("WebSocket handshake with {auth}: {m}"),
                ))
            }
            Err(_) => Err(failed(
                ErrorClass::Timeout,
                format!("WebSocket handshake with {auth} timed out after {ct:?}"),
            )),
        }
    }
}

/// The class of a WebSocket error, and its message.
fn classify(e: &WsError) -> (ErrorClass, String) {
    let class = match e {
        WsError::ConnectionClosed
        | WsError::AlreadyClosed
        | WsError::Protocol(
            ProtocolError::ResetWithoutClosingHandshake
            | ProtocolError::HandshakeIncomplete
            | ProtocolError::SendAfterClosing
            | ProtocolError::ReceivedAfterClosing,
        ) => ErrorClass::Reset,
        WsError::Io(io) => throng_net::classify_io(io).unwrap_or(ErrorClass::Other),
        WsError::Tls(_) => ErrorClass::Tls,
        WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            return (
                ErrorClass::Protocol,
                format!("a message of {size} bytes, over the largest read, {max_size}"),
            )
        }
        WsError::Protocol(_)
        | WsError::Capacity(_)
        | WsError::Utf8(_)
        | WsError::HttpFormat(_)
        | WsError::Http(_)
        | WsError::AttackAttempt => ErrorClass::Protocol,
        _ => ErrorClass::Other,
    };
    let message = match e {
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
            "the connection closed without a close frame".to_string()
        }
        WsError::Protocol(ProtocolError::HandshakeIncomplete) => {
            "the server closed the connection without answering".to_string()
        }
        e => throng_net::message(e),
    };
    (class, message)
}

/// What a step's exchange came to.
#[derive(Default)]
struct Exchange {
    received: u32,
    last: Option<Bytes>,
    gaps: Vec<Duration>,
    /// The server's close frame: its code (1005 without one) and reason.
    close: Option<(u16, String)>,
    failure: Option<(ErrorClass, String)>,
}

/// Sends `messages` and reads what `step` waits for, the sending and the counted replies
/// within `timeout` from `start`; each message's time from the one before (the first from
/// `start`) into the exchange's gaps.
async fn exchange(
    ws: &mut WebSocketStream<Stream>,
    messages: Vec<String>,
    step: &WsStep,
    timeout: Duration,
    start: Instant,
) -> Exchange {
    let mut ex = Exchange::default();
    let deadline = start + timeout;
    let binary = step.binary;
    let send = async {
        for m in messages {
            let message = match binary {
                true => Message::Binary(Bytes::from(m.into_bytes())),
                false => Message::Text(m.into()),
            };
            ws.feed(message).await?;
        }
        ws.flush().await
    };
    match timeout_at(deadline, send).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            ex.failure = Some(classify(&e));
            return ex;
        }
        Err(_) => {
            ex.failure = Some((
                ErrorClass::Timeout,
                format!("the messages were not sent within {timeout:?}"),
            ));
            return ex;
        }
    }
    let expected = step.expected();
    let until = match step.until {
        Until::For(d) => start + d,
        _ => deadline,
    };
    let mut last = start;
    loop {
        if expected.is_some_and(|n| ex.received >= n) {
            return ex;
        }
        let message = match timeout_at(until, ws.next()).await {
            Err(_) => {
                if let Some(n) = expected {
                    ex.failure = Some((
                        ErrorClass::Timeout,
                        format!("{} of {n} messages within {timeout:?}", ex.received),
                    ));
                }
                return ex;
            }
            Ok(None) => Err(WsError::ConnectionClosed),
            Ok(Some(m)) => m,
        };
        let data = match message {
            Ok(Message::Text(t)) => Bytes::from(t),
            Ok(Message::Binary(b)) => b,
            // tungstenite answers a ping with a pong on its next read or write.
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
            Ok(Message::Close(frame)) => {
                let (code, reason) = match frame {
                    Some(f) => (u16::from(f.code), f.reason.to_string()),
                    None => (1005, String::new()),
                };
                // Our close answering the server's (queued by tungstenite), bounded.
                let _ = timeout_at(
                    deadline.min(Instant::now() + Duration::from_millis(100)),
                    ws.flush(),
                )
                .await;
                let said = match reason.is_empty() {
                    true => status::status(code).to_string(),
                    false => format!("{} ({reason})", status::status(code)),
                };
                ex.failure = match (status::normal(code), expected) {
                    (false, _) => Some((ErrorClass::Status, format!("the server closed: {said}"))),
                    (true, Some(n)) => Some((
                        ErrorClass::Reset,
                        format!(
                            "the server closed ({said}) after {} of {n} messages",
                            ex.received
                        ),
                    )),
                    // Listening for a while, a normal close ends it early.
                    (true, None) => None,
                };
                ex.close = Some((code, reason));
                return ex;
            }
            Err(e) => {
                let (class, m) = classify(&e);
                let m = match expected {
                    Some(n) => format!("{m}, after {} of {n} messages", ex.received),
                    None => format!("{m}, after {} messages", ex.received),
                };
                ex.failure = Some((class, m));
                return ex;
            }
        };
        let now = Instant::now();
        if ex.gaps.len() < MAX_PARTS {
            ex.gaps.push(now - last);
        }
        last = now;
        ex.received = ex.received.saturating_add(1);
        ex.last = Some(data);
    }
}

impl Client for WsClient {
    type Step = WsStep;
    type Worker = ();
    type Session = WsSession;

    fn worker_of(&self, _index: usize, _workers: usize) {}

    fn session(&self, _worker: &(), _user: u64) -> WsSession {
        WsSession { conn: None }
    }

    /// The handshake, timed apart from the first step (its failure is that step's outcome).
    async fn connect(&self, s: &mut WsSession) -> Result<(), Outcome> {
        if s.conn.is_none() {
            s.conn = Some(self.open().await?);
        }
        Ok(())
    }

    /// A normal close (1000) at the end of the user's session, so that the server does not see
    /// an abnormal one (1006): sent and flushed, not waited for (the engine bounds it).
    async fn close(&self, s: &mut WsSession) {
        if let Some(mut conn) = s.conn.take() {
            let frame = CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            };
            let _ = conn.ws.close(Some(frame)).await;
        }
    }

    async fn call(
        &self,
        s: &mut WsSession,
        step: &WsStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let mut messages = Vec::with_capacity(step.send.len());
        for text in &step.send {
            match render.render(text) {
                Ok(m) => messages.push(m),
                Err(e) => {
                    return (
                        Outcome::failed(ErrorClass::Check, format!("ws message: {e}")),
                        None,
                    )
                }
            }
        }
        if let Some(big) = messages.iter().find(|m| m.len() > self.max_message) {
            let m = format!(
                "a message of {} bytes to send, over the largest message, {}",
                big.len(),
                self.max_message
            );
            return (Outcome::failed(ErrorClass::Other, m), None);
        }
        // After a failure the connection is gone: a new one, its handshake in this step's time
        // (the engine's connect comes before a user's first iteration only).
        if let Err(o) = self.connect(s).await {
            return (o, None);
        }
        let Some(conn) = s.conn.as_mut() else {
            return (Outcome::failed(ErrorClass::Connect, "no connection"), None);
        };
        let ex = exchange(&mut conn.ws, messages, step, self.timeout, Instant::now()).await;
        let (sent, received) = conn.take_bytes();
        // A failure leaves the connection in no known state (replies still on their way would
        // be counted by the next step): the next step opens another.
        if ex.failure.is_some() || ex.close.is_some() {
            s.conn = None;
            if ex.close.is_some()
                || ex
                    .failure
                    .as_ref()
                    .is_some_and(|f| f.0 == ErrorClass::Reset)
            {
                self.closed.fetch_add(1, Ordering::Relaxed);
            }
        }
        let status = match (&ex.close, &ex.failure) {
            (Some((code, _)), _) => status::status(*code),
            (None, None) => OPEN,
            (None, Some(_)) => Status::NONE,
        };
        let answered = ex.received > 0 || !status.is_none();
        let reply = (want_reply && answered).then(|| {
            let mut metadata = vec![("messages".to_string(), ex.received.to_string())];
            if let Some((_, reason)) = &ex.close {
                metadata.push(("close-reason".to_string(), reason.clone()));
            }
            Reply {
                status,
                metadata,
                body: ex.last.clone().unwrap_or_default(),
                json: None,
            }
        });
        let mut outcome = match ex.failure {
            Some((class, m)) => Outcome::failed(class, m),
            None => Outcome::default(),
        };
        outcome.status = status;
        outcome.bytes_sent = sent;
        outcome.bytes_received = received;
        outcome.parts = ex.gaps;
        (outcome, reply)
    }

    /// Every step's messages: `LABEL (messages)`, each message timed from the one before (the
    /// first from the step's start), as gRPC's streams are.
    fn parts(&self, step: &WsStep, label: &str) -> Option<String> {
        (step.expected() != Some(0)).then(|| format!("{label} (messages)"))
    }

    fn report(&self) -> DriverReport {
        let opened = self.opened.load(Ordering::Relaxed);
        let closed = self.closed.load(Ordering::Relaxed);
        let tls = if self.target.tls { ", TLS" } else { "" };
        DriverReport {
            connection: Some(format!("WebSocket (RFC 6455){tls}")),
            counts: vec![
                ("ws_connections_opened", opened),
                ("ws_connections_closed", closed),
            ],
            notes: Vec::new(),
        }
    }
}
