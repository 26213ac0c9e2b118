//! One raw TCP target's client: a connection per user (TLS over it for `tcps://`), opened in
//! `connect` and again in `call` after a failure, and each call one exchange on it: the request
//! written, one framed reply read, within the request timeout. Each call reports its phases:
//! `connect` and `tls` on a connection's first, then `send`, `wait` (to the reply's first byte)
//! and `receive`.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use throng_core::step::{Client, ClientOptions, Render, Reply, StepError, Text};
use throng_core::{Connection, ErrorClass, Outcome, Phase, Phases};
use throng_net::{classify_io, Counters, Opened, Stream, TlsTarget};

use crate::frame::{escape, FrameError, Framing};
use crate::status::{CLOSED, OK};
use crate::step::{Payload, TcpStep};
use crate::TcpOptions;

/// One raw TCP target.
#[derive(Debug)]
pub struct TcpClient {
    /// `host:port`, for connecting and for messages.
    authority: String,
    /// The addresses when the host is an IP address (no lookup per connect).
    addrs: Option<Vec<SocketAddr>>,
    /// The TLS configuration and server name of a `tcps://` target.
    tls: Option<TlsTarget>,
    pub(crate) options: TcpOptions,
    timeout: Duration,
    connect_timeout: Duration,
}

/// A user's connection to a raw TCP target, opened when first needed.
#[derive(Debug, Default)]
pub struct TcpSession {
    conn: Option<Conn>,
    /// The request being written, kept between calls so framing one allocates nothing.
    out: Vec<u8>,
}

struct Conn {
    stream: Stream,
    counters: Arc<Counters>,
    /// Bytes read and not yet taken as a reply.
    buf: BytesMut,
    /// How the connection was opened, until its first call reports it.
    opened: Option<(Opened, Connection)>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("buf", &self.buf.len())
            .finish()
    }
}

/// A raw TCP target's address: its `host:port`, its host, and whether it is `tcps://`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Address {
    pub(crate) authority: String,
    pub(crate) host: String,
    pub(crate) tls: bool,
}

/// The address of a `tcp://HOST:PORT` or `tcps://HOST:PORT` URL (a trailing `/` allowed,
/// nothing else after it).
pub(crate) fn address(url: &str) -> Result<Address, String> {
    let bad = |why: &str| {
        format!("`{url}`: {why}; a raw TCP target is tcp://HOST:PORT (tcps:// over TLS)")
    };
    let (rest, tls) = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("tcp") => (rest, false),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("tcps") => (rest, true),
        _ => return Err(bad("not a tcp:// or tcps:// URL")),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@']) {
        return Err(bad("a path, query or user is not part of a TCP address"));
    }
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| bad("the port is missing"))?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(bad("the port is a number from 1 to 65535")),
    }
    let bare_v6 = host.contains(':') && !(host.starts_with('[') && host.ends_with(']'));
    if host.is_empty() || bare_v6 {
        return Err(bad("the host is missing (an IPv6 host goes in brackets)"));
    }
    Ok(Address {
        authority: rest.to_string(),
        host: host.to_string(),
        tls,
    })
}

impl TcpClient {
    /// A client of the target at `url` (`tcp://HOST:PORT`, or `tcps://HOST:PORT` over TLS)
    /// with this protocol's `options`, taking its timeouts and (for `tcps://`) how servers are
    /// trusted (`--cacert`, `--insecure`) and the client's certificate (`--cert`, `--key`) from
    /// `client_options`. The TLS configuration is made
    /// now, so that a CA file that cannot be read is said before any load.
    pub fn new(
        url: &str,
        options: TcpOptions,
        client_options: &ClientOptions,
    ) -> Result<Self, String> {
        let Address {
            authority,
            host,
            tls,
        } = address(url)?;
        if options.max_reply == 0 {
            return Err("the reply limit must be at least 1 byte".into());
        }
        let config = throng_net::trust(tls, client_options, || {
            format!("tcps:// targets; {url} is plain tcp")
        })?;
        let tls = match config {
            None => None,
            Some(config) => Some((config, throng_net::server_name(&host)?)),
        };
        Ok(TcpClient {
            addrs: authority.parse::<SocketAddr>().ok().map(|a| vec![a]),
            authority,
            tls,
            options,
            timeout: client_options.timeout,
            connect_timeout: client_options.connect_timeout,
        })
    }

