//! The client over the state machine: one connection multiplexing the requests of many users
//! of one worker thread.
//!
//! The engine runs each worker's users as local tasks of one single-threaded runtime, so a
//! connection's state is an `Rc<RefCell<Conn>>` that every user's request borrows for the few
//! instructions it takes to open a stream or take a response (never across an `.await`): no
//! lock, no atomic, no channel. One task per *connection* (not per stream) owns the socket: it
//! writes what the users' requests put in the connection's one output buffer, all streams'
//! frames in one system call, and reads and parses what arrives, waking the tasks whose
//! responses completed. A request wakes it only when it is not already due to run, so the
//! requests that a batch of responses lets the users send go out together.
//!
//! Needs a `tokio::task::LocalSet` (the engine's workers run in one): the connection's task is
//! spawned with `spawn_local`.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use throng_core::{ErrorClass, Outcome};
use throng_net::{Counters, Opened, Stream, TlsTarget};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::conn::{Config, Conn, ConnError, Key, Request, Response, StreamError};

/// The connection's state, shared by its requests and its task.
struct Inner {
    conn: RefCell<Conn>,
    /// The connection task's waker, and whether it is already due to run.
    task: RefCell<Option<Waker>>,
    scheduled: Cell<bool>,
    /// The class of the I/O error that ended the connection (`reset` for an end of stream).
    io_class: Cell<Option<ErrorClass>>,
    counters: Arc<Counters>,
}

impl Inner {
    /// Makes the connection's task run (to write what the requests left).
    fn kick(&self) {
        if !self.scheduled.replace(true) {
            if let Some(w) = self.task.borrow().as_ref() {
                w.wake_by_ref();
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last client went: the task ends and the socket closes.
        if let Some(w) = self.task.get_mut().take() {
            w.wake();
        }
    }
}

/// One HTTP/2 connection; clones share it.
#[derive(Clone)]
pub struct Client {
    inner: Rc<Inner>,
}

impl Client {
    /// Starts HTTP/2 on an open transport (TCP by prior knowledge, or TLS that chose `h2`):
    /// writes the preface and our SETTINGS, spawns the connection's task on the current
    /// `LocalSet`, and returns once the server's SETTINGS came (it speaks HTTP/2). The caller
    /// bounds the time.
    pub async fn handshake<T>(
        io: T,
        counters: Arc<Counters>,
        cfg: Config,
    ) -> Result<Client, ConnError>
    where
        T: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        Client::handshake_classified(io, counters, cfg)
            .await
            .map_err(|(e, _)| e)
    }

    /// [`Client::handshake`], a failure with the class of the I/O error that ended the
    /// connection, if one did (a reset is not a server of another protocol).
    async fn handshake_classified<T>(
        io: T,
        counters: Arc<Counters>,
        cfg: Config,
    ) -> Result<Client, (ConnError, Option<ErrorClass>)>
    where
        T: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        let inner = Rc::new(Inner {
            conn: RefCell::new(Conn::new(cfg)),
            task: RefCell::new(None),
            scheduled: Cell::new(false),
            io_class: Cell::new(None),
            counters,
        });
        let driver = Driver {
            inner: Rc::downgrade(&inner),
            io,
            wbuf: Vec::with_capacity(16 * 1024),
            wpos: 0,
            flush: false,
            rbuf: BytesMut::with_capacity(16 * 1024),
            timer: None,
            armed: None,
        };
        tokio::task::spawn_local(driver);
        poll_fn(|cx| {
            let mut c = inner.conn.borrow_mut();
            if let Some(e) = c.error() {
                return Poll::Ready(Err((e.clone(), inner.io_class.get())));
            }
            if c.got_settings() {
                return Poll::Ready(Ok(()));
            }
            c.wait_ping(cx);
            Poll::Pending
        })
        .await?;
        Ok(Client { inner })
    }

    /// Sends a request and waits for its whole response. Dropping the future (a timeout)
    /// resets the stream with CANCEL.
    pub async fn send(&self, req: Request<'_>) -> Result<Response, StreamError> {
        let key = self.begin(req, true, None)?;
        let guard = Pending {
            inner: &self.inner,
            key: Some(key),
        };
        wait(guard).await
    }

    /// [`Client::send`] with a deadline (on tokio's clock, `tokio::time::Instant::into_std`):
    /// past it the request fails with [`StreamError::TimedOut`] and its stream is reset. The
    /// connection's task watches every request's deadline with one timer, so a request's
    /// timeout costs no timer entry of its own (tokio's, armed and cleared per request, cost
    /// `throng run --http2` 680 of a request's 7,370 instructions by callgrind).
    pub async fn send_by(&self, req: Request<'_>, at: Instant) -> Result<Response, StreamError> {
        let key = self.begin(req, true, Some(at))?;
        let guard = Pending {
            inner: &self.inner,
            key: Some(key),
        };
        wait(guard).await
    }

