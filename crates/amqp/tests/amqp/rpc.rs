//! RPC against rabbitmq-server and the Go responder: every request answered once on direct
//! reply-to, matched by correlation id, counted as the responder counted it.

use std::sync::Arc;

use throng_amqp::status::OK;
use throng_amqp::AmqpStep;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_answered_once() {
    let broker = Broker::shared();
    let q = unique("greeter");
    let responder = Responder::start(broker, &q, &[]);
    let plan = Arc::new(steps(
        &broker.url(&q),
        &options(),
        AmqpStep::rpc("world").header("trace", "t1"),
    ));
    let s = run(closed(3, 20), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (60, 0), "{}", errors(&s));
    assert_eq!(status_count(&s, OK), 60);
    assert_eq!(responder.stop(), 60);
    // One connection per worker thread (two), none per user; no reply unmatched.
    assert_eq!(count(&plan, "amqp_connections"), 2);
    assert_eq!(count(&plan, "amqp_rpc_late_replies"), 0);
    assert_eq!(r.bytes_sent, 60 * 5);
    assert_eq!(r.bytes_received, 60 * "hello world".len() as u64);
}

#[tokio::test(flavor = "current_thread")]
async fn the_reply_holds_the_body_and_headers() {
    let broker = Broker::shared();
    let q = unique("greeter");
    let _responder = Responder::start(broker, &q, &[]);
    let one = steps(
        &broker.url(&q),
        &options(),
        AmqpStep::rpc(r#"{"n": 7}"#).header("Trace", "t1"),
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
async fn an_open_loop_of_requests_keeps_its_schedule() {
    let broker = Broker::shared();
    let q = unique("greeter");
    let responder = Responder::start(broker, &q, &[]);
    let started = std::time::Instant::now();
    let s = run(
        open(200.0, 100, 20),
        Arc::new(steps(&broker.url(&q), &options(), AmqpStep::rpc("x"))),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (100, 0), "{}", errors(&s));
    assert!(started.elapsed().as_millis() >= 480);
    assert_eq!(responder.stop(), 100);
}