    /// The target's `host:port`.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Opens a connection, its opening to be reported as `how` by its first call.
    async fn open(&self, how: Connection) -> Result<Conn, Outcome> {
        let looked_up;
        let addrs = match &self.addrs {
            Some(a) => a,
            None => {
                let lookup = tokio::net::lookup_host(self.authority.as_str());
                looked_up = match tokio::time::timeout(self.connect_timeout, lookup).await {
                    Ok(Ok(a)) => a.collect::<Vec<_>>(),
                    Ok(Err(e)) => {
                        let m = format!("resolve {}: {e}", self.authority);
                        return Err(Outcome::failed(ErrorClass::Connect, m));
                    }
                    Err(_) => {
                        let m = format!("resolve {} timed out", self.authority);
                        return Err(Outcome::failed(ErrorClass::Timeout, m));
                    }
                };
                &looked_up
            }
        };
        // Boxed: the TLS handshake's state would make every user's task that much larger.
        let opening = throng_net::open_timed(
            addrs,
            &self.authority,
            self.tls.as_ref(),
            self.connect_timeout,
        );
        let (stream, counters, opened) = Box::pin(opening).await?;
        Ok(Conn {
            stream,
            counters,
            buf: BytesMut::with_capacity(READ_SIZE),
            opened: Some((opened, how)),
        })
    }
}

/// Room made in the read buffer before each read.
const READ_SIZE: usize = 8 * 1024;

/// Why an exchange ended without a reply that may be taken.
enum Fail {
    Io(std::io::Error),
    /// The peer closed after this many bytes of the reply.
    Closed(usize),
    Frame(FrameError),
    Timeout(usize),
}

impl Client for TcpClient {
    type Step = TcpStep;
    type Worker = ();
    type Session = TcpSession;

    fn worker_of(&self, _index: usize, _workers: usize) {}

    fn session(&self, _worker: &(), _user: u64) -> TcpSession {
        TcpSession::default()
    }

    async fn connect(&self, s: &mut TcpSession) -> Result<(), Outcome> {
        if s.conn.is_none() {
            s.conn = Some(self.open(Connection::Before).await?);
        }
        Ok(())
    }

    async fn call(
        &self,
        s: &mut TcpSession,
        step: &TcpStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let framing = step.frame.as_ref().unwrap_or(&self.options.framing);
        let payload: Cow<'_, [u8]> = match &step.send {
            Payload::Bytes(b) => Cow::Borrowed(b),
            Payload::Text(Text::Static(t)) => Cow::Borrowed(t.as_bytes()),
            Payload::Text(t) => match render.render(t) {
                Ok(r) => Cow::Owned(r.into_bytes()),
                Err(e) => {
                    let o = Outcome::failed(ErrorClass::Check, format!("template: {e}"));
                    return (o, None);
                }
            },
        };
        s.out.clear();
        if self.options.frame_request {
            if let Err(e) = framing.encode(&payload, &mut s.out) {
                return (Outcome::failed(ErrorClass::Other, e), None);
            }
        } else {
            s.out.extend_from_slice(&payload);
        }
        if s.conn.is_none() {
            match self.open(Connection::New).await {
                Ok(c) => s.conn = Some(c),
                Err(o) => return (o, None),
            }
        }
        let Some(conn) = s.conn.as_mut() else {
            return (Outcome::failed(ErrorClass::Other, "no connection"), None);
        };
        let before = conn.counters.read();
        let mut phases = match conn.opened.take() {
            Some((opened, how)) => {
                let mut p = Phases::on(how);
                opened.into_phases(&mut p);
                p
            }
            None => Phases::on(Connection::Reused),
        };
        let limit = self.options.max_reply;
        let exchanged = exchange(conn, &s.out, framing, limit, &mut phases);
        let exchanged = tokio::time::timeout(self.timeout, exchanged);
        let result = match exchanged.await {
            Ok(r) => r,
            Err(_) => Err(Fail::Timeout(conn.buf.len())),
        };
        let after = conn.counters.read();
        let mut outcome = Outcome {
            bytes_sent: after.0 - before.0,
            bytes_received: after.1 - before.1,
            phases,
            ..Outcome::default()
        };
        let (reply, leftover) = match result {
            Ok(r) => r,
            Err(fail) => {
                // The connection is in an unknown state (a reply may still come): a new one
                // for the next call.
                s.conn = None;
                let (class, status, message) = match fail {
                    Fail::Io(e) => (
                        classify_io(&e).unwrap_or(ErrorClass::Other),
                        throng_core::Status::NONE,
                        format!("{}: {e}", self.authority),
                    ),
                    Fail::Closed(n) => (
                        ErrorClass::Reset,
                        CLOSED,
                        format!(
                            "{} closed the connection after {n} bytes of the reply",
                            self.authority
                        ),
                    ),
                    Fail::Frame(e) => (
                        ErrorClass::Protocol,
                        throng_core::Status::NONE,
                        format!("{}: {e}", self.authority),
                    ),
                    Fail::Timeout(n) => (
                        ErrorClass::Timeout,
                        throng_core::Status::NONE,
                        format!(
                            "{}: no whole reply within {:?} ({n} bytes of it read)",
                            self.authority, self.timeout
                        ),
                    ),
                };
                outcome.status = status;
                outcome.error = Some(class);
                outcome.message = Some(message);
                let reply = (want_reply && !status.is_none()).then(|| Reply {
                    status,
                    ..Reply::default()
                });
                return (outcome, reply);
            }
        };
        outcome.status = OK;
        if leftover > 0 {
            // More than one reply to one request: the next reply would be read from the middle
            // of these bytes, so the connection goes.
            s.conn = None;
            outcome.error = Some(ErrorClass::Protocol);
            outcome.message = Some(format!(
                "{}: {leftover} bytes came after the reply, which answers one request with one \
                 {framing} frame",
                self.authority
            ));
        } else if let Some(expect) = &step.expect {
            match render.render(expect) {
                Ok(e) if e.as_bytes() == reply.as_ref() => {}
                Ok(e) => {
                    outcome.error = Some(ErrorClass::Check);
                    outcome.message = Some(format!(
                        "the reply `{}` is not the expected `{}`",
                        shown(&reply),
                        shown(e.as_bytes())
                    ));
                }
                Err(e) => {
                    outcome.error = Some(ErrorClass::Check);
                    outcome.message = Some(format!("template: {e}"));
                }
            }
        }
        let reply = want_reply.then(|| Reply {
            status: OK,
            metadata: Vec::new(),
            json: serde_json::from_slice(&reply).ok(),
            body: reply,
        });
        (outcome, reply)
    }

    fn check(&self, step: &TcpStep) -> Result<(), StepError> {
        crate::step::check(self, step)
    }
}

