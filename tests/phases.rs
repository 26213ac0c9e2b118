//! The phases of HTTP requests (connect, TLS, send, wait, receive, and the blocked rest) against
//! targets whose timing is known, and `--no-keepalive`'s connection per request.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::time::Duration;

use common::{errors_of, ok, result, run, throng};
use throng::core::{ErrorClass, Percentiles, Phase, PhaseStats, Snapshot};
use throng::testbed::{Fault, HttpTarget};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The head after this long.
const WAIT_MS: u64 = 30;
/// The body in `PIECES` pieces, each this long after the one before (the first after the head).
const GAP_MS: u64 = 10;
const PIECES: u64 = 4;

/// A raw HTTP/1.1 server, keep-alive, that answers each request's head after [`WAIT_MS`] and
/// trickles its 8-byte body in [`PIECES`] pieces [`GAP_MS`] apart: wait is 30 ms and receive
/// 40 ms, by construction. Runs on a thread of its own until the test ends.
fn trickler() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let _ = s.set_nodelay(true);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    loop {
                        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                            match s.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                        buf.drain(..end);
                        tokio::time::sleep(Duration::from_millis(WAIT_MS)).await;
                        let head =
                            format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", 2 * PIECES);
                        if s.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        for _ in 0..PIECES {
                            tokio::time::sleep(Duration::from_millis(GAP_MS)).await;
                            if s.write_all(b"ab").await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
    });
    format!("http://{addr}/")
}

fn phases(s: &Snapshot) -> &PhaseStats {
    s.total
        .phases
        .as_deref()
        .expect("HTTP requests have phases")
}

