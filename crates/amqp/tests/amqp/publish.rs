//! Publish–consume against rabbitmq-server: each message timed to its delivery to throng's
//! consumer; published = delivered + lost + returned + nacked + in flight at the end.

use std::sync::Arc;

use throng_amqp::status::{NACKED, OK};
use throng_amqp::{AmqpOptions, AmqpStep, Mode};
use throng_core::ErrorClass;

use crate::common::*;

/// Every count of the accounting, by name.
fn accounting(plan: &throng_amqp::Steps<throng_amqp::AmqpClient>) -> [u64; 6] {
    [
        "amqp_published",
        "amqp_delivered",
        "amqp_lost",
        "amqp_returned",
        "amqp_nacked",
        "amqp_in_flight_at_end",
    ]
    .map(|n| count(plan, n))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_is_delivered_once_with_confirms_and_without() {
    let broker = Broker::shared();
    for confirms in [false, true] {
        let q = unique("ticks");
        let plan = Arc::new(steps(
            &broker.url(&q),
            &publishing(confirms),
            AmqpStep::publish("tick"),
        ));
        let s = run(closed(2, 50), plan.clone()).await;
        let r = row(&s);
        assert_eq!((r.samples, r.errors), (100, 0), "{}", errors(&s));
        assert_eq!(status_count(&s, OK), 100);
        assert_eq!(
            accounting(&plan),
            [100, 100, 0, 0, 0, 0],
            "confirms {confirms}"
        );
        assert_eq!(
            count(&plan, "amqp_confirmed"),
            if confirms { 100 } else { 0 }
        );
        for n in [
            "amqp_duplicated",
            "amqp_late",
            "amqp_foreign",
            "amqp_redelivered",
        ] {
            assert_eq!(count(&plan, n), 0, "{n}");
        }
        assert_eq!(plan.client().queue(), Some(q.as_str()));
        // A delivery takes its time: none is instant.
        assert!(r.latency.min() > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_with_auto_ack_and_no_prefetch_limit_delivers_everything() {
    let broker = Broker::shared();
    let q = unique("ticks");
    let opts = with(AmqpOptions {
        mode: Mode::Publish,
        ack: false,
        prefetch: 0,
        ..AmqpOptions::default()
    });
    let plan = Arc::new(steps(&broker.url(&q), &opts, AmqpStep::publish("x")));
    let s = run(open(300.0, 150, 50), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (150, 0), "{}", errors(&s));
    assert_eq!(accounting(&plan), [150, 150, 0, 0, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_nacks_every_publish_with_confirms() {
    let broker = Broker::shared();
    // A queue that takes nothing: every publish is rejected, so nacked with confirms.
    let q = unique("full");
    declare(broker, &q, true).await;
    let plan = Arc::new(steps(
        &broker.url(&q),
        &publishing(true),
        AmqpStep::publish("x"),
    ));
    let s = run(closed(1, 10), plan.clone()).await;
    let r = row(&s);
    assert_eq!(class(r, ErrorClass::Status), 10, "{}", errors(&s));
    assert_eq!(status_count(&s, NACKED), 10);
    assert_eq!(accounting(&plan), [10, 0, 0, 0, 10, 0]);
}

/// Declares queue `q` on the broker, rejecting every publish when `full`.
pub(crate) async fn declare(broker: &Broker, q: &str, full: bool) {
    use lapin::options::QueueDeclareOptions;
    use lapin::types::{AMQPValue, FieldTable};
    let conn = lapin::Connection::connect(
        &format!("amqp://guest:guest@127.0.0.1:{}/%2f", broker.port),
        lapin::ConnectionProperties::default(),
    )
    .await
    .unwrap();
    let ch = conn.create_channel().await.unwrap();
    let mut args = FieldTable::default();
    if full {
        args.insert("x-max-length".into(), AMQPValue::LongLongInt(0));
        args.insert(
            "x-overflow".into(),
            AMQPValue::LongString("reject-publish".into()),
        );
    }
    ch.queue_declare(q.into(), QueueDeclareOptions::default(), args)
        .await
        .unwrap();
    let _ = conn.close(200, "bye".into()).await;
}