/// A reply as a message shows it: escaped, at most 64 bytes.
fn shown(b: &[u8]) -> String {
    match b.len() > 64 {
        true => format!("{}…", escape(&b[..64])),
        false => escape(b),
    }
}

/// Writes `request` and reads one frame: its payload, and how many bytes came after it. Times
/// the `send`, `wait` and `receive` phases in `phases` as far as it gets.
async fn exchange(
    conn: &mut Conn,
    request: &[u8],
    framing: &Framing,
    limit: usize,
    phases: &mut Phases,
) -> Result<(Bytes, usize), Fail> {
    let start = Instant::now();
    conn.stream.write_all(request).await.map_err(Fail::Io)?;
    // A no-op in the clear; under TLS, what rustls still holds goes out.
    conn.stream.flush().await.map_err(Fail::Io)?;
    let sent = Instant::now();
    phases.set(Phase::Send, sent - start);
    // The first byte of the reply: a read of the bytes already buffered counts as at once.
    let mut first = (!conn.buf.is_empty()).then_some(sent);
    let mut searched = 0;
    let found = loop {
        match framing.find(&conn.buf, limit, &mut searched) {
            Ok(Some(found)) => break found,
            Ok(None) => {}
            Err(e) => return Err(Fail::Frame(e)),
        }
        // A read into a buffer with no room reads nothing, which would look like the end.
        if conn.buf.capacity() - conn.buf.len() < READ_SIZE / 2 {
            conn.buf.reserve(READ_SIZE);
        }
        match conn.stream.read_buf(&mut conn.buf).await {
            Ok(0) => return Err(Fail::Closed(conn.buf.len())),
            Ok(_) if first.is_none() => {
                let now = Instant::now();
                phases.set(Phase::Wait, now - sent);
                first = Some(now);
            }
            Ok(_) => {}
            Err(e) => return Err(Fail::Io(e)),
        }
    };
    if let Some(first) = first {
        phases.set(Phase::Receive, first.elapsed());
    }
    let frame = conn.buf.split_to(found.len).freeze();
    Ok((frame.slice(found.payload), conn.buf.len()))
}

#[cfg(test)]
mod tests {
    use super::{address, Address};

    fn authority(url: &str) -> Result<String, String> {
        address(url).map(|a| a.authority)
    }

    #[test]
    fn an_authority_is_host_and_port() {
        assert_eq!(
            authority("tcp://127.0.0.1:9000/").unwrap(),
            "127.0.0.1:9000"
        );
        assert_eq!(authority("TCP://[::1]:7").unwrap(), "[::1]:7");
        let tls = address("tcps://localhost:9443").unwrap();
        let want = Address {
            authority: "localhost:9443".into(),
            host: "localhost".into(),
            tls: true,
        };
        assert_eq!(tls, want);
        assert!(!address("tcp://localhost:9").unwrap().tls);
        let e = authority("tls://localhost:9").unwrap_err();
        assert!(e.contains("not a tcp:// or tcps:// URL"), "{e}");
        let e = authority("tcp://::1:7").unwrap_err();
        assert!(e.contains("brackets"), "{e}");
        let e = authority("tcp://host:99999").unwrap_err();
        assert!(e.contains("port"), "{e}");
    }
}