fn ms(h: &throng::core::histogram::Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_and_receiving_are_the_servers_delay_and_trickle() {
    let url = trickler();
    let s = run(&[&url, "-c", "2", "-n", "20"]).await;
    assert_eq!((s.total.samples, s.total.errors), (20, 0), "{:?}", s.errors);
    let p = phases(&s);
    let (wait, receive) = (p.of(Phase::Wait), p.of(Phase::Receive));
    assert_eq!(
        (wait.len(), receive.len(), p.of(Phase::Send).len()),
        (20, 20, 20)
    );
    // Wide margins: a shared machine's scheduler adds, never takes away. No head comes before
    // the target sends it, so every wait is at least the truth; a client held up past the
    // trickle reads head and body at once, so only the median receive is bounded below.
    let truth_wait = WAIT_MS as f64;
    let truth_receive = (GAP_MS * PIECES) as f64;
    assert!(ms(wait, 0.0) >= truth_wait, "wait min {} ms", ms(wait, 0.0));
    let (w, r) = (ms(wait, 0.5), ms(receive, 0.5));
    assert!(
        (truth_wait..truth_wait + 15.0).contains(&w),
        "wait p50 {w} ms"
    );
    assert!(
        (truth_receive - 1.0..truth_receive + 20.0).contains(&r),
        "receive p50 {r} ms"
    );
    // Two users, a connection each, opened before their first request and used for the rest.
    assert_eq!((p.new, p.reused), (2, 18));
    assert_eq!(p.of(Phase::Connect).len(), 2);
    assert_eq!(p.of(Phase::Tls).len(), 0, "no TLS over http://");
    // The phases add up: latency is blocked plus the rest (closed loop: blocked is tiny).
    let latency = Percentiles::of(&s.total.latency);
    let blocked = Percentiles::of(&p.blocked);
    assert_eq!(blocked.count, 20);
    assert!(blocked.p50 < 2_000, "blocked p50 {} µs", blocked.p50);
    let sum = wait.mean() + receive.mean() + p.of(Phase::Send).mean() + p.blocked.mean();
    let gap = (latency.mean - sum).abs();
    assert!(
        gap < 200.0,
        "latency mean {} µs, phases' sum {sum} µs",
        latency.mean
    );

    // Every output names them.
    let r = result(&s);
    let json = serde_json::to_value(&r).unwrap();
    let wait_ms = json["total"]["phases"]["wait"]["stats"]["p50"]
        .as_f64()
        .unwrap();
    assert!(
        (truth_wait..truth_wait + 15.0).contains(&wait_ms),
        "{wait_ms}"
    );
    assert_eq!(json["labels"][0]["phases"]["reused_connections"], 18);
    let summary = throng::report::render_summary(&r);
    let line = summary
        .lines()
        .find(|l| l.starts_with("Phases"))
        .expect("{summary}");
    assert!(
        line.contains("wait 3") && line.contains("90.0% of requests on a reused one"),
        "{line}"
    );
    let md = throng::report::render_markdown(&r);
    assert!(
        md.contains("| wait p50/p99 |") || md.contains("wait p50/p99"),
        "{md}"
    );
    let html = throng::report::render_html(&r);
    assert!(html.contains("Where the time went") && html.contains("receive p50/p99"));
    // A result read back (merge, compare, report) keeps its phases exactly.
    let back = throng::report::merge(std::slice::from_ref(&r)).unwrap();
    assert_eq!(back.total.phases, r.total.phases);
    // Thresholds read them: the wait is at least the target's 30 ms, never under 5.
    let holds = |t: &str| {
        t.parse::<throng::report::Threshold>()
            .unwrap()
            .evaluate(&r)
            .passed
    };
    assert!(holds("wait_p50>=30ms") && holds("receive_p50>=30ms"));
    assert!(
        !holds("wait_p99<5ms") && !holds("tls_p99<1s"),
        "no TLS phase: nothing to pass"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_keepalive_gives_every_request_its_own_connection_in_both_loops() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "3", "-n", "60", "--no-keepalive"]).await;
    assert_eq!((s.total.samples, s.total.errors), (60, 0), "{:?}", s.errors);
    let p = phases(&s);
    assert_eq!((p.new, p.reused), (60, 0));
    assert_eq!(p.of(Phase::Connect).len(), 60, "a connect phase each");
    assert_eq!(p.reused_share(), 0.0);
    assert_eq!(target.connections(), 60);

    let before = target.connections();
    let s = run(&[&url, "-q", "200", "-z", "1s", "--no-keepalive"]).await;
    let done = s.total.completed();
    assert!(done >= 190, "{done} of 200");
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let p = phases(&s);
    assert_eq!((p.new, p.reused), (done, 0));
    assert_eq!(p.of(Phase::Connect).len(), done);
    // Each request's connection was its own (warm slots' spares may be left unused).
    assert!(target.connections() - before >= done);

    // With keep-alive, nearly every request reuses its connection.
    let s = run(&[&url, "-c", "3", "-n", "300"]).await;
    let p = phases(&s);
    assert_eq!((p.new, p.reused), (3, 297));
    assert!(p.reused_share() > 0.98);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_has_a_handshake_phase_per_connection() {
    let target = HttpTarget {
        tls: true,
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    assert!(url.starts_with("https://"), "{url}");
    let s = run(&[&url, "--insecure", "-c", "2", "-n", "20", "--no-keepalive"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let p = phases(&s);
    let tls = Percentiles::of(p.of(Phase::Tls));
    assert_eq!(tls.count, 20, "a handshake per request");
    // A handshake is a round trip and some crypto: more than the TCP connect's one packet.
    assert!(
        tls.p50 > Percentiles::of(p.of(Phase::Connect)).p50,
        "{tls:?}"
    );
    let s = run(&[&url, "--insecure", "-c", "2", "-n", "20"]).await;
    assert_eq!(
        phases(&s).of(Phase::Tls).len(),
        2,
        "a handshake per connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_has_connect_and_waiting_phases() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "--http2", "-c", "4", "-n", "200"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let p = phases(&s);
    let conns = p.of(Phase::Connect).len();
    assert!(
        conns >= 1 && conns == p.new,
        "{conns} connects, {} new",
        p.new
    );
    assert_eq!(p.new + p.reused, 200);
    // The connection's task says when the write carrying a request ended, and when the reads
    // bringing its head and its end came: every request has all three.
    assert_eq!(p.of(Phase::Send).len(), 200);
    assert_eq!(p.of(Phase::Wait).len(), 200);
    assert_eq!(p.of(Phase::Receive).len(), 200);

    // Without keep-alive, a connection per request under HTTP/2 too.
    let before = target.connections();
    let s = run(&[&url, "--http2", "-c", "4", "-n", "40", "--no-keepalive"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let p = phases(&s);
    assert_eq!((p.new, p.reused, p.of(Phase::Connect).len()), (40, 0, 40));
    assert_eq!(target.connections() - before, 40);
    // Each request's bytes are its own connection's: the preface and SETTINGS every time.
    assert!(s.total.bytes_sent / 40 > 24, "{} bytes", s.total.bytes_sent);
}

/// HTTP/2 over TLS (ALPN `h2`, the testbed's certificate by `--cacert`): a handshake per
/// connection, and the wait is the server's delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_over_tls_has_handshake_send_wait_and_receive_phases() {
    let (target, _dir, ca) = common::tls_target().await;
    let ca = ca.to_str().unwrap();
    let url = format!("{}/delay/{WAIT_MS}", target.url());
    let s = run(&[
        &url,
        "--http2",
        "--cacert",
        ca,
        "-c",
        "4",
        "--streams",
        "2",
        "-n",
        "40",
    ])
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let p = phases(&s);
    // Two connections of two users each: a handshake each, given to its first request.
    assert_eq!(target.connections(), 2);
    assert_eq!(p.of(Phase::Tls).len(), 2);
    assert_eq!(p.of(Phase::Connect).len(), 2);
    assert_eq!((p.new + p.reused, p.reused), (40, 38));
    let wait = Percentiles::of(p.of(Phase::Wait));
    assert_eq!(wait.count, 40);
    // Microseconds: the server's delay, and less than a second delay more.
    let delay = WAIT_MS * 1000;
    assert!((delay..delay * 2).contains(&wait.p50), "{wait:?}");
    let send = Percentiles::of(p.of(Phase::Send));
    assert_eq!(send.count, 40);
    assert!(send.p50 < delay, "{send:?}");
    assert_eq!(p.of(Phase::Receive).len(), 40);

    // Without keep-alive: a connection and a handshake per request.
    let before = target.connections();
    let s = run(&[
        &url,
        "--http2",
        "--cacert",
        ca,
        "-c",
        "2",
        "-n",
        "10",
        "--no-keepalive",
    ])
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let p = phases(&s);
    assert_eq!((p.new, p.of(Phase::Tls).len()), (10, 10));
    assert_eq!(target.connections() - before, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_and_reset_targets_still_fail_by_class() {
    let port = common::closed_port();
    let s = run(&[
        &format!("http://127.0.0.1:{port}/"),
        "-c",
        "2",
        "-z",
        "300ms",
        "--no-keepalive",
    ])
    .await;
    assert!(s.total.samples > 0);
    assert_eq!(errors_of(&s, ErrorClass::Connect), s.total.errors);
    assert_eq!(s.total.errors, s.total.samples);
    // No connection was made, so no request had a phase of one.
    let connects = s
        .total
        .phases
        .as_deref()
        .map_or(0, |p| p.of(Phase::Connect).len());
    assert_eq!(connects, 0);

    let target = HttpTarget {
        fault: Some(Fault::Reset),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "2", "-n", "20", "--no-keepalive"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Reset), 20, "{:?}", s.errors);
    let p = phases(&s);
    // Each connection opened and its request was written; no answer came.
    assert_eq!(p.of(Phase::Connect).len(), 20);
    assert_eq!(p.of(Phase::Send).len(), 20);
    assert_eq!(p.of(Phase::Receive).len(), 0);
    assert_eq!(p.blocked.len(), 0, "no whole answer, no blocked time");
}

#[test]
fn the_samples_file_has_jmeters_latency_and_connect() {
    let url = trickler();
    let dir = tempfile::tempdir().unwrap();
    let jtl = dir.path().join("s.jtl");
    let out = throng(&[
        "run",
        &url,
        "-c",
        "2",
        "-n",
        "10",
        "--no-keepalive",
        "--no-tui",
        "--quiet",
        "--samples",
        &jtl.display().to_string(),
    ]);
    ok(&out);
    let text = std::fs::read_to_string(&jtl).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (elapsed, latency, connect) = (col("elapsed"), col("Latency"), col("Connect"));
    let mut body = Vec::new();
    for line in lines {
        let f: Vec<u64> = line
            .split(',')
            .map(|c| c.trim_matches('"').parse().unwrap_or(u64::MAX))
            .collect();
        // Time to first byte: the 30 ms wait (and the connect before it), never less; the 40 ms
        // trickle of the body after it is in elapsed only.
        assert!(f[latency] >= WAIT_MS && f[latency] <= f[elapsed], "{line}");
        assert!(f[connect] < 50, "{line}");
        body.push((f[latency], f[elapsed] - f[latency]));
    }
    assert_eq!(body.len(), 10);
    // The medians: a client held up past the trickle reads head and body at once.
    let mut first: Vec<u64> = body.iter().map(|b| b.0).collect();
    let mut after: Vec<u64> = body.iter().map(|b| b.1).collect();
    first.sort_unstable();
    after.sort_unstable();
    assert!(first[5] < WAIT_MS + 15, "{body:?}");
    assert!(after[5] >= GAP_MS * PIECES - 2, "{body:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_http_steps_each_have_their_phases_and_its_flow_none() {
    let url = trickler();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.yaml");
    let text = "targets: { slow: URL }\nsteps:\n  - group: both\n    steps:\n      - label: first\n        request: { path: /a }\n      - label: second\n        request: { path: /b }\n";
    std::fs::write(&file, text.replace("URL", url.trim_end_matches('/'))).unwrap();
    let s = common::run_file(&file, &["-c", "2", "-i", "3"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let row = |label: &str| s.labels.iter().find(|l| l.label == label).unwrap();
    for label in ["first", "second"] {
        let p = row(label)
            .phases
            .as_deref()
            .expect("an HTTP step times its phases");
        let wait = Percentiles::of(p.of(Phase::Wait));
        assert_eq!(wait.count, 6, "{label}");
        assert!(wait.p50 >= WAIT_MS * 1000, "{label}: {wait:?}");
    }
    // The two users' connections went to their first step; the second step reuses them.
    assert_eq!(row("first").phases.as_deref().unwrap().new, 2);
    assert_eq!(row("second").phases.as_deref().unwrap().new, 0);
    assert!(row("both").phases.is_none(), "a group is no request");
    assert_eq!(phases(&s).new + phases(&s).reused, 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_cut_off_mid_body_keeps_its_wait_but_has_no_receive() {
    // Answers every connection's request with a head and 2 of 10 promised bytes, then closes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nab");
        }
    });
    let s = run(&[&url, "-c", "1", "-n", "3"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Reset), 3, "{:?}", s.errors);
    let p = phases(&s);
    assert_eq!(
        p.of(Phase::Wait).len(),
        3,
        "the head came: its wait is known"
    );
    assert_eq!(p.of(Phase::Receive).len(), 0, "the body never ended");
    assert_eq!(p.blocked.len(), 0);
}
