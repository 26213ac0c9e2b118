//! HTTP/2 connections for gRPC: TCP (counted by throng-net) and TLS, then the h2 crate's client
//! for the load's calls (see `call.rs`), or hyper's with tonic's `Grpc` over it for reflection; a
//! worker's connections are shared by its sessions.
//!
//! Why not tonic's `Channel`: it puts a tower `Buffer` (a task and a channel hop per call) and a
//! reconnecting layer between the caller and the connection; the sessions of a worker already
//! live on one thread, so they open streams on the connection themselves, and the bytes are
//! counted on the same socket type as HTTP's.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use throng_core::{ErrorClass, Outcome};
use throng_net::{message, Counters, SharedConn, Stream};
use tokio::time::timeout;
use tonic::body::Body;
use tonic::client::Grpc;

use crate::classify::classify;
use crate::coalesce::Coalesce;

/// hyper's HTTP/2 sender as the tower service tonic's client calls.
#[derive(Clone)]
pub struct H2(http2::SendRequest<Body>);

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<Incoming>, hyper::Error>> + Send>>;

impl tower_service::Service<http::Request<Body>> for H2 {
    type Response = http::Response<Incoming>;
    type Error = hyper::Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> ResponseFuture {
        Box::pin(self.0.send_request(req))
    }
}

/// A gRPC client on one connection, and the connection's byte counts.
#[derive(Clone)]
pub struct Client {
    /// tonic's client over the connection.
    pub grpc: Grpc<H2>,
    /// The connection's bytes.
    pub counters: Arc<Counters>,
}

/// How to reach the server: addresses, TLS, the origin of requests' URIs.
pub struct Connector {
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) authority: String,
    pub(crate) origin: Uri,
    pub(crate) tls: Option<throng_net::TlsTarget>,
    pub(crate) connect_timeout: Duration,
}

impl Connector {
    /// Opens the socket, TCP and TLS (ALPN h2), counted.
    async fn open(&self) -> Result<(Stream, Arc<Counters>), Outcome> {
        let tls = self.tls.as_ref();
        throng_net::open(&self.addrs, &self.authority, tls, self.connect_timeout).await
    }

    /// Runs `work` within the connect timeout.
    async fn within<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, Outcome>>,
    ) -> Result<T, Outcome> {
        let ct = self.connect_timeout;
        match timeout(ct, work).await {
            Ok(r) => r,
            Err(_) => Err(Outcome::failed(
                ErrorClass::Timeout,
                format!("connect to {} timed out after {ct:?}", self.authority),
            )),
        }
    }

    /// A connection with tonic's client on hyper's HTTP/2 (reflection's questions).
    pub async fn connect(&self) -> Result<Client, Outcome> {
        self.within(async {
            let (stream, counters) = self.open().await?;
            let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
            tokio::spawn(conn);
            Ok(Client {
                grpc: Grpc::with_origin(H2(sender), self.origin.clone()),
                counters,
            })
        })
        .await
    }

    /// A connection for the load's calls, on the h2 crate directly: TCP, TLS and the HTTP/2
    /// handshake, within the connect timeout; a failure is the outcome of the call that needed
    /// it.
    pub async fn connect_h2(&self) -> Result<H2Conn, Outcome> {
        self.within(async {
            let (stream, counters) = self.open().await?;
            // hyper's client windows (5 MB a connection, 2 MB a stream): h2's 64 KiB default
            // would stall large server streams on round trips.
            let (sender, mut conn) = h2::client::Builder::new()
                .initial_window_size(2 * 1024 * 1024)
                .initial_connection_window_size(5 * 1024 * 1024)
                .handshake::<_, Bytes>(Coalesce::new(stream))
                .await
                .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
            let ping = conn.ping_pong();
            let closed = Arc::new(AtomicBool::new(false));
            let flag = closed.clone();
            tokio::spawn(async move {
                let _ = conn.await;
                flag.store(true, Ordering::Relaxed);
            });
            // The client's half of the handshake is only written: a PING answered is the
            // server speaking HTTP/2. Without it, a server of another protocol (an HTTP/1.1
            // server's 400, garbage) failed the first call instead, the connection counted as
            // made, and every call reconnected at once: 3,020 calls in 1 s from 2 users
            // against an HTTP/1.1-only server.
            if let Some(mut ping) = ping {
                ping.ping(h2::Ping::opaque())
                    .await
                    .map_err(|e| not_http2(&self.authority, &e, &counters))?;
            }
            Ok(H2Conn {
                sender,
                counters,
                closed,
            })
        })
        .await
    }
}

