//! HTTP/2 connections for gRPC: the load's calls on throng-h2 (`throng_h2::pool::Pool`: a
//! worker's connections shared by its sessions, see `call.rs`), and reflection's few questions
//! on hyper's client with tonic's `Grpc` over it.
//!
//! Why not tonic's `Channel`: it puts a tower `Buffer` (a task and a channel hop per call) and a
//! reconnecting layer between the caller and the connection; the sessions of a worker already
//! live on one thread, so they open streams on the connection themselves, and the bytes are
//! counted on the same socket type as HTTP's.

use std::cell::OnceCell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use throng_core::{ErrorClass, Outcome};
use throng_h2::pool::{Pool as H2Pool, Seat};
use throng_net::message;
use tokio::time::timeout;
use tonic::body::Body;
use tonic::client::Grpc;

use crate::classify::classify;

/// hyper's HTTP/2 sender as the tower service tonic's client calls.
#[derive(Clone)]
pub(crate) struct H2(http2::SendRequest<Body>);

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

/// A gRPC client on one connection (reflection's).
#[derive(Clone)]
pub(crate) struct Client {
    /// tonic's client over the connection.
    pub(crate) grpc: Grpc<H2>,
}

/// How reflection reaches the server: addresses, TLS, the origin of requests' URIs.
pub(crate) struct Connector {
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) authority: String,
    pub(crate) origin: Uri,
    pub(crate) tls: Option<throng_net::TlsTarget>,
    pub(crate) connect_timeout: Duration,
}

impl Connector {
    /// A connection with tonic's client on hyper's HTTP/2 (reflection's questions): TCP, TLS
    /// (ALPN h2) and the handshake within the connect timeout.
    pub(crate) async fn connect(&self) -> Result<Client, Outcome> {
        let ct = self.connect_timeout;
        let work = async {
            let tls = self.tls.as_ref();
            let (stream, _) = throng_net::open(&self.addrs, &self.authority, tls, ct).await?;
            let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
            tokio::spawn(conn);
            Ok(Client {
                grpc: Grpc::with_origin(H2(sender), self.origin.clone()),
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

/// One worker's connections to a target: each shared by up to `--streams` sessions, or a
/// fixed number of them with the sessions spread evenly (`--connections`). The connections
/// are throng-h2's ([`throng_h2::pool::Pool`]), made when the first session joins: it brings
/// the target.
///
/// throng-h2's connections run as local tasks: calls go from within a `tokio::task::LocalSet`
/// (each of the engine's workers is one).
#[derive(Default)]
pub struct Pool {
    /// This worker's share of `--connections`, if set.
    fixed: Option<usize>,
    h2: OnceCell<Rc<H2Pool>>,
}

impl Pool {
    /// A pool of `n` connections (at least one), opened as sessions join, each new session on
    /// the one with the fewest.
    pub fn fixed(n: usize) -> Self {
        Pool {
            fixed: Some(n.max(1)),
            h2: OnceCell::new(),
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

    /// A new session's seat: on the first connection with a free seat, or a new one (with a
    /// fixed number: a new one until there are that many, then the one with the fewest
    /// sessions). A session that ends frees its seat, so a ramp that retires and restarts
    /// users opens no new connections.
    pub(crate) fn join(&self, target: &throng_h2::client::Target, streams: usize) -> Session {
        let pool = self
            .h2
            .get_or_init(|| Rc::new(H2Pool::new(target.clone(), streams, self.fixed)))
            .clone();
        let seat = pool.join();
        Session { pool, seat }
    }

    /// Connections this pool has made room for.
    pub fn connections(&self) -> usize {
        self.h2.get().map_or(0, |p| p.connections())
    }
}

/// A user's session: its seat on one of its worker's connections.
pub struct Session {
    pub(crate) pool: Rc<H2Pool>,
    pub(crate) seat: Seat,
}
