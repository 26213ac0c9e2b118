use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::{sleep, sleep_until, Instant};

/// How long the target waits before answering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delay {
    /// Answer at once.
    None,
    /// Always this long.
    Fixed(Duration),
    /// Uniformly between the two.
    Uniform(Duration, Duration),
}

/// A connection-level fault applied to every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Read the request, then reset the connection (RST).
    Reset,
    /// Read the request, then answer bytes that are not HTTP and close.
    Garbage,
    /// Accept the connection and never answer.
    Hang,
}

/// An HTTP target. Fields are public; [`HttpTarget::default`] answers `200 ok` at once.
///
/// Paths override the defaults per request: `/status/{code}` answers that status and
/// `/delay/{ms}` waits that long.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    /// The delay before each answer.
    pub delay: Delay,
    /// The status of each answer.
    pub status: u16,
    /// The body of each answer.
    pub body: Bytes,
    /// From `.0` to `.1` after start, requests are held until `.1`.
    pub stall: Option<(Duration, Duration)>,
    /// A connection-level fault.
    pub fault: Option<Fault>,
    /// Serve TLS with a fresh self-signed certificate for `localhost` and `127.0.0.1`.
    pub tls: bool,
    /// With `tls`, require every client to present a certificate this CA (PEM) signed: a
    /// handshake without one, or with another's, fails (mutual TLS).
    pub client_ca: Option<String>,
    /// Speak HTTP/1.1 only, as nginx does without `http2`: an HTTP/2 client's preface gets an
    /// HTTP/1.1 error answer.
    pub http1_only: bool,
    /// Serve at most this many requests at once; the others wait their turn, so a known
    /// capacity (`capacity / delay` requests a second) can be found by a sweep.
    pub capacity: Option<usize>,
}

impl Default for HttpTarget {
    fn default() -> Self {
        HttpTarget {
            delay: Delay::None,
            status: 200,
            body: Bytes::from_static(b"ok\n"),
            stall: None,
            fault: None,
            tls: false,
            client_ca: None,
            http1_only: false,
            capacity: None,
        }
    }
}

/// Why a target could not start.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Binding or accepting failed.
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    /// The certificate could not be made.
    #[error("cannot make a certificate: {0}")]
    Cert(String),
}

/// A target that is serving. Dropping it stops the server.
pub struct RunningTarget {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The certificate in PEM, when serving TLS (give it to `--cacert`).
    pub cert_pem: Option<String>,
    requests: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    shutdown: watch::Sender<bool>,
}

impl RunningTarget {
    /// `http://addr` or `https://addr`.
    pub fn url(&self) -> String {
        let scheme = if self.cert_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Requests answered (or faulted) so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes connections.
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for RunningTarget {
    fn drop(&mut self) {
        self.stop();
    }
}

struct State {
    cfg: HttpTarget,
    start: Instant,
    requests: Arc<AtomicU64>,
    /// The seats of `capacity`.
    seats: Option<tokio::sync::Semaphore>,
}

impl HttpTarget {
    /// Serves on `127.0.0.1` at a free port.
    pub async fn start(self) -> Result<RunningTarget, TargetError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        self.serve(listener).await
    }

    /// Serves on a bound listener, in a background task of the current runtime.
    pub async fn serve(self, listener: TcpListener) -> Result<RunningTarget, TargetError> {
        let addr = listener.local_addr()?;
        let (acceptor, cert_pem) = if self.tls {
            let (a, pem) = tls_acceptor(self.client_ca.as_deref())?;
            (Some(a), Some(pem))
        } else {
            (None, None)
        };
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let (shutdown, mut stop_rx) = watch::channel(false);
        let state = Arc::new(State {
            seats: self.capacity.map(tokio::sync::Semaphore::new),
            cfg: self,
            start: Instant::now(),
            requests: requests.clone(),
        });
        let conns = connections.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop_rx.changed() => break,
                };
                let Ok((tcp, _)) = accepted else { continue };
                conns.fetch_add(1, Ordering::Relaxed);
                let _ = tcp.set_nodelay(true);
                let state = state.clone();
                let acceptor = acceptor.clone();
                let mut stop = stop_rx.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = connection(tcp, state, acceptor) => {}
                        _ = stop.changed() => {}
                    }
                });
            }
        });
        Ok(RunningTarget {
            addr,
            cert_pem,
            requests,
            connections,
            shutdown,
        })
    }
}

async fn connection(
    mut tcp: TcpStream,
    state: Arc<State>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) {
    if let Some(fault) = state.cfg.fault {
        let mut buf = [0u8; 4096];
        if fault == Fault::Hang {
            // Hold the connection open, reading and discarding, until the peer or shutdown ends it.
            while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
            return;
        }
        let _ = tcp.read(&mut buf).await;
        state.requests.fetch_add(1, Ordering::Relaxed);
        match fault {
            Fault::Reset => {
                // Zero linger makes close send RST instead of FIN.
                #[allow(deprecated)]
                let _ = tcp.set_linger(Some(Duration::ZERO));
                drop(tcp);
            }
            Fault::Garbage => {
                let _ = tcp.write_all(b"THIS IS NOT HTTP\r\n\r\n").await;
                let _ = tcp.shutdown().await;
            }
            Fault::Hang => {}
        }
        return;
    }
    let http1_only = state.cfg.http1_only;
    let service = service_fn(move |req| handle(req, state.clone()));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if http1_only {
        builder = builder.http1_only();
    }
    match acceptor {
        Some(acceptor) => {
            if let Ok(tls) = acceptor.accept(tcp).await {
                let _ = builder.serve_connection(TokioIo::new(tls), service).await;
            }
        }
        None => {
            let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let cfg = &state.cfg;
    let path = req.uri().path();
    let mut status = cfg.status;
    let mut delay = cfg.delay;
    if let Some(code) = path.strip_prefix("/status/").and_then(|c| c.parse().ok()) {
        status = code;
    }
    if let Some(ms) = path.strip_prefix("/delay/").and_then(|c| c.parse().ok()) {
        delay = Delay::Fixed(Duration::from_millis(ms));
    }
    // Read the whole request body before answering, as a real service would.
    let _ = http_body_util::BodyExt::collect(req.into_body()).await;
    if let Some((from, to)) = cfg.stall {
        let now = state.start.elapsed();
        if now >= from && now < to {
            sleep_until(state.start + to).await;
        }
    }
    let _seat = match &state.seats {
        Some(s) => s.acquire().await.ok(),
        None => None,
    };
    match delay {
        Delay::None => {}
        Delay::Fixed(d) => sleep(d).await,
        Delay::Uniform(a, b) => {
            let d = if b > a {
                rand::rng().random_range(a..b)
            } else {
                a
            };
            sleep(d).await
        }
    }
    state.requests.fetch_add(1, Ordering::Relaxed);
    let mut resp = Response::new(Full::new(cfg.body.clone()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Ok(resp)
}

/// A TLS acceptor with a fresh self-signed certificate for localhost and 127.0.0.1 (offering
/// HTTP/2 and HTTP/1.1), requiring clients' certificates signed by `client_ca` if given, and
/// the certificate's PEM for a client's `--cacert`.
pub(crate) fn tls_acceptor(
    client_ca: Option<&str>,
) -> Result<(tokio_rustls::TlsAcceptor, String), TargetError> {
    throng_net::self_signed_requiring(&[b"h2", b"http/1.1"], client_ca)
        .map_err(|e| TargetError::Cert(e.to_string()))
}
