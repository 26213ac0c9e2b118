//! Differential: our client and the `h2` crate's, as the reference, against one scripted
//! raw-frame server per case (tiny and changing windows, SETTINGS mid-run, GOAWAY with streams
//! in flight, RST_STREAM, refused streams, split header blocks, 1xx heads and trailers, a PING
//! flood, a close mid-response, a concurrency limit of one). Each request ends in one verdict
//! per client; the verdicts, and what the server observed, must be the same.
//!
//! The one deliberate difference, written into its case: DATA before a response's HEADERS is
//! a malformed response, which RFC 9113 section 8.1.1 makes a stream error (we reset the
//! stream; the connection and its other streams go on); h2 ends the whole connection.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use throng_h2::client::{connect, Target};
use throng_h2::conn::{Config, Keep, Request, StreamError};
use throng_h2::frame::{self, flag, kind, setting, Head, Reason};
use throng_h2::hpack::{encode_field, Block, Decoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::LocalSet;
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(10);

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Ok {
        status: u16,
        body: Vec<u8>,
        grpc_status: Option<String>,
    },
    /// Not processed by the server: safe to retry.
    NotProcessed,
    /// The server reset the stream with this code.
    Reset(u32),
    /// The client reset the stream: the server broke the protocol on it.
    Stream,
    /// The connection failed under it.
    Conn,
}

/// The server's side of one connection, frame by frame.
struct Peer {
    tcp: TcpStream,
    buf: Vec<u8>,
    dec: Decoder,
    pings_acked: u64,
    received: HashMap<u32, usize>,
    /// Streams whose request has ended, in order.
    ended: Vec<u32>,
    /// Give back every DATA byte at once with WINDOW_UPDATEs.
    replenish: bool,
    open: u32,
    max_open: u32,
    /// The first byte of each request's header block (0x20-0x3f: a table size update).
    firsts: Vec<u8>,
}

impl Peer {
    async fn start(mut tcp: TcpStream, settings: &[(u16, u32)]) -> Peer {
        let mut preface = [0u8; 24];
        tcp.read_exact(&mut preface).await.expect("preface");
        assert_eq!(&preface[..], frame::PREFACE);
        let mut out = Vec::new();
        frame::write_settings(&mut out, settings);
        tcp.write_all(&out).await.expect("settings");
        Peer {
            tcp,
            buf: Vec::new(),
            dec: Decoder::new(4096),
            pings_acked: 0,
            received: HashMap::new(),
            ended: Vec::new(),
            replenish: true,
            open: 0,
            max_open: 0,
            firsts: Vec::new(),
        }
    }

    async fn write(&mut self, bytes: &[u8]) {
        let _ = self.tcp.write_all(bytes).await;
    }

    /// Reads one frame and does what any server does with it; `None` at the end.
    async fn frame(&mut self) -> Option<Head> {
        while self.buf.len() < 9 || self.buf.len() < 9 + Head::read(&self.buf).len {
            let mut chunk = [0u8; 16384];
            match self.tcp.read(&mut chunk).await {
                Ok(n) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                _ => return None,
            }
        }
        let head = Head::read(&self.buf);
        let payload: Vec<u8> = self.buf[9..9 + head.len].to_vec();
        self.buf.drain(..9 + head.len);
        let mut out = Vec::new();
        match head.kind {
            kind::SETTINGS if head.flags & flag::ACK == 0 => {
                frame::write_header(&mut out, 0, kind::SETTINGS, flag::ACK, 0);
            }
            kind::PING if head.flags & flag::ACK != 0 => self.pings_acked += 1,
            kind::PING => {
                let mut p = [0u8; 8];
                p.copy_from_slice(&payload);
                frame::write_ping(&mut out, true, p);
            }
            kind::HEADERS => {
                assert_ne!(head.flags & flag::END_HEADERS, 0, "small request blocks");
                self.firsts.push(payload.first().copied().unwrap_or(0));
                self.dec
                    .decode(&payload, |_, _| {})
                    .expect("the client's HPACK");
                self.received.insert(head.stream, 0);
                self.open += 1;
                self.max_open = self.max_open.max(self.open);
                if head.flags & flag::END_STREAM != 0 {
                    self.ended.push(head.stream);
                }
            }
            kind::DATA => {
                *self.received.entry(head.stream).or_default() += head.len;
                if self.replenish && head.len > 0 {
                    frame::write_window_update(&mut out, 0, head.len as u32);
                    if head.flags & flag::END_STREAM == 0 {
                        frame::write_window_update(&mut out, head.stream, head.len as u32);
                    }
                }
                if head.flags & flag::END_STREAM != 0 {
                    self.ended.push(head.stream);
                }
            }
            _ => {}
        }
        if !out.is_empty() {
            self.write(&out).await;
        }
        Some(head)
    }

