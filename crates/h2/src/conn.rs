//! The client connection as a state machine without I/O, as the HTTP/1.1 codec is: requests go
//! in as encoded header blocks and bodies, bytes from the socket go in through [`Conn::recv`],
//! and the bytes to write accumulate in one buffer ([`Conn::swap_out`]) for every stream at
//! once, written by whoever holds the socket in one system call. Each stream's response (status,
//! the headers and body asked for, gRPC's status, trailers) accumulates in the stream's slot, and
//! the task that waits for it is woken by its [`Waker`]: no lock, no channel, no task per stream.
//!
//! What it implements of RFC 9113: the preface and SETTINGS both ways (with ACK, and the
//! server's changes mid-run: windows, frame size, concurrency, header table size); HEADERS with
//! CONTINUATION, padding and priority fields; DATA with padding; flow control at the connection
//! and stream level both ways (our send windows from the server's SETTINGS and WINDOW_UPDATE,
//! bodies held back until they open; our receive windows replenished at half); the server's
//! MAX_CONCURRENT_STREAMS (requests over it wait in order, their HEADERS written when a stream
//! closes); PING answered; GOAWAY (streams above its last stream id, and requests not yet sent,
//! end as [`StreamError::NotProcessed`]: never lost, safe to retry); RST_STREAM (REFUSED_STREAM
//! is not processed too); unknown frame types and PRIORITY ignored; push refused. A violation is
//! a connection error (GOAWAY sent, every stream fails with it) or a stream error (RST_STREAM
//! sent, that stream fails), as the RFC classifies it.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};

use crate::frame::{self, flag, kind, setting, Head, Reason, HEADER_LEN};
use crate::hpack::{Decoder, HpackError};

/// A connection's own settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Our SETTINGS_INITIAL_WINDOW_SIZE: what a server may send on a stream before we
    /// acknowledge it (2 MiB, hyper's).
    pub stream_window: u32,
    /// Our connection window (5 MiB, hyper's), raised from 65,535 by a WINDOW_UPDATE with the
    /// preface.
    pub conn_window: u32,
    /// Our SETTINGS_HEADER_TABLE_SIZE (4096, the default).
    pub header_table_size: u32,
    /// The largest header block (HEADERS and CONTINUATIONs, encoded) we accept (64 KiB, the
    /// HTTP/1.1 codec's bound on a head); a larger one, or one split into more frames than
    /// [`Config::max_header_frames`] allows (a CONTINUATION flood of empty frames grows no
    /// block), is a connection error, since its fields must be decoded for HPACK's table to
    /// stay in step.
    pub max_header_block: usize,
    /// Our SETTINGS_MAX_HEADER_LIST_SIZE (256 KiB): the decoded size of a response's header
    /// fields (names, values and 32 bytes a field, RFC 9113 section 6.5.2). A larger list is
    /// decoded (for HPACK's table) but not kept, and fails its stream: a few KiB of indexed
    /// fields can decode to many MiB.
    pub max_header_list: u32,
}

impl Config {
    /// The most frames (HEADERS and its CONTINUATIONs) a header block may take: one per KiB
    /// of [`Config::max_header_block`], at least 8 (65 at 64 KiB). A server splits a block at
    /// our frame size (16 KiB); this bound is met only by frames of under a KiB on average.
    pub fn max_header_frames(&self) -> u32 {
        (self.max_header_block / 1024).max(8) as u32 + 1
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            stream_window: 2 * 1024 * 1024,
            conn_window: 5 * 1024 * 1024,
            header_table_size: 4096,
            max_header_block: 64 * 1024,
            max_header_list: 256 * 1024,
        }
    }
}

/// What of a response to keep beyond its status and gRPC status: its header fields and its
/// body (else only counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    /// Keep the header fields and trailers.
    pub headers: bool,
    /// Keep the body.
    pub body: bool,
    /// Hand the body out as it arrives ([`Conn::poll_data`]): the waiting task is woken by
    /// every DATA frame, and what it takes is no longer held (a server stream in bounded
    /// memory). Implies `body`.
    pub parts: bool,
}

/// A request: its encoded header block ([`crate::hpack::Block`]), its body, and what to keep
/// of its response.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The header block, encoded.
    pub headers: &'a [u8],
    /// The body (empty for none); END_STREAM goes with its last frame.
    pub body: Bytes,
    /// What to keep of the response.
    pub keep: Keep,
}

/// A header field kept: name and value.
pub type Field = (Vec<u8>, Vec<u8>);

/// A response, complete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// `:status`.
    pub status: u16,
    /// The header fields but `:status` (kept with [`Keep::headers`]).
    pub headers: Vec<Field>,
    /// The trailers (kept with [`Keep::headers`]).
    pub trailers: Vec<Field>,
    /// The body (kept with [`Keep::body`]).
    pub body: BytesMut,
    /// The body's length, kept or not.
    pub body_len: u64,
    /// DATA frames received.
    pub data_frames: u32,
    /// `grpc-status`, from the trailers or a trailers-only response's headers.
    pub grpc_status: Option<u32>,
    /// `grpc-message`, as sent (percent-encoded).
    pub grpc_message: Option<Vec<u8>>,
    /// When its times are known (the I/O layer gives them: [`Conn::read_at`], [`Conn::written`]):
    /// the write that carried its HEADERS ended, the read that brought its head, and the read that
    /// completed it.
    pub times: Times,
}

/// When a request's bytes left and its response's arrived, as the I/O layer reported them
/// (`None` when it reports none: a state machine driven without a clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Times {
    /// The write that carried its HEADERS ended.
    pub sent: Option<Instant>,
    /// The read that brought its head (1xx heads skipped).
    pub head: Option<Instant>,
    /// The read that completed it.
    pub end: Option<Instant>,
}