    /// Sends a request whose response is read as it arrives (a server stream): its
    /// [`Streaming::data`] hands out each part of the body as it comes, [`Streaming::end`] the
    /// rest. The request's `keep.parts` is set.
    pub fn send_streaming(&self, req: Request<'_>) -> Result<Streaming, StreamError> {
        self.streaming(req, true, None)
    }

    /// Starts a request whose body is still coming (gRPC's client and bidi streams):
    /// `req.body` is its first part, [`Streaming::send`] sends the rest; the response is read
    /// as it arrives, as with [`Client::send_streaming`].
    pub fn open_stream(&self, req: Request<'_>) -> Result<Streaming, StreamError> {
        self.streaming(req, false, None)
    }

    /// [`Client::send_streaming`] (`whole`: the body is all in `req`) or
    /// [`Client::open_stream`] with a deadline for the whole request, as [`Client::send_by`]'s:
    /// past it, [`Streaming::data`] ends, [`Streaming::end`] and [`Streaming::send`] fail with
    /// [`StreamError::TimedOut`], and the stream is reset.
    pub fn stream_by(
        &self,
        req: Request<'_>,
        whole: bool,
        at: Instant,
    ) -> Result<Streaming, StreamError> {
        self.streaming(req, whole, Some(at))
    }

    fn streaming(
        &self,
        mut req: Request<'_>,
        whole: bool,
        at: Option<Instant>,
    ) -> Result<Streaming, StreamError> {
        req.keep.parts = true;
        let key = self.begin(req, whole, at)?;
        Ok(Streaming {
            inner: self.inner.clone(),
            key: Some(key),
        })
    }

    /// Opens the request's stream (`whole`: its body is all in `req`; else more comes by
    /// [`Streaming::send`]), with its deadline if it has one, and wakes the connection's task
    /// to write it (and to arm its timer).
    fn begin(
        &self,
        req: Request<'_>,
        whole: bool,
        at: Option<Instant>,
    ) -> Result<Key, StreamError> {
        let key = {
            let mut c = self.inner.conn.borrow_mut();
            let key = match whole {
                true => c.open(req)?,
                false => c.open_partial(req)?,
            };
            if let Some(at) = at {
                c.set_deadline(&key, at);
            }
            key
        };
        self.inner.kick();
        Ok(key)
    }

    /// Sends a PING and waits for its answer.
    pub async fn ping(&self) -> Result<(), ConnError> {
        let before = {
            let mut c = self.inner.conn.borrow_mut();
            c.ping(*b"throng\0\0");
            c.pings_acked()
        };
        self.inner.kick();
        poll_fn(|cx| {
            let mut c = self.inner.conn.borrow_mut();
            if let Some(e) = c.error() {
                return Poll::Ready(Err(e.clone()));
            }
            if c.pings_acked() > before {
                return Poll::Ready(Ok(()));
            }
            c.wait_ping(cx);
            Poll::Pending
        })
        .await
    }

    /// Whether a new request may go on this connection.
    pub fn is_usable(&self) -> bool {
        self.inner.conn.borrow().is_usable()
    }

    /// Whether the connection is over.
    pub fn is_closed(&self) -> bool {
        self.inner.conn.borrow().is_closed()
    }

    /// Streams open now.
    pub fn open_streams(&self) -> u32 {
        self.inner.conn.borrow().open_streams()
    }

    /// The connection's byte counts.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.inner.counters
    }

    /// The class of a failed request: a stream the server did not process or reset, and a
    /// connection that ended, are `reset` (or the class of the I/O error that ended it: `tls`,
    /// `timeout`); anything that is not HTTP/2 as it should be is `protocol`.
    pub fn classify(&self, e: &StreamError) -> ErrorClass {
        match e {
            StreamError::NotProcessed(_) | StreamError::Reset(_) => ErrorClass::Reset,
            StreamError::TimedOut => ErrorClass::Timeout,
            StreamError::Protocol(..) => ErrorClass::Protocol,
            StreamError::Conn(c) => match c {
                ConnError::NotHttp2 | ConnError::Protocol(..) => ErrorClass::Protocol,
                ConnError::GoAway(..) => ErrorClass::Reset,
                ConnError::Closed(_) => self.inner.io_class.get().unwrap_or(ErrorClass::Reset),
            },
        }
    }
}

/// A request whose response is read as it arrives; dropped before its end, its stream is
/// reset with CANCEL.
pub struct Streaming {
    inner: Rc<Inner>,
    key: Option<Key>,
}

