//! The driver: connections owned by sessions (HTTP/1.1) or shared per thread (HTTP/2).

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use http::header::{CONNECTION, HOST};
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use throng_core::{Driver, ErrorClass, Outcome, Status, StepInfo};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::timeout;

use crate::classify::classify;
use crate::{HttpConfig, HttpConfigError};
use throng_net::{message, CountedTcp, Counters, Stream};

type Body = Full<Bytes>;
type H1Connection = http1::Connection<TokioIo<Stream>, Body>;

struct H1 {
    sender: http1::SendRequest<Body>,
    conn: Pin<Box<H1Connection>>,
    counters: Arc<Counters>,
    fresh: bool,
}

/// One HTTP/2 connection shared by several sessions of a worker thread.
#[derive(Default)]
struct H2Slot {
    conn: RefCell<Option<(http2::SendRequest<Body>, Arc<Counters>)>>,
    connecting: Cell<bool>,
    ready: Notify,
    /// Counter values already attributed to requests.
    seen: Cell<(u64, u64)>,
    /// One clone per session on this connection: its strong count less one is their number
    /// (the slot itself is cloned for each request, so its own count says nothing).
    seats: Rc<()>,
}

/// One worker's HTTP/2 connections, each shared by up to `streams` sessions.
#[derive(Default)]
pub struct H2Pool {
    slots: RefCell<Vec<Rc<H2Slot>>>,
}

impl H2Pool {
    /// The connection a new session joins: the first with room, or a new one. A session holds
    /// a seat of its slot, so a slot's sessions are its seats' strong count less its own: a
    /// session that ends (a user retired by a ramp) leaves room for the next, and a ramp that
    /// retires and restarts users opens no new connections.
    fn join(&self, streams: usize) -> Rc<H2Slot> {
        let mut slots = self.slots.borrow_mut();
        if let Some(slot) = slots
            .iter()
            .find(|s| Rc::strong_count(&s.seats) - 1 < streams)
        {
            return slot.clone();
        }
        let slot = Rc::new(H2Slot::default());
        slots.push(slot.clone());
        slot
    }

    /// Connections this pool has made room for.
    pub fn connections(&self) -> usize {
        self.slots.borrow().len()
    }
}

/// A session's connection state.
pub struct Session {
    h1: Option<H1>,
    h2: Option<Rc<H2Slot>>,
    /// This session's seat on its HTTP/2 connection (see [`H2Pool`]).
    _seat: Option<Rc<()>>,
}

/// Sends one configured request per iteration. See the crate docs for the connection model.
pub struct HttpDriver {
    cfg: HttpConfig,
    addrs: Vec<SocketAddr>,
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    uri: Uri,
    headers: HeaderMap,
}

enum Failure {
    Request(hyper::Error),
    Closed,
}

