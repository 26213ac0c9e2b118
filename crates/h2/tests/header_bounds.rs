//! A server's header blocks are bounded: raw sockets written here send what no real server does
//! on purpose: endless CONTINUATION frames (empty ones grow no block: a bound on bytes alone
//! would never end them), and a few KiB of HPACK that decode to many MiB. Each ends in a
//! classified failure within a bound on time and memory, never a hang or an allocation as
//! large as the server likes.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use throng_core::ErrorClass;
use throng_h2::client::{connect, Target};
use throng_h2::conn::{Config, ConnError, StreamError};
use throng_h2::frame::{self, flag, kind, setting, Head, Reason, PREFACE};
use throng_h2::hpack::{encode_field, encode_int as int, Block};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::timeout;

mod common;
use common::{local, send, BOUND};

fn target(addr: SocketAddr) -> Target {
    Target {
        addrs: vec![addr],
        authority: addr.to_string(),
        tls: None,
        connect_timeout: Duration::from_secs(5),
        config: Config::default(),
    }
}

fn get(authority: &str) -> Vec<u8> {
    Block::builder()
        .field(":method", b"GET")
        .field(":scheme", b"http")
        .field(":path", b"/")
        .field(":authority", authority.as_bytes())
        .build()
        .fixed()
        .expect("fixed")
        .to_vec()
}

/// The client's frames as they come: the preface skipped, each frame's head and payload.
struct Frames {
    got: Vec<u8>,
    at: usize,
}

impl Frames {
    fn new() -> Frames {
        Frames {
            got: Vec::new(),
            at: PREFACE.len(),
        }
    }

    /// The next frame of the client's, or `None` once the client closed.
    async fn next(&mut self, rd: &mut (impl AsyncReadExt + Unpin)) -> Option<(Head, Vec<u8>)> {
        let mut buf = [0u8; 4096];
        loop {
            if self.got.len() >= self.at + 9 {
                let h = Head::read(&self.got[self.at..]);
                if self.got.len() >= self.at + 9 + h.len {
                    let p = self.got[self.at + 9..self.at + 9 + h.len].to_vec();
                    self.at += 9 + h.len;
                    return Some((h, p));
                }
            }
            match rd.read(&mut buf).await {
                Ok(n) if n > 0 => self.got.extend_from_slice(&buf[..n]),
                _ => return None,
            }
        }
    }
}

/// A server that answers the client's first request with a HEADERS frame (`:status` 200,
/// no END_HEADERS) and then CONTINUATION frames of `fragment` bytes each, never ending the
/// block, until the client closes. It reports the client's SETTINGS, the GOAWAY the client
/// sent (its code) and how many CONTINUATION frames it wrote.
async fn flooding_server(
    fragment: usize,
) -> (
    SocketAddr,
    oneshot::Receiver<(Vec<(u16, u32)>, Option<Reason>, u64)>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        let (mut rd, mut wr) = tcp.into_split();
        let mut out = Vec::new();
        frame::write_settings(&mut out, &[]);
        let _ = wr.write_all(&out).await;
        let mut frames = Frames::new();
        let mut settings = Vec::new();
        let mut stream = 0;
        while let Some((h, p)) = frames.next(&mut rd).await {
            if h.kind == kind::SETTINGS && h.flags & flag::ACK == 0 {
                for pair in p.chunks_exact(6) {
                    let id = u16::from_be_bytes([pair[0], pair[1]]);
                    let v = u32::from_be_bytes([pair[2], pair[3], pair[4], pair[5]]);
                    settings.push((id, v));
                }
            }
            if h.kind == kind::HEADERS {
                stream = h.stream;
                break;
            }
        }
        let writer = tokio::spawn(async move {
            let mut head = Vec::new();
            encode_field(&mut head, b":status", b"200", false);
            let mut out = Vec::new();
            frame::write_header(&mut out, head.len(), kind::HEADERS, 0, stream);
            out.extend_from_slice(&head);
            let mut sent = 0u64;
            let mut batch = Vec::new();
            for _ in 0..64 {
                frame::write_header(&mut batch, fragment, kind::CONTINUATION, 0, stream);
                // Literal header field bytes that never make a whole field: the block must be
                // refused before it is decoded.
                batch.extend(std::iter::repeat_n(b'x', fragment));
            }
            if wr.write_all(&out).await.is_err() {
                return sent;
            }
            // Bounded, so that a client that never refuses fails the test rather than hangs it.
            while sent < 10_000_000 {
                if wr.write_all(&batch).await.is_err() {
                    break;
                }
                sent += 64;
            }
            sent
        });
        let mut goaway = None;
        while let Some((h, p)) = frames.next(&mut rd).await {
            if h.kind == kind::GOAWAY && p.len() >= 8 {
                goaway = Some(Reason(u32::from_be_bytes([p[4], p[5], p[6], p[7]])));
            }
        }
        let sent = writer.await.unwrap_or(0);
        let _ = tx.send((settings, goaway, sent));
    });
    (addr, rx)
}