impl Streaming {
    /// Sends more of the request's body (of a request from [`Client::open_stream`]), ending it
    /// with `end`; held until the windows allow.
    pub fn send(&self, data: Bytes, end: bool) -> Result<(), StreamError> {
        let key = self.key.as_ref().expect("until its end");
        self.inner.conn.borrow_mut().send_data(key, data, end)?;
        self.inner.kick();
        Ok(())
    }

    /// The response's status once its head came (0 before).
    pub fn status(&self) -> u16 {
        match &self.key {
            Some(key) => self.inner.conn.borrow().status(key),
            None => 0,
        }
    }

    /// When the last bytes read on the connection arrived: those of the part [`Streaming::data`]
    /// just gave.
    pub fn arrived(&self) -> Option<Instant> {
        self.inner.conn.borrow().arrived()
    }

    /// The body that arrived since the last call, or `None` once the response is complete.
    pub async fn data(&mut self) -> Option<BytesMut> {
        let key = self.key.as_ref()?;
        poll_fn(|cx| self.inner.conn.borrow_mut().poll_data(key, cx)).await
    }

    /// Waits for the end of the response: its status, headers, trailers and counts, and the
    /// part of its body not yet handed out.
    pub async fn end(mut self) -> Result<Response, StreamError> {
        let key = self.key.take().expect("until its end");
        let pending = Pending {
            inner: &self.inner,
            key: Some(key),
        };
        wait(pending).await
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.inner.conn.borrow_mut().cancel(key);
            self.inner.kick();
        }
    }
}

/// Waits for the response of a pending request.
async fn wait(mut guard: Pending<'_>) -> Result<Response, StreamError> {
    poll_fn(|cx| {
        let key = guard.key.as_ref().expect("until ready");
        let r = guard.inner.conn.borrow_mut().poll_response(key, cx);
        if r.is_ready() {
            guard.key = None;
        }
        r
    })
    .await
}

/// A request waiting for its response: cancelled if dropped before it is complete.
struct Pending<'a> {
    inner: &'a Inner,
    key: Option<Key>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.inner.conn.borrow_mut().cancel(key);
            self.inner.kick();
        }
    }
}

/// The connection's task: writes the output buffer, reads and parses what arrives.
struct Driver<T> {
    inner: Weak<Inner>,
    io: T,
    wbuf: Vec<u8>,
    wpos: usize,
    flush: bool,
    rbuf: BytesMut,
    /// The one timer of the requests' deadlines, and the deadline it is armed at.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: Option<Instant>,
}

impl<T: AsyncRead + AsyncWrite + Unpin> Driver<T> {
    fn fail(&self, inner: &Inner, e: &io::Error) {
        let class = throng_net::classify_io(e).unwrap_or(ErrorClass::Reset);
        inner.io_class.set(Some(class));
        inner
            .conn
            .borrow_mut()
            .fail(ConnError::Closed(throng_net::message(e)));
    }

    /// Arms the timer at the earliest request deadline and, when it fires, fails the requests
    /// past theirs (their RST_STREAM frames go with the next write).
    fn deadlines(&mut self, cx: &mut Context<'_>, inner: &Inner) {
        loop {
            let Some(next) = inner.conn.borrow().next_deadline() else {
                return;
            };
            match self.armed {
                // Armed earlier: on firing, the deadlines left are looked at again.
                Some(at) if at <= next => {}
                _ => {
                    let at = tokio::time::Instant::from_std(next);
                    match self.timer.as_mut() {
                        Some(t) => t.as_mut().reset(at),
                        None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
                    }
                    self.armed = Some(next);
                }
            }
            let (Some(timer), Some(fired)) = (self.timer.as_mut(), self.armed) else {
                return;
            };
            if timer.as_mut().poll(cx).is_pending() {
                return;
            }
            self.armed = None;
            // The deadline it was armed at has passed, whatever the clocks' rounding.
            let now = tokio::time::Instant::now().into_std().max(fired);
            inner.conn.borrow_mut().expire(now);
        }
    }

