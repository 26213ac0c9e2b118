//! The client against servers no one here wrote: hyper's HTTP/2 server (h2c by prior
//! knowledge, and TLS with ALPN), tonic's gRPC health service on it, and raw sockets for what
//! no real server does on purpose (stop reading, close mid-response). Every request is bounded
//! in time; every test counts what the server processed against what the client saw.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use throng_core::ErrorClass;
use throng_h2::client::{connect, Target};
use throng_h2::conn::{Config, Keep, Request, StreamError};
use throng_h2::frame::{self, kind, setting};
use throng_h2::hpack::Block;
use throng_h2::pool::Pool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::timeout;

mod common;
use common::{health_call, keep_all, local, send, BOUND};

/// What the server saw.
#[derive(Default)]
struct Stats {
    processed: AtomicU64,
    inflight: AtomicU64,
    max_inflight: AtomicU64,
}

/// hyper's HTTP/2 server settings for a test.
#[derive(Clone, Copy, Default)]
struct ServerCfg {
    max_concurrent: Option<u32>,
    stream_window: Option<u32>,
    conn_window: Option<u32>,
    tls: bool,
}

struct Server {
    addr: SocketAddr,
    stats: Arc<Stats>,
    /// Starts a graceful shutdown (GOAWAY) of every connection.
    shutdown: Arc<Notify>,
    cert_pem: Option<String>,
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// `n` chunks of 100 bytes, 30 ms apart.
fn trickle(n: usize) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        for i in 0..n {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let chunk = Bytes::from(vec![b'a' + (i % 26) as u8; 100]);
            if tx.send(Ok(hyper::body::Frame::data(chunk))).await.is_err() {
                return;
            }
        }
    });
    http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx)).boxed()
}

async fn handle(
    req: http::Request<Incoming>,
    st: Arc<Stats>,
) -> Result<http::Response<Body>, std::io::Error> {
    let now = st.inflight.fetch_add(1, Ordering::SeqCst) + 1;
    st.max_inflight.fetch_max(now, Ordering::SeqCst);
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let r = match path.as_str() {
        "/hello" => Ok(Bytes::from_static(b"hello")),
        "/echo" => match req.into_body().collect().await {
            Ok(b) => Ok(b.to_bytes()),
            Err(e) => Err(std::io::Error::other(e)),
        },
        "/big" => Ok(Bytes::from(vec![b'x'; query.parse().unwrap_or(0)])),
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(Bytes::from_static(b"slow"))
        }
        "/fail" => Err(std::io::Error::other("the handler failed")),
        _ => Ok(Bytes::new()),
    };
    st.inflight.fetch_sub(1, Ordering::SeqCst);
    let body = r?;
    st.processed.fetch_add(1, Ordering::SeqCst);
    let body = if path == "/stream" {
        trickle(query.parse().unwrap_or(1))
    } else {
        Full::new(body).map_err(|never| match never {}).boxed()
    };
    let mut resp = http::Response::new(body);
    resp.headers_mut()
        .insert("x-server", "hyper".parse().expect("value"));
    Ok(resp)
}

fn tls_acceptor(alpn: &[&[u8]]) -> (tokio_rustls::TlsAcceptor, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let pem = cert.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .expect("config");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), pem)
}

