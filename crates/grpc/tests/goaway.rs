//! A server's GOAWAY with calls in flight: the calls above its last stream id were not
//! processed, so each goes once more on a new connection (throng-h2's pool), and every call is
//! answered and counted exactly once. On the `h2` crate they failed as `reset`.
//!
//! The server is scripted on raw frames (no library server sends a GOAWAY that leaves streams
//! it has read unprocessed on cue): its first connection waits for three calls, answers the
//! first, and goes away with that call's stream id as the last; every later connection answers
//! each call.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use throng_core::Driver;
use throng_grpc::{GrpcClient, Pool};
use throng_h2::frame::{self, flag, kind, Head, Reason, HEADER_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use common::{answer, greeter};

/// What the server saw: connections, calls read on the first connection, calls answered.
#[derive(Default)]
struct Seen {
    connections: AtomicU32,
    first_read: AtomicU32,
    answered: AtomicU32,
}

async fn connection(mut tcp: TcpStream, first: bool, seen: Arc<Seen>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[]);
    tcp.write_all(&out).await.unwrap();
    let mut preface = false;
    let mut ended = Vec::new();
    let mut gone = false;
    loop {
        let n = match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if !preface {
            if buf.len() < frame::PREFACE.len() {
                continue;
            }
            buf.drain(..frame::PREFACE.len());
            preface = true;
        }
        let mut out = Vec::new();
        while buf.len() >= HEADER_LEN {
            let head = Head::read(&buf);
            if buf.len() < HEADER_LEN + head.len {
                break;
            }
            buf.drain(..HEADER_LEN + head.len);
            match head.kind {
                kind::SETTINGS if head.flags & flag::ACK == 0 => {
                    frame::write_header(&mut out, 0, kind::SETTINGS, flag::ACK, 0)
                }
                kind::HEADERS | kind::DATA if head.flags & flag::END_STREAM != 0 => {
                    ended.push(head.stream)
                }
                _ => {}
            }
        }
        if !first {
            for id in ended.drain(..) {
                answer(&mut out, id);
                seen.answered.fetch_add(1, Ordering::SeqCst);
            }
        } else if ended.len() == 3 && !gone {
            // The first call answered; the two after it never will be on this connection.
            seen.first_read.store(3, Ordering::SeqCst);
            answer(&mut out, ended[0]);
            seen.answered.fetch_add(1, Ordering::SeqCst);
            frame::write_goaway(&mut out, ended[0], Reason::NO_ERROR, b"");
            gone = true;
        }
        if !out.is_empty() {
            tcp.write_all(&out).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_above_a_goaway_go_again_on_a_new_connection_each_answered_once() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let server = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let first = server.connections.fetch_add(1, Ordering::SeqCst) == 0;
            tokio::spawn(connection(tcp, first, server.clone()));
        }
    });
    let mut cfg = greeter(&format!("grpc://{addr}"), "SayHello");
    cfg.data = Some(r#"{"name":"a"}"#.into());
    cfg.streams = 3;
    let d = GrpcClient::one_step(cfg).await.unwrap();
    // throng-h2's connections are local tasks, as on the engine's workers.
    let outcomes = tokio::task::LocalSet::new()
        .run_until(async {
            let pool = Pool::fixed(1);
            let mut s: Vec<_> = (0..3).map(|u| Driver::session(&d, &pool, u)).collect();
            let [a, b, c] = &mut s[..] else {
                unreachable!()
            };
            let r = tokio::join!(d.send(a, false), d.send(b, false), d.send(c, false));
            assert_eq!(pool.connections(), 1, "the three calls share one seat list");
            [r.0 .0, r.1 .0, r.2 .0]
        })
        .await;
    for o in &outcomes {
        assert_eq!(o.error, None, "{:?}", o.message);
        assert_eq!(o.status, throng_grpc::status::status(0));
    }
    assert_eq!(
        seen.first_read.load(Ordering::SeqCst),
        3,
        "three calls on the first"
    );
    assert_eq!(
        seen.connections.load(Ordering::SeqCst),
        2,
        "one new connection"
    );
    assert_eq!(
        seen.answered.load(Ordering::SeqCst),
        3,
        "each call answered once"
    );
    let bytes: u64 = outcomes.iter().map(|o| o.bytes_received).sum();
    assert!(bytes > 0);
}