/// Why a connection failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnError {
    /// The server's first bytes are not HTTP/2's SETTINGS (an HTTP/1.1 server's answer to the
    /// preface, or anything else).
    NotHttp2,
    /// The server broke the protocol; we sent GOAWAY with this code.
    Protocol(Reason, String),
    /// The server ended the connection with GOAWAY and this error code.
    GoAway(Reason, String),
    /// The connection ended (the I/O layer says how).
    Closed(String),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::NotHttp2 => write!(f, "the server does not answer as an HTTP/2 server"),
            ConnError::Protocol(r, m) => write!(f, "HTTP/2 connection error {r}: {m}"),
            ConnError::GoAway(r, d) if d.is_empty() => write!(f, "the server sent GOAWAY {r}"),
            ConnError::GoAway(r, d) => write!(f, "the server sent GOAWAY {r}: {d}"),
            ConnError::Closed(m) => write!(f, "connection closed: {m}"),
        }
    }
}

impl std::error::Error for ConnError {}

/// Why a stream failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// The server did not process it (above a GOAWAY's last stream id, refused with
    /// REFUSED_STREAM, or never sent before the connection went away): safe to send again.
    NotProcessed(&'static str),
    /// The server reset it with this code.
    Reset(Reason),
    /// The server broke the protocol on this stream; we reset it with this code.
    Protocol(Reason, &'static str),
    /// The connection failed.
    Conn(ConnError),
    /// Its deadline ([`Conn::set_deadline`]) passed before the response was complete; the
    /// stream was reset with CANCEL (or, not yet sent, forgotten).
    TimedOut,
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::NotProcessed(why) => write!(f, "request not processed: {why}"),
            StreamError::Reset(r) => write!(f, "the server reset the stream: {r}"),
            StreamError::Protocol(r, m) => write!(f, "HTTP/2 stream error {r}: {m}"),
            StreamError::Conn(e) => e.fmt(f),
            StreamError::TimedOut => write!(f, "no complete response by its deadline"),
        }
    }
}

impl std::error::Error for StreamError {}

/// A request's place on its connection, from [`Conn::open`] until its response is taken or
/// it is cancelled.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Key(usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the response's head (1xx heads skipped).
    Head,
    /// Head received, body or trailers to come.
    Body,
}

struct Stream {
    /// 0 until its HEADERS are written.
    id: u32,
    /// The header block of a request waiting for a concurrency slot.
    waiting: Option<Vec<u8>>,
    send_window: i64,
    body: Bytes,
    /// END_STREAM goes with the last of `body` (a request whose body is still coming: not).
    end: bool,
    /// END_STREAM has been written.
    end_sent: bool,
    recv_window: i64,
    recv_unacked: u32,
    phase: Phase,
    keep: Keep,
    resp: Response,
    result: Option<Result<(), StreamError>>,
    waker: Option<Waker>,
    /// When it fails with [`StreamError::TimedOut`] ([`Conn::expire`]).
    deadline: Option<Instant>,
}

/// The server's settings as they apply to us.
#[derive(Debug, Clone, Copy)]
struct Peer {
    max_concurrent: u32,
    initial_window: u32,
    max_frame: u32,
}

/// One client connection's HTTP/2 state.
pub struct Conn {
    cfg: Config,
    out: Vec<u8>,
    decoder: Decoder,
    peer: Peer,
    /// A dynamic table size update owed at the start of our next header block.
    size_update: Option<u32>,
    encoder_table: u32,
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    slab: Vec<Option<Stream>>,
    free: Vec<usize>,
    ids: HashMap<u32, usize, BuildHasherDefault<IdHasher>>,
    next_id: u32,
    /// Streams counted against the server's MAX_CONCURRENT_STREAMS.
    open: u32,
    waiting: VecDeque<usize>,
    /// Streams with body left, waiting for a window.
    blocked: VecDeque<usize>,
    /// A header block being received: stream, END_STREAM, fragments so far.
    partial: Option<(u32, bool)>,
    /// Frames of the header block being received.
    block_frames: u32,
    block: Vec<u8>,
    got_settings: bool,
    settings_acked: bool,
    goaway: Option<(u32, Reason)>,
    error: Option<ConnError>,
    pings_acked: u64,
    ping_waker: Option<Waker>,
    /// When the bytes being read arrived ([`Conn::read_at`]).
    now: Option<Instant>,
    /// Streams (slab index, id) whose HEADERS are in `out`, and those in the buffer being
    /// written: their `sent` time is that write's end ([`Conn::written`]).
    started: Vec<(usize, u32)>,
    in_write: Vec<(usize, u32)>,
    /// The earliest deadline set since the last [`Conn::expire`] (or left by it).
    next_deadline: Option<Instant>,
}