/// A connection whose HTTP/2 handshake failed. A peer that answered something else than
/// HTTP/2 (nginx's 400 to the preface, garbage) does not speak the protocol, whether h2 read
/// its bytes or met the close after them first: class `protocol`. A peer that said nothing
/// keeps the class of how it failed: a reset or a close (hyper's HTTP/1.1-only server closes
/// on the preface without a word, which a reset with linger 0 cannot be told from), a timeout.
/// Either way it is a failed connect, and users back off.
fn not_http2(authority: &str, e: &h2::Error, counters: &Counters) -> Outcome {
    let class = match classify(e) {
        ErrorClass::Reset | ErrorClass::Other if counters.read().1 > 0 => ErrorClass::Protocol,
        c => c,
    };
    let said = message(e);
    match class {
        ErrorClass::Protocol => Outcome::failed(
            class,
            format!("{authority} does not answer as an HTTP/2 server: {said}"),
        ),
        _ => Outcome::failed(class, said),
    }
}

/// One HTTP/2 connection of the load (the h2 crate's sender) and its byte counts.
#[derive(Clone)]
pub struct H2Conn {
    /// Opens streams.
    pub sender: h2::client::SendRequest<Bytes>,
    /// The connection's bytes.
    pub counters: Arc<Counters>,
    /// Set when the connection ended.
    closed: Arc<AtomicBool>,
}

impl H2Conn {
    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// One HTTP/2 connection shared by several sessions of a worker thread.
#[derive(Default)]
pub struct Slot {
    conn: SharedConn<H2Conn>,
    /// Counter values already attributed to calls.
    seen: Cell<(u64, u64)>,
    /// One clone per session on this connection (see [`Pool::join`]).
    pub(crate) seats: Rc<()>,
}

impl Slot {
    /// The connection's client, opened if there is none or it closed; sessions waiting while
    /// another opens it share the result, a failure too (see [`SharedConn`]).
    pub async fn client(&self, connector: &Connector) -> Result<H2Conn, Outcome> {
        let open = || async {
            let c = connector.connect_h2().await?;
            self.seen.set((0, 0));
            Ok(c)
        };
        self.conn.get(|c| !c.is_closed(), open).await
    }

    /// The bytes not yet attributed to a call: streams share the connection, so each call takes
    /// what crossed it since the last; totals are exact, the split between calls close.
    pub fn take_bytes(&self, counters: &Counters) -> (u64, u64) {
        let (s1, r1) = counters.read();
        let (s0, r0) = self.seen.replace((s1, r1));
        (s1.saturating_sub(s0), r1.saturating_sub(r0))
    }
}

/// One worker's connections: each shared by up to `streams` sessions, or a fixed number of them
/// with the sessions spread evenly (`--connections`).
#[derive(Default)]
pub struct Pool {
    slots: RefCell<Vec<Rc<Slot>>>,
    /// This worker's share of `--connections`, if set.
    fixed: Option<usize>,
}

impl Pool {
    /// A pool of `n` connections (at least one), opened as sessions join, each new session on
    /// the one with the fewest.
    pub fn fixed(n: usize) -> Self {
        Pool {
            slots: RefCell::default(),
            fixed: Some(n.max(1)),
        }
    }

    /// Worker `index`'s pool of `workers`: its share of `connections` in all (`N / workers`,
    /// plus one if `index < N % workers`; at least one), or one connection per `--streams`
    /// sessions without.
    pub fn share(connections: Option<usize>, index: usize, workers: usize) -> Self {
        match connections {
            Some(total) => {
                let n = workers.max(1);
                Pool::fixed(total / n + usize::from(index < total % n))
            }
            None => Pool::default(),
        }
    }

    /// The connection a new session joins: the first with a free seat, or a new one (with a
    /// fixed number: a new one until there are that many, then the one with the fewest
    /// sessions). A session that ends frees its seat, so a ramp that retires and restarts
    /// users opens no new connections.
    pub fn join(&self, streams: usize) -> Rc<Slot> {
        let seated = |s: &Rc<Slot>| Rc::strong_count(&s.seats) - 1;
        let mut slots = self.slots.borrow_mut();
        let free = match self.fixed {
            Some(n) if slots.len() >= n => slots.iter().min_by_key(|s| seated(s)),
            Some(_) => None,
            None => slots.iter().find(|s| seated(s) < streams),
        };
        if let Some(slot) = free {
            return slot.clone();
        }
        let slot = Rc::new(Slot::default());
        slots.push(slot.clone());
        slot
    }

    /// Connections this pool has made room for.
    pub fn connections(&self) -> usize {
        self.slots.borrow().len()
    }
}