async fn hyper_server(cfg: ServerCfg) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stats = Arc::new(Stats::default());
    let shutdown = Arc::new(Notify::new());
    let (acceptor, cert_pem) = if cfg.tls {
        let (a, p) = tls_acceptor(&[b"h2"]);
        (Some(a), Some(p))
    } else {
        (None, None)
    };
    let (st, sd) = (stats.clone(), shutdown.clone());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (st, sd, acceptor) = (st.clone(), sd.clone(), acceptor.clone());
            tokio::spawn(async move {
                let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                if let Some(n) = cfg.max_concurrent {
                    b.max_concurrent_streams(n);
                }
                if let Some(n) = cfg.stream_window {
                    b.initial_stream_window_size(n);
                }
                if let Some(n) = cfg.conn_window {
                    b.initial_connection_window_size(n);
                }
                let svc = service_fn(move |req| handle(req, st.clone()));
                macro_rules! serve {
                    ($io:expr) => {{
                        let conn = b.serve_connection(TokioIo::new($io), svc);
                        tokio::pin!(conn);
                        tokio::select! {
                            _ = conn.as_mut() => return,
                            _ = sd.notified() => conn.as_mut().graceful_shutdown(),
                        }
                        let _ = conn.await;
                    }};
                }
                match acceptor {
                    Some(a) => {
                        if let Ok(tls) = a.accept(tcp).await {
                            serve!(tls)
                        }
                    }
                    None => serve!(tcp),
                }
            });
        }
    });
    Server {
        addr,
        stats,
        shutdown,
        cert_pem,
    }
}

fn target(addr: SocketAddr, config: Config) -> Target {
    Target {
        addrs: vec![addr],
        authority: addr.to_string(),
        tls: None,
        connect_timeout: Duration::from_secs(5),
        config,
    }
}

fn block(method: &str, path: &str, authority: &str) -> Vec<u8> {
    Block::builder()
        .field(":method", method.as_bytes())
        .field(":scheme", b"http")
        .field(":path", path.as_bytes())
        .field(":authority", authority.as_bytes())
        .field("user-agent", b"throng")
        .build()
        .fixed()
        .expect("fixed")
        .to_vec()
}

