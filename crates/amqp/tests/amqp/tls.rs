//! amqps:// against rabbitmq-server's TLS listener (a certificate made by the test): RPC and
//! publish–consume with `--cacert` (and `-k`), the handshake timed as the connection's `tls`
//! phase; an untrusted certificate and a plain listener behind amqps:// fail as `tls` at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use throng_amqp::{AmqpStep, Mode};
use throng_core::step::ClientOptions;
use throng_core::{ErrorClass, Phase};

use crate::common::*;

fn trusting(ca: Option<std::path::PathBuf>, insecure: bool, mode: Mode) -> ClientOptions {
    let mut o = with(throng_amqp::AmqpOptions {
        mode,
        confirms: mode == Mode::Publish,
        ..throng_amqp::AmqpOptions::default()
    });
    o.cacert = ca;
    o.insecure = insecure;
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_and_publish_over_amqps_with_the_ca_and_insecure() {
    let broker = Broker::with_tls();
    let q = unique("greeter");
    // The responder on the plain listener: the same node routes between them.
    let responder = Responder::start(&broker, &q, &[]);
    let opts = trusting(Some(broker.ca()), false, Mode::Rpc);
    let plan = Arc::new(steps(
        &broker.tls_url("127.0.0.1", &q),
        &opts,
        AmqpStep::rpc("world"),
    ));
    let s = run(closed(3, 20), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (60, 0), "{}", errors(&s));
    assert_eq!(responder.stop(), 60);
    assert_eq!(r.bytes_received, 60 * "hello world".len() as u64);
    // A connection per worker thread, each with its TCP connect and TLS handshake reported by
    // the first call of the user that opened it.
    assert_eq!(count(&plan, "amqp_connections"), 2);
    let phases = r.phases.as_ref().expect("the connections' phases");
    assert_eq!(phases.new, 2);
    assert_eq!(phases.of(Phase::Tls).len(), 2);
    assert_eq!(phases.of(Phase::Connect).len(), 2);
    let tls_ms = phases.of(Phase::Tls).mean() / 1000.0;
    assert!(tls_ms > 0.0 && tls_ms < 1000.0, "{tls_ms} ms");

    // Publish–consume, throng's consumer over TLS too; -k with the name the certificate has.
    let opts = trusting(None, true, Mode::Publish);
    let q = unique("ticks");
    let plan = Arc::new(steps(
        &broker.tls_url("localhost", &q),
        &opts,
        AmqpStep::publish("tick"),
    ));
    let s = run(closed(2, 25), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (50, 0), "{}", errors(&s));
    assert_eq!(count(&plan, "amqp_published"), 50);
    assert_eq!(count(&plan, "amqp_confirmed"), 50);
    assert_eq!(count(&plan, "amqp_delivered"), 50);
    assert_eq!(count(&plan, "amqp_lost"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_and_a_plain_listener_fail_as_tls_at_once() {
    let broker = Broker::with_tls();
    for (url, what) in [
        // The web roots do not hold the test's certificate.
        (broker.tls_url("127.0.0.1", "greeter"), "untrusted"),
        // RabbitMQ's plain listener answers a ClientHello with its protocol header.
        (
            format!(
                "amqps://guest:guest@127.0.0.1:{}/%2f?routing_key=greeter",
                broker.port
            ),
            "plain",
        ),
    ] {
        let insecure = what == "plain";
        let opts = trusting(None, insecure, Mode::Rpc);
        let started = Instant::now();
        let s = run(
            closed(1, 3),
            Arc::new(steps(&url, &opts, AmqpStep::rpc("x"))),
        )
        .await;
        let r = row(&s);
        assert!(r.samples >= 1, "{what}: {}", errors(&s));
        assert_eq!(
            class(r, ErrorClass::Tls),
            r.samples,
            "{what}: {}",
            errors(&s)
        );
        // Neither the connect timeout (1 s) nor the request timeout: the handshake's failure.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what}: {:?}",
            started.elapsed()
        );
    }
}
