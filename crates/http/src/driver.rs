//! The driver: connections owned by sessions (HTTP/1.1, on throng's own codec) or shared per
//! thread (HTTP/2, on throng-h2).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONNECTION, HOST};
use http::{HeaderMap, HeaderValue, Method, Uri};
use throng_core::{ErrorClass, Outcome};
use tokio::time::timeout;

use crate::codec::write_request;
use crate::{HttpConfig, HttpConfigError};
use throng_net::{classify_io, message, Counters, Stream};

mod h1;
mod h2;

use h1::H1;
pub use h2::H2Pool;
use h2::H2Session;
pub(crate) use h2::{not_a_field, Length};

/// A session's connection state.
pub struct Session {
    h1: Option<H1>,
    /// The response being read as a stream of events, if the step reads one: here, not in the
    /// request's future, so that a timeout leaves the events that came. Boxed: only a step read
    /// as a stream has one, and inline it made every user's task 336 bytes larger.
    pub(crate) reading: Option<Box<crate::stream::Reading>>,
    /// The serialized request of a scenario step (HTTP/1.1; HTTP/2: its header block), reused
    /// from one to the next.
    pub(crate) wire: Vec<u8>,
    /// HTTP/2: this session's seat on one of its worker's connections (see [`H2Pool`]).
    h2: Option<H2Session>,
}

/// One target's connections and requests (a client's, see [`crate::HttpClient`]). See the
/// crate docs for the connection model.
pub struct HttpDriver {
    cfg: HttpConfig,
    addrs: Vec<SocketAddr>,
    tls: Option<throng_net::TlsTarget>,
    headers: HeaderMap,
}

/// A request that is the same every time, prepared once for the whole run: HTTP/1.1's bytes on
/// the wire (one write a request), or HTTP/2's header block.
#[derive(Debug, Clone)]
pub(crate) enum Prepared {
    /// HTTP/1.1: the request, serialized.
    H1(Bytes),
    /// HTTP/2: the header block, HPACK-encoded.
    H2(Vec<u8>),
}

enum Failure {
    /// The connection ended before any byte of the response.
    Closed,
    /// The connection ended in the middle of the response.
    Cut,
    /// The socket failed.
    Io(std::io::Error),
    /// The response is not HTTP/1.1.
    Protocol(String),
}

/// A request to a driver's target, built by [`HttpDriver::build_request`] and sent by
/// [`HttpDriver::send`].
#[derive(Debug, Clone)]
pub struct HttpRequest {
    method: Method,
    /// The path and query.
    path: String,
    /// Headers added to (or replacing) the configured ones.
    headers: HeaderMap,
    body: Bytes,
}

