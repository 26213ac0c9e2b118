//! Request–reply against nats-server and the Go responder: every request answered once,
//! counted as the server counted it.

use std::sync::Arc;

use throng_core::ErrorClass;
use throng_nats::status::{self, OK};
use throng_nats::NatsStep;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_answered_once_and_the_server_counts_the_same() {
    let server = NatsServer::start().unwrap();
    let responder = Responder::start(&server, "greeter", &[]);
    let in_before = counter(&server, "in_msgs").await;
    let plan = Arc::new(steps(
        &server.url("greeter"),
        &options(),
        NatsStep::request("world").header("Trace", "t1"),
    ));
    let s = run(closed(3, 20), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (60, 0), "{}", errors(&s));
    assert_eq!(status_count(&s, OK), 60);
    // The server took 60 requests from throng and 60 replies from the responder, nothing else.
    assert_eq!(counter(&server, "in_msgs").await - in_before, 120);
    assert_eq!(responder.stop(), 60);
    // One connection per worker thread (two), none per user.
    assert_eq!(count(&plan, "nats_connections"), 2);
    // Bytes: the subject, headers and payload each way, at least.
    assert!(
        r.bytes_sent >= 60 * ("greeter".len() + 5) as u64,
        "{}",
        r.bytes_sent
    );
    assert!(
        r.bytes_received >= 60 * "hello world".len() as u64,
        "{}",
        r.bytes_received
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_reply_holds_the_payload_and_headers() {
    let server = NatsServer::start().unwrap();
    let _responder = Responder::start(&server, "greeter", &[]);
    let one = steps(
        &server.url("greeter"),
        &options(),
        NatsStep::request(r#"{"n": 7}"#).header("Trace", "t1"),
    );
    let mut session = throng_core::Driver::session(&one, &throng_core::Driver::worker(&one), 0);
    throng_core::Driver::connect(&one, &mut session, 0)
        .await
        .unwrap();
    let (outcome, reply) = one.send(&mut session, true).await;
    assert_eq!(outcome.error, None, "{:?}", outcome.message);
    let reply = reply.expect("a reply");
    assert_eq!(reply.status, OK);
    assert_eq!(&reply.body[..], br#"hello {"n": 7}"#);
    assert_eq!(reply.meta("trace"), Some("t1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_error_is_its_status() {
    let server = NatsServer::start().unwrap();
    let responder = Responder::start(&server, "greeter", &["-error-every", "3"]);
    let s = run(
        closed(1, 30),
        Arc::new(steps(
            &server.url("greeter"),
            &options(),
            NatsStep::request("x"),
        )),
    )
    .await;
    let r = row(&s);
    assert_eq!(r.samples, 30);
    assert_eq!(class(r, ErrorClass::Status), 10, "{}", errors(&s));
    assert_eq!(status_count(&s, status::status(500)), 10);
    assert_eq!(status_count(&s, OK), 20);
    assert_eq!(responder.stop(), 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_of_requests_keeps_its_schedule() {
    let server = NatsServer::start().unwrap();
    let responder = Responder::start(&server, "greeter", &[]);
    let started = std::time::Instant::now();
    let s = run(
        open(200.0, 100, 20),
        Arc::new(steps(
            &server.url("greeter"),
            &options(),
            NatsStep::request("x"),
        )),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (100, 0), "{}", errors(&s));
    // 100 arrivals at 200/s take half a second: not much less.
    assert!(started.elapsed().as_millis() >= 480);
    assert_eq!(responder.stop(), 100);
}
