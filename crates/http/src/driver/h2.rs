//! HTTP/2 on throng's own engine (throng-h2), as gRPC's calls are: the sessions of a worker
//! thread share its connections, `streams` sessions to one, in an [`H2Pool`] (the driver's
//! per-worker state) holding a `throng_h2::pool::Pool`.
//!
//! A request is its header block, HPACK-encoded once ([`Block`]: a step's fixed fields copied,
//! only its templated ones encoded per call), and its body. The user's own task opens the stream
//! on its connection and reads the response; the connection's one task writes every stream's
//! frames in one system call and tells each request when its HEADERS left (`send`), when its
//! head came (`wait`) and when it ended (`receive`). A request the server did not process
//! (above its GOAWAY's last stream id, refused) goes once more on a new connection and is
//! counted once.

use std::cell::OnceCell;
use std::rc::Rc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::header::{CONNECTION, HOST, TRANSFER_ENCODING, UPGRADE};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use throng_core::{Connection, Outcome, Phase, Phases};
use throng_h2::client::{connect_timed, Client, Target};
use throng_h2::conn::{Field, Keep, Request, Response as H2Response, StreamError, Times};
use throng_h2::hpack::Block;
use throng_h2::pool::{Pool, Seat};
use throng_net::Opened;

use super::{HttpDriver, Response, Session};
use crate::stream::{Reading, MAX_ERROR_BODY};

/// One worker's HTTP/2 connections, each shared by up to `streams` sessions: throng-h2's
/// pool, made when the first session joins (it brings the target).
///
/// throng-h2's connections run as local tasks: requests go from within a
/// `tokio::task::LocalSet` (each of the engine's workers is one).
#[derive(Default)]
pub struct H2Pool {
    h2: OnceCell<Rc<Pool>>,
}

impl H2Pool {
    /// A new session's seat: on the first connection with a free seat, or a new one. A
    /// session that ends frees its seat, so a ramp that retires and restarts users opens no
    /// new connections.
    pub(super) fn join(&self, target: impl FnOnce() -> Target, streams: usize) -> H2Session {
        let pool = self
            .h2
            .get_or_init(|| Rc::new(Pool::new(target(), streams, None)))
            .clone();
        let seat = pool.join();
        H2Session { pool, seat }
    }

    /// Connections this pool has made room for.
    pub fn connections(&self) -> usize {
        self.h2.get().map_or(0, |p| p.connections())
    }
}

/// A session's seat on one of its worker's connections.
pub(super) struct H2Session {
    pool: Rc<Pool>,
    seat: Seat,
}

/// The length of a request's body as its header block says it: none (no body), fixed, or a
/// slot filled per call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Length {
    None,
    Fixed(usize),
    Slot,
}

