//! A call's deadline is its stream's on the shared connection, watched by the connection's
//! task: a call past it fails as `timeout` by then, though nothing else arrives, its stream is
//! reset with CANCEL, and the connection and the calls beside it go on. A server stream and a
//! paced client stream are bounded whole, not message by message.
//!
//! The server is scripted on raw frames, so that it can hold one call while answering the next
//! and show which streams the client reset: a request whose message says `fast` is answered at
//! once, `slow` and `pace` never, and `drip` gets a reply message every 40 ms without end.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use throng_core::{ErrorClass, Outcome};
use throng_grpc::{find_method, Descriptors, Method, Pool, Session, Target};
use throng_h2::frame::{self, flag, kind, Head, Reason, HEADER_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use common::{answer, greeter, head, message};

/// What the server saw: connections, each call's stream and name, the client's RST_STREAMs.
#[derive(Default)]
struct Seen {
    connections: Mutex<u32>,
    calls: Mutex<Vec<(u32, &'static str)>>,
    resets: Mutex<Vec<(u32, u32)>>,
}

impl Seen {
    fn stream_of(&self, name: &str) -> Vec<u32> {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter(|(_, n)| *n == name)
            .map(|(id, _)| *id)
            .collect()
    }
}

async fn connection(mut tcp: TcpStream, seen: Arc<Seen>) {
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[]);
    tcp.write_all(&out).await.unwrap();
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 16 * 1024]);
    let mut preface = false;
    let mut drips: Vec<u32> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(40));
    loop {
        let mut out = Vec::new();
        tokio::select! {
            r = tcp.read(&mut chunk) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            },
            _ = tick.tick() => drips.iter().for_each(|&id| message(&mut out, id)),
        }
        if !preface && buf.len() >= frame::PREFACE.len() {
            buf.drain(..frame::PREFACE.len());
            preface = true;
        }
        while preface && buf.len() >= HEADER_LEN {
            let h = Head::read(&buf);
            if buf.len() < HEADER_LEN + h.len {
                break;
            }
            let payload = buf[HEADER_LEN..HEADER_LEN + h.len].to_vec();
            buf.drain(..HEADER_LEN + h.len);
            match h.kind {
                kind::SETTINGS if h.flags & flag::ACK == 0 => {
                    frame::write_header(&mut out, 0, kind::SETTINGS, flag::ACK, 0)
                }
                kind::RST_STREAM => {
                    let code = u32::from_be_bytes(payload[..4].try_into().unwrap());
                    seen.resets.lock().unwrap().push((h.stream, code));
                    drips.retain(|&id| id != h.stream);
                }
                kind::DATA => {
                    let mut calls = seen.calls.lock().unwrap();
                    if calls.iter().any(|(id, _)| *id == h.stream) {
                        continue;
                    }
                    let has = |w: &[u8]| payload.windows(w.len()).any(|x| x == w);
                    let name = ["fast", "slow", "pace", "drip"]
                        .into_iter()
                        .find(|n| has(n.as_bytes()))
                        .unwrap_or("other");
                    calls.push((h.stream, name));
                    match name {
                        "fast" => answer(&mut out, h.stream),
                        "drip" => {
                            head(&mut out, h.stream);
                            drips.push(h.stream);
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        if !out.is_empty() && tcp.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// Serves [`connection`] on 127.0.0.1.
async fn server() -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("grpc://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            *s.connections.lock().unwrap() += 1;
            tokio::spawn(connection(tcp, s.clone()));
        }
    });
    (url, seen)
}

/// The greeter's calls on a target with `timeout` and `interval`.
struct Rig {
    target: Target,
    pool: prost_reflect::DescriptorPool,
    headers: http::HeaderMap,
}

impl Rig {
    async fn new(url: &str, timeout: Duration, interval: Option<Duration>) -> Rig {
        let mut cfg = greeter(url, "SayHello");
        cfg.timeout = timeout;
        cfg.message_interval = interval;
        let target = Target::new(&cfg).unwrap();
        let pool = target
            .descriptors(&cfg, "helloworld.Greeter")
            .await
            .unwrap();
        let headers = target.headers(throng_grpc::metadata(&[]).unwrap());
        Rig {
            target,
            pool,
            headers,
        }
    }

    fn method(&self, name: &str) -> Method {
        let d = &Descriptors::Reflection;
        Method::new(find_method(&self.pool, "helloworld.Greeter", name, d).unwrap()).unwrap()
    }

    /// One call of `method` with `data` on `session`: its outcome, and when it ended.
    async fn call(&self, s: &mut Session, method: &str, data: &str) -> (Outcome, Instant) {
        let m = self.method(method);
        let block = self.target.block(&m, &self.headers, &[]);
        let frames: Vec<Bytes> = m.frames(Some(data)).unwrap();
        let headers = block.fixed().unwrap();
        let (o, _) = self.target.call(s, &m, headers, &frames, false).await;
        (o, Instant::now())
    }
}

fn timed_out(o: &Outcome) {
    assert_eq!(o.error, Some(ErrorClass::Timeout), "{:?}", o.message);
    let m = o.message.as_deref().unwrap_or_default();
    assert!(m.contains("no end of call within"), "{m}");
}

fn ok(o: &Outcome) {
    assert_eq!(o.error, None, "{:?}", o.message);
    assert_eq!(o.status, throng_grpc::status::status(0));
}

/// Within a wide margin of the 300 ms deadline, which a call ending with no timer of its own
/// would never reach (its server never answers; 10 s is the test's own bound).
fn by_deadline(started: Instant, ended: Instant) {
    let took = ended - started;
    let ms = Duration::from_millis;
    assert!((ms(300)..ms(1500)).contains(&took), "{took:?}");
}

/// The client's RST_STREAMs: CANCEL on each of `streams`, on no other.
fn cancelled(seen: &Seen, mut streams: Vec<u32>) {
    let mut resets = seen.resets.lock().unwrap().clone();
    resets.sort();
    streams.sort();
    let want: Vec<(u32, u32)> = streams.iter().map(|&id| (id, Reason::CANCEL.0)).collect();
    assert_eq!(resets, want);
}

fn local<F: std::future::Future>(f: F) -> impl std::future::Future<Output = F::Output> {
    // throng-h2's connections are local tasks, as on the engine's workers.
    let set = tokio::task::LocalSet::new();
    async move {
        tokio::time::timeout(Duration::from_secs(10), set.run_until(f))
            .await
            .expect("every call ends by its deadline")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_call_times_out_by_its_deadline_while_the_calls_beside_it_answer() {
    let (url, seen) = server().await;
    let rig = Rig::new(&url, Duration::from_millis(300), None).await;
    let pool = Pool::fixed(1);
    local(async {
        let mut s: Vec<Session> = (0..4).map(|_| rig.target.session(&pool)).collect();
        rig.target.connect(&mut s[0]).await.unwrap();
        let [a, b, c, d] = &mut s[..] else {
            unreachable!()
        };
        let start = Instant::now();
        let hello = "SayHello";
        let (slow, drip, fast) = tokio::join!(
            rig.call(a, hello, r#"{"name":"slow"}"#),
            rig.call(b, "SayHellos", r#"{"name":"drip"}"#),
            async {
                // While the two others wait on the same connection.
                tokio::time::sleep(Duration::from_millis(50)).await;
                rig.call(c, hello, r#"{"name":"fast"}"#).await
            },
        );
        timed_out(&slow.0);
        by_deadline(start, slow.1);
        // A server stream's deadline is the whole call's, though its messages come 40 ms apart.
        timed_out(&drip.0);
        by_deadline(start, drip.1);
        let messages = drip.0.parts.len();
        assert!((3..=40).contains(&messages), "{messages} messages");
        ok(&fast.0);
        assert!(fast.1 < slow.1.min(drip.1), "answered while they waited");
        // The connection goes on: the next call answers on it.
        ok(&rig.call(d, hello, r#"{"name":"fast"}"#).await.0);
        assert_eq!(pool.connections(), 1);
    })
    .await;
    assert_eq!(*seen.connections.lock().unwrap(), 1);
    assert_eq!(seen.stream_of("fast").len(), 2);
    let mut late = seen.stream_of("slow");
    late.extend(seen.stream_of("drip"));
    assert_eq!(late.len(), 2);
    cancelled(&seen, late);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paced_client_stream_times_out_whole_and_its_connection_goes_on() {
    let (url, seen) = server().await;
    // Ten messages 100 ms apart would take 900 ms: the 300 ms deadline ends the call first.
    let rig = Rig::new(
        &url,
        Duration::from_millis(300),
        Some(Duration::from_millis(100)),
    )
    .await;
    let pool = Pool::fixed(1);
    local(async {
        let mut s: Vec<Session> = (0..2).map(|_| rig.target.session(&pool)).collect();
        rig.target.connect(&mut s[0]).await.unwrap();
        let [a, b] = &mut s[..] else { unreachable!() };
        let ten = format!("[{}]", [r#"{"name":"pace"}"#; 10].join(","));
        let start = Instant::now();
        let (paced, fast) = tokio::join!(rig.call(a, "CollectHellos", &ten), async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            rig.call(b, "CollectHellos", r#"[{"name":"fast"}]"#).await
        },);
        timed_out(&paced.0);
        by_deadline(start, paced.1);
        ok(&fast.0);
        assert!(fast.1 < paced.1);
        ok(&rig.call(b, "SayHello", r#"{"name":"fast"}"#).await.0);
        assert_eq!(pool.connections(), 1);
    })
    .await;
    assert_eq!(*seen.connections.lock().unwrap(), 1);
    cancelled(&seen, seen.stream_of("pace"));
}