impl HttpDriver {
    /// Prepares a driver: resolves the host once and builds the TLS configuration.
    pub fn new(cfg: HttpConfig) -> Result<Self, HttpConfigError> {
        let addrs = cfg.resolve()?;
        let tls = if cfg.is_tls() {
            let name = throng_net::server_name(cfg.url.host().unwrap_or_default())
                .map_err(HttpConfigError::Tls)?;
            let opts = throng_net::TlsOptions {
                insecure: cfg.insecure,
                cacert: cfg.cacert.clone(),
                identity: cfg.identity.clone(),
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
                throng_net::TlsError::Identity { what, path, reason } => {
                    HttpConfigError::Identity { what, path, reason }
                }
                throng_net::TlsError::Config(m) => HttpConfigError::Tls(m),
            })?;
            Some((config, name))
        } else {
            None
        };
        let mut headers = cfg.headers.clone();
        if !cfg.http2 {
            let auth = cfg.url.authority().map(|a| a.as_str()).unwrap_or_default();
            if !headers.contains_key(HOST) {
                let v = HeaderValue::from_str(auth)
                    .map_err(|_| HttpConfigError::Url(cfg.url.to_string()))?;
                headers.insert(HOST, v);
            }
            if !cfg.keepalive {
                headers.insert(CONNECTION, HeaderValue::from_static("close"));
            }
        }
        Ok(HttpDriver {
            cfg,
            addrs,
            tls,
            headers,
        })
    }

    /// Prepares once a request that is the same every time (`path` is the path and query;
    /// `headers` are added to the configured ones, as [`HttpDriver::build_request`] does).
    pub(crate) fn prepare(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<Prepared, String> {
        let r = self.build_request(method.clone(), path, headers.clone(), body.clone())?;
        if self.cfg.http2 {
            return Ok(Prepared::H2(
                self.h2_fixed_block(method, &r.path, &r.headers, body),
            ));
        }
        let mut wire = Vec::new();
        write_request(&mut wire, method, &r.path, &self.headers, &r.headers, body);
        Ok(Prepared::H1(wire.into()))
    }

    /// Sends a prepared request on a session, as [`HttpDriver::send`] sends a built one.
    pub(crate) async fn send_prepared(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        method: &Method,
        body: &Bytes,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let r = match (session.h2.is_some(), prepared) {
            (true, Prepared::H2(block)) => self.send_h2_within(session, block, body, keep).await,
            (false, Prepared::H1(wire)) => self
                .limit(self.execute_h1(session, wire, method, keep))
                .await
                .ok(),
            // A request prepared for the other protocol: no session of this client has one.
            _ => {
                return (
                    Outcome::failed(ErrorClass::Other, "a request prepared for another protocol"),
                    None,
                )
            }
        };
        self.timed_out(session, r)
    }

    /// The configuration in use.
    pub fn config(&self) -> &HttpConfig {
        &self.cfg
    }

    async fn connect(&self) -> Result<(Stream, Arc<Counters>, throng_net::Opened), Outcome> {
        let authority = self.cfg.authority();
        let tls = self.tls.as_ref();
        throng_net::open_timed(&self.addrs, &authority, tls, self.cfg.connect_timeout).await
    }

    fn finish(&self, result: Result<Response, Failure>, keep: bool) -> (Outcome, Option<Response>) {
        match result {
            Ok(resp) => {
                let status = resp.status;
                let outcome = if status >= 400 {
                    Outcome {
                        status: crate::status::status(status),
                        error: Some(ErrorClass::Status),
                        message: Some(format!("HTTP {status}")),
                        ..Outcome::default()
                    }
                } else {
                    Outcome {
                        status: crate::status::status(status),
                        ..Outcome::default()
                    }
                };
                (outcome, keep.then_some(resp))
            }
            Err(Failure::Closed) => (
                Outcome::failed(ErrorClass::Reset, "connection closed before the response"),
                None,
            ),
            Err(Failure::Cut) => (
                Outcome::failed(
                    ErrorClass::Reset,
                    "connection closed before the response was complete",
                ),
                None,
            ),
            Err(Failure::Io(e)) => (
                Outcome::failed(classify_io(&e).unwrap_or(ErrorClass::Other), message(&e)),
                None,
            ),
            Err(Failure::Protocol(m)) => (Outcome::failed(ErrorClass::Protocol, m), None),
        }
    }

    /// Builds a request to this driver's target: `path` is the path and query. The configured
    /// headers are sent, those that `headers` names replaced by its values, then `headers`;
    /// HTTP/1.1 gets its `host` header.
    pub fn build_request(
        &self,
        method: Method,
        path: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<HttpRequest, String> {
        // The path must make a URI as it stands, in either protocol.
        path.parse::<Uri>()
            .map_err(|e| format!("bad path {path:?}: {e}"))?;
        Ok(HttpRequest {
            method,
            path: path.to_string(),
            headers,
            body,
        })
    }

    /// Opens the session's connection if it has none (HTTP/2: the shared one), within the
    /// connect timeout; a failure is the outcome of the request that needed it.
    pub async fn connect_session(&self, session: &mut Session) -> Result<(), Outcome> {
        match &session.h2 {
            // Without keep-alive each request opens its own.
            Some(_) if !self.cfg.keepalive => Ok(()),
            Some(h2) => Box::pin(self.connect_h2(h2)).await,
            None if session.h1.is_none() => {
                session.h1 = Some(Box::pin(self.connect_h1(false)).await?);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// A session on a worker's pool (HTTP/2 sessions share its connections).
    pub fn new_session(&self, pool: &H2Pool) -> Session {
        let h2 = self
            .cfg
            .http2
            .then(|| pool.join(|| self.h2_target(), self.cfg.streams.max(1)));
        Session {
            h1: None,
            reading: None,
            wire: Vec::new(),
            h2,
        }
    }

    /// Sends an HTTP/2 request (its header block, encoded, and its body) on a session, as
    /// [`HttpDriver::send`] sends a built one.
    pub(crate) async fn send_h2(
        &self,
        session: &mut Session,
        block: &[u8],
        body: &Bytes,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let r = self.send_h2_within(session, block, body, keep).await;
        self.timed_out(session, r)
    }

    /// Sends a request on a session; with `keep`, returns the response with its whole body.
    pub async fn send(
        &self,
        session: &mut Session,
        req: HttpRequest,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        let r = match session.h2.is_some() {
            // HTTP/2 is boxed, here and in `execute`: inline, its futures would make every
            // HTTP/1.1 user's task larger for the whole run.
            true => {
                let block = self.h2_fixed_block(&req.method, &req.path, &req.headers, &req.body);
                self.send_h2_within(session, &block, &req.body, keep).await
            }
            false => {
                let mut wire = std::mem::take(&mut session.wire);
                let r = &req;
                write_request(
                    &mut wire,
                    &r.method,
                    &r.path,
                    &self.headers,
                    &r.headers,
                    &r.body,
                );
                let out = self
                    .limit(self.execute_h1(session, &wire, &req.method, keep))
                    .await
                    .ok();
                session.wire = wire;
                out
            }
        };
        self.timed_out(session, r)
    }

    /// Runs a request's future within the request timeout (`Err` past it). A plain function:
    /// as an `async fn`, which takes the future and awaits it, it held the future twice (the
    /// argument and the awaited value) in every user's task.
    fn limit<F: std::future::Future>(&self, work: F) -> tokio::time::Timeout<F> {
        timeout(self.cfg.timeout, work)
    }

    /// The outcome of a request that had to finish within the timeout: past it, a `timeout`,
    /// and the connection (which may still carry the late response) is dropped.
    fn timed_out(
        &self,
        session: &mut Session,
        r: Option<(Outcome, Option<Response>)>,
    ) -> (Outcome, Option<Response>) {
        r.unwrap_or_else(|| {
            session.h1 = None;
            let t = self.cfg.timeout;
            (
                Outcome::failed(
                    ErrorClass::Timeout,
                    format!("no complete response within {t:?}"),
                ),
                None,
            )
        })
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