impl HttpDriver {
    /// Prepares a driver: resolves the host once and builds the TLS configuration.
    pub fn new(cfg: HttpConfig) -> Result<Self, HttpConfigError> {
        let addrs = cfg.resolve()?;
        let tls = if cfg.is_tls() {
            let host = cfg
                .url
                .host()
                .unwrap_or_default()
                .trim_matches(|c| c == '[' || c == ']')
                .to_string();
            let name =
                ServerName::try_from(host).map_err(|e| HttpConfigError::Tls(e.to_string()))?;
            let opts = throng_net::TlsOptions {
                insecure: cfg.insecure,
                cacert: cfg.cacert.clone(),
                alpn: vec![if cfg.http2 {
                    b"h2".to_vec()
                } else {
                    b"http/1.1".to_vec()
                }],
            };
            let config = throng_net::client_config(&opts).map_err(|e| match e {
                throng_net::TlsError::CaCert { path, reason } => {
                    HttpConfigError::CaCert { path, reason }
                }
                throng_net::TlsError::Config(m) => HttpConfigError::Tls(m),
            })?;
            Some((config, name))
        } else {
            None
        };
        let mut headers = cfg.headers.clone();
        let uri = if cfg.http2 {
            cfg.url.clone()
        } else {
            let auth = cfg.url.authority().map(|a| a.as_str()).unwrap_or_default();
            if !headers.contains_key(HOST) {
                let v = HeaderValue::from_str(auth)
                    .map_err(|_| HttpConfigError::Url(cfg.url.to_string()))?;
                headers.insert(HOST, v);
            }
            if !cfg.keepalive {
                headers.insert(CONNECTION, HeaderValue::from_static("close"));
            }
            let pq = cfg.url.path_and_query().map(|p| p.as_str()).unwrap_or("/");
            pq.parse()
                .map_err(|_| HttpConfigError::Url(cfg.url.to_string()))?
        };
        Ok(HttpDriver {
            cfg,
            addrs,
            tls,
            uri,
            headers,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &HttpConfig {
        &self.cfg
    }

    fn request(&self) -> Request<Body> {
        let mut req = Request::new(Full::new(self.cfg.body.clone()));
        *req.method_mut() = self.cfg.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    async fn connect(&self) -> Result<(Stream, Arc<Counters>), Outcome> {
        let ct = self.cfg.connect_timeout;
        let attempt = async {
            let mut last = None;
            for addr in &self.addrs {
                match TcpStream::connect(addr).await {
                    Ok(s) => return Ok(s),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
        };
        let tcp = match timeout(ct, attempt).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                let m = format!("connect to {}: {e}", self.cfg.authority());
                return Err(Outcome::failed(ErrorClass::Connect, m));
            }
            Err(_) => {
                let m = format!("connect to {} timed out after {ct:?}", self.cfg.authority());
                return Err(Outcome::failed(ErrorClass::Timeout, m));
            }
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
                match timeout(ct, connector.connect(name.clone(), counted)).await {
                    Ok(Ok(s)) => Stream::Tls(Box::new(s)),
                    Ok(Err(e)) => {
                        return Err(Outcome::failed(
                            ErrorClass::Tls,
                            format!("TLS handshake: {}", message(&e)),
                        ))
                    }
                    Err(_) => {
                        return Err(Outcome::failed(
                            ErrorClass::Timeout,
                            "TLS handshake timed out",
                        ))
                    }
                }
            }
        };
        Ok((stream, counters))
    }

    async fn connect_h1(&self) -> Result<H1, Outcome> {
        let (stream, counters) = self.connect().await?;
        // hyper's adaptive read buffer (16 KiB a connection once in use) is kept: a fixed 4 KiB
        // one saves 5 MB at 1,000 connections but costs 2.3 times the CPU on 1 MB bodies.
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
        Ok(H1 {
            sender,
            conn: Box::pin(conn),
            counters,
            fresh: true,
        })
    }

    async fn connect_h2(&self) -> Result<(http2::SendRequest<Body>, Arc<Counters>), Outcome> {
        let (stream, counters) = self.connect().await?;
        let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
        tokio::spawn(conn);
        Ok((sender, counters))
    }

    async fn execute_h1(
        &self,
        session: &mut Session,
        req: Request<Body>,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let reusable = match &mut session.h1 {
            Some(h) => {
                // A connection the server closed while idle is replaced, not counted as a failure.
                let conn = &mut h.conn;
                let ended = poll_fn(|cx| Poll::Ready(conn.as_mut().poll(cx).is_ready())).await;
                !ended && !h.sender.is_closed()
            }
            None => false,
        };
        if !reusable {
            session.h1 = None;
            // Boxed: a connect (with its TLS handshake) is rare, and inline it would make every
            // user's task several kilobytes larger for the whole run.
            match Box::pin(self.connect_h1()).await {
                Ok(h) => session.h1 = Some(h),
                Err(o) => return (o, None),
            }
        }
        let Some(h) = session.h1.as_mut() else {
            return (Outcome::failed(ErrorClass::Other, "no connection"), None);
        };
        let (s0, r0) = if h.fresh { (0, 0) } else { h.counters.read() };
        h.fresh = false;
        let H1 { sender, conn, .. } = h;
        let result = {
            let exchange = async {
                sender.ready().await.map_err(Failure::Request)?;
                let resp = sender.send_request(req).await.map_err(Failure::Request)?;
                read_response(resp, keep).await
            };
            let mut exchange = std::pin::pin!(exchange);
            // The connection is driven here, in the user's own task. When it ends (the server
            // closed it, or sent something that is not HTTP) the exchange still has to be polled to
            // the end: the response may be complete, or its error is the one that says why.
            let mut ended: Option<Result<(), hyper::Error>> = None;
            let result: Result<Response, Failure> = loop {
                tokio::select! {
                    biased;
                    r = &mut exchange => break r,
                    r = conn.as_mut(), if ended.is_none() => ended = Some(r),
                }
            };
            match (result, ended) {
                (Err(Failure::Request(e)), Some(Err(conn_err)))
                    if e.is_canceled() || e.is_closed() =>
                {
                    Err(Failure::Request(conn_err))
                }
                (Err(Failure::Request(e)), Some(Ok(()))) if e.is_canceled() || e.is_closed() => {
                    Err(Failure::Closed)
                }
                (r, _) => r,
            }
        };
        let (s1, r1) = h.counters.read();
        let (mut outcome, response) = self.finish(result, keep);
        outcome.bytes_sent = s1 - s0;
        outcome.bytes_received = r1 - r0;
        if outcome.error.is_some_and(|c| c != ErrorClass::HttpStatus) || !self.cfg.keepalive {
            session.h1 = None;
        }
        (outcome, response)
    }

    async fn h2_sender(
        &self,
        slot: &H2Slot,
    ) -> Result<(http2::SendRequest<Body>, Arc<Counters>), Outcome> {
        loop {
            if let Some((s, c)) = slot.conn.borrow().as_ref() {
                if !s.is_closed() {
                    return Ok((s.clone(), c.clone()));
                }
            }
            if slot.connecting.get() {
                slot.ready.notified().await;
                continue;
            }
            slot.connecting.set(true);
            let r = Box::pin(self.connect_h2()).await;
            slot.connecting.set(false);
            slot.ready.notify_waiters();
            if let Ok(pair) = &r {
                *slot.conn.borrow_mut() = Some(pair.clone());
                slot.seen.set((0, 0));
            }
            return r;
        }
    }

    async fn execute_h2(
        &self,
        slot: &H2Slot,
        req: Request<Body>,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let (mut sender, counters) = match self.h2_sender(slot).await {
            Ok(pair) => pair,
            Err(o) => return (o, None),
        };
        let result = async {
            sender.ready().await.map_err(Failure::Request)?;
            let resp = sender.send_request(req).await.map_err(Failure::Request)?;
            read_response(resp, keep).await
        }
        .await;
        // Streams share the connection: each request takes the bytes not yet attributed, so
        // the totals are exact and the split between requests is close.
        let (s1, r1) = counters.read();
        let (s0, r0) = slot.seen.replace((s1, r1));
        let (mut outcome, response) = self.finish(result, keep);
        outcome.bytes_sent = s1.saturating_sub(s0);
        outcome.bytes_received = r1.saturating_sub(r0);
        (outcome, response)
    }

    fn finish(&self, result: Result<Response, Failure>, keep: bool) -> (Outcome, Option<Response>) {
        match result {
            Ok(resp) => {
                let status = resp.status;
                let outcome = if status >= 400 {
                    Outcome {
                        status: Status::Http(status),
                        error: Some(ErrorClass::HttpStatus),
                        message: Some(format!("HTTP {status}")),
                        ..Outcome::default()
                    }
                } else {
                    Outcome {
                        status: Status::Http(status),
                        ..Outcome::default()
                    }
                };
                (outcome, keep.then_some(resp))
            }
            Err(Failure::Request(e)) => (Outcome::failed(classify(&e), message(&e)), None),
            Err(Failure::Closed) => (
                Outcome::failed(ErrorClass::Reset, "connection closed before the response"),
                None,
            ),
        }
    }

    /// Builds a request to this driver's target: `path` is the path and query; the URI takes
    /// the form the protocol wants and HTTP/1.1 gets its `host` header. The configured headers
    /// come first; `headers` are added after them.
    pub fn build_request(
        &self,
        method: http::Method,
        path: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Request<Body>, String> {
        let uri: Uri = if self.cfg.http2 {
            let scheme = self.cfg.url.scheme_str().unwrap_or("http");
            let auth = self
                .cfg
                .url
                .authority()
                .map(|a| a.as_str())
                .unwrap_or_default();
            format!("{scheme}://{auth}{path}")
                .parse()
                .map_err(|e| format!("bad path {path:?}: {e}"))?
        } else {
            path.parse()
                .map_err(|e| format!("bad path {path:?}: {e}"))?
        };
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        let mut all = self.headers.clone();
        for (name, value) in headers {
            all.insert(name.clone(), value.clone());
        }
        *req.headers_mut() = all;
        Ok(req)
    }

    /// Opens the session's connection if it has none (HTTP/2: the shared one), within the
    /// connect timeout; a failure is the outcome of the request that needed it.
    pub async fn connect_session(&self, session: &mut Session) -> Result<(), Outcome> {
        match session.h2.clone() {
            Some(slot) => Box::pin(self.h2_sender(&slot)).await.map(drop),
            None if session.h1.is_none() => {
                session.h1 = Some(Box::pin(self.connect_h1()).await?);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// A session on a worker's pool (HTTP/2 sessions share its connections).
    pub fn new_session(&self, pool: &H2Pool) -> Session {
        let h2 = self.cfg.http2.then(|| pool.join(self.cfg.streams.max(1)));
        let seat = h2.as_ref().map(|slot| slot.seats.clone());
        Session {
            h1: None,
            h2,
            _seat: seat,
        }
    }

    /// Sends a request on a session; with `keep`, returns the response with its whole body.
    pub async fn send(
        &self,
        session: &mut Session,
        req: Request<Body>,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let t = self.cfg.timeout;
        let work = async {
            match session.h2.clone() {
                Some(slot) => self.execute_h2(&slot, req, keep).await,
                None => self.execute_h1(session, req, keep).await,
            }
        };
        match timeout(t, work).await {
            Ok(r) => r,
            Err(_) => {
                session.h1 = None;
                (
                    Outcome::failed(
                        ErrorClass::Timeout,
                        format!("no complete response within {t:?}"),
                    ),
                    None,
                )
            }
        }
    }
}

/// A response with its whole body, for extraction and checks.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body (empty unless it was kept).
    pub body: Bytes,
}

async fn read_response(
    resp: http::Response<hyper::body::Incoming>,
    keep: bool,
) -> Result<Response, Failure> {
    let status = resp.status().as_u16();
    let (parts, mut body) = resp.into_parts();
    let mut kept = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Failure::Request)?;
        if keep {
            if let Some(data) = frame.data_ref() {
                kept.extend_from_slice(data);
            }
        }
    }
    let headers = if keep {
        parts.headers
    } else {
        HeaderMap::new()
    };
    Ok(Response {
        status,
        headers,
        body: kept.into(),
    })
}

impl Driver for HttpDriver {
    type Worker = H2Pool;
    type Session = Session;

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: self.cfg.label(),
        }]
    }

    fn worker(&self) -> H2Pool {
        H2Pool::default()
    }

    fn session(&self, pool: &H2Pool, _user: u64) -> Session {
        self.new_session(pool)
    }

    async fn execute(&self, session: &mut Session, _step: usize) -> Outcome {
        self.send(session, self.request(), false).await.0
    }

    async fn connect(&self, session: &mut Session) -> Result<(), Outcome> {
        self.connect_session(session).await
    }
}
