//! Against the crate's own server: what the engine counts is what the server did.

use std::time::Duration;

use throng_core::ErrorClass;
use throng_ws::serve::{Mode, WsTarget};
use throng_ws::status::OPEN;
use throng_ws::{Until, WsOptions, WsStep};

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_sent_is_answered_and_counted_once() {
    let server = WsTarget::default().start().await.unwrap();
    let s = run(
        closed(3, 20),
        steps(&server.url(), &options(), WsStep::text(["a", "bc"])),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (60, 0), "{}", errors(&s));
    // One connection per user, kept for all its iterations.
    assert_eq!(server.handshakes(), 3);
    assert_eq!((server.received(), server.sent()), (120, 120));
    // Each reply a part of its step's messages row.
    let p = parts(&s);
    assert_eq!(p.label, "step (messages)");
    assert_eq!(p.samples, 120);
    assert_eq!(status_count(&s, OPEN), 60);
    // The handshakes' bytes and every frame: at least the payloads, masked frames' headers
    // (6 bytes) and the replies' (2 bytes).
    assert!(r.bytes_sent >= 120 * 6 + 60 * 3, "{}", r.bytes_sent);
    assert!(r.bytes_received >= 120 * 2 + 60 * 3, "{}", r.bytes_received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_messages_are_parts_timed_one_from_the_last() {
    let interval = Duration::from_millis(40);
    let server = WsTarget {
        mode: Mode::Push { count: 4, interval },
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let step = WsStep::text(["go"]).until(Until::Count(4));
    let s = run(closed(2, 3), steps(&server.url(), &options(), step)).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (6, 0), "{}", errors(&s));
    let p = parts(&s);
    assert_eq!(p.samples, 24);
    // Each message came one interval after the one before (the first one after the request),
    // not from the request's start (which would average 100 ms): the server sends each 40 ms
    // after the last, so the gaps average about 40 ms; one read late on a loaded machine makes
    // the next gap shorter by as much (29.6 ms seen), hence the wide margins.
    let (min, max, mean) = (p.latency.min(), p.latency.max(), p.latency.mean());
    assert!(
        (35_000.0..70_000.0).contains(&mean),
        "parts {mean} µs apart on average, against the 40 ms interval"
    );
    assert!(
        min >= 15_000,
        "a part timed {min} µs apart, under the 40 ms interval"
    );
    assert!(max < 400_000, "a part timed {max} µs apart");
    // The step waits for all four: at least four intervals.
    assert!(r.latency.min() >= 4 * 35_000, "{}", r.latency.min());
    assert_eq!(server.sent(), 24);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_step_counts_what_the_server_pushes_for_a_while() {
    let server = WsTarget {
        mode: Mode::Stream {
            interval: Duration::from_millis(50),
        },
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let step = WsStep::text(Vec::<String>::new()).until(Until::For(Duration::from_millis(500)));
    let s = run(closed(1, 2), steps(&server.url(), &options(), step)).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (2, 0), "{}", errors(&s));
    // About ten messages a step (a slow machine may see fewer, never many more).
    let p = parts(&s);
    assert!((6..=22).contains(&p.samples), "{} messages", p.samples);
    // Nothing sent; everything received one way.
    assert_eq!(server.received(), 0);
    assert!(r.latency.min() >= 480_000, "{}", r.latency.min());
}

#[tokio::test(flavor = "current_thread")]
async fn the_reply_is_the_last_message_and_pings_are_answered() {
    let server = WsTarget {
        ping: true,
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let one = steps(
        &server.url(),
        &options(),
        WsStep::text(["first", r#"{"n": 7}"#]),
    );
    let mut session = throng_core::Driver::session(&one, &(), 0);
    let (outcome, reply) = one.send(&mut session, true).await;
    assert_eq!(outcome.error, None, "{:?}", outcome.message);
    let reply = reply.expect("a reply");
    assert_eq!(reply.status, OPEN);
    assert_eq!(&reply.body[..], br#"{"n": 7}"#);
    assert_eq!(reply.meta("messages"), Some("2"));
    assert_eq!(outcome.parts.len(), 2);
    // A ping before each answer, and a pong for each: tungstenite sends it at the client's
    // next read, the one that reads the answer.
    let (again, _) = one.send(&mut session, false).await;
    assert_eq!(again.error, None, "{:?}", again.message);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.pongs(), 4, "a pong for each of four pings");
    assert_eq!(server.handshakes(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_messages_and_wss_with_the_servers_certificate() {
    let server = WsTarget {
        tls: true,
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("throng-ws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.cert_pem.as_deref().unwrap()).unwrap();
    let mut opts = options();
    opts.cacert = Some(ca);
    let url = server.url().replace("127.0.0.1", "localhost");
    let s = run(
        closed(2, 5),
        steps(&url, &opts, WsStep::text(["bin"]).binary(true)),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (10, 0), "{}", errors(&s));
    assert_eq!(server.received(), 10);
    // Without the certificate the web roots refuse it: class tls, no message sent.
    let s = run(closed(1, 2), steps(&url, &options(), WsStep::text(["x"]))).await;
    let r = row(&s);
    assert_eq!(class(r, ErrorClass::Tls), r.samples, "{}", errors(&s));
    assert_eq!(server.received(), 10);
    let _ = std::fs::remove_dir_all(dir);
}

/// wss:// to a server that requires a client certificate of its CA: with the right one
/// (`ClientOptions::identity`, `--cert` and `--key`) every message is echoed; without one, or
/// with another CA's, every iteration fails as `tls` and no message reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_presents_the_client_certificate_its_server_requires() {
    let clients = throng_net::TestCa::new("clients' CA").unwrap();
    let server = WsTarget {
        tls: true,
        client_ca: Some(clients.pem()),
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("throng-ws-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let ca = write("ca.pem", server.cert_pem.as_deref().unwrap());
    let pair = |ca: &throng_net::TestCa, name: &str| {
        let (cert, key) = ca.issue("throng").unwrap();
        throng_core::step::Identity {
            cert: write(&format!("{name}.pem"), &cert),
            key: write(&format!("{name}.key"), &key),
        }
    };
    let right = pair(&clients, "client");
    let stranger = pair(&throng_net::TestCa::new("another CA").unwrap(), "stranger");
    let url = server.url().replace("127.0.0.1", "localhost");
    for (who, identity) in [
        ("right", Some(right)),
        ("none", None),
        ("another CA's", Some(stranger)),
    ] {
        let mut opts = options();
        opts.cacert = Some(ca.clone());
        opts.identity = identity;
        let s = run(closed(2, 5), steps(&url, &opts, WsStep::text(["m"]))).await;
        let r = row(&s);
        assert_eq!(r.samples, 10, "{who}: {}", errors(&s));
        match who {
            "right" => assert_eq!(r.errors, 0, "{who}: {}", errors(&s)),
            _ => assert_eq!(class(r, ErrorClass::Tls), 10, "{who}: {}", errors(&s)),
        }
        assert_eq!(server.received(), 10, "{who}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_cap_is_refused_as_protocol_and_the_user_reconnects() {
    let server = WsTarget {
        mode: Mode::Push {
            count: 1,
            interval: Duration::ZERO,
        },
        pad: 5000,
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let small = with(WsOptions {
        max_message: 4096,
        ..WsOptions::default()
    });
    let s = run(
        closed(1, 3),
        steps(&server.url(), &small, WsStep::text(["x"])),
    )
    .await;
    let r = row(&s);
    assert_eq!(class(r, ErrorClass::Protocol), 3, "{}", errors(&s));
    // A connection is dropped after its failure: each iteration opened its own.
    assert_eq!(server.handshakes(), 3);
    // The same server within a cap that fits.
    let s = run(
        closed(1, 3),
        steps(&server.url(), &options(), WsStep::text(["x"])),
    )
    .await;
    assert_eq!(row(&s).errors, 0, "{}", errors(&s));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_run_sends_its_message_and_waits_as_told() {
    let server = WsTarget {
        mode: Mode::Push {
            count: 3,
            interval: Duration::from_millis(5),
        },
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let opts = with(WsOptions {
        expect: Some(3),
        ..WsOptions::default()
    });
    let plan = throng_ws::url_steps(&server.url(), &opts, Some("hello")).unwrap();
    let s = tokio::time::timeout(
        Duration::from_secs(30),
        throng_engine::run(closed(2, 4), std::sync::Arc::new(plan)),
    )
    .await
    .unwrap()
    .unwrap();
    let r = &s.labels[0];
    assert_eq!((r.samples, r.errors), (8, 0), "{}", errors(&s));
    assert_eq!(parts(&s).samples, 24);
    assert_eq!(parts(&s).label, format!("{} (messages)", server.url()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_ends_with_a_normal_close_never_counted_as_a_request() {
    let plans = [
        // Users whose iterations are done, users stopped by the clock, open-loop slots.
        (closed(3, 5), Some(15)),
        (closed_for(4, Duration::from_millis(400)), None),
        (open(200.0, 40, 4), Some(40)),
    ];
    for (plan, requests) in plans {
        let server = WsTarget::default().start().await.unwrap();
        let s = run(plan, steps(&server.url(), &options(), WsStep::text(["a"]))).await;
        let r = row(&s);
        assert_eq!(r.errors, 0, "{}", errors(&s));
        if let Some(n) = requests {
            assert_eq!(r.samples, n);
        }
        assert_eq!(server.received(), r.samples, "a close sent a message");
        let opened = server.handshakes();
        assert!(opened > 0);
        ended(&server, opened).await;
        assert_eq!(
            (server.closed_normally(), server.closed_abnormally()),
            (opened, 0),
            "of {opened} connections"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_thinking_when_the_run_stops_close_normally_and_on_time() {
    // Each user sends one message, then thinks for 5 s: the deadline comes in the think time.
    let duration = Duration::from_millis(400);
    let mut plan = closed_for(4, duration);
    if let throng_core::LoadModel::Closed(c) = &mut plan.model {
        c.think_time = Some(Duration::from_secs(5));
    }
    let server = WsTarget::default().start().await.unwrap();
    let s = run(plan, steps(&server.url(), &options(), WsStep::text(["a"]))).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (4, 0), "{}", errors(&s));
    assert_eq!(server.handshakes(), 4);
    thinkers_closed(&server, 4, &s, duration).await;
}
