//! HTTP/1.1 streamed answers written by the clock itself, the rest left to hyper.
//!
//! Each token of a streamed answer on hyper cost a wake of the connection's task, a poll of
//! hyper's dispatcher and body, a chunk formatted into a new buffer and a write: about 18 µs
//! of the testbed's CPU a token, so one core could not keep 1,000 streams (88,000 tokens a
//! second) on time. Here a connection's task reads requests; a completion asked with
//! `stream: true` (the load's every request) is answered by a [`Stream`] handed to the
//! server's clock, whose task writes each token when it is due straight to the socket, the
//! chunk's bytes copied from the answer's [`Frames`] into the clock's one buffer. Whatever
//! else comes (HTTP/2's preface, a request without `content-length`, with `expect`,
//! `upgrade` or `connection: close`, one not streamed, a bad one, another path) is served by
//! hyper for the rest of the connection, the bytes read so far replayed to it ([`Rewind`]),
//! so those answers stay hyper's.
//!
//! A request is read with the instant it reached the machine, as the kernel stamped its last
//! segment (`SO_TIMESTAMPNS`), and its TTFT runs from there: at 1,000 streams the testbed's
//! core is mostly writing tokens, and a request that waited for it to be read would otherwise
//! get a longer TTFT than programmed, a wait the client measures and the testbed does not own.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::StatusCode;
use nix::sys::socket::{self, sockopt, ControlMessageOwned, MsgFlags};
use rand::rngs::SmallRng;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit};

use super::body::Frames;
use super::config::{Fault, Spread};
use super::{draw, error_body, on_hyper, read_completion, truth, Drawn, State, MAX_REQUEST};
use crate::Api;

/// The longest request head read before leaving the connection to hyper.
const MAX_HEAD: usize = 64 * 1024;

/// Bytes held for a client that does not read; past them it is dropped.
const MAX_PENDING: usize = 1024 * 1024;

/// A connection shared by its task (reading requests) and its answer's stream (writing).
pub(crate) struct Conn {
    tcp: TcpStream,
    /// What a write could not hand the socket at once, which the task writes when it can.
    pending: Mutex<Vec<u8>>,
    flush: Notify,
    /// The client went away: the stream ends at its next token.
    gone: AtomicBool,
}

