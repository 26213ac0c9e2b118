//! HTTP/2 connections for gRPC: TCP (counted by throng-net) and TLS, hyper's HTTP/2 client, and
//! tonic's `Grpc` client over it; a worker's connections are shared by its sessions.
//!
//! Why hyper's client and not tonic's `Channel`: a `Channel` puts a tower `Buffer` (a task and a
//! channel hop per call) and a reconnecting layer between the caller and the connection; the
//! sessions of a worker already live on one thread, so they call hyper's `SendRequest` directly,
//! as the HTTP driver's HTTP/2 does, and the bytes are counted on the same socket type.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use throng_core::{ErrorClass, Outcome};
use throng_net::{message, CountedTcp, Counters, Stream};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::timeout;
use tonic::body::Body;
use tonic::client::Grpc;

use crate::classify::classify;

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
    /// The connection's sender, to see whether it closed.
    sender: http2::SendRequest<Body>,
}

/// How to reach the server: addresses, TLS, the origin of requests' URIs.
pub struct Connector {
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) authority: String,
    pub(crate) origin: Uri,
    pub(crate) tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    pub(crate) connect_timeout: Duration,
}

impl Connector {
    /// Opens a connection: TCP, TLS (ALPN h2) and the HTTP/2 handshake, within the connect
    /// timeout; a failure is the outcome of the call that needed it.
    pub async fn connect(&self) -> Result<Client, Outcome> {
        let ct = self.connect_timeout;
        let work = async {
            let mut last = None;
            let mut tcp = None;
            for addr in &self.addrs {
                match TcpStream::connect(addr).await {
                    Ok(s) => {
                        tcp = Some(s);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            let Some(tcp) = tcp else {
                let e = last.unwrap_or_else(|| std::io::Error::other("no address"));
                let m = format!("connect to {}: {e}", self.authority);
                return Err(Outcome::failed(ErrorClass::Connect, m));
            };
            let _ = tcp.set_nodelay(true);
            let counters = Arc::new(Counters::default());
            let counted = CountedTcp {
                tcp,
                counters: counters.clone(),
            };
            let stream = match &self.tls {
                None => Stream::Plain(counted),
                Some((config, name)) => {
                    let connector = tokio_rustls::TlsConnector::from(config.clone());
                    match connector.connect(name.clone(), counted).await {
                        Ok(s) => Stream::Tls(Box::new(s)),
                        Err(e) => {
                            return Err(Outcome::failed(
                                ErrorClass::Tls,
                                format!("TLS handshake: {}", message(&e)),
                            ))
                        }
                    }
                }
            };
            let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
            tokio::spawn(conn);
            Ok(Client {
                grpc: Grpc::with_origin(H2(sender.clone()), self.origin.clone()),
                counters,
                sender,
            })
        };
        match timeout(ct, work).await {
            Ok(r) => r,
            Err(_) => Err(Outcome::failed(
                ErrorClass::Timeout,
                format!("connect to {} timed out after {ct:?}", self.authority),
            )),
        }
    }
}

/// One HTTP/2 connection shared by several sessions of a worker thread.
#[derive(Default)]
pub struct Slot {
    conn: RefCell<Option<Client>>,
    connecting: Cell<bool>,
    ready: Notify,
    /// Counter values already attributed to calls.
    seen: Cell<(u64, u64)>,
    /// One clone per session on this connection (see [`Pool::join`]).
    pub(crate) seats: Rc<()>,
}

impl Slot {
    /// The connection's client, opened if there is none or it closed; sessions waiting while
    /// another opens it share the result.
    pub async fn client(&self, connector: &Connector) -> Result<Client, Outcome> {
        loop {
            if let Some(c) = self.conn.borrow().as_ref() {
                if !c.sender.is_closed() {
                    return Ok(c.clone());
                }
            }
            if self.connecting.get() {
                self.ready.notified().await;
                continue;
            }
            self.connecting.set(true);
            let r = Box::pin(connector.connect()).await;
            self.connecting.set(false);
            self.ready.notify_waiters();
            if let Ok(c) = &r {
                *self.conn.borrow_mut() = Some(c.clone());
                self.seen.set((0, 0));
            }
            return r;
        }
    }

    /// The bytes not yet attributed to a call: streams share the connection, so each call takes
    /// what crossed it since the last; totals are exact, the split between calls close.
    pub fn take_bytes(&self, counters: &Counters) -> (u64, u64) {
        let (s1, r1) = counters.read();
        let (s0, r0) = self.seen.replace((s1, r1));
        (s1.saturating_sub(s0), r1.saturating_sub(r0))
    }
}

/// One worker's connections, each shared by up to `streams` sessions.
#[derive(Default)]
pub struct Pool {
    slots: RefCell<Vec<Rc<Slot>>>,
}

impl Pool {
    /// The connection a new session joins: the first with a free seat, or a new one. A session
    /// that ends frees its seat, so a ramp that retires and restarts users opens no new
    /// connections.
    pub fn join(&self, streams: usize) -> Rc<Slot> {
        let mut slots = self.slots.borrow_mut();
        if let Some(slot) = slots
            .iter()
            .find(|s| Rc::strong_count(&s.seats) - 1 < streams)
        {
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