#[test]
fn h2c_get_and_large_bodies_both_ways_across_the_windows() {
    local(async {
        let s = hyper_server(ServerCfg::default()).await;
        let c = connect(&target(s.addr, Config::default()))
            .await
            .expect("connect");
        let auth = s.addr.to_string();
        let r = send(&c, &block("GET", "/hello", &auth), Bytes::new())
            .await
            .expect("hello");
        assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
        assert!(r
            .headers
            .iter()
            .any(|(n, v)| n == b"x-server" && v == b"hyper"));
        // 3 MB up (hyper's windows are 1 MB by default) and back (ours are 2 MB a stream).
        let body: Bytes = (0..3_000_000u32)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into();
        let r = send(&c, &block("POST", "/echo", &auth), body.clone())
            .await
            .expect("echo");
        assert_eq!(r.status, 200);
        assert_eq!(r.body.len(), body.len());
        assert!(r.body[..] == body[..], "the echo is the body");
        let r = send(&c, &block("GET", "/big", &auth), Bytes::new()).await;
        assert_eq!(r.expect("big").body_len, 0, "no query: empty");
        let (sent, received) = c.counters().read();
        assert!(
            sent > 3_000_000 && received > 3_000_000,
            "{sent} {received}"
        );
        assert_eq!(s.stats.processed.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn many_concurrent_streams_on_one_connection_within_the_servers_limit() {
    local(async {
        let s = hyper_server(ServerCfg {
            max_concurrent: Some(8),
            ..ServerCfg::default()
        })
        .await;
        let c = connect(&target(s.addr, Config::default()))
            .await
            .expect("connect");
        let path = format!("/big?{}", 20_000);
        let headers = Rc::new(block("GET", &path, &s.addr.to_string()));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..300 {
            let (c, h) = (c.clone(), headers.clone());
            set.spawn_local(async move { send(&c, &h, Bytes::new()).await });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            let r = r.expect("task").expect("response");
            assert_eq!((r.status, r.body.len()), (200, 20_000));
            ok += 1;
        }
        assert_eq!(ok, 300);
        assert_eq!(s.stats.processed.load(Ordering::SeqCst), 300);
        let max = s.stats.max_inflight.load(Ordering::SeqCst);
        assert!((1..=8).contains(&max), "at most 8 at once, saw {max}");
        assert_eq!(c.open_streams(), 0);
    });
}

#[test]
fn tiny_windows_both_ways() {
    local(async {
        let s = hyper_server(ServerCfg {
            stream_window: Some(1024),
            conn_window: Some(65_535),
            ..ServerCfg::default()
        })
        .await;
        let cfg = Config {
            stream_window: 1024,
            conn_window: 65_535,
            ..Config::default()
        };
        let c = connect(&target(s.addr, cfg)).await.expect("connect");
        let auth = s.addr.to_string();
        let body = Bytes::from(vec![7u8; 300_000]);
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let (c, h, b) = (c.clone(), block("POST", "/echo", &auth), body.clone());
            set.spawn_local(async move { send(&c, &h, b).await });
        }
        while let Some(r) = set.join_next().await {
            let r = r.expect("task").expect("echo");
            assert_eq!(r.body_len, 300_000);
            assert!(
                r.data_frames >= 293,
                "1 KiB windows: {} frames",
                r.data_frames
            );
        }
    });
}

#[test]
fn a_failing_handler_resets_its_stream_and_the_connection_goes_on() {
    local(async {
        let s = hyper_server(ServerCfg::default()).await;
        let c = connect(&target(s.addr, Config::default()))
            .await
            .expect("connect");
        let auth = s.addr.to_string();
        let e = send(&c, &block("GET", "/fail", &auth), Bytes::new())
            .await
            .expect_err("reset");
        assert!(matches!(e, StreamError::Reset(_)), "{e:?}");
        assert_eq!(c.classify(&e), ErrorClass::Reset);
        assert!(c.is_usable());
        c.ping().await.expect("ping answered");
        let r = send(&c, &block("GET", "/hello", &auth), Bytes::new())
            .await
            .expect("hello");
        assert_eq!(r.status, 200);
    });
}

#[test]
fn graceful_goaway_with_streams_in_flight_loses_none() {
    local(async {
        let s = hyper_server(ServerCfg::default()).await;
        let c = connect(&target(s.addr, Config::default()))
            .await
            .expect("connect");
        let auth = s.addr.to_string();
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let (c, h) = (c.clone(), block("GET", "/slow", &auth));
            set.spawn_local(async move { send(&c, &h, Bytes::new()).await });
        }
        // Let the ten reach the server, then shut it down gracefully while they sleep.
        tokio::time::sleep(Duration::from_millis(100)).await;
        s.shutdown.notify_waiters();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Sent after the GOAWAY: not processed, or refused at once.
        let late = send(&c, &block("GET", "/hello", &auth), Bytes::new()).await;
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            assert_eq!(
                r.expect("task")
                    .expect("in flight before GOAWAY: answered")
                    .status,
                200
            );
            ok += 1;
        }
        assert!(
            matches!(late, Err(StreamError::NotProcessed(_))),
            "{late:?}"
        );
        assert_eq!(ok, 10);
        assert_eq!(
            s.stats.processed.load(Ordering::SeqCst),
            10,
            "every answer counted once"
        );
        assert!(!c.is_usable());
    });
}

#[test]
fn tls_with_alpn_h2_and_a_server_that_will_not_choose_h2() {
    local(async {
        let s = hyper_server(ServerCfg {
            tls: true,
            ..ServerCfg::default()
        })
        .await;
        let dir = std::env::temp_dir().join(format!("throng-h2-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, s.cert_pem.as_deref().expect("pem")).expect("write");
        let opts = throng_net::TlsOptions {
            insecure: false,
            cacert: Some(ca.clone()),
            alpn: vec![b"h2".to_vec()],
            ..Default::default()
        };
        let tls = (
            throng_net::client_config(&opts).expect("config"),
            throng_net::server_name("localhost").expect("name"),
        );
        let mut t = target(s.addr, Config::default());
        t.tls = Some(tls.clone());
        let c = connect(&t).await.expect("connect");
        let mut h = Vec::new();
        {
            let b = Block::builder()
                .field(":method", b"GET")
                .field(":scheme", b"https")
                .field(":path", b"/hello")
                .field(":authority", b"localhost")
                .build();
            h.extend_from_slice(b.fixed().expect("fixed"));
        }
        let r = send(&c, &h, Bytes::new()).await.expect("hello over TLS");
        assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
        // A TLS server that speaks only http/1.1, offered only h2: the handshake fails (`tls`).
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (acceptor, pem) = tls_acceptor(&[b"http/1.1"]);
        std::fs::write(&ca, pem).expect("write");
        tokio::spawn(async move {
            if let Ok((tcp, _)) = listener.accept().await {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 1024];
                    let _ = tls.read(&mut buf).await;
                }
            }
        });
        let tls = (
            throng_net::client_config(&opts).expect("config"),
            throng_net::server_name("localhost").expect("name"),
        );
        let mut t = target(addr, Config::default());
        t.tls = Some(tls);
        let e = connect(&t).await.err().expect("no h2");
        assert_eq!(e.error, Some(ErrorClass::Tls), "{:?}", e.message);
        // Offering both, the server chooses http/1.1: not HTTP/2, a protocol failure.
        let (acceptor, pem) = tls_acceptor(&[b"http/1.1"]);
        std::fs::write(&ca, pem).expect("write");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            if let Ok((tcp, _)) = listener.accept().await {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 1024];
                    let _ = tls.read(&mut buf).await;
                }
            }
        });
        let both = throng_net::TlsOptions {
            alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            ..opts.clone()
        };
        let mut t = target(addr, Config::default());
        t.tls = Some((
            throng_net::client_config(&both).expect("config"),
            throng_net::server_name("localhost").expect("name"),
        ));
        let e = connect(&t).await.err().expect("no h2");
        assert_eq!(e.error, Some(ErrorClass::Protocol), "{:?}", e.message);
        assert!(e.message.as_deref().is_some_and(|m| m.contains("ALPN")));
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn an_http1_only_server_fails_the_connect_as_protocol() {
    local(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let svc = service_fn(|_req: http::Request<Incoming>| async {
                        Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(
                            b"h1",
                        ))))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        let e = connect(&target(addr, Config::default()))
            .await
            .err()
            .expect("not h2");
        assert_eq!(e.error, Some(ErrorClass::Protocol), "{:?}", e.message);
    });
}