    /// Writes what is buffered; `Ok(true)` if anything was written.
    fn write(&mut self, cx: &mut Context<'_>, inner: &Inner) -> io::Result<bool> {
        let mut wrote = false;
        loop {
            if self.wpos == self.wbuf.len() {
                let mut conn = inner.conn.borrow_mut();
                if !self.wbuf.is_empty() {
                    // One read of the clock a write: the `send` time of the requests in it.
                    conn.written(Instant::now());
                }
                self.wbuf.clear();
                self.wpos = 0;
                conn.swap_out(&mut self.wbuf);
                drop(conn);
                if self.wbuf.is_empty() {
                    break;
                }
            }
            match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.wpos += n;
                    self.flush = true;
                    wrote = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(wrote),
            }
        }
        if self.flush {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.flush = false,
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {}
            }
        }
        Ok(wrote)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> Future for Driver<T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some(inner) = this.inner.upgrade() else {
            return Poll::Ready(());
        };
        {
            let mut task = inner.task.borrow_mut();
            match task.as_ref() {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *task = Some(cx.waker().clone()),
            }
        }
        inner.scheduled.set(false);
        this.deadlines(cx, &inner);
        loop {
            let mut progress = match this.write(cx, &inner) {
                Ok(wrote) => wrote,
                Err(e) => {
                    this.fail(&inner, &e);
                    return Poll::Ready(());
                }
            };
            if inner.conn.borrow().is_closed() {
                // Whatever is left to say (a GOAWAY) has been tried; the socket closes.
                return Poll::Ready(());
            }
            if this.rbuf.capacity() - this.rbuf.len() < 4096 {
                this.rbuf.reserve(16 * 1024);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut this.io), cx, &mut this.rbuf) {
                Poll::Ready(Ok(0)) => {
                    inner
                        .conn
                        .borrow_mut()
                        .fail(ConnError::Closed("the server closed the connection".into()));
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(_)) => {
                    let mut conn = inner.conn.borrow_mut();
                    // One read of the clock a read: when the heads and ends it brings arrived.
                    conn.read_at(Instant::now());
                    let r = conn.recv(&mut this.rbuf);
                    drop(conn);
                    if r.is_err() {
                        // Say GOAWAY if the socket takes it at once, then close.
                        let _ = this.write(cx, &inner);
                        return Poll::Ready(());
                    }
                    progress = true;
                }
                Poll::Ready(Err(e)) => {
                    this.fail(&inner, &e);
                    return Poll::Ready(());
                }
                Poll::Pending => {}
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
}

/// Where and how to open connections: addresses, TLS (offering ALPN `h2`) or HTTP/2 by prior
/// knowledge, the connect timeout, our settings.
#[derive(Clone)]
pub struct Target {
    /// The addresses to try in order.
    pub addrs: Vec<std::net::SocketAddr>,
    /// `host:port`, for messages.
    pub authority: String,
    /// TLS, whose configuration must offer `h2` in ALPN; `None`: h2c by prior knowledge.
    pub tls: Option<TlsTarget>,
    /// The bound on TCP connect, TLS handshake and HTTP/2 handshake, each.
    pub connect_timeout: Duration,
    /// Our settings.
    pub config: Config,
}

/// Opens a connection to `target`: TCP, TLS when asked (the server must choose `h2` by
/// ALPN), and the HTTP/2 handshake, each within the connect timeout. A failure is the outcome
/// of the request that needed the connection: `connect`, `tls`, `timeout`, or `protocol` for a
/// server that does not speak HTTP/2.
pub async fn connect(target: &Target) -> Result<Client, Outcome> {
    connect_timed(target).await.map(|(c, _)| c)
}

/// [`connect`], with how long the TCP connect and the TLS handshake took (a request's
/// `connect` and `tls` phases).
pub async fn connect_timed(target: &Target) -> Result<(Client, Opened), Outcome> {
    let (stream, counters, opened) = throng_net::open_timed(
        &target.addrs,
        &target.authority,
        target.tls.as_ref(),
        target.connect_timeout,
    )
    .await?;
    if let Stream::Tls(s) = &stream {
        if s.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(Outcome::failed(
                ErrorClass::Protocol,
                format!(
                    "{} did not choose h2 by ALPN in the TLS handshake",
                    target.authority
                ),
            ));
        }
    }
    let cfg = target.config.clone();
    match tokio::time::timeout(
        target.connect_timeout,
        Client::handshake_classified(stream, counters.clone(), cfg),
    )
    .await
    {
        Ok(Ok(c)) => Ok((c, opened)),
        // Closed at once, with nothing said: a server of another protocol (hyper's HTTP/1.1
        // server closes on the preface). Reset, it keeps the reset's class.
        Ok(Err((ConnError::Closed(m), None))) if counters.read().1 == 0 => Err(Outcome::failed(
            ErrorClass::Protocol,
            format!(
                "{} closed the connection without a word of HTTP/2: {m}",
                target.authority
            ),
        )),
        Ok(Err((e, io))) => {
            let class = match e {
                ConnError::Closed(_) => io.unwrap_or(ErrorClass::Reset),
                ConnError::GoAway(..) => ErrorClass::Reset,
                _ => ErrorClass::Protocol,
            };
            Err(Outcome::failed(class, format!("{}: {e}", target.authority)))
        }
        Err(_) => Err(Outcome::failed(
            ErrorClass::Timeout,
            format!(
                "{} did not answer as an HTTP/2 server within {:?}",
                target.authority, target.connect_timeout
            ),
        )),
    }
}