    /// Waits until `n` requests have ended; their stream ids.
    async fn requests(&mut self, n: usize) -> Vec<u32> {
        while self.ended.len() < n {
            if self.frame().await.is_none() {
                break;
            }
        }
        self.ended.clone()
    }

    /// Reads frames until the client closes, or for at most `d`.
    async fn drain(&mut self, d: Duration) {
        let _ = timeout(d, async { while self.frame().await.is_some() {} }).await;
    }

    async fn respond(&mut self, id: u32, status: &str, body: &[u8]) {
        let mut b = Vec::new();
        encode_field(&mut b, b":status", status.as_bytes(), false);
        let mut out = Vec::new();
        let end = if body.is_empty() { flag::END_STREAM } else { 0 };
        frame::write_header(
            &mut out,
            b.len(),
            kind::HEADERS,
            flag::END_HEADERS | end,
            id,
        );
        out.extend_from_slice(&b);
        if !body.is_empty() {
            frame::write_header(&mut out, body.len(), kind::DATA, flag::END_STREAM, id);
            out.extend_from_slice(body);
        }
        self.open -= 1;
        self.write(&out).await;
    }
}

fn raw(kind_: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_header(&mut out, payload.len(), kind_, flags, stream);
    out.extend_from_slice(payload);
    out
}

fn goaway(last: u32, reason: Reason) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_goaway(&mut out, last, reason, b"");
    out
}

type Script = fn(TcpStream) -> Pin<Box<dyn Future<Output = u64> + Send>>;