/// gRPC unary on tonic's health service (tonic's framing, `te: trailers`, grpc-status in the
/// trailers, or in the headers of a trailers-only answer).
#[test]
fn grpc_unary_on_tonic() {
    local(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (reporter, health) = tonic_health::server::health_reporter();
        reporter
            .set_service_status("throng.Test", tonic_health::ServingStatus::Serving)
            .await;
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let health = health.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: http::Request<Incoming>| {
                        let mut h = health.clone();
                        async move { tower_call(&mut h, req).await }
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        let c = connect(&target(addr, Config::default()))
            .await
            .expect("connect");
        let auth = addr.to_string();
        let grpc = |service: &str| health_call(&auth, "Check", service);
        let (h, b) = grpc("throng.Test");
        let r = send(&c, &h, b).await.expect("call");
        assert_eq!(r.status, 200);
        assert_eq!(r.grpc_status, Some(0));
        // HealthCheckResponse { status: SERVING (1) }, in one gRPC frame.
        assert_eq!(&r.body[..], &[0, 0, 0, 0, 2, 0x08, 0x01]);
        assert!(r
            .trailers
            .iter()
            .any(|(n, v)| n == b"grpc-status" && v == b"0"));
        let (h, b) = grpc("no.Such");
        let r = send(&c, &h, b).await.expect("call");
        assert_eq!(r.grpc_status, Some(5), "NOT_FOUND");
        assert!(r.grpc_message.is_some());
    });
}

async fn tower_call<S>(svc: &mut S, req: http::Request<Incoming>) -> Result<S::Response, S::Error>
where
    S: tonic::codegen::Service<http::Request<Incoming>>,
{
    std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req).await
}

