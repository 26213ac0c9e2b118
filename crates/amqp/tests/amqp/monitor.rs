//! The broker's own counters beside a run: the management API's overview read before and
//! after a bounded load, the broker counting exactly the messages throng published, delivered
//! and had acknowledged.

use std::sync::Arc;
use std::time::{Duration, Instant};

use throng_amqp::monitor::{figures, Overview};
use throng_amqp::AmqpStep;
use throng_core::watch::{Server, Watched};
use throng_core::{DatabaseEvent, ErrorClass};

use crate::common::*;

fn value(values: &[u64], name: &str) -> u64 {
    values[figures().iter().position(|f| f.name == name).unwrap()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_counts_what_throng_published_and_consumed() {
    let broker = Broker::own_with_management();
    let mut api = Overview::new(&broker.management_url(), Duration::from_secs(2)).unwrap();
    let before = api.read().await.unwrap();
    let q = unique("counted");
    let plan = Arc::new(steps(
        &broker.url(&q),
        &publishing(true),
        AmqpStep::publish("x"),
    ));
    let watched = Watched::idle(
        vec![api.clone()],
        Duration::from_millis(500),
        Duration::from_millis(100),
    )
    .await;
    let mut readings = watched.take().unwrap()();
    let s = run(closed(2, 100), plan.clone()).await;
    assert_eq!(
        (row(&s).samples, row(&s).errors),
        (200, 0),
        "{}",
        errors(&s)
    );
    let _ = readings.load_ended.send(());
    let mut samples = 0;
    while let Some(e) = readings.events.recv().await {
        if let DatabaseEvent::Sample(0, sample) = e {
            assert_eq!(sample.values.len(), figures().len());
            samples += 1;
        }
    }
    assert!(samples >= 2, "idle readings and one after: {samples}");
    assert!(readings.warnings.await.unwrap().is_empty());
    // The broker refreshes its statistics once a second here: wait for them.
    let until = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let now = api.read().await.unwrap();
        if value(&now, "ack") - value(&before, "ack") >= 200 || Instant::now() > until {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for (name, want) in [
        ("publish", 200),
        ("deliver_get", 200),
        ("ack", 200),
        ("confirm", 200),
        ("redeliver", 0),
        ("return_unroutable", 0),
    ] {
        assert_eq!(value(&after, name) - value(&before, name), want, "{name}");
    }
    assert_eq!(count(&plan, "amqp_published"), 200);
    assert_eq!(count(&plan, "amqp_delivered"), 200);
    // Nothing is left in the queues.
    assert_eq!(value(&after, "messages"), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn an_api_that_is_not_there_is_said() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let e = Overview::new(&url, Duration::from_millis(500))
        .unwrap()
        .read()
        .await
        .unwrap_err();
    assert!(e.message.contains("/api/overview"), "{e}");
    assert_eq!(e.class, ErrorClass::Connect, "{e}");
}
