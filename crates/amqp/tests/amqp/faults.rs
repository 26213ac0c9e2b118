//! The fault matrix, in both load models: no broker, a broker killed mid-run, no route, a
//! queue no one consumes (timeout), bad credentials and a vhost that does not exist, a server
//! that does not speak AMQP. Every failure is classified, every run ends (bounded loads,
//! timeouts), and publish–consume's accounting still adds up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use throng_amqp::status::{self, NO_ROUTE, OK};
use throng_amqp::AmqpStep;
use throng_core::step::ClientOptions;
use throng_core::{ErrorClass, RunPlan};

use crate::common::*;

/// Every sample of a run of `plan` fails with `want`.
async fn all_fail(
    plan: RunPlan,
    url: &str,
    opts: &ClientOptions,
    step: AmqpStep,
    want: ErrorClass,
    samples: u64,
) -> Arc<throng_core::Snapshot> {
    let s = run(plan, Arc::new(steps(url, opts, step))).await;
    let r = row(&s);
    assert_eq!(r.samples, samples, "{url}: {}", errors(&s));
    assert_eq!(class(r, want), samples, "{url}: {}", errors(&s));
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_broker_is_connect_in_both_models_and_both_modes() {
    let url = format!(
        "amqp://guest:guest@127.0.0.1:{}/%2f?routing_key=greeter",
        free_port()
    );
    for (opts, step) in [
        (options(), AmqpStep::rpc("x")),
        (publishing(true), AmqpStep::publish("x")),
    ] {
        all_fail(
            closed(2, 3),
            &url,
            &opts,
            step.clone(),
            ErrorClass::Connect,
            6,
        )
        .await;
        all_fail(
            open(100.0, 20, 5),
            &url,
            &opts,
            step,
            ErrorClass::Connect,
            20,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_is_its_status_in_both_models() {
    let broker = Broker::shared();
    let url = broker.url(&unique("nobody-home"));
    for (plan, n) in [(closed(2, 5), 10), (open(100.0, 20, 5), 20)] {
        let s = all_fail(
            plan,
            &url,
            &options(),
            AmqpStep::rpc("x"),
            ErrorClass::Status,
            n,
        )
        .await;
        assert_eq!(status_count(&s, NO_ROUTE), n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_consumer_on_the_queue_is_a_timeout_in_both_models() {
    let broker = Broker::shared();
    // The queue exists (so the request is routed) but no one consumes it.
    let q = unique("unserved");
    crate::publish::declare(broker, &q, false).await;
    let url = broker.url(&q);
    let started = Instant::now();
    let s = all_fail(
        closed(2, 2),
        &url,
        &options(),
        AmqpStep::rpc("x"),
        ErrorClass::Timeout,
        4,
    )
    .await;
    // Each waited its timeout, no more.
    let r = row(&s);
    assert!(r.latency.min() >= 490_000, "{}", r.latency.min());
    assert!(r.latency.max() < 2_000_000, "{}", r.latency.max());
    all_fail(
        open(50.0, 10, 10),
        &url,
        &options(),
        AmqpStep::rpc("x"),
        ErrorClass::Timeout,
        10,
    )
    .await;
    // A slow responder is the same: its replies come after the timeout.
    let q = unique("slow");
    let _slow = Responder::start(broker, &q, &["-delay", "3s"]);
    all_fail(
        closed(1, 2),
        &broker.url(&q),
        &options(),
        AmqpStep::rpc("x"),
        ErrorClass::Timeout,
        2,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_and_a_missing_vhost_are_the_brokers_codes() {
    let broker = Broker::shared();
    for (url, code) in [
        (
            format!(
                "amqp://guest:wrong@127.0.0.1:{}/%2f?routing_key=x",
                broker.port
            ),
            403,
        ),
        (
            format!(
                "amqp://guest:guest@127.0.0.1:{}/nowhere?routing_key=x",
                broker.port
            ),
            530,
        ),
    ] {
        for plan in [closed(1, 3), open(50.0, 5, 5)] {
            let n = match plan.model {
                throng_core::LoadModel::Closed(_) => 3,
                _ => 5,
            };
            let s = all_fail(
                plan,
                &url,
                &options(),
                AmqpStep::rpc("x"),
                ErrorClass::Status,
                n,
            )
            .await;
            assert_eq!(status_count(&s, status::status(code)), n, "{url}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_speak_amqp_fails_the_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(40) {
            let mut s = stream.unwrap();
            let _ = std::io::Write::write_all(&mut s, b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let url = format!("amqp://127.0.0.1:{port}/%2f?routing_key=x");
    let s = run(
        closed(1, 3),
        Arc::new(steps(&url, &options(), AmqpStep::rpc("x"))),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (3, 3), "{}", errors(&s));
    let classified = [ErrorClass::Protocol, ErrorClass::Reset, ErrorClass::Connect]
        .iter()
        .map(|c| class(r, *c))
        .sum::<u64>();
    assert_eq!(classified, 3, "{}", errors(&s));
}

/// A broker killed half a second into a run of `plan`: answers before, classified failures
/// after, and the run ends.
async fn killed_mid_run(
    plan: RunPlan,
    opts: &ClientOptions,
    step: AmqpStep,
    responder: bool,
) -> Arc<throng_amqp::Steps<throng_amqp::AmqpClient>> {
    let broker = Broker::own();
    let q = unique("greeter");
    let responder = responder.then(|| Responder::start(&broker, &q, &[]));
    let steps = Arc::new(steps(&broker.url(&q), opts, step));
    let started = Instant::now();
    let run = tokio::spawn(run(plan, steps.clone()));
    tokio::time::sleep(Duration::from_millis(700)).await;
    broker.kill();
    let s = run.await.unwrap();
    drop(responder);
    assert!(started.elapsed() < Duration::from_secs(30));
    let r = row(&s);
    assert!(
        status_count(&s, OK) > 0,
        "answers before the kill: {}",
        errors(&s)
    );
    assert!(r.errors > 0, "failures after the kill");
    let classified = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Reset,
        ErrorClass::Aborted,
    ]
    .iter()
    .map(|c| class(r, *c))
    .sum::<u64>();
    assert_eq!(classified, r.errors, "{}", errors(&s));
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_killed_mid_run_fails_requests_in_both_models() {
    killed_mid_run(
        closed_for(2, Duration::from_millis(2000)),
        &options(),
        AmqpStep::rpc("x"),
        true,
    )
    .await;
    killed_mid_run(open(200.0, 400, 50), &options(), AmqpStep::rpc("x"), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_killed_mid_run_loses_messages_and_every_one_is_counted() {
    for plan in [
        closed_for(2, Duration::from_millis(2000)),
        open(200.0, 400, 50),
    ] {
        let steps = killed_mid_run(plan, &publishing(true), AmqpStep::publish("x"), false).await;
        let n = |name| count(&steps, name);
        let (published, delivered) = (n("amqp_published"), n("amqp_delivered"));
        let gone = n("amqp_lost") + n("amqp_in_flight_at_end");
        assert!(delivered > 0 && gone > 0, "{delivered} {gone}");
        assert_eq!(
            published,
            delivered + gone + n("amqp_returned") + n("amqp_nacked")
        );
    }
}