/// A raw server: sends its SETTINGS (with `settings`, and a connection window `conn_window`
/// above the default), then does `then` with the socket.
async fn raw_server<F, Fut>(settings: Vec<(u16, u32)>, conn_window: u32, then: F) -> SocketAddr
where
    F: FnOnce(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        let mut out = Vec::new();
        frame::write_settings(&mut out, &settings);
        if conn_window > 0 {
            frame::write_window_update(&mut out, 0, conn_window);
        }
        frame::write_header(&mut out, 0, kind::SETTINGS, frame::flag::ACK, 0);
        let _ = tcp.write_all(&out).await;
        then(tcp).await;
    });
    addr
}

#[test]
fn a_server_that_stops_reading_is_a_timeout_never_a_hang() {
    local(async {
        // Windows wide open, then the server never reads: our writes fill the socket.
        let addr = raw_server(
            vec![(setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff)],
            0x7fff_0000,
            |tcp| async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(tcp);
            },
        )
        .await;
        let c = connect(&target(addr, Config::default()))
            .await
            .expect("connect");
        let h = block("POST", "/echo", &addr.to_string());
        let body = Bytes::from(vec![1u8; 64 * 1024 * 1024]);
        let started = std::time::Instant::now();
        let req = Request {
            headers: &h,
            body,
            keep: Keep::default(),
        };
        let r = timeout(Duration::from_millis(500), c.send(req)).await;
        assert!(r.is_err(), "the request's own timeout ends it");
        assert!(started.elapsed() < Duration::from_secs(5));
        // The worker's thread is free: another task runs.
        tokio::task::yield_now().await;
        // Windows closed (the server never sends WINDOW_UPDATE): the body waits, bounded too.
        let addr = raw_server(vec![], 0, |mut tcp| async move {
            let mut buf = vec![0u8; 1 << 20];
            while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
        })
        .await;
        let c = connect(&target(addr, Config::default()))
            .await
            .expect("connect");
        let req = Request {
            headers: &h,
            body: Bytes::from(vec![1u8; 1_000_000]),
            keep: Keep::default(),
        };
        assert!(timeout(Duration::from_millis(300), c.send(req))
            .await
            .is_err());
        assert!(c.is_usable(), "a stream's timeout is not the connection's");
    });
}