impl Conn {
    /// Writes `bytes` now, or keeps what the socket did not take for the connection's task.
    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        if self.gone.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::ConnectionAborted.into());
        }
        let mut pending = match self.pending.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut rest = bytes;
        if pending.is_empty() {
            match self.tcp.try_write(bytes) {
                Ok(n) => rest = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if rest.is_empty() {
                return Ok(());
            }
            self.flush.notify_one();
        }
        if pending.len() + rest.len() > MAX_PENDING {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        pending.extend_from_slice(rest);
        Ok(())
    }

    /// Writes what is pending.
    async fn drain(&self) -> io::Result<()> {
        loop {
            {
                let mut pending = match self.pending.lock() {
                    Ok(p) => p,
                    Err(poisoned) => poisoned.into_inner(),
                };
                if pending.is_empty() {
                    return Ok(());
                }
                match self.tcp.try_write(&pending) {
                    Ok(n) => {
                        pending.drain(..n);
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            self.tcp.writable().await?;
        }
    }

    /// Reads more of the request stream into `buf`: how many bytes (0 at its end), and when
    /// the last of them reached the machine, if the kernel said ([`stamp_arrivals`]).
    async fn read(&self, buf: &mut Vec<u8>) -> io::Result<(usize, Option<Instant>)> {
        loop {
            self.tcp.readable().await?;
            match self
                .tcp
                .try_io(Interest::READABLE, || recv_stamped(&self.tcp, buf))
            {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
            }
        }
    }
}

/// Asks the kernel to stamp what `tcp` receives with the time it arrived (`SO_TIMESTAMPNS`),
/// so that a request's TTFT runs from its arrival, not from when the testbed, busy writing
/// other streams' tokens, came to read it.
fn stamp_arrivals(tcp: &TcpStream) {
    // Without it a request's arrival is the instant it is read, as on hyper's path.
    let _ = socket::setsockopt(tcp, sockopt::ReceiveTimestampns, &true);
}

/// One `recvmsg` into `buf`'s end: the bytes read, and the arrival of the last segment among
/// them (the kernel's realtime stamp, taken back to the monotonic clock by its age now).
fn recv_stamped(tcp: &TcpStream, buf: &mut Vec<u8>) -> io::Result<(usize, Option<Instant>)> {
    let had = buf.len();
    buf.resize(had + 4096, 0);
    let mut space = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let read = {
        let mut iov = [io::IoSliceMut::new(&mut buf[had..])];
        socket::recvmsg::<()>(
            tcp.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_DONTWAIT,
        )
        .map(|msg| {
            let stamp = msg.cmsgs().ok().and_then(|mut c| {
                c.find_map(|m| match m {
                    ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
                    _ => None,
                })
            });
            (msg.bytes, stamp)
        })
    };
    let (n, stamp) = match read {
        Ok(read) => read,
        Err(e) => {
            buf.truncate(had);
            return Err(e.into());
        }
    };
    buf.truncate(had + n);
    let arrived = stamp.and_then(|ts| {
        let at = UNIX_EPOCH + Duration::from(ts);
        let age = SystemTime::now()
            .duration_since(at)
            .unwrap_or(Duration::ZERO);
        Instant::now().checked_sub(age)
    });
    Ok((n, arrived))
}

/// How a stream ended, told to its connection's task.
enum Ending {
    /// Every token and the end written: the next request may come.
    Done,
    /// The fault `cut`: the connection closes without the chunked coding's last chunk.
    Cut,
    /// The fault `stall`: nothing more is written, the connection held until the client
    /// closes it, and the answer's place with it.
    Stall(Option<OwnedSemaphorePermit>),
}

/// An answer streamed over HTTP/1.1: token `k` due at its TTFT plus the gaps of tokens
/// `1..=k` (an absolute schedule, so lateness never accumulates), written by the clock.
pub(crate) struct Stream {
    // Dropped before `done`, so the connection's task is the socket's last owner when told.
    conn: Arc<Conn>,
    due: Instant,
    frames: Frames,
    rng: SmallRng,
    itl: Spread<Duration>,
    tokens: u32,
    sent: u32,
    fault: Option<Fault>,
    /// The answer's place among those generated at once.
    slot: Option<OwnedSemaphorePermit>,
    done: oneshot::Sender<Ending>,
}

impl Stream {
    /// When the next token is due.
    pub(crate) fn due(&self) -> Instant {
        self.due
    }

    /// Writes the token due into `out` and to the socket; the stream back if more are to come.
    pub(crate) fn write(mut self: Box<Self>, out: &mut Vec<u8>) -> Option<Box<Self>> {
        match self.fault {
            Some(Fault::Cut(n)) if self.sent >= n => return self.end(Ending::Cut),
            Some(Fault::Stall(n)) if self.sent >= n => {
                let slot = self.slot.take();
                return self.end(Ending::Stall(slot));
            }
            _ => {}
        }
        let k = self.sent;
        let last = k + 1 >= self.tokens;
        out.clear();
        chunk_size(out, self.frames.len(k, last));
        self.frames.put(out, k, last);
        out.extend_from_slice(b"\r\n");
        if last {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        // A failed write drops the stream: its task finds the connection gone.
        self.conn.send(out).ok()?;
        self.sent += 1;
        if last {
            return self.end(Ending::Done);
        }
        self.due += self.itl.draw(&mut self.rng);
        Some(self)
    }

    fn end(self: Box<Self>, how: Ending) -> Option<Box<Self>> {
        let Stream {
            conn, done, slot, ..
        } = *self;
        // The socket and the place go before the task hears: the next request finds both.
        drop((conn, slot));
        let _ = done.send(how);
        None
    }
}

/// The chunked coding's size line.
fn chunk_size(out: &mut Vec<u8>, n: usize) {
    let digits = (usize::BITS - n.leading_zeros()).div_ceil(4).max(1);
    for d in (0..digits).rev() {
        out.push(b"0123456789abcdef"[(n >> (4 * d)) & 0xf]);
    }
    out.extend_from_slice(b"\r\n");
}

/// A request head read, or not yet.
enum Head {
    /// More bytes are needed.
    Partial,
    /// Not one for this path: hyper's.
    Other,
    /// A completion whose head is `head` bytes and body `body` bytes, all in the buffer.
    Completion { api: Api, head: usize, body: usize },
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

/// Reads a request head at the start of `buf`.
fn head(buf: &[u8]) -> Head {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if buf.len() > MAX_HEAD || buf.starts_with(b"PRI ") {
            Head::Other
        } else {
            Head::Partial
        };
    };
    let mut lines = buf[..end].split(|&b| b == b'\n').map(trim);
    let api = match lines.next() {
        Some(b"POST /v1/chat/completions HTTP/1.1") => Api::Chat,
        Some(b"POST /v1/completions HTTP/1.1") => Api::Completions,
        _ => return Head::Other,
    };
    let mut length = None;
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Head::Other;
        };
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            match n {
                Some(n) if length.is_none() && n <= MAX_REQUEST => length = Some(n),
                _ => return Head::Other,
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"expect")
            || name.eq_ignore_ascii_case(b"upgrade")
            || (name.eq_ignore_ascii_case(b"connection")
                && !value.eq_ignore_ascii_case(b"keep-alive"))
        {
            return Head::Other;
        }
    }
    let Some(body) = length else {
        return Head::Other;
    };
    let head = end + 4;
    if buf.len() < head + body {
        return Head::Partial;
    }
    Head::Completion { api, head, body }
}

/// Serves a connection: its streamed completions here, the rest on hyper.
pub(crate) async fn connection(tcp: TcpStream, state: Arc<State>) {
    // Tokens are small writes: without it, Nagle's algorithm holds one back for the ACK of
    // the one before, and a gap of 10 ms reads as 40.
    let _ = tcp.set_nodelay(true);
    let conn = Arc::new(Conn {
        tcp,
        pending: Mutex::new(Vec::new()),
        flush: Notify::new(),
        gone: AtomicBool::new(false),
    });
    stamp_arrivals(&conn.tcp);
    let mut buf = Vec::with_capacity(4096);
    // When the last bytes read reached the machine, as the kernel stamped them.
    let mut stamp = None;
    loop {
        let (api, head, body) = loop {
            match self::head(&buf) {
                Head::Partial => {}
                Head::Other => return to_hyper(conn, buf, state).await,
                Head::Completion { api, head, body } => break (api, head, body),
            }
            match conn.read(&mut buf).await {
                Ok((1.., at)) => stamp = at,
                _ => return,
            }
        };
        // The request's arrival: its last bytes' stamp, or now where the kernel gave none.
        let read = Instant::now();
        let arrived = stamp.filter(|&at| at <= read).unwrap_or(read);
        state.clock.read(read - arrived);
        let (ask, words) = match read_completion(api, &buf[head..head + body]) {
            Ok((ask, words)) if ask.stream == Some(true) => (ask, words),
            _ => return to_hyper(conn, buf, state).await,
        };
        let drawn = draw(&state, api, &ask, words);
        buf.drain(..head + body);
        let Drawn {
            i,
            shape,
            rng,
            ttft,
            tokens,
            fault,
        } = match drawn {
            Ok(drawn) => drawn,
            Err(status) => {
                if conn.send(&error_answer(status)).is_err() || conn.drain().await.is_err() {
                    return;
                }
                continue;
            }
        };
        // A place among the answers generated at once (see `handle`): the TTFT runs from the
        // arrival if one is free, else from when one was given. The semaphore is never closed.
        let (slot, began) = match &state.slots {
            Some(slots) => match slots.clone().try_acquire_owned() {
                Ok(slot) => (Some(slot), arrived),
                Err(_) => (slots.clone().acquire_owned().await.ok(), Instant::now()),
            },
            None => (None, arrived),
        };
        let mut answer = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
             transfer-encoding: chunked\r\n",
        );
        for (name, value) in truth(i, ttft, tokens, began - arrived) {
            answer.push_str(&format!("{name}: {value}\r\n"));
        }
        answer.push_str("\r\n");
        if conn.send(answer.as_bytes()).is_err() {
            return;
        }
        let (done, mut ended) = oneshot::channel();
        state.clock.write(Box::new(Stream {
            conn: conn.clone(),
            due: began + ttft,
            frames: Frames::new(&shape, tokens),
            rng,
            itl: state.cfg.itl,
            tokens,
            sent: 0,
            fault,
            slot,
            done,
        }));
        let how = loop {
            tokio::select! {
                how = &mut ended => break how,
                () = conn.flush.notified() => {
                    if conn.drain().await.is_err() {
                        conn.gone.store(true, Ordering::Relaxed);
                        return;
                    }
                }
                read = conn.read(&mut buf) => {
                    // The client closed (or sent more than a next request may be).
                    match read {
                        Ok((1.., at)) if buf.len() <= MAX_HEAD + MAX_REQUEST => stamp = at,
                        _ => {
                            conn.gone.store(true, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            }
        };
        if conn.drain().await.is_err() {
            return;
        }
        match how {
            Ok(Ending::Done) => {}
            // A write failed, or the fault cut the stream: the connection closes.
            Err(_) | Ok(Ending::Cut) => return,
            Ok(Ending::Stall(_slot)) => {
                while matches!(conn.read(&mut buf).await, Ok((1.., _))) {
                    buf.clear();
                }
                return;
            }
        }
    }
}

/// An error answer over HTTP/1.1, as hyper's `error` would write it.
fn error_answer(status: StatusCode) -> Vec<u8> {
    let body = error_body(status, super::FAULT_STATUS);
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

/// Hands the connection to hyper, with what was read of it and not answered.
async fn to_hyper(conn: Arc<Conn>, buf: Vec<u8>, state: Arc<State>) {
    // No stream holds it between requests (`Stream::end` drops its share before telling).
    let Ok(conn) = Arc::try_unwrap(conn) else {
        return;
    };
    let io = Rewind {
        read: buf,
        at: 0,
        tcp: conn.tcp,
    };
    on_hyper(io, state).await;
}

/// A socket whose first bytes read are some already read.
struct Rewind {
    read: Vec<u8>,
    at: usize,
    tcp: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.at < this.read.len() {
            let n = buf.remaining().min(this.read.len() - this.at);
            buf.put_slice(&this.read[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_are_hex() {
        for (n, want) in [
            (0, "0"),
            (9, "9"),
            (10, "a"),
            (255, "ff"),
            (256, "100"),
            (4097, "1001"),
        ] {
            let mut out = Vec::new();
            chunk_size(&mut out, n);
            assert_eq!(out, format!("{want}\r\n").into_bytes());
        }
    }

    #[test]
    fn heads_are_read_or_left_to_hyper() {
        let ok = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        assert!(matches!(
            head(ok),
            Head::Completion {
                api: Api::Chat,
                head: 66,
                body: 2
            }
        ));
        assert!(matches!(head(&ok[..60]), Head::Partial));
        assert!(matches!(head(&ok[..67]), Head::Partial));
        let other: [&[u8]; 5] = [
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"GET /v1/models HTTP/1.1\r\n\r\n",
            b"POST /v1/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
            b"POST /v1/completions HTTP/1.1\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            b"POST /v1/completions HTTP/1.0\r\ncontent-length: 2\r\n\r\n{}",
        ];
        for h in other {
            assert!(
                matches!(head(h), Head::Other),
                "{}",
                String::from_utf8_lossy(h)
            );
        }
    }
}