#[test]
fn a_continuation_flood_fails_the_connection_as_protocol_within_its_bound() {
    local(async {
        // Empty frames (no block grows: the frame count ends it), and 1 KiB frames (the bytes
        // end it, at 64 KiB).
        for fragment in [0usize, 1024] {
            let (addr, report) = flooding_server(fragment).await;
            let c = connect(&target(addr)).await.expect("connect");
            let started = std::time::Instant::now();
            let e = send(&c, &get(&addr.to_string()), Bytes::new())
                .await
                .expect_err("the flood fails the request");
            assert!(
                matches!(
                    &e,
                    StreamError::Conn(ConnError::Protocol(Reason::ENHANCE_YOUR_CALM, m))
                        if m.contains("CONTINUATION")
                ),
                "{fragment}: {e:?}"
            );
            assert_eq!(c.classify(&e), ErrorClass::Protocol);
            assert!(c.is_closed());
            assert!(started.elapsed() < Duration::from_secs(5));
            let (settings, goaway, sent) = timeout(BOUND, report)
                .await
                .expect("the server's report within its bound")
                .expect("report");
            assert!(
                settings.contains(&(setting::MAX_HEADER_LIST_SIZE, 256 * 1024)),
                "{settings:?}"
            );
            assert_eq!(goaway, Some(Reason::ENHANCE_YOUR_CALM), "{fragment}");
            assert!(sent >= 64, "{fragment}: {sent}");
            assert!(sent < 10_000_000, "{fragment}: the client never refused");
        }
    });
}

/// A response head whose 4 KiB of HPACK decode to `copies` × 4,000 bytes: a field of 4,000
/// bytes added to the dynamic table, then indexed `copies` times (entry 62).
fn bomb(copies: usize) -> Vec<u8> {
    let mut b = Vec::new();
    encode_field(&mut b, b":status", b"200", false);
    // Literal with incremental indexing, new name.
    b.push(0x40);
    int(&mut b, 0, 7, 6);
    b.extend_from_slice(b"x-bomb");
    int(&mut b, 0, 7, 4000);
    b.extend(std::iter::repeat_n(b'b', 4000));
    for _ in 0..copies {
        int(&mut b, 0x80, 7, 62);
    }
    b
}

/// A response that is its head alone: one HEADERS frame ending the stream.
fn whole_head(id: u32, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let flags = flag::END_HEADERS | flag::END_STREAM;
    frame::write_header(&mut out, block.len(), kind::HEADERS, flags, id);
    out.extend_from_slice(block);
    out
}

async fn read_requests(rd: &mut TcpStream, frames: &mut Frames, n: usize) -> Vec<u32> {
    let mut ids = Vec::new();
    while ids.len() < n {
        match frames.next(rd).await {
            Some((h, _)) if h.kind == kind::HEADERS => ids.push(h.stream),
            Some(_) => {}
            None => break,
        }
    }
    ids
}

#[test]
fn a_header_list_over_our_setting_fails_its_stream_and_the_connection_goes_on() {
    local(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let mut out = Vec::new();
            frame::write_settings(&mut out, &[]);
            let _ = tcp.write_all(&out).await;
            let mut frames = Frames::new();
            // 100 copies: 400 KB decoded from 4 KB, over our 256 KiB.
            let first = read_requests(&mut tcp, &mut frames, 1).await;
            let _ = tcp.write_all(&whole_head(first[0], &bomb(100))).await;
            // The next response uses the table the first one left: the client kept in step.
            let second = read_requests(&mut tcp, &mut frames, 1).await;
            let mut b = Vec::new();
            encode_field(&mut b, b":status", b"200", false);
            int(&mut b, 0x80, 7, 62);
            let _ = tcp.write_all(&whole_head(second[0], &b)).await;
            let mut rst = None;
            // The client's RST_STREAM for the first stream came before its second request.
            let mut at = PREFACE.len();
            while frames.got.len() >= at + 9 {
                let h = Head::read(&frames.got[at..]);
                if h.kind == kind::RST_STREAM && h.stream == first[0] {
                    let p = &frames.got[at + 9..at + 13];
                    rst = Some(Reason(u32::from_be_bytes([p[0], p[1], p[2], p[3]])));
                }
                at += 9 + h.len;
            }
            let _ = tx.send(rst);
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
        let c = connect(&target(addr)).await.expect("connect");
        let h = get(&addr.to_string());
        let e = send(&c, &h, Bytes::new())
            .await
            .expect_err("over the list's bound");
        assert!(
            matches!(e, StreamError::Protocol(Reason::ENHANCE_YOUR_CALM, _)),
            "{e:?}"
        );
        assert_eq!(c.classify(&e), ErrorClass::Protocol);
        assert!(c.is_usable(), "a stream's failure, not the connection's");
        let r = send(&c, &h, Bytes::new()).await.expect("the next response");
        assert_eq!(r.status, 200);
        assert_eq!(
            r.headers,
            [(b"x-bomb".to_vec(), vec![b'b'; 4000])],
            "the table is the server's"
        );
        let rst = timeout(BOUND, rx).await.expect("bounded").expect("report");
        assert_eq!(rst, Some(Reason::ENHANCE_YOUR_CALM));
    });
}