/// Reads the client's bytes until a HEADERS frame has come.
async fn read_until_headers(tcp: &mut tokio::net::TcpStream) {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        let mut at = frame::PREFACE.len().min(got.len());
        while got.len() >= at + 9 {
            let h = frame::Head::read(&got[at..]);
            if h.kind == kind::HEADERS {
                return;
            }
            at += 9 + h.len;
        }
        match tcp.read(&mut buf).await {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
}

#[test]
fn a_connection_closed_mid_response_fails_its_streams_as_reset() {
    local(async {
        let addr = raw_server(vec![], 0, |mut tcp| async move {
            read_until_headers(&mut tcp).await;
            // A response head on stream 1, then the close.
            let mut out = Vec::new();
            let mut b = Vec::new();
            throng_h2::hpack::encode_field(&mut b, b":status", b"200", false);
            frame::write_header(
                &mut out,
                b.len(),
                kind::HEADERS,
                frame::flag::END_HEADERS,
                1,
            );
            out.extend_from_slice(&b);
            let _ = tcp.write_all(&out).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        })
        .await;
        let c = connect(&target(addr, Config::default()))
            .await
            .expect("connect");
        let e = send(&c, &block("GET", "/", &addr.to_string()), Bytes::new())
            .await
            .expect_err("cut");
        assert!(matches!(e, StreamError::Conn(_)), "{e:?}");
        assert_eq!(c.classify(&e), ErrorClass::Reset);
        assert!(c.is_closed());
        let e = send(&c, &block("GET", "/", &addr.to_string()), Bytes::new())
            .await
            .expect_err("closed");
        assert!(matches!(e, StreamError::Conn(_)), "{e:?}");
    });
}

#[test]
fn a_pool_moves_to_a_new_connection_after_a_graceful_goaway_and_loses_none() {
    local(async {
        let s = hyper_server(ServerCfg::default()).await;
        let pool = Rc::new(Pool::new(target(s.addr, Config::default()), 100, None));
        let auth = s.addr.to_string();
        let mut set = tokio::task::JoinSet::new();
        let call = |path: &str| {
            let (pool, h) = (pool.clone(), block("GET", path, &auth));
            async move {
                let seat = pool.join();
                let req = Request {
                    headers: &h,
                    body: Bytes::new(),
                    keep: Keep::default(),
                };
                timeout(BOUND, pool.send(&seat, req))
                    .await
                    .expect("bounded")
            }
        };
        for _ in 0..10 {
            set.spawn_local(call("/slow"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        s.shutdown.notify_waiters();
        tokio::time::sleep(Duration::from_millis(20)).await;
        for _ in 0..20 {
            set.spawn_local(call("/hello"));
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            let r = r
                .expect("task")
                .expect("answered, the second time if not the first");
            assert_eq!(r.status, 200);
            ok += 1;
        }
        assert_eq!(ok, 30);
        assert_eq!(
            s.stats.processed.load(Ordering::SeqCst),
            30,
            "none lost, none twice"
        );
        assert_eq!(pool.connections(), 1, "the slot's connection was replaced");
    });
}

/// Reads the client's frames until `n` requests (HEADERS) have come; their stream ids.
async fn read_requests(tcp: &mut tokio::net::TcpStream, got: &mut Vec<u8>, n: usize) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut at = 0;
    let mut buf = vec![0u8; 4096];
    loop {
        if at == 0 && got.len() >= frame::PREFACE.len() && got.starts_with(frame::PREFACE) {
            at = frame::PREFACE.len();
        }
        while at > 0
            && got.len() >= at + 9
            && got.len() >= at + 9 + frame::Head::read(&got[at..]).len
        {
            let h = frame::Head::read(&got[at..]);
            if h.kind == kind::HEADERS {
                ids.push(h.stream);
            }
            at += 9 + h.len;
        }
        if ids.len() >= n {
            got.drain(..at);
            return ids;
        }
        match tcp.read(&mut buf).await {
            Ok(k) if k > 0 => got.extend_from_slice(&buf[..k]),
            _ => return ids,
        }
    }
}

fn head_200(id: u32, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    throng_h2::hpack::encode_field(&mut b, b":status", b"200", false);
    let mut out = Vec::new();
    frame::write_header(
        &mut out,
        b.len(),
        kind::HEADERS,
        frame::flag::END_HEADERS,
        id,
    );
    out.extend_from_slice(&b);
    frame::write_header(
        &mut out,
        body.len(),
        kind::DATA,
        frame::flag::END_STREAM,
        id,
    );
    out.extend_from_slice(body);
    out
}

/// A server whose first connection answers stream 1 of three and sends GOAWAY(1); its second
/// answers everything: the pool sends streams 3 and 5 again there, once.
#[test]
fn a_pool_retries_the_streams_above_goaways_last_id_once_on_a_new_connection() {
    local(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let answered = Arc::new(AtomicU64::new(0));
        let a = answered.clone();
        tokio::spawn(async move {
            for conn in 0..2 {
                let Ok((mut tcp, _)) = listener.accept().await else {
                    return;
                };
                let mut out = Vec::new();
                frame::write_settings(&mut out, &[]);
                let _ = tcp.write_all(&out).await;
                let a = a.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    if conn == 0 {
                        let ids = read_requests(&mut tcp, &mut got, 3).await;
                        assert_eq!(ids, [1, 3, 5]);
                        let mut out = Vec::new();
                        frame::write_goaway(&mut out, 1, frame::Reason::NO_ERROR, b"");
                        out.extend(head_200(1, b"first"));
                        let _ = tcp.write_all(&out).await;
                        a.fetch_add(1, Ordering::SeqCst);
                    } else {
                        let ids = read_requests(&mut tcp, &mut got, 2).await;
                        let mut out = Vec::new();
                        for id in ids {
                            out.extend(head_200(id, b"second"));
                            a.fetch_add(1, Ordering::SeqCst);
                        }
                        let _ = tcp.write_all(&out).await;
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                });
            }
        });
        let pool = Rc::new(Pool::new(target(addr, Config::default()), 10, None));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..3 {
            let (pool, h) = (pool.clone(), block("GET", "/", &addr.to_string()));
            set.spawn_local(async move {
                let seat = pool.join();
                let req = Request {
                    headers: &h,
                    body: Bytes::new(),
                    keep: keep_all(),
                };
                timeout(BOUND, pool.send(&seat, req))
                    .await
                    .expect("bounded")
            });
        }
        let mut bodies = Vec::new();
        while let Some(r) = set.join_next().await {
            let r = r.expect("task").expect("answered");
            bodies.push(String::from_utf8(r.body.to_vec()).expect("utf-8"));
        }
        bodies.sort();
        assert_eq!(bodies, ["first", "second", "second"]);
        assert_eq!(
            answered.load(Ordering::SeqCst),
            3,
            "each request answered once"
        );
    });
}

#[test]
fn a_streamed_response_is_handed_out_as_it_arrives() {
    local(async {
        let s = hyper_server(ServerCfg::default()).await;
        let c = connect(&target(s.addr, Config::default()))
            .await
            .expect("connect");
        let h = block("GET", "/stream?10", &s.addr.to_string());
        let req = Request {
            headers: &h,
            body: Bytes::new(),
            keep: Keep::default(),
        };
        let mut stream = c.send_streaming(req).expect("open");
        let mut parts = Vec::new();
        while let Some(part) = timeout(BOUND, stream.data()).await.expect("bounded") {
            parts.push(part);
        }
        let r = timeout(BOUND, stream.end())
            .await
            .expect("bounded")
            .expect("ok");
        assert_eq!(r.status, 200);
        assert_eq!(r.body_len, 1000);
        assert!(r.body.is_empty(), "all of it was handed out");
        let total: usize = parts.iter().map(|p| p.len()).sum();
        assert_eq!(total, 1000);
        // 30 ms apart: the parts arrive one by one, not at the end.
        assert!(parts.len() >= 8, "{} parts", parts.len());
        assert_eq!(parts[0][0], b'a');
        // A stream dropped halfway is reset; the connection goes on.
        let req = Request {
            headers: &h,
            body: Bytes::new(),
            keep: Keep::default(),
        };
        let mut stream = c.send_streaming(req).expect("open");
        assert!(timeout(BOUND, stream.data())
            .await
            .expect("bounded")
            .is_some());
        drop(stream);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(c.open_streams(), 0);
        let r = send(
            &c,
            &block("GET", "/hello", &s.addr.to_string()),
            Bytes::new(),
        )
        .await;
        assert_eq!(r.expect("hello").status, 200);
    });
}

#[test]
fn a_request_body_sent_in_parts_reaches_the_server_whole() {
    local(async {
        let s = hyper_server(ServerCfg::default()).await;
        let c = connect(&target(s.addr, Config::default()))
            .await
            .expect("connect");
        let h = block("POST", "/echo", &s.addr.to_string());
        let req = Request {
            headers: &h,
            body: Bytes::from_static(b"one,"),
            keep: Keep::default(),
        };
        let mut stream = c.open_stream(req).expect("open");
        for part in [&b"two,"[..], b"three"] {
            tokio::time::sleep(Duration::from_millis(20)).await;
            stream
                .send(Bytes::copy_from_slice(part), false)
                .expect("part");
        }
        stream.send(Bytes::new(), true).expect("end");
        let mut body = Vec::new();
        while let Some(part) = timeout(BOUND, stream.data()).await.expect("bounded") {
            body.extend_from_slice(&part);
        }
        let r = timeout(BOUND, stream.end())
            .await
            .expect("bounded")
            .expect("ok");
        assert_eq!(r.status, 200);
        assert_eq!(body, b"one,two,three");
    });
}