/// One case: the requests (method, path, body length) and the server's script, which returns
/// what it observed.
struct Case {
    name: &'static str,
    requests: Vec<(&'static str, usize)>,
    script: Script,
    want: Vec<Verdict>,
    /// What h2 says where it deliberately differs (see the module's doc).
    h2_differs: Option<Vec<Verdict>>,
}

fn ok(status: u16, body: &[u8]) -> Verdict {
    Verdict::Ok {
        status,
        body: body.to_vec(),
        grpc_status: None,
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "split header block, padding, priority",
            requests: vec![("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    let id = p.requests(1).await[0];
                    let mut b = Vec::new();
                    encode_field(&mut b, b":status", b"200", false);
                    encode_field(&mut b, b"x-long", &[b'q'; 40_000], false);
                    let mut first = vec![3u8, 0, 0, 0, 0, 7];
                    first.extend_from_slice(&b[..10_000]);
                    first.extend_from_slice(&[0, 0, 0]);
                    let mut out = raw(kind::HEADERS, flag::PADDED | flag::PRIORITY, id, &first);
                    out.extend(raw(kind::CONTINUATION, 0, id, &b[10_000..26_000]));
                    out.extend(raw(kind::CONTINUATION, flag::END_HEADERS, id, &b[26_000..]));
                    out.extend(raw(kind::DATA, flag::PADDED, id, b"\x02ab\0\0"));
                    out.extend(raw(kind::DATA, flag::END_STREAM, id, b"c"));
                    p.write(&out).await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![ok(200, b"abc")],
            h2_differs: None,
        },
        Case {
            name: "1xx, then the head, then trailers",
            requests: vec![("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    let id = p.requests(1).await[0];
                    let mut b = Vec::new();
                    encode_field(&mut b, b":status", b"103", false);
                    let mut out = raw(kind::HEADERS, flag::END_HEADERS, id, &b);
                    b.clear();
                    encode_field(&mut b, b":status", b"200", false);
                    out.extend(raw(kind::HEADERS, flag::END_HEADERS, id, &b));
                    out.extend(raw(kind::DATA, 0, id, b"body"));
                    b.clear();
                    encode_field(&mut b, b"grpc-status", b"0", false);
                    out.extend(raw(
                        kind::HEADERS,
                        flag::END_HEADERS | flag::END_STREAM,
                        id,
                        &b,
                    ));
                    p.write(&out).await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![Verdict::Ok {
                status: 200,
                body: b"body".to_vec(),
                grpc_status: Some("0".into()),
            }],
            h2_differs: None,
        },
        Case {
            name: "GOAWAY with three streams in flight, last id 1",
            requests: vec![("GET", 0), ("GET", 0), ("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    let ids = p.requests(3).await;
                    assert_eq!(ids, [1, 3, 5]);
                    p.write(&goaway(1, Reason::NO_ERROR)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    p.respond(1, "200", b"one").await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![
                ok(200, b"one"),
                Verdict::NotProcessed,
                Verdict::NotProcessed,
            ],
            h2_differs: None,
        },
        Case {
            name: "GOAWAY with an error and last id 0",
            requests: vec![("GET", 0), ("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    p.requests(2).await;
                    p.write(&goaway(0, Reason::ENHANCE_YOUR_CALM)).await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![Verdict::NotProcessed, Verdict::NotProcessed],
            h2_differs: None,
        },
        Case {
            name: "RST_STREAM on one stream, the other answered",
            requests: vec![("GET", 0), ("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    p.requests(2).await;
                    let rst = raw(
                        kind::RST_STREAM,
                        0,
                        1,
                        &Reason::INTERNAL_ERROR.0.to_be_bytes(),
                    );
                    p.write(&rst).await;
                    p.open -= 1;
                    p.respond(3, "201", b"").await;
                    // DATA on the reset stream afterwards: ignored by both.
                    p.write(&raw(kind::DATA, flag::END_STREAM, 1, b"late"))
                        .await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![Verdict::Reset(2), ok(201, b"")],
            h2_differs: None,
        },
        Case {
            name: "REFUSED_STREAM",
            requests: vec![("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    p.requests(1).await;
                    let rst = raw(
                        kind::RST_STREAM,
                        0,
                        1,
                        &Reason::REFUSED_STREAM.0.to_be_bytes(),
                    );
                    p.write(&rst).await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![Verdict::NotProcessed],
            h2_differs: None,
        },
        Case {
            name: "tiny windows, raised by SETTINGS mid-body",
            requests: vec![("POST", 5000)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[(setting::INITIAL_WINDOW_SIZE, 100)]).await;
                    p.replenish = false;
                    // The first 100 bytes fill the stream's window.
                    while p.received.get(&1).copied().unwrap_or(0) < 100 {
                        p.frame().await.expect("data");
                    }
                    let mut s = Vec::new();
                    frame::write_settings(&mut s, &[(setting::INITIAL_WINDOW_SIZE, 1000)]);
                    p.write(&s).await;
                    p.replenish = true;
                    let ids = p.requests(1).await;
                    let n = p.received[&ids[0]];
                    p.respond(1, "200", n.to_string().as_bytes()).await;
                    p.drain(Duration::from_millis(200)).await;
                    0
                })
            },
            want: vec![ok(200, b"5000")],
            h2_differs: None,
        },
        Case {
            name: "a PING flood before the answer",
            requests: vec![("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    p.requests(1).await;
                    let mut out = Vec::new();
                    for i in 0..200u64 {
                        frame::write_ping(&mut out, false, i.to_be_bytes());
                    }
                    p.write(&out).await;
                    while p.pings_acked < 200 {
                        if p.frame().await.is_none() {
                            break;
                        }
                    }
                    assert_eq!(p.pings_acked, 200, "every PING answered");
                    p.respond(1, "200", b"pong").await;
                    p.drain(Duration::from_millis(200)).await;
                    p.pings_acked
                })
            },
            want: vec![ok(200, b"pong")],
            h2_differs: None,
        },
        Case {
            name: "the connection closed mid-response",
            requests: vec![("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    p.requests(1).await;
                    let mut b = Vec::new();
                    encode_field(&mut b, b":status", b"200", false);
                    let mut out = raw(kind::HEADERS, flag::END_HEADERS, 1, &b);
                    out.extend(raw(kind::DATA, 0, 1, b"part"));
                    p.write(&out).await;
                    0
                })
            },
            want: vec![Verdict::Conn],
            h2_differs: None,
        },
        Case {
            name: "DATA before the response's head",
            requests: vec![("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[]).await;
                    p.requests(1).await;
                    p.write(&raw(kind::DATA, 0, 1, b"early")).await;
                    p.drain(Duration::from_millis(300)).await;
                    0
                })
            },
            want: vec![Verdict::Stream],
            h2_differs: Some(vec![Verdict::Conn]),
        },
        Case {
            name: "SETTINGS_HEADER_TABLE_SIZE 0: a size update first, once",
            requests: vec![("GET", 0), ("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[(setting::HEADER_TABLE_SIZE, 0)]).await;
                    let ids = p.requests(2).await;
                    for id in ids {
                        p.respond(id, "200", b"").await;
                    }
                    p.drain(Duration::from_millis(200)).await;
                    // Which requests began with a dynamic table size update (bit i: request i):
                    // the first only.
                    let bits = p
                        .firsts
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| (0x20..0x40).contains(*b))
                        .map(|(i, _)| 1u64 << i)
                        .sum();
                    assert_eq!(bits, 1, "{:x?}", p.firsts);
                    bits
                })
            },
            want: vec![ok(200, b""), ok(200, b"")],
            h2_differs: None,
        },
        Case {
            name: "MAX_CONCURRENT_STREAMS 1: three requests one after another",
            requests: vec![("GET", 0), ("GET", 0), ("GET", 0)],
            script: |tcp| {
                Box::pin(async move {
                    let mut p = Peer::start(tcp, &[(setting::MAX_CONCURRENT_STREAMS, 1)]).await;
                    for i in 0..3 {
                        let id = p.requests(i + 1).await[i];
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        p.respond(id, "200", id.to_string().as_bytes()).await;
                    }
                    p.drain(Duration::from_millis(200)).await;
                    assert_eq!(p.max_open, 1, "one stream at a time");
                    p.max_open as u64
                })
            },
            want: vec![ok(200, b"1"), ok(200, b"3"), ok(200, b"5")],
            h2_differs: None,
        },
    ]
}

/// Serves one connection with `script`; its address and what it observed.
async fn serve(script: Script) -> (SocketAddr, tokio::task::JoinHandle<u64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let h = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        script(tcp).await
    });
    (addr, h)
}

fn header_block(method: &str, addr: SocketAddr) -> Vec<u8> {
    Block::builder()
        .field(":method", method.as_bytes())
        .field(":scheme", b"http")
        .field(":path", b"/")
        .field(":authority", addr.to_string().as_bytes())
        .build()
        .fixed()
        .expect("fixed")
        .to_vec()
}

async fn ours(case: &Case) -> (Vec<Verdict>, u64) {
    let (addr, server) = serve(case.script).await;
    let t = Target {
        addrs: vec![addr],
        authority: addr.to_string(),
        tls: None,
        connect_timeout: BOUND,
        config: Config::default(),
    };
    let c = connect(&t).await.expect("connect");
    let mut tasks = Vec::new();
    for &(method, len) in &case.requests {
        let c = c.clone();
        let headers = header_block(method, addr);
        tasks.push(tokio::task::spawn_local(async move {
            let req = Request {
                headers: &headers,
                body: Bytes::from(vec![b'b'; len]),
                keep: Keep {
                    headers: true,
                    body: true,
                    parts: false,
                },
            };
            match timeout(BOUND, c.send(req)).await.expect("bounded") {
                Ok(r) => Verdict::Ok {
                    status: r.status,
                    body: r.body.to_vec(),
                    grpc_status: r.grpc_status.map(|s| s.to_string()),
                },
                Err(StreamError::NotProcessed(_)) => Verdict::NotProcessed,
                Err(StreamError::Reset(r)) => Verdict::Reset(r.0),
                Err(StreamError::Protocol(..)) => Verdict::Stream,
                Err(StreamError::Conn(_)) => Verdict::Conn,
                Err(e @ StreamError::TimedOut) => panic!("no deadline was set: {e}"),
            }
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    drop(c);
    let seen = timeout(BOUND, server)
        .await
        .expect("server ends")
        .expect("server");
    (out, seen)
}

fn h2_verdict(e: h2::Error) -> Verdict {
    if e.reason() == Some(h2::Reason::REFUSED_STREAM) || (e.is_go_away() && e.is_remote()) {
        Verdict::NotProcessed
    } else if e.is_reset() && e.is_remote() {
        Verdict::Reset(e.reason().map(u32::from).unwrap_or(0))
    } else if e.is_reset() {
        Verdict::Stream
    } else {
        Verdict::Conn
    }
}

async fn reference(case: &Case) -> (Vec<Verdict>, u64) {
    let (addr, server) = serve(case.script).await;
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (send, mut conn) = h2::client::handshake(tcp).await.expect("handshake");
    let mut ping = conn.ping_pong().expect("ping_pong");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // As ours does before its first request: the server's SETTINGS have been read (they came
    // before the PING's answer).
    timeout(BOUND, ping.ping(h2::Ping::opaque()))
        .await
        .expect("bounded")
        .expect("pong");
    let mut tasks = Vec::new();
    let mut send = send;
    for &(method, len) in &case.requests {
        let req = http::Request::builder()
            .method(method)
            .uri(format!("http://{addr}/"))
            .body(())
            .expect("request");
        send = match timeout(BOUND, send.ready()).await.expect("bounded") {
            Ok(s) => s,
            Err(e) => {
                let v = h2_verdict(e);
                tasks.push(tokio::spawn(async move { v }));
                return finish(tasks, server).await;
            }
        };
        let sent = send.send_request(req, len == 0);
        tasks.push(tokio::spawn(async move {
            let (resp, mut body_tx) = match sent {
                Ok(pair) => pair,
                Err(e) => return h2_verdict(e),
            };
            if len > 0 {
                let _ = body_tx.send_data(Bytes::from(vec![b'b'; len]), true);
            }
            let call = async {
                let resp = resp.await?;
                let status = resp.status().as_u16();
                let mut body = resp.into_body();
                let mut bytes = Vec::new();
                while let Some(chunk) = body.data().await {
                    let chunk = chunk?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                    bytes.extend_from_slice(&chunk);
                }
                let trailers = body.trailers().await?;
                let grpc_status = trailers.and_then(|t| {
                    t.get("grpc-status")
                        .map(|v| v.to_str().unwrap_or("").to_string())
                });
                Ok::<_, h2::Error>(Verdict::Ok {
                    status,
                    body: bytes,
                    grpc_status,
                })
            };
            match timeout(BOUND, call).await.expect("bounded") {
                Ok(v) => v,
                Err(e) => h2_verdict(e),
            }
        }));
    }
    drop(send);
    finish(tasks, server).await
}

async fn finish(
    tasks: Vec<tokio::task::JoinHandle<Verdict>>,
    server: tokio::task::JoinHandle<u64>,
) -> (Vec<Verdict>, u64) {
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    let seen = timeout(BOUND, server)
        .await
        .expect("server ends")
        .expect("server");
    (out, seen)
}

#[test]
fn both_clients_reach_the_same_verdicts_on_every_scripted_case() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(LocalSet::new().run_until(async {
        let mut failures = Vec::new();
        for case in cases() {
            let (a, seen_a) = ours(&case).await;
            let (b, seen_b) = reference(&case).await;
            let want_b = case.h2_differs.as_ref().unwrap_or(&case.want);
            if a != case.want || &b != want_b || seen_a != seen_b {
                failures.push(format!(
                    "{}: ours {a:?} (server saw {seen_a}), h2 {b:?} (server saw {seen_b}), want {:?}",
                    case.name, case.want
                ));
            }
        }
        assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    }));
}
