//! Steps over HTTP/2 against hyper's HTTP/2 server (h2c), which no one here wrote: a templated
//! `host` header is the request's `:authority` (hyper sees it as the URI's authority, and no
//! `host` field), and a response to be read as a stream that is an error keeps its body for
//! checks, over HTTP/2 as over HTTP/1.1.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use throng_core::step::{Client, ClientOptions, Node, Place, Protocol, Render, Text, Uncompiled};
use throng_core::ErrorClass;
use throng_http::{HttpClient, HttpOptions, HttpProtocol, HttpStep};
use tokio::net::TcpListener;
use tokio::task::LocalSet;
use tokio::time::timeout;

/// What the server saw of each request: the URI's authority and the `host` fields.
type Seen = Arc<Mutex<Vec<(Option<String>, Vec<String>)>>>;

/// hyper's server, HTTP/1.1 and HTTP/2 by prior knowledge on one port: `/err` answers 503 with
/// a body, anything else 200 with two server-sent events.
async fn server() -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: hyper::Request<Incoming>| {
                    let hosts = req
                        .headers()
                        .get_all(http::header::HOST)
                        .iter()
                        .map(|v| v.to_str().unwrap().to_string())
                        .collect();
                    let authority = req.uri().authority().map(|a| a.to_string());
                    s.lock().unwrap().push((authority, hosts));
                    let (status, body) = match req.uri().path() {
                        "/err" => (503, &b"overloaded: try later"[..]),
                        _ => (200, &b"data: one\n\ndata: two\n\n"[..]),
                    };
                    let resp = hyper::Response::builder()
                        .status(status)
                        .header("content-type", "text/event-stream")
                        .body(Full::new(Bytes::from_static(body)))
                        .unwrap();
                    async move { Ok::<_, Infallible>(resp) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (addr, seen)
}

/// Renders a path template as `/pN`, any other as `tenant-N.example:80`, N counting the
/// templates rendered.
#[derive(Default)]
struct Tenants(std::cell::Cell<u32>);

impl Render for Tenants {
    fn render(&self, text: &Text) -> Result<String, String> {
        match text {
            Text::Static(s) => Ok(s.clone()),
            Text::Template(t) => {
                let n = self.0.get();
                self.0.set(n + 1);
                Ok(match t.starts_with('/') {
                    true => format!("/p{n}"),
                    false => format!("tenant-{n}.example:80"),
                })
            }
        }
    }
}

fn step(json: serde_json::Value) -> HttpStep {
    let node = Node::from_json(&json, Place { line: 1, column: 1 });
    HttpProtocol.compile(&node, &mut Uncompiled).unwrap()
}

fn client(addr: SocketAddr, http2: bool) -> HttpClient {
    let options = ClientOptions {
        timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    }
    .with(HttpOptions {
        http2,
        keepalive: true,
    });
    HttpProtocol
        .client(&format!("http://{addr}"), &options)
        .unwrap()
}

fn local<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(LocalSet::new().run_until(f))
}

#[test]
fn a_templated_host_header_is_the_authority_over_http2() {
    local(async {
        let (addr, seen) = server().await;
        let c = client(addr, true);
        let worker = c.worker_of(0, 1);
        let mut session = c.session(&worker, 0);
        let render = Tenants::default();
        // The path templated too: its slot comes first, the host's second.
        let s = step(serde_json::json!({
            "path": "/{{ p }}",
            "headers": {"host": "{{ tenant }}", "x-a": "{{ a }}"},
        }));
        for _ in 0..2 {
            let (o, reply) = timeout(
                Duration::from_secs(10),
                c.call(&mut session, &s, &render, true),
            )
            .await
            .unwrap();
            assert_eq!(o.error, None, "{:?}", o.message);
            assert_eq!(reply.unwrap().status.code(), 200);
        }
        // Three templates a call, in their order: path, host, x-a.
        let authority = |s: &str| (Some(s.to_string()), Vec::<String>::new());
        assert_eq!(
            *seen.lock().unwrap(),
            [
                authority("tenant-1.example:80"),
                authority("tenant-4.example:80")
            ],
            "`:authority` the rendered host, and no `host` field"
        );
        // A fixed host header is the authority as well.
        let s = step(serde_json::json!({"path": "/", "headers": {"host": "fixed.example"}}));
        let (o, _) = timeout(
            Duration::from_secs(10),
            c.call(&mut session, &s, &render, false),
        )
        .await
        .unwrap();
        assert_eq!(o.error, None, "{:?}", o.message);
        assert_eq!(seen.lock().unwrap()[2], authority("fixed.example"));
    });
}

#[test]
fn an_error_answer_to_a_streamed_request_keeps_its_body_for_checks() {
    local(async {
        let (addr, _) = server().await;
        for http2 in [false, true] {
            let c = client(addr, http2);
            let worker = c.worker_of(0, 1);
            let mut session = c.session(&worker, 0);
            let render = Tenants::default();
            let err = step(serde_json::json!({"path": "/err", "stream": "sse"}));
            let (o, reply) = timeout(
                Duration::from_secs(10),
                c.call(&mut session, &err, &render, true),
            )
            .await
            .unwrap();
            assert_eq!(o.error, Some(ErrorClass::Status), "http2 {http2}");
            let reply = reply.unwrap();
            assert_eq!(reply.status.code(), 503);
            assert_eq!(&reply.body[..], b"overloaded: try later", "http2 {http2}");
            assert!(o.parts.is_empty(), "an error's body is no stream of events");
            // A 2xx stream: its events are the parts, and checks see the last.
            let ok = step(serde_json::json!({"path": "/ok", "stream": "sse"}));
            let (o, reply) = timeout(
                Duration::from_secs(10),
                c.call(&mut session, &ok, &render, true),
            )
            .await
            .unwrap();
            assert_eq!(o.error, None, "http2 {http2}: {:?}", o.message);
            assert_eq!(o.parts.len(), 2, "http2 {http2}");
            assert_eq!(&reply.unwrap().body[..], b"two", "http2 {http2}");
        }
    });
}
