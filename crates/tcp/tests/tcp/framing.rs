//! Every framing against the crate's own server, whole and split: exact counts at both ends,
//! replies checked, bytes counted on the wire.

use std::time::Duration;

use throng_core::steps::Session;
use throng_core::{Driver, ErrorClass};
use throng_tcp::serve::TcpTarget;
use throng_tcp::status::OK;
use throng_tcp::{url_steps, Framing, Payload, TcpOptions};

use crate::common::*;

const FRAMINGS: [&str; 8] = [
    "line",
    "crlf",
    "delim:\\0",
    "len1",
    "len2",
    "len4le",
    "len8+self",
    "fixed:5",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_framing_echoes_whole_and_split_with_counts_that_match_the_servers() {
    for spec in FRAMINGS {
        for split in [false, true] {
            let framing: Framing = spec.parse().unwrap();
            let server = TcpTarget {
                framing: framing.clone(),
                split,
                ..TcpTarget::default()
            }
            .start()
            .await
            .unwrap();
            let tcp = TcpOptions {
                framing: framing.clone(),
                ..TcpOptions::default()
            };
            let options = client_options(Duration::from_secs(5), tcp);
            // The echo must be the payload exactly, or the request is class `check`.
            let driver = steps(&server.url(), b"hello", Some("hello"), &options);
            let s = run(closed(2, 15), driver).await;
            let what = format!("{spec} split={split}: {}", errors(&s));
            assert_eq!(s.total.samples, 30, "{what}");
            assert_eq!(s.total.errors, 0, "{what}");
            assert_eq!(server.requests(), 30, "{what}");
            assert_eq!(status(&s, OK), 30, "{what}");
            assert_eq!(server.connections(), 2, "one connection per user: {what}");
            let mut framed = Vec::new();
            framing.encode(b"hello", &mut framed).unwrap();
            assert_eq!(s.total.bytes_sent, 30 * framed.len() as u64, "{what}");
            assert_eq!(s.total.bytes_received, 30 * framed.len() as u64, "{what}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_is_not_the_expected_one_is_class_check_on_a_kept_connection() {
    let server = TcpTarget::default().start().await.unwrap();
    let options = client_options(Duration::from_secs(5), TcpOptions::default());
    let driver = steps(&server.url(), b"hello", Some("goodbye"), &options);
    let s = run(closed(2, 10), driver).await;
    assert_eq!(s.total.samples, 20);
    assert_eq!(class(&s, ErrorClass::Check), 20, "{}", errors(&s));
    assert_eq!(status(&s, OK), 20, "the reply came: its status is ok");
    assert_eq!(server.requests(), 20);
    assert!(
        s.errors[0]
            .sample
            .contains("`hello` is not the expected `goodbye`"),
        "{}",
        errors(&s)
    );
    // A check failure leaves the stream in step, so each user keeps its connection.
    assert_eq!(server.connections(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_carries_the_payload_and_its_json() {
    let server = TcpTarget {
        framing: "len4".parse().unwrap(),
        ..TcpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let tcp = TcpOptions {
        framing: "len4".parse().unwrap(),
        ..TcpOptions::default()
    };
    let options = client_options(Duration::from_secs(5), tcp.clone());
    let one = url_steps(&server.url(), Payload::text(r#"{"id": 7}"#), &tcp, &options).unwrap();
    assert_eq!(one.labels(), [r#"{"id": 7}"#]);
    let mut session: Session<_> = one.session(&(), 0);
    let (outcome, reply) = one.send(&mut session, true).await;
    assert_eq!(outcome.error, None, "{:?}", outcome.message);
    let reply = reply.unwrap();
    assert_eq!(reply.status, OK);
    assert_eq!(&reply.body[..], br#"{"id": 7}"#);
    assert_eq!(reply.json, Some(serde_json::json!({"id": 7})));
    assert_eq!(outcome.bytes_sent, 4 + 9);
    assert_eq!(outcome.bytes_received, 4 + 9);
    // Text that is not JSON has no JSON.
    let escaped = url_steps(
        &server.url(),
        Payload::escaped("a\\x00b").unwrap(),
        &tcp,
        &options,
    )
    .unwrap();
    let (_, reply) = escaped.send(&mut session, true).await;
    let reply = reply.unwrap();
    assert_eq!(&reply.body[..], b"a\0b");
    assert_eq!(reply.json, None);
    assert_eq!(
        server.connections(),
        1,
        "the session's connection is reused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_loop_sends_every_arrival_once() {
    let server = TcpTarget {
        framing: "len2".parse().unwrap(),
        delay: Duration::from_millis(5),
        ..TcpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let tcp = TcpOptions {
        framing: "len2".parse().unwrap(),
        ..TcpOptions::default()
    };
    let options = client_options(Duration::from_secs(5), tcp);
    let driver = steps(&server.url(), b"ping", Some("ping"), &options);
    let s = run(open(200.0, Some(100), None), driver).await;
    assert_eq!(s.total.samples, 100, "{}", errors(&s));
    assert_eq!(s.total.errors, 0, "{}", errors(&s));
    assert_eq!(server.requests(), 100);
    let lag = s.lag.as_ref().unwrap();
    assert_eq!((lag.scheduled, lag.dropped), (100, 0));
}

#[test]
fn a_url_run_refuses_what_cannot_work_before_any_load() {
    let options = client_options(Duration::from_secs(1), TcpOptions::default());
    let e = url_steps(
        "tcp://127.0.0.1",
        Payload::text("x"),
        &TcpOptions::default(),
        &options,
    )
    .unwrap_err();
    assert!(e.contains("port"), "{e}");
    let fixed = TcpOptions {
        framing: Framing::Fixed(4096),
        max_reply: 1024,
        ..TcpOptions::default()
    };
    let e = url_steps("tcp://127.0.0.1:9", Payload::text("x"), &fixed, &options).unwrap_err();
    assert!(e.contains("over the reply limit"), "{e}");
    let len1 = TcpOptions {
        framing: "len1".parse().unwrap(),
        ..TcpOptions::default()
    };
    let big = Payload::Bytes(vec![b'x'; 300].into());
    let e = url_steps("tcp://127.0.0.1:9", big, &len1, &options).unwrap_err();
    assert!(e.contains("does not fit a 1-byte length prefix"), "{e}");
}
