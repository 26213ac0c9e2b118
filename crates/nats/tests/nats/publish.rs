//! Publish–consume against nats-server: each message timed to its delivery to every one of
//! throng's subscribers; published = delivered + lost + in flight, and the server counts the
//! same messages in and the fan-out out.

use std::sync::Arc;

use throng_nats::status::OK;
use throng_nats::{Mode, NatsOptions, NatsStep};

use crate::common::*;

fn publishing(subscribers: u32) -> throng_core::step::ClientOptions {
    with(NatsOptions {
        mode: Mode::Publish,
        subscribers,
        ..NatsOptions::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_reaches_every_subscriber_once() {
    let server = NatsServer::start().unwrap();
    let (in0, out0) = (
        counter(&server, "in_msgs").await,
        counter(&server, "out_msgs").await,
    );
    let plan = Arc::new(steps(
        &server.url("ticks"),
        &publishing(3),
        NatsStep::publish("tick"),
    ));
    let s = run(closed(2, 50), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (100, 0), "{}", errors(&s));
    assert_eq!(status_count(&s, OK), 100);
    // Each delivery a part: three a message.
    let p = parts(&s);
    assert_eq!(p.label, "step (deliveries)");
    assert_eq!(p.samples, 300);
    for (name, want) in [
        ("nats_published", 100),
        ("nats_delivered", 100),
        ("nats_lost", 0),
        ("nats_in_flight_at_end", 0),
        ("nats_duplicated", 0),
        ("nats_late", 0),
        ("nats_foreign", 0),
        ("nats_subscribers", 3),
    ] {
        assert_eq!(count(&plan, name), want, "{name}");
    }
    // The server: 100 messages in, 300 deliveries out, and the subscribers' start's probes
    // (one, or more if the server took its time).
    let probes = count(&plan, "nats_probes");
    assert!((1..10).contains(&probes), "{probes}");
    assert_eq!(counter(&server, "in_msgs").await - in0, 100 + probes);
    let probed = count(&plan, "nats_probe_deliveries");
    assert!(probed >= 3, "{probed}");
    assert_eq!(counter(&server, "out_msgs").await - out0, 3 * 100 + probed);
    // Each subscriber received what was sent.
    assert_eq!(r.bytes_received, 3 * r.bytes_sent);
    // A delivery is never sooner than its publish: the step's latency covers its parts.
    assert!(r.latency.max() >= p.latency.max());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_publishes_at_its_rate_and_another_publisher_is_told_apart() {
    let server = NatsServer::start().unwrap();
    // Another publisher on the subject, before and during the run.
    let other = async_nats::connect(format!("127.0.0.1:{}", server.port))
        .await
        .unwrap();
    let plan = Arc::new(steps(
        &server.url("ticks"),
        &publishing(1),
        NatsStep::publish("tick"),
    ));
    let noise = tokio::spawn({
        let other = other.clone();
        async move {
            // Within the run (half a second), once throng's subscribers are there.
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            for _ in 0..20 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                other.publish("ticks", "noise".into()).await.unwrap();
            }
            other.flush().await.unwrap();
        }
    });
    let started = std::time::Instant::now();
    let s = run(open(400.0, 200, 50), plan.clone()).await;
    noise.await.unwrap();
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (200, 0), "{}", errors(&s));
    assert!(started.elapsed().as_millis() >= 480);
    assert_eq!(count(&plan, "nats_delivered"), 200);
    // The noise was flushed to the server; its deliveries may still be on their way.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while count(&plan, "nats_foreign") < 20 && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(count(&plan, "nats_foreign"), 20);
    assert_eq!(count(&plan, "nats_duplicated"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_jetstream_every_message_is_stored_acknowledged_and_consumed_once() {
    let server = NatsServer::jetstream().unwrap();
    let client = async_nats::connect(format!("127.0.0.1:{}", server.port))
        .await
        .unwrap();
    let js = async_nats::jetstream::new(client);
    let mut stream = js
        .create_stream(async_nats::jetstream::stream::Config {
            name: "TICKS".into(),
            subjects: vec!["ticks".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let opts = with(NatsOptions {
        mode: Mode::Publish,
        subscribers: 2,
        jetstream: true,
    });
    let plan = Arc::new(steps(
        &server.url("ticks"),
        &opts,
        NatsStep::publish("tick"),
    ));
    let s = run(closed(2, 25), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (50, 0), "{}", errors(&s));
    assert_eq!(parts(&s).samples, 100);
    assert_eq!(count(&plan, "nats_delivered"), 50);
    assert_eq!(count(&plan, "nats_duplicated"), 0);
    // The stream stored every message (and the subscribers' probes).
    let probes = count(&plan, "nats_probes");
    assert_eq!(stream.info().await.unwrap().state.messages, 50 + probes);

    // A subject no stream holds: the server's "no responders", and no subscriber starts.
    let plan = Arc::new(steps(&server.url("nowhere"), &opts, NatsStep::publish("x")));
    let s = run(closed(1, 3), plan).await;
    let r = row(&s);
    assert_eq!(r.samples, 3);
    assert_eq!(
        class(r, throng_core::ErrorClass::Status),
        3,
        "{}",
        errors(&s)
    );
}
