//! HTTP/1.1 on throng's own codec: one connection per session, written and read inline in the
//! session's own task (no dispatcher, no channel, no second task). A request is one write; the
//! response is read into a buffer of 4 KiB, grown only while a large body streams through, and
//! parsed in place (see `codec`).
//!
//! A cleartext connection holds its buffer only while a response arrives: it waits for the
//! socket to be readable first, then takes a buffer from its worker thread's spares and gives it
//! back once the response is complete. A thousand users waiting on a slow server hold no
//! buffer; the few whose bytes are being parsed at once share them. (TLS keeps one per
//! connection: rustls reads ahead into its own.)
//!
//! A connection the server closed while idle is replaced without counting an error. A request
//! is never sent twice when it may have reached the server, except a GET or HEAD on a reused
//! connection that gave back no byte at all (the server had closed it as the request left).

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use http::Method;
use std::time::Instant;

use throng_core::{Connection, ErrorClass, Outcome, Phase, Phases};
use throng_net::{Counters, Opened, Stream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

use super::{Failure, HttpDriver, Response, Session};
use crate::codec::{ReadError, ResponseReader};
use crate::stream::Reading;

/// The buffer a connection starts with, and reads into at least.
const BUF_START: usize = 4096;
/// The most one read asks for while a large body streams through.
const BUF_MAX: usize = 64 * 1024;
/// The most spare buffers a worker thread keeps.
const SPARES: usize = 256;

thread_local! {
    /// This worker thread's spare read buffers, of [`BUF_START`] bytes each.
    static SPARE: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// A read buffer: a spare one of this thread's, or a new one.
fn take_buffer() -> BytesMut {
    SPARE
        .with_borrow_mut(Vec::pop)
        .unwrap_or_else(|| BytesMut::with_capacity(BUF_START))
}

/// Gives an empty buffer back to this thread's spares, unless it grew (a large body passed
/// through it) or there are enough.
fn give_back(mut buf: BytesMut) {
    buf.clear();
    buf.reserve(BUF_START);
    if buf.capacity() <= BUF_START {
        SPARE.with_borrow_mut(|spare| {
            if spare.len() < SPARES {
                spare.push(buf);
            }
        });
    }
}

pub(super) struct H1 {
    stream: Stream,
    /// The read buffer, while a response is being read or bytes wait in it.
    buf: Option<BytesMut>,
    /// How much the next read asks for: doubles while reads fill it, up to [`BUF_MAX`].
    read_size: usize,
    counters: Arc<Counters>,
    /// No request has been sent on it yet (its handshake's bytes go to its first request).
    fresh: bool,
    /// How long it took to open, and whether inside a request's time: its first request's
    /// `connect` and `tls` phases.
    opened: Option<(Opened, Connection)>,
}

impl From<ReadError> for Failure {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Malformed(m) => Failure::Protocol(m),
            ReadError::Incomplete { started: false } => Failure::Closed,
            ReadError::Incomplete { started: true } => Failure::Cut,
        }
    }
}

