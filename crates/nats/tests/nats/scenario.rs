//! The protocol in a scenario: its steps compile under `nats`, checks and extraction read its
//! replies, a publish step is timed to its delivery, and a status check names NATS's codes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use throng_core::step::Protocols;
use throng_core::ErrorClass;
use throng_nats::NatsProtocol;
use throng_scenario::{compile_str, ScenarioDriver};

use crate::common::*;

const FLOW: &str = r#"
targets:
  svc: URL/greeter
  feed: URL/ticks
steps:
  - label: hello
    nats:
      target: svc
      request: '{"user": {{ user }}}'
      headers:
        trace: "t-{{ user }}"
    checks:
      - status: OK
      - body_contains: 'hello {"user"'
    extract:
      trace: { header: trace }
  - label: tick
    nats:
      target: feed
      publish: "from {{ trace }}"
  - label: nobody
    nats:
      target: svc
      request: x
      subject: nobody.home
    checks:
      - status: NO_RESPONDERS
  - label: wrong
    nats:
      target: svc
      request: x
    checks:
      - body_contains: "goodbye"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_extraction_and_publishing_in_a_flow() {
    let server = NatsServer::start().unwrap();
    let responder = Responder::start(&server, "greeter", &[]);
    let protocols = Protocols::new().with(NatsProtocol);
    let base = format!("nats://127.0.0.1:{}", server.port);
    let scenario = compile_str(
        &FLOW.replace("URL", &base),
        "nats.yaml",
        Path::new("."),
        &protocols,
    )
    .unwrap();
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
    assert_eq!(by("tick (deliveries)").samples, 10);
    // hello and wrong reached the responder; nobody did not.
    assert_eq!(responder.stop(), 20);
}

#[test]
fn a_publish_step_on_another_subject_than_its_targets_is_refused_before_the_load() {
    let protocols = Protocols::new().with(NatsProtocol);
    let flow =
        "targets:\n  feed: nats://127.0.0.1:4222/ticks\nsteps:\n  - label: tick\n    nats:\n      \
                publish: x\n      subject: other\n";
    let scenario = compile_str(flow, "nats.yaml", Path::new("."), &protocols).unwrap();
    let Err(e) = ScenarioDriver::new(scenario, &options()) else {
        panic!("a publish step on another subject was taken");
    };
    let said = e.to_string();
    assert!(said.contains("target's subject, ticks"), "{said}");
    assert!(said.contains("nats.yaml:6"), "{said}");
}
