//! The protocol in a scenario: its steps compile under `amqp`, checks and extraction read its
//! replies (body and headers), a publish step is timed to its delivery, and a status check
//! names AMQP's codes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use throng_amqp::AmqpProtocol;
use throng_core::step::Protocols;
use throng_core::ErrorClass;
use throng_scenario::{compile_str, ScenarioDriver};

use crate::common::*;

const FLOW: &str = r#"
targets:
  svc: URL?routing_key=QUEUE
  feed: URL?routing_key=FEED
steps:
  - label: hello
    amqp:
      target: svc
      rpc: '{"user": {{ user }}}'
      headers:
        trace: "t-{{ user }}"
    checks:
      - status: OK
      - body_contains: 'hello {"user"'
    extract:
      trace: { header: trace }
  - label: tick
    amqp:
      target: feed
      publish: "from {{ trace }}"
  - label: nobody
    amqp:
      target: svc
      rpc: x
      routing_key: NOBODY
    checks:
      - status: NO_ROUTE
  - label: wrong
    amqp:
      target: svc
      rpc: x
    checks:
      - body_contains: "goodbye"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_extraction_and_publishing_in_a_flow() {
    let broker = Broker::shared();
    let (q, feed, nobody) = (unique("greeter"), unique("feed"), unique("nobody"));
    let responder = Responder::start(broker, &q, &[]);
    let protocols = Protocols::new().with(AmqpProtocol);
    let base = format!("amqp://guest:guest@127.0.0.1:{}/%2f", broker.port);
    let flow = FLOW
        .replace("URL", &base)
        .replace("QUEUE", &q)
        .replace("FEED", &feed)
        .replace("NOBODY", &nobody);
    let scenario = compile_str(&flow, "amqp.yaml", Path::new("."), &protocols).unwrap();
    let driver = ScenarioDriver::new(scenario, &options()).unwrap();
    let s = tokio::time::timeout(
        Duration::from_secs(30),
        throng_engine::run(closed(2, 5), Arc::new(driver)),
    )
    .await
    .unwrap()
    .unwrap();
    let by = |label: &str| {
        s.labels
            .iter()
            .find(|l| l.label == label)
            .unwrap_or_else(|| panic!("no row {label}"))
    };
    for label in ["hello", "tick", "nobody"] {
        assert_eq!(
            (by(label).samples, by(label).errors),
            (10, 0),
            "{label}: {}",
            errors(&s)
        );
    }
    assert_eq!(by("wrong").samples, 10);
    assert_eq!(by("wrong").classes[ErrorClass::Check.index()], 10);
    // hello and wrong reached the responder; nobody did not.
    assert_eq!(responder.stop(), 20);
}

#[test]
fn a_publish_step_on_another_route_than_its_targets_is_refused_before_the_load() {
    let protocols = Protocols::new().with(AmqpProtocol);
    let flow = "targets:\n  feed: amqp://127.0.0.1:5672/%2f?routing_key=ticks\nsteps:\n  - label: \
                tick\n    amqp:\n      publish: x\n      routing_key: other\n";
    let scenario = compile_str(flow, "amqp.yaml", Path::new("."), &protocols).unwrap();
    let Err(e) = ScenarioDriver::new(scenario, &options()) else {
        panic!("a publish step on another route was taken");
    };
    let said = e.to_string();
    assert!(said.contains("target's route"), "{said}");
    assert!(said.contains("amqp.yaml:6"), "{said}");
}