impl H1 {
    /// Whether the server closed (or wrote to) this idle connection: one read that does not
    /// wait. Bytes from an idle server (a 408 before its close) make the connection unusable too.
    fn closed_while_idle(&mut self) -> bool {
        if self.fresh {
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut byte = [0u8; 1];
        let mut probe = ReadBuf::new(&mut byte);
        let poll = Pin::new(&mut self.stream).poll_read(&mut cx, &mut probe);
        !matches!(poll, Poll::Pending)
    }

    /// Writes a request and reads its response, timing its `send`, `wait` and `receive`
    /// phases (those it reached) into `phases`; a body read as a stream goes to `reading`,
    /// each slice with the time of the read that brought it (the body is then not kept). The
    /// flag says whether any byte of the response arrived.
    async fn exchange(
        &mut self,
        wire: &[u8],
        head: bool,
        keep: bool,
        phases: &mut Phases,
        mut reading: Option<&mut Reading>,
    ) -> (Result<ResponseReader, Failure>, bool) {
        let mut reader = ResponseReader::new(head, keep);
        reader.keep_body = keep && reading.is_none();
        let start = Instant::now();
        if let Err(e) = self.stream.write_all(wire).await {
            return (Err(Failure::Io(e)), false);
        }
        if let Err(e) = self.stream.flush().await {
            return (Err(Failure::Io(e)), false);
        }
        let sent = Instant::now();
        phases.set(Phase::Send, sent - start);
        // When the bytes in the buffer arrived (read only for a stream, whose events it times).
        let mut at = sent;
        // When the response's first byte arrived (the buffer holds none from before: bytes left
        // after a response close the connection); its wait is set then, so a response cut off
        // later still has it.
        let mut first = None;
        let arrived = |first: &mut Option<Instant>, phases: &mut Phases| {
            let now = Instant::now();
            let at = *first.get_or_insert_with(|| {
                phases.set(Phase::Wait, now - sent);
                now
            });
            phases.set(Phase::Receive, now - at);
        };
        loop {
            if let Some(buf) = self.buf.as_mut() {
                let mut events = |bytes: &[u8]| {
                    if let Some(r) = reading.as_deref_mut() {
                        r.feed(at, bytes);
                    }
                };
                match reader.advance_with(buf, &mut events) {
                    Ok(true) => {
                        if let Some(r) = reading.as_deref_mut() {
                            r.finish(at);
                        }
                        if buf.is_empty() {
                            if let Some(b) = self.buf.take() {
                                give_back(b);
                            }
                        }
                        arrived(&mut first, phases);
                        return (Ok(reader), true);
                    }
                    Ok(false) => {}
                    Err(e) => return (Err(e.into()), true),
                }
            }
            let (read, room) = match self.read().await {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => return (Err(Failure::Io(e)), reader.started()),
            };
            match read {
                0 => {
                    let started = reader.started();
                    return match reader.eof() {
                        Ok(()) => {
                            if let Some(r) = reading.as_deref_mut() {
                                r.finish(at);
                            }
                            arrived(&mut first, phases);
                            (Ok(reader), true)
                        }
                        Err(e) => (Err(e.into()), started),
                    };
                }
                n => {
                    if first.is_none() || reading.is_some() {
                        let now = Instant::now();
                        if first.is_none() {
                            phases.set(Phase::Wait, now - sent);
                            first = Some(now);
                        }
                        at = now;
                    }
                    if n == room && reader.in_body() {
                        self.read_size = (self.read_size * 2).min(BUF_MAX);
                    }
                }
            }
        }
    }

    /// One read into the buffer (taken when the socket is readable, in cleartext): how many
    /// bytes and how many there was room for, or `None` when the socket had nothing after all.
    async fn read(&mut self) -> io::Result<Option<(usize, usize)>> {
        match &mut self.stream {
            Stream::Plain(tcp) => {
                tcp.readable().await?;
                let buf = self.buf.get_or_insert_with(take_buffer);
                buf.reserve(self.read_size);
                let room = buf.capacity() - buf.len();
                match tcp.try_read_buf(buf) {
                    Ok(n) => Ok(Some((n, room))),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // Readiness left over from the last response (whose read did not meet
                        // `WouldBlock`): nothing yet, so the buffer goes back while we wait.
                        if buf.is_empty() {
                            if let Some(b) = self.buf.take() {
                                give_back(b);
                            }
                        }
                        Ok(None)
                    }
                    Err(e) => Err(e),
                }
            }
            stream => {
                let buf = self.buf.get_or_insert_with(take_buffer);
                buf.reserve(self.read_size);
                let room = buf.capacity() - buf.len();
                stream.read_buf(buf).await.map(|n| Some((n, room)))
            }
        }
    }
}

impl HttpDriver {
    /// Opens a connection: `inside` a request's time (`execute`), or before it (`connect`).
    pub(super) async fn connect_h1(&self, inside: bool) -> Result<H1, Outcome> {
        let (stream, counters, opened) = self.connect().await?;
        let how = match inside {
            true => Connection::New,
            false => Connection::Before,
        };
        Ok(H1 {
            stream,
            buf: None,
            read_size: BUF_START,
            counters,
            fresh: true,
            opened: Some((opened, how)),
        })
    }

    /// Sends one serialized request on the session's connection (opened if it has none).
    pub(super) async fn execute_h1(
        &self,
        session: &mut Session,
        wire: &[u8],
        method: &Method,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let safe = matches!(*method, Method::GET | Method::HEAD);
        let head = *method == Method::HEAD;
        // A GET or HEAD finds out by itself (no byte back: sent again); other methods look
        // first, since they are never sent twice.
        if !safe && session.h1.as_mut().is_some_and(H1::closed_while_idle) {
            session.h1 = None;
        }
        let mut retried = false;
        loop {
            if session.h1.is_none() {
                // Boxed: a connect (with its TLS handshake) is rare, and inline it would make
                // every user's task several kilobytes larger for the whole run.
                match Box::pin(self.connect_h1(true)).await {
                    Ok(h) => session.h1 = Some(h),
                    Err(o) => return (o, None),
                }
            }
            let Some(h) = session.h1.as_mut() else {
                return (Outcome::failed(ErrorClass::Other, "no connection"), None);
            };
            let reused = !h.fresh;
            let (s0, r0) = if h.fresh { (0, 0) } else { h.counters.read() };
            h.fresh = false;
            let mut phases = match h.opened.take() {
                Some((opened, how)) => {
                    let mut p = Phases::on(how);
                    opened.into_phases(&mut p);
                    p
                }
                None => Phases::on(Connection::Reused),
            };
            let reading = session.reading.as_deref_mut();
            let (result, started) = h.exchange(wire, head, keep, &mut phases, reading).await;
            let (s1, r1) = h.counters.read();
            if result.is_err() && reused && safe && !started && !retried {
                retried = true;
                session.h1 = None;
                continue;
            }
            let close = match &result {
                // Bytes after the response: the server is not speaking HTTP/1.1 as we are.
                Ok(r) => r.close || h.buf.is_some(),
                Err(_) => true,
            };
            let result = result.map(|r| Response {
                status: r.status,
                headers: r.headers.map(|h| *h).unwrap_or_default(),
                body: r.body.into(),
            });
            let (mut outcome, response) = self.finish(result, keep);
            outcome.bytes_sent = s1 - s0;
            outcome.bytes_received = r1 - r0;
            outcome.phases = phases;
            if close || !self.cfg.keepalive {
                session.h1 = None;
            }
            return (outcome, response);
        }
    }
}