impl Conn {
    /// A connection whose preface, SETTINGS and connection WINDOW_UPDATE are already in the
    /// output.
    pub fn new(cfg: Config) -> Conn {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(frame::PREFACE);
        let mut settings = vec![
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, cfg.stream_window),
            (setting::MAX_HEADER_LIST_SIZE, cfg.max_header_list),
        ];
        if cfg.header_table_size != 4096 {
            settings.push((setting::HEADER_TABLE_SIZE, cfg.header_table_size));
        }
        frame::write_settings(&mut out, &settings);
        if cfg.conn_window > frame::DEFAULT_WINDOW {
            frame::write_window_update(&mut out, 0, cfg.conn_window - frame::DEFAULT_WINDOW);
        }
        Conn {
            decoder: Decoder::new(4096),
            peer: Peer {
                max_concurrent: u32::MAX,
                initial_window: frame::DEFAULT_WINDOW,
                max_frame: frame::DEFAULT_MAX_FRAME,
            },
            size_update: None,
            encoder_table: 4096,
            send_window: frame::DEFAULT_WINDOW as i64,
            recv_window: cfg.conn_window.max(frame::DEFAULT_WINDOW) as i64,
            recv_unacked: 0,
            slab: Vec::new(),
            free: Vec::new(),
            ids: HashMap::default(),
            next_id: 1,
            open: 0,
            waiting: VecDeque::new(),
            blocked: VecDeque::new(),
            partial: None,
            block_frames: 0,
            block: Vec::new(),
            got_settings: false,
            settings_acked: false,
            goaway: None,
            error: None,
            pings_acked: 0,
            ping_waker: None,
            now: None,
            started: Vec::new(),
            in_write: Vec::new(),
            next_deadline: None,
            cfg,
            out,
        }
    }

    /// Swaps the bytes to write with `buf` (cleared by the caller after writing them): the
    /// frames of every stream since the last call, for one write.
    pub fn swap_out(&mut self, buf: &mut Vec<u8>) {
        std::mem::swap(&mut self.out, buf);
        self.in_write.append(&mut self.started);
    }

    /// The bytes last taken by [`Conn::swap_out`] are all written, at `at`: the requests whose
    /// HEADERS they carried were sent then.
    pub fn written(&mut self, at: Instant) {
        for (idx, id) in self.in_write.drain(..) {
            if let Some(Some(s)) = self.slab.get_mut(idx) {
                if s.id == id {
                    s.resp.times.sent.get_or_insert(at);
                }
            }
        }
    }

    /// The bytes given to the next [`Conn::recv`] arrived at `at`: the time of the heads and
    /// ends they bring, and of the body parts handed out after it ([`Conn::arrived`]).
    pub fn read_at(&mut self, at: Instant) {
        self.now = Some(at);
    }

    /// When the last bytes read arrived, if the I/O layer says ([`Conn::read_at`]).
    pub fn arrived(&self) -> Option<Instant> {
        self.now
    }

    /// The status of `key`'s response once its head came (0 before).
    pub fn status(&self, key: &Key) -> u16 {
        self.slab[key.0].as_ref().map_or(0, |s| s.resp.status)
    }

    /// Whether there are bytes to write.
    pub fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    /// Whether a new request may go on this connection: it has not failed, the server has
    /// not sent GOAWAY, and stream ids are left.
    pub fn is_usable(&self) -> bool {
        self.error.is_none() && self.goaway.is_none() && self.next_id < 0x7fff_ffff
    }

    /// Whether the connection is over: failed, or gone away with no stream left.
    pub fn is_closed(&self) -> bool {
        self.error.is_some() || (self.goaway.is_some() && self.ids.is_empty())
    }

    /// How the connection failed, if it did.
    pub fn error(&self) -> Option<&ConnError> {
        self.error.as_ref()
    }

    /// Whether the server's SETTINGS have arrived (it speaks HTTP/2).
    pub fn got_settings(&self) -> bool {
        self.got_settings
    }

    /// Streams open now (HEADERS sent, response not complete).
    pub fn open_streams(&self) -> u32 {
        self.open
    }

    /// Requests waiting for the server's MAX_CONCURRENT_STREAMS to allow them.
    pub fn waiting_streams(&self) -> usize {
        self.waiting.len()
    }

    /// The server's GOAWAY, if one came: its last stream id and code.
    pub fn goaway(&self) -> Option<(u32, Reason)> {
        self.goaway
    }

    /// Starts a request: its HEADERS (and as much body as the windows allow) are written at
    /// once, or when the server's MAX_CONCURRENT_STREAMS next allows. On a connection that
    /// cannot take it, the request is not processed.
    pub fn open(&mut self, req: Request<'_>) -> Result<Key, StreamError> {
        self.open_with(req, true)
    }

    /// Starts a request whose body is still coming: `req.body` is its first part, and
    /// [`Conn::send_data`] sends the rest and ends it (gRPC's client streams).
    pub fn open_partial(&mut self, req: Request<'_>) -> Result<Key, StreamError> {
        self.open_with(req, false)
    }

    /// Sends more of the body of a request opened with [`Conn::open_partial`] (held until the
    /// windows allow, as any body), ending it with `end`. A stream whose response has ended,
    /// or whose body was already ended, takes no more.
    pub fn send_data(&mut self, key: &Key, data: Bytes, end: bool) -> Result<(), StreamError> {
        let s = self.slab[key.0].as_mut().expect("a live key");
        if let Some(Err(e)) = &s.result {
            return Err(e.clone());
        }
        if s.result.is_some() || s.end {
            return Err(StreamError::Protocol(
                Reason::STREAM_CLOSED,
                "the request's body has ended",
            ));
        }
        if s.body.is_empty() {
            s.body = data;
        } else {
            let mut joined = BytesMut::with_capacity(s.body.len() + data.len());
            joined.extend_from_slice(&s.body);
            joined.extend_from_slice(&data);
            s.body = joined.freeze();
        }
        s.end = end;
        if s.id != 0 && !self.send_body(key.0) && !self.blocked.contains(&key.0) {
            self.blocked.push_back(key.0);
        }
        Ok(())
    }

    fn open_with(&mut self, req: Request<'_>, end: bool) -> Result<Key, StreamError> {
        if let Some(e) = &self.error {
            return Err(StreamError::Conn(e.clone()));
        }
        if !self.is_usable() {
            return Err(StreamError::NotProcessed("the connection is going away"));
        }
        let stream = Stream {
            id: 0,
            waiting: None,
            send_window: 0,
            body: req.body,
            end,
            end_sent: false,
            recv_window: 0,
            recv_unacked: 0,
            phase: Phase::Head,
            keep: req.keep,
            resp: Response::default(),
            result: None,
            waker: None,
            deadline: None,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(stream);
                i
            }
            None => {
                self.slab.push(Some(stream));
                self.slab.len() - 1
            }
        };
        if self.open < self.peer.max_concurrent && self.waiting.is_empty() {
            self.start(idx, req.headers);
        } else {
            self.slab[idx].as_mut().expect("just put").waiting = Some(req.headers.to_vec());
            self.waiting.push_back(idx);
        }
        Ok(Key(idx))
    }

    /// The response of `key` if it is complete (the key is then spent), else registers the
    /// waker to be woken when it is.
    pub fn poll_response(
        &mut self,
        key: &Key,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Response, StreamError>> {
        match self.take(key) {
            Some(r) => Poll::Ready(r),
            None => {
                let s = self.slab[key.0].as_mut().expect("a live key");
                match &s.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => s.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }

    /// The part of `key`'s body that arrived since the last call (`Some`, never empty), or
    /// `None` once the response is complete and all of its body was handed out (then
    /// [`Conn::take`] gives the rest of it: status, trailers, counts); registers the waker
    /// while neither.
    pub fn poll_data(&mut self, key: &Key, cx: &mut Context<'_>) -> Poll<Option<BytesMut>> {
        let s = self.slab[key.0].as_mut().expect("a live key");
        if !s.resp.body.is_empty() {
            return Poll::Ready(Some(s.resp.body.split()));
        }
        if s.result.is_some() {
            return Poll::Ready(None);
        }
        match &s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => s.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The response of `key` if it is complete (the key is then spent).
    pub fn take(&mut self, key: &Key) -> Option<Result<Response, StreamError>> {
        let s = self.slab[key.0].as_mut().expect("a live key");
        let result = s.result.take()?;
        // The response alone moves out; the slot is dropped in place (moving the whole stream
        // out first was a twentieth of a request's instructions in `memcpy`).
        let resp = result.map(|()| std::mem::take(&mut s.resp));
        self.slab[key.0] = None;
        self.free.push(key.0);
        Some(resp)
    }

    /// Sets when the request of `key` fails with [`StreamError::TimedOut`] if its response is
    /// not complete: checked by [`Conn::expire`], which whoever holds the clock calls by
    /// [`Conn::next_deadline`] (a request's timeout without a timer of its own).
    pub fn set_deadline(&mut self, key: &Key, at: Instant) {
        if let Some(s) = self.slab[key.0].as_mut() {
            s.deadline = Some(at);
            self.next_deadline = Some(self.next_deadline.map_or(at, |d| d.min(at)));
        }
    }

    /// The earliest deadline set and not yet expired (a later one may be gone with its stream).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.next_deadline
    }

    /// Fails with [`StreamError::TimedOut`] the requests whose deadline is at or before `now`,
    /// resetting their streams with CANCEL (one not yet sent is forgotten); returns the earliest
    /// deadline left.
    pub fn expire(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for idx in 0..self.slab.len() {
            let Some(s) = self.slab[idx].as_mut() else {
                continue;
            };
            let Some(at) = s.deadline else {
                continue;
            };
            if s.result.is_some() {
                continue;
            }
            if at > now {
                next = Some(next.map_or(at, |n| n.min(at)));
                continue;
            }
            s.deadline = None;
            if s.id == 0 {
                self.waiting.retain(|&i| i != idx);
            } else if self.error.is_none() {
                frame::write_rst(&mut self.out, s.id, Reason::CANCEL);
            }
            self.finish(idx, Err(StreamError::TimedOut));
        }
        self.next_deadline = next;
        next
    }

    /// Gives up on a request (its timeout, its task dropped): an open stream is reset with
    /// CANCEL, a waiting one forgotten.
    pub fn cancel(&mut self, key: Key) {
        let Some(s) = self.slab[key.0].as_ref() else {
            return;
        };
        if s.result.is_none() {
            if s.id == 0 {
                self.waiting.retain(|&i| i != key.0);
            } else {
                if self.error.is_none() {
                    frame::write_rst(&mut self.out, s.id, Reason::CANCEL);
                }
                self.close(key.0);
            }
        }
        self.slab[key.0] = None;
        self.free.push(key.0);
        self.start_waiting();
    }

    /// Sends a PING; [`Conn::pings_acked`] counts the answers.
    pub fn ping(&mut self, payload: [u8; 8]) {
        frame::write_ping(&mut self.out, false, payload);
    }

    /// PINGs of ours the server has answered.
    pub fn pings_acked(&self) -> u64 {
        self.pings_acked
    }

    /// Registers the waker of a task waiting for a PING's answer or the server's SETTINGS.
    pub fn wait_ping(&mut self, cx: &mut Context<'_>) {
        self.ping_waker = Some(cx.waker().clone());
    }

    /// The connection ended under us (end of stream, an I/O error): every stream fails with
    /// `why`, or with the server's GOAWAY code when it sent one, and requests not yet sent are
    /// not processed.
    pub fn fail(&mut self, why: ConnError) {
        if self.error.is_some() {
            return;
        }
        let why = match (self.goaway, &why) {
            (Some((_, r)), ConnError::Closed(_)) if r != Reason::NO_ERROR => {
                ConnError::GoAway(r, String::new())
            }
            _ => why,
        };
        self.error = Some(why.clone());
        for i in 0..self.slab.len() {
            let Some(s) = self.slab[i].as_ref() else {
                continue;
            };
            if s.result.is_some() {
                continue;
            }
            let e = if s.id == 0 {
                StreamError::NotProcessed("the connection ended before it was sent")
            } else {
                StreamError::Conn(why.clone())
            };
            self.finish(i, Err(e));
        }
        self.waiting.clear();
        self.blocked.clear();
        if let Some(w) = self.ping_waker.take() {
            w.wake();
        }
    }

    /// Reads every complete frame at the start of `buf`, consuming it. A connection error
    /// writes GOAWAY, fails every stream and is returned.
    pub fn recv(&mut self, buf: &mut BytesMut) -> Result<(), ConnError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match self.frames(buf) {
            Ok(()) => Ok(()),
            Err(e) => {
                if let ConnError::Protocol(r, m) = &e {
                    frame::write_goaway(&mut self.out, 0, *r, m.as_bytes());
                }
                self.fail(e.clone());
                Err(e)
            }
        }
    }

    fn frames(&mut self, buf: &mut BytesMut) -> Result<(), ConnError> {
        loop {
            if !self.got_settings && buf.len() >= 4 && buf[3] != kind::SETTINGS {
                return Err(ConnError::NotHttp2);
            }
            if buf.len() < HEADER_LEN {
                return Ok(());
            }
            let head = Head::read(buf);
            if head.len > frame::DEFAULT_MAX_FRAME as usize {
                if !self.got_settings {
                    return Err(ConnError::NotHttp2);
                }
                return Err(proto(Reason::FRAME_SIZE_ERROR, "a frame over 16384 bytes"));
            }
            if buf.len() < HEADER_LEN + head.len {
                buf.reserve(HEADER_LEN + head.len - buf.len());
                return Ok(());
            }
            let r = self.frame(head, &buf[HEADER_LEN..HEADER_LEN + head.len]);
            buf.advance(HEADER_LEN + head.len);
            r?;
            if !self.blocked.is_empty() && self.send_window > 0 {
                self.send_blocked();
            }
        }
    }

    fn frame(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if !self.got_settings && (head.kind != kind::SETTINGS || head.flags & flag::ACK != 0) {
            return Err(ConnError::NotHttp2);
        }
        if let Some((stream, _)) = self.partial {
            if head.kind != kind::CONTINUATION || head.stream != stream {
                return Err(proto(
                    Reason::PROTOCOL_ERROR,
                    "a header block interrupted by another frame",
                ));
            }
        }
        match head.kind {
            kind::DATA => self.data(head, payload),
            kind::HEADERS => self.headers(head, payload),
            kind::CONTINUATION => self.continuation(head, payload),
            kind::SETTINGS => self.settings(head, payload),
            kind::PING => self.ping_frame(head, payload),
            kind::GOAWAY => self.goaway_frame(head, payload),
            kind::RST_STREAM => self.rst(head, payload),
            kind::WINDOW_UPDATE => self.window_update(head, payload),
            kind::PRIORITY => {
                if head.stream == 0 {
                    return Err(proto(Reason::PROTOCOL_ERROR, "PRIORITY on stream 0"));
                }
                if head.len != 5 {
                    self.stream_error(head.stream, Reason::FRAME_SIZE_ERROR, "PRIORITY's size");
                }
                Ok(())
            }
            kind::PUSH_PROMISE => Err(proto(
                Reason::PROTOCOL_ERROR,
                "PUSH_PROMISE with push disabled",
            )),
            // Unknown frame types are ignored (RFC 9113 section 4.1).
            _ => Ok(()),
        }
    }

    /// The slot of an open stream `id`; `Ok(None)` for a closed one (frames for it are
    /// ignored); an error for one never opened.
    fn stream_of(&self, id: u32, what: &'static str) -> Result<Option<usize>, ConnError> {
        if id == 0 {
            return Err(proto(Reason::PROTOCOL_ERROR, what));
        }
        if let Some(&i) = self.ids.get(&id) {
            return Ok(Some(i));
        }
        if id.is_multiple_of(2) || id >= self.next_id {
            return Err(proto(
                Reason::PROTOCOL_ERROR,
                "a frame on a stream never opened",
            ));
        }
        Ok(None)
    }

    fn data(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        let idx = self.stream_of(head.stream, "DATA on stream 0")?;
        let len = head.len;
        // Flow control counts the whole payload, padding too.
        self.recv_window -= len as i64;
        if self.recv_window < 0 {
            return Err(proto(
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the connection's window",
            ));
        }
        self.recv_unacked += len as u32;
        if self.recv_unacked >= self.cfg.conn_window / 2 {
            frame::write_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_window += self.recv_unacked as i64;
            self.recv_unacked = 0;
        }
        let body = unpad(head, payload)?;
        let Some(idx) = idx else {
            return Ok(());
        };
        let end = head.flags & flag::END_STREAM != 0;
        let half = self.cfg.stream_window / 2;
        let s = self.slab[idx].as_mut().expect("an open stream");
        if s.phase != Phase::Body {
            self.stream_error(
                head.stream,
                Reason::PROTOCOL_ERROR,
                "DATA before the response's head",
            );
            return Ok(());
        }
        s.recv_window -= len as i64;
        if s.recv_window < 0 {
            self.stream_error(
                head.stream,
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the stream's window",
            );
            return Ok(());
        }
        s.resp.body_len += body.len() as u64;
        s.resp.data_frames += 1;
        if s.keep.body || s.keep.parts {
            s.resp.body.extend_from_slice(body);
        }
        if s.keep.parts && !end {
            if let Some(w) = &s.waker {
                w.wake_by_ref();
            }
        }
        if end {
            self.finish(idx, Ok(()));
        } else {
            s.recv_unacked += len as u32;
            if s.recv_unacked >= half && s.recv_unacked > 0 {
                frame::write_window_update(&mut self.out, head.stream, s.recv_unacked);
                s.recv_window += s.recv_unacked as i64;
                s.recv_unacked = 0;
            }
        }
        Ok(())
    }

    fn headers(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if head.stream == 0 {
            return Err(proto(Reason::PROTOCOL_ERROR, "HEADERS on stream 0"));
        }
        let mut fragment = unpad(head, payload)?;
        if head.flags & flag::PRIORITY != 0 {
            if fragment.len() < 5 {
                return Err(proto(
                    Reason::FRAME_SIZE_ERROR,
                    "HEADERS too short for its priority",
                ));
            }
            fragment = &fragment[5..];
        }
        self.block.clear();
        self.block.extend_from_slice(fragment);
        self.block_frames = 1;
        let end_stream = head.flags & flag::END_STREAM != 0;
        if head.flags & flag::END_HEADERS == 0 {
            self.partial = Some((head.stream, end_stream));
            return self.check_block_size();
        }
        self.header_block(head.stream, end_stream)
    }

    fn continuation(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        let Some((stream, end_stream)) = self.partial else {
            return Err(proto(
                Reason::PROTOCOL_ERROR,
                "CONTINUATION without HEADERS",
            ));
        };
        self.block.extend_from_slice(payload);
        self.block_frames += 1;
        self.check_block_size()?;
        if head.flags & flag::END_HEADERS != 0 {
            self.partial = None;
            return self.header_block(stream, end_stream);
        }
        Ok(())
    }

    fn check_block_size(&self) -> Result<(), ConnError> {
        if self.block.len() > self.cfg.max_header_block {
            return Err(proto(
                Reason::ENHANCE_YOUR_CALM,
                &format!(
                    "a header block over {} bytes (a CONTINUATION flood?)",
                    self.cfg.max_header_block
                ),
            ));
        }
        if self.block_frames > self.cfg.max_header_frames() {
            return Err(proto(
                Reason::ENHANCE_YOUR_CALM,
                &format!(
                    "a header block in more than {} frames (a CONTINUATION flood)",
                    self.cfg.max_header_frames()
                ),
            ));
        }
        Ok(())
    }

    /// A whole header block for `id`: decoded whatever becomes of it (HPACK's table must stay
    /// in step), then the response's head, a 1xx head to skip, or its trailers.
    fn header_block(&mut self, id: u32, end_stream: bool) -> Result<(), ConnError> {
        let idx = self.stream_of(id, "HEADERS on stream 0")?;
        let block = std::mem::take(&mut self.block);
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        let (keep, trailers) = match idx.and_then(|i| self.slab[i].as_ref()) {
            Some(s) => (s.keep.headers, s.phase == Phase::Body),
            None => (false, false),
        };
        let mut kept = Vec::new();
        let mut grpc_status = None;
        let mut grpc_message = None;
        let (mut list, max_list) = (0usize, self.cfg.max_header_list as usize);
        let decoded = self.decoder.decode(&block, |n, v| {
            list += n.len() + v.len() + 32;
            if list > max_list {
                // Decoded on for the table's sake, not kept.
                return;
            }
            if n == b":status" {
                status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                bad_status |= status.is_none() || v.len() != 3;
                return;
            }
            if n.starts_with(b"grpc-") {
                if n == b"grpc-status" {
                    grpc_status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                } else if n == b"grpc-message" {
                    grpc_message = Some(v.to_vec());
                }
            }
            if keep {
                kept.push((n.to_vec(), v.to_vec()));
            }
        });
        self.block = block;
        decoded.map_err(|e: HpackError| proto(Reason::COMPRESSION_ERROR, &e.to_string()))?;
        let Some(idx) = idx else {
            return Ok(());
        };
        if list > max_list {
            self.stream_error(
                id,
                Reason::ENHANCE_YOUR_CALM,
                "a header list over our SETTINGS_MAX_HEADER_LIST_SIZE",
            );
            return Ok(());
        }
        let s = self.slab[idx].as_mut().expect("an open stream");
        if grpc_status.is_some() {
            s.resp.grpc_status = grpc_status;
        }
        if grpc_message.is_some() {
            s.resp.grpc_message = grpc_message;
        }
        if trailers {
            if !end_stream {
                self.stream_error(id, Reason::PROTOCOL_ERROR, "trailers without END_STREAM");
                return Ok(());
            }
            s.resp.trailers = kept;
            self.finish(idx, Ok(()));
            return Ok(());
        }
        let status = match status {
            Some(st) if !bad_status => st,
            _ => {
                self.stream_error(
                    id,
                    Reason::PROTOCOL_ERROR,
                    "a response without a valid :status",
                );
                return Ok(());
            }
        };
        if (100..200).contains(&status) {
            if end_stream {
                self.stream_error(
                    id,
                    Reason::PROTOCOL_ERROR,
                    "a 1xx response ending the stream",
                );
            }
            return Ok(());
        }
        s.resp.status = status;
        s.resp.headers = kept;
        s.resp.times.head = self.now;
        s.phase = Phase::Body;
        if end_stream {
            self.finish(idx, Ok(()));
        }
        Ok(())
    }

    fn settings(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if head.stream != 0 {
            return Err(proto(Reason::PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if head.flags & flag::ACK != 0 {
            if head.len != 0 {
                return Err(proto(
                    Reason::FRAME_SIZE_ERROR,
                    "a SETTINGS ACK with a payload",
                ));
            }
            if !self.settings_acked {
                self.settings_acked = true;
                self.decoder.set_limit(self.cfg.header_table_size as usize);
            }
            return Ok(());
        }
        if !head.len.is_multiple_of(6) {
            return Err(proto(
                Reason::FRAME_SIZE_ERROR,
                "SETTINGS' size is not a multiple of 6",
            ));
        }
        for pair in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([pair[0], pair[1]]);
            let v = u32::from_be_bytes([pair[2], pair[3], pair[4], pair[5]]);
            match id {
                setting::HEADER_TABLE_SIZE if v < self.encoder_table => {
                    self.encoder_table = v;
                    self.size_update = Some(v);
                }
                setting::ENABLE_PUSH if v > 1 => {
                    return Err(proto(
                        Reason::PROTOCOL_ERROR,
                        "SETTINGS_ENABLE_PUSH above 1",
                    ));
                }
                setting::MAX_CONCURRENT_STREAMS => self.peer.max_concurrent = v,
                setting::INITIAL_WINDOW_SIZE => {
                    if v as i64 > frame::MAX_WINDOW {
                        return Err(proto(
                            Reason::FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                        ));
                    }
                    let delta = v as i64 - self.peer.initial_window as i64;
                    self.peer.initial_window = v;
                    for &i in self.ids.values() {
                        let s = self.slab[i].as_mut().expect("an open stream");
                        s.send_window += delta;
                        if s.send_window > frame::MAX_WINDOW {
                            return Err(proto(
                                Reason::FLOW_CONTROL_ERROR,
                                "a stream's window above 2^31-1",
                            ));
                        }
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME..=frame::MAX_MAX_FRAME).contains(&v) {
                        return Err(proto(
                            Reason::PROTOCOL_ERROR,
                            "SETTINGS_MAX_FRAME_SIZE out of range",
                        ));
                    }
                    self.peer.max_frame = v;
                }
                _ => {}
            }
        }
        frame::write_header(&mut self.out, 0, kind::SETTINGS, flag::ACK, 0);
        if !self.got_settings {
            self.got_settings = true;
            if let Some(w) = self.ping_waker.take() {
                w.wake();
            }
        }
        self.send_blocked();
        self.start_waiting();
        Ok(())
    }

    fn ping_frame(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if head.stream != 0 {
            return Err(proto(Reason::PROTOCOL_ERROR, "PING on a stream"));
        }
        if head.len != 8 {
            return Err(proto(Reason::FRAME_SIZE_ERROR, "PING's size is not 8"));
        }
        if head.flags & flag::ACK != 0 {
            self.pings_acked += 1;
            if let Some(w) = self.ping_waker.take() {
                w.wake();
            }
        } else {
            let mut p = [0u8; 8];
            p.copy_from_slice(payload);
            frame::write_ping(&mut self.out, true, p);
        }
        Ok(())
    }

    fn goaway_frame(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if head.stream != 0 {
            return Err(proto(Reason::PROTOCOL_ERROR, "GOAWAY on a stream"));
        }
        if head.len < 8 {
            return Err(proto(
                Reason::FRAME_SIZE_ERROR,
                "GOAWAY shorter than 8 bytes",
            ));
        }
        let last =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
        let code = Reason(u32::from_be_bytes([
            payload[4], payload[5], payload[6], payload[7],
        ]));
        let last = match self.goaway {
            Some((prev, _)) => last.min(prev),
            None => last,
        };
        self.goaway = Some((last, code));
        // Streams above `last` were not processed; requests not yet sent never will be.
        let above: Vec<usize> = self
            .ids
            .iter()
            .filter(|(&id, _)| id > last)
            .map(|(_, &i)| i)
            .collect();
        for i in above {
            self.finish(
                i,
                Err(StreamError::NotProcessed("above the server's GOAWAY")),
            );
        }
        for i in std::mem::take(&mut self.waiting) {
            self.finish(
                i,
                Err(StreamError::NotProcessed(
                    "the server sent GOAWAY before it was sent",
                )),
            );
        }
        if code != Reason::NO_ERROR && self.ids.is_empty() {
            let debug = String::from_utf8_lossy(&payload[8..]).into_owned();
            self.error = Some(ConnError::GoAway(code, debug));
        }
        Ok(())
    }

    fn rst(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if head.len != 4 {
            return Err(proto(
                Reason::FRAME_SIZE_ERROR,
                "RST_STREAM's size is not 4",
            ));
        }
        let Some(idx) = self.stream_of(head.stream, "RST_STREAM on stream 0")? else {
            return Ok(());
        };
        let code = Reason(u32::from_be_bytes([
            payload[0], payload[1], payload[2], payload[3],
        ]));
        let e = if code == Reason::REFUSED_STREAM {
            StreamError::NotProcessed("the server refused the stream")
        } else {
            StreamError::Reset(code)
        };
        self.finish(idx, Err(e));
        Ok(())
    }

    fn window_update(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnError> {
        if head.len != 4 {
            return Err(proto(
                Reason::FRAME_SIZE_ERROR,
                "WINDOW_UPDATE's size is not 4",
            ));
        }
        let inc =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
        if head.stream == 0 {
            if inc == 0 {
                return Err(proto(Reason::PROTOCOL_ERROR, "a WINDOW_UPDATE of 0"));
            }
            self.send_window += inc as i64;
            if self.send_window > frame::MAX_WINDOW {
                return Err(proto(
                    Reason::FLOW_CONTROL_ERROR,
                    "the connection's window above 2^31-1",
                ));
            }
            return Ok(());
        }
        let Some(idx) = self.stream_of(head.stream, "")? else {
            return Ok(());
        };
        if inc == 0 {
            self.stream_error(head.stream, Reason::PROTOCOL_ERROR, "a WINDOW_UPDATE of 0");
            return Ok(());
        }
        let s = self.slab[idx].as_mut().expect("an open stream");
        s.send_window += inc as i64;
        if s.send_window > frame::MAX_WINDOW {
            self.stream_error(
                head.stream,
                Reason::FLOW_CONTROL_ERROR,
                "a stream's window above 2^31-1",
            );
            return Ok(());
        }
        if !s.body.is_empty() && !self.blocked.contains(&idx) {
            self.blocked.push_back(idx);
        }
        Ok(())
    }

    /// Resets stream `id` with `reason`: a stream error.
    fn stream_error(&mut self, id: u32, reason: Reason, why: &'static str) {
        frame::write_rst(&mut self.out, id, reason);
        if let Some(&i) = self.ids.get(&id) {
            self.finish(i, Err(StreamError::Protocol(reason, why)));
        }
    }

    /// Writes the HEADERS of stream `idx` with `block`, and its body as far as it can.
    fn start(&mut self, idx: usize, block: &[u8]) {
        let id = self.next_id;
        self.next_id += 2;
        self.open += 1;
        self.ids.insert(id, idx);
        let (window, recv) = (
            self.peer.initial_window as i64,
            if self.settings_acked {
                self.cfg.stream_window as i64
            } else {
                self.cfg.stream_window.max(frame::DEFAULT_WINDOW) as i64
            },
        );
        self.started.push((idx, id));
        let s = self.slab[idx].as_mut().expect("a new stream");
        s.id = id;
        s.send_window = window;
        s.recv_window = recv;
        let end = if s.body.is_empty() && s.end {
            s.end_sent = true;
            flag::END_STREAM
        } else {
            0
        };
        let has_body = !s.body.is_empty();
        // A size update owed to the server's decoder goes first, in this block's first frame.
        let mut prefix = [0u8; 6];
        let mut plen = 0;
        if let Some(size) = self.size_update.take() {
            let mut v = Vec::with_capacity(6);
            crate::hpack::encode_int(&mut v, 0x20, 5, size as usize);
            plen = v.len();
            prefix[..plen].copy_from_slice(&v);
        }
        let max = self.peer.max_frame as usize;
        let total = plen + block.len();
        let first = total.min(max);
        let flags = end | if total <= max { flag::END_HEADERS } else { 0 };
        frame::write_header(&mut self.out, first, kind::HEADERS, flags, id);
        self.out.extend_from_slice(&prefix[..plen]);
        self.out.extend_from_slice(&block[..first - plen]);
        let mut at = first - plen;
        while at < block.len() {
            let n = (block.len() - at).min(max);
            let f = if at + n == block.len() {
                flag::END_HEADERS
            } else {
                0
            };
            frame::write_header(&mut self.out, n, kind::CONTINUATION, f, id);
            self.out.extend_from_slice(&block[at..at + n]);
            at += n;
        }
        if has_body && !self.send_body(idx) {
            self.blocked.push_back(idx);
        }
    }

    /// Writes as much of stream `idx`'s body as both windows allow; what is left waits in
    /// `blocked`.
    fn send_body(&mut self, idx: usize) -> bool {
        let max = self.peer.max_frame as i64;
        let s = self.slab[idx].as_mut().expect("a stream with body");
        while !s.body.is_empty() {
            let n = (s.body.len() as i64)
                .min(self.send_window)
                .min(s.send_window)
                .min(max);
            if n <= 0 {
                return false;
            }
            let n = n as usize;
            let end = if n == s.body.len() && s.end {
                s.end_sent = true;
                flag::END_STREAM
            } else {
                0
            };
            frame::write_header(&mut self.out, n, kind::DATA, end, s.id);
            self.out.extend_from_slice(&s.body[..n]);
            s.body.advance(n);
            self.send_window -= n as i64;
            s.send_window -= n as i64;
        }
        // A body ended with nothing more to send: an empty DATA frame carries END_STREAM.
        if s.end && !s.end_sent {
            frame::write_header(&mut self.out, 0, kind::DATA, flag::END_STREAM, s.id);
            s.end_sent = true;
        }
        true
    }

    /// Sends what the windows now allow of the bodies waiting for them, in order.
    fn send_blocked(&mut self) {
        let mut n = self.blocked.len();
        while n > 0 && self.send_window > 0 {
            n -= 1;
            let Some(idx) = self.blocked.pop_front() else {
                break;
            };
            let alive = self.slab[idx]
                .as_ref()
                .is_some_and(|s| s.result.is_none() && s.id != 0);
            if alive && !self.send_body(idx) {
                self.blocked.push_back(idx);
            }
        }
    }

    /// Starts waiting requests while the server's MAX_CONCURRENT_STREAMS allows.
    fn start_waiting(&mut self) {
        while self.open < self.peer.max_concurrent && self.is_usable() {
            let Some(idx) = self.waiting.pop_front() else {
                break;
            };
            let block = self.slab[idx].as_mut().and_then(|s| s.waiting.take());
            if let Some(block) = block {
                self.start(idx, &block);
            }
        }
    }

    /// Ends stream `idx` with `result` and wakes its task.
    fn finish(&mut self, idx: usize, result: Result<(), StreamError>) {
        let s = self.slab[idx].as_mut().expect("a stream");
        if s.result.is_some() {
            return;
        }
        // A response complete before our body was all sent (or ended): the rest is not wanted.
        if result.is_ok() && s.id != 0 && !s.end_sent {
            frame::write_rst(&mut self.out, s.id, Reason::CANCEL);
            s.body = Bytes::new();
        }
        s.result = Some(result);
        s.resp.times.end = self.now;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        self.close(idx);
        self.start_waiting();
    }

    /// Takes stream `idx` off the open streams.
    fn close(&mut self, idx: usize) {
        let s = self.slab[idx].as_ref().expect("a stream");
        if s.id != 0 && self.ids.remove(&s.id).is_some() {
            self.open -= 1;
        }
    }
}

/// Stream ids hashed by one multiplication: they are ours, odd and dense, so SipHash's
/// protection against chosen keys buys nothing (it was 5% of a gRPC call's instructions).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        // Our ids are odd: the low bit says nothing.
        self.0 = ((n >> 1) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        // The product's well-mixed high half where the table takes its bucket (the low bits).
        self.0.rotate_left(32)
    }
}

fn proto(reason: Reason, why: &str) -> ConnError {
    ConnError::Protocol(reason, why.to_string())
}

/// The payload of a DATA or HEADERS frame without its padding.
fn unpad(head: Head, payload: &[u8]) -> Result<&[u8], ConnError> {
    if head.flags & flag::PADDED == 0 {
        return Ok(payload);
    }
    let Some(&pad) = payload.first() else {
        return Err(proto(
            Reason::FRAME_SIZE_ERROR,
            "a padded frame without its pad length",
        ));
    };
    let pad = pad as usize;
    if pad >= payload.len() {
        return Err(proto(
            Reason::PROTOCOL_ERROR,
            "padding as long as the frame",
        ));
    }
    Ok(&payload[1..payload.len() - pad])
}