/// Header fields that are not sent as fields in HTTP/2: `host`, which is `:authority`, and
/// those HTTP/2 forbids (RFC 9113 section 8.2.2), the connection's own, which hyper's client
/// left out too.
pub(crate) fn not_a_field(name: &HeaderName) -> bool {
    name == HOST
        || name == CONNECTION
        || name == TRANSFER_ENCODING
        || name == UPGRADE
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

impl HttpDriver {
    /// The target of the connections: throng-h2's, from this driver's addresses and TLS.
    pub(super) fn h2_target(&self) -> Target {
        Target {
            addrs: self.addrs.clone(),
            authority: self.cfg.authority(),
            tls: self.tls.clone(),
            connect_timeout: self.cfg.connect_timeout,
            config: Default::default(),
        }
    }

    /// A request's header block: `:method`, `:scheme`, `:path` (`None`: a slot, the first),
    /// `:authority` (the URL's, or a `host` header's: a `None` value is a slot, next), the
    /// configured headers but
    /// those `headers` names, then `headers` (a `None` value is a slot, in their order), then
    /// `content-length` (a slot last when it changes per call).
    pub(crate) fn h2_block(
        &self,
        method: &Method,
        path: Option<&str>,
        headers: &[(HeaderName, Option<&HeaderValue>)],
        length: Length,
    ) -> Block {
        let url = &self.cfg.url;
        let mut b = Block::builder();
        b.field(":method", method.as_str().as_bytes());
        b.field(":scheme", url.scheme_str().unwrap_or("http").as_bytes());
        match path {
            Some(p) => b.field(":path", p.as_bytes()),
            None => b.slot(":path"),
        };
        // A `host` header is `:authority` (RFC 9113 section 8.3.1), templated too: then its
        // slot is the second, after a templated path's.
        match headers.iter().find(|(n, _)| n == HOST) {
            Some((_, Some(h))) => b.field(":authority", h.as_bytes()),
            Some((_, None)) => b.slot(":authority"),
            None => match self.headers.get(HOST) {
                Some(h) => b.field(":authority", h.as_bytes()),
                None => b.field(
                    ":authority",
                    url.authority().map_or("", |a| a.as_str()).as_bytes(),
                ),
            },
        };
        let named = |n: &HeaderName| headers.iter().any(|(m, _)| m == n);
        for (name, value) in &self.headers {
            if !not_a_field(name) && !named(name) {
                b.field(name.as_str(), value.as_bytes());
            }
        }
        for (name, value) in headers {
            if not_a_field(name) {
                continue;
            }
            match value {
                Some(v) => b.field(name.as_str(), v.as_bytes()),
                None => b.slot(name.as_str()),
            };
        }
        match length {
            Length::None => {}
            Length::Fixed(n) => {
                b.field("content-length", itoa::Buffer::new().format(n).as_bytes());
            }
            Length::Slot => {
                b.slot("content-length");
            }
        }
        b.build()
    }

    /// A request whose whole header block is known: encoded with no slot.
    pub(super) fn h2_fixed_block(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Vec<u8> {
        let headers: Vec<_> = headers.iter().map(|(n, v)| (n.clone(), Some(v))).collect();
        let length = match body.len() {
            0 => Length::None,
            n => Length::Fixed(n),
        };
        let block = self.h2_block(method, Some(path), &headers, length);
        let mut out = Vec::new();
        block.write(&mut out, &[]);
        out
    }

    /// Opens the session's shared connection before any request, if it has none.
    pub(super) async fn connect_h2(&self, h2: &H2Session) -> Result<(), Outcome> {
        h2.pool.connect(&h2.seat).await.map(drop)
    }

    /// Sends one request within the request timeout (`None` past it), boxed: inline, its
    /// future would make every HTTP/1.1 user's task larger. On the session's open shared
    /// connection the timeout is a deadline its connection's task watches with one timer for
    /// all streams (`Client::send_by`): tokio's timeout, a timer entry armed and cleared per
    /// request, cost 680 of a request's 7,370 instructions; a body read as a stream has the
    /// same deadline for the whole answer (`Client::stream_by`). Opening a connection is
    /// bounded by tokio's, as HTTP/1.1's requests are.
    pub(super) async fn send_h2_within(
        &self,
        session: &mut Session,
        block: &[u8],
        body: &Bytes,
        keep: bool,
    ) -> Option<(Outcome, Option<Response>)> {
        let ready = match &session.h2 {
            Some(h2) if self.cfg.keepalive => h2.pool.ready(&h2.seat),
            _ => None,
        };
        match ready {
            Some(client) => {
                let by = tokio::time::Instant::now().into_std() + self.cfg.timeout;
                Box::pin(self.execute_h2(session, block, body, keep, Some((client, by)))).await
            }
            None => Box::pin(self.limit(self.execute_h2(session, block, body, keep, None)))
                .await
                .ok()
                .flatten(),
        }
    }

    /// Sends one request (its encoded header block and body) on the session's connection, or
    /// without keep-alive on a connection of its own that ends with it; a body read as a
    /// stream goes to the session's reading, part by part. `ready`: the session's shared
    /// connection, open, and the request's deadline on it; `None` once that deadline passed.
    async fn execute_h2(
        &self,
        session: &mut Session,
        block: &[u8],
        body: &Bytes,
        keep: bool,
        ready: Option<(Client, Instant)>,
    ) -> Option<(Outcome, Option<Response>)> {
        let Some(h2) = session.h2.as_ref() else {
            return Some((
                Outcome::failed(throng_core::ErrorClass::Other, "no HTTP/2 session"),
                None,
            ));
        };
        let deadline = ready.as_ref().map(|(_, by)| *by);
        let alone = !self.cfg.keepalive;
        let open = || async move {
            if alone {
                let (c, opened) = connect_timed(h2.pool.target()).await?;
                Ok((c, Some((opened, Connection::New))))
            } else {
                let c = h2.pool.client(&h2.seat).await?;
                Ok::<_, Outcome>((c, h2.pool.take_opened(&h2.seat)))
            }
        };
        // The shared connection, open: no future to make. Opening one is boxed: it is rare
        // (with its TLS handshake), and inline it would make every user's task larger.
        let ready = match (ready, alone) {
            (Some((c, _)), _) => Some(c),
            (None, true) => None,
            (None, false) => h2.pool.ready(&h2.seat),
        };
        let (mut client, opened) = match ready {
            Some(c) => (c, h2.pool.take_opened(&h2.seat)),
            None => match Box::pin(open()).await {
                Ok(got) => got,
                Err(o) => return Some((o, None)),
            },
        };
        let mut phases = phases_of(opened);
        let keep_h2 = Keep {
            headers: keep,
            body: keep && session.reading.is_none(),
            parts: false,
        };
        let mut bytes = (0, 0);
        let mut retried = false;
        let (start, result) = loop {
            let req = Request {
                headers: block,
                body: body.clone(),
                keep: keep_h2,
            };
            let start = Instant::now();
            let r = match (session.reading.as_mut(), deadline) {
                (None, Some(by)) => client.send_by(req, by).await,
                (None, None) => client.send(req).await,
                (Some(reading), by) => streamed(&client, req, reading, by).await,
            };
            match r {
                Err(StreamError::NotProcessed(_)) if !retried => {
                    retried = true;
                    add(&mut bytes, self.h2_bytes(h2, &client));
                    let opening = match deadline {
                        Some(by) => {
                            let by = tokio::time::Instant::from_std(by);
                            tokio::time::timeout_at(by, Box::pin(open())).await.ok()?
                        }
                        None => Box::pin(open()).await,
                    };
                    match opening {
                        Ok((c, opened)) => {
                            client = c;
                            if opened.is_some() {
                                phases = phases_of(opened);
                            }
                        }
                        Err(o) => return Some((o, None)),
                    }
                }
                // Past the deadline: the request's timeout, as tokio's would have said.
                Err(StreamError::TimedOut) => return None,
                r => break (start, r),
            }
        };
        add(&mut bytes, self.h2_bytes(h2, &client));
        let (mut outcome, response) = match result {
            Ok(r) => {
                timed(&mut phases, start, r.times);
                let resp = Response {
                    status: r.status,
                    headers: if keep {
                        header_map(&r.headers)
                    } else {
                        HeaderMap::new()
                    },
                    body: r.body.freeze(),
                };
                self.finish(Ok(resp), keep)
            }
            Err(e) => (Outcome::failed(client.classify(&e), e.to_string()), None),
        };
        (outcome.bytes_sent, outcome.bytes_received) = bytes;
        outcome.phases = phases;
        Some((outcome, response))
    }

    /// The bytes of a request on `client`: the whole connection's when it was its own, else
    /// what crossed the shared one since the request before.
    fn h2_bytes(&self, h2: &H2Session, client: &Client) -> (u64, u64) {
        match self.cfg.keepalive {
            true => h2.pool.take_bytes(&h2.seat, client),
            false => client.counters().read(),
        }
    }
}

fn add(total: &mut (u64, u64), (s, r): (u64, u64)) {
    total.0 += s;
    total.1 += r;
}

/// A request's phases so far: the connection's opening if the request is the first on it.
fn phases_of(opened: Option<(Opened, Connection)>) -> Phases {
    match opened {
        Some((opened, how)) => {
            let mut p = Phases::on(how);
            opened.into_phases(&mut p);
            p
        }
        None => Phases::on(Connection::Reused),
    }
}

/// `send` from the request's start to the end of the write that carried its HEADERS, `wait`
/// from there to the read that brought its head, `receive` from there to the read that ended it.
fn timed(phases: &mut Phases, start: Instant, t: Times) {
    let Some(sent) = t.sent else {
        return;
    };
    phases.set(Phase::Send, sent.saturating_duration_since(start));
    let Some(head) = t.head else {
        return;
    };
    phases.set(Phase::Wait, head.saturating_duration_since(sent));
    if let Some(end) = t.end {
        phases.set(Phase::Receive, end.saturating_duration_since(head));
    }
}

/// Sends a request whose response is read as it arrives: each part of a 2xx body goes to
/// `reading` with the time of the read that brought it, and is not kept; a non-2xx body is not
/// the stream, and is kept (when the response is, up to [`MAX_ERROR_BODY`]) for checks. `by`:
/// the request's deadline on the connection, past which the stream ends as timed out.
async fn streamed(
    client: &Client,
    req: Request<'_>,
    reading: &mut Reading,
    by: Option<Instant>,
) -> Result<H2Response, StreamError> {
    let keep = req.keep.headers;
    let mut error_body = BytesMut::new();
    let mut stream = match by {
        Some(at) => client.stream_by(req, true, at)?,
        None => client.send_streaming(req)?,
    };
    while let Some(part) = stream.data().await {
        if (200..300).contains(&stream.status()) {
            reading.feed(stream.arrived().unwrap_or_else(Instant::now), &part);
        } else if keep {
            let room = MAX_ERROR_BODY.saturating_sub(error_body.len());
            error_body.extend_from_slice(&part[..part.len().min(room)]);
        }
    }
    let mut resp = stream.end().await?;
    reading.finish(resp.times.end.unwrap_or_else(Instant::now));
    if !error_body.is_empty() {
        resp.body = error_body;
    }
    Ok(resp)
}

/// The fields kept of a response as a `HeaderMap` (for checks and extraction); a field that is
/// not a valid header is left out.
fn header_map(fields: &[Field]) -> HeaderMap {
    let mut map = HeaderMap::with_capacity(fields.len());
    for (n, v) in fields {
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(n), HeaderValue::from_bytes(v)) {
            map.append(n, v);
        }
    }
    map
}
