//! The protocol registered in a scenario from outside throng's own list: its steps compile
//! under `ws`, and checks and extraction read its replies.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use throng_core::step::Protocols;
use throng_core::ErrorClass;
use throng_scenario::{compile_str, ScenarioDriver};
use throng_ws::serve::WsTarget;
use throng_ws::WsProtocol;

use crate::common::*;

const FLOW: &str = r#"
targets:
  chat: URL
steps:
  - label: hello
    ws:
      send: '{"user": {{ user }}, "n": 7}'
    checks:
      - status: OK
      - jsonpath: $.n
        equals: 7
    extract:
      n: { jsonpath: $.n }
  - label: again
    ws: "n was {{ n }}"
    checks:
      - body_contains: "n was 7"
      - status: 0
  - label: wrong
    ws: "x"
    checks:
      - body_contains: "y"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_and_extraction_read_the_last_message() {
    let server = WsTarget::default().start().await.unwrap();
    let protocols = Protocols::new().with(WsProtocol);
    let scenario = compile_str(
        &FLOW.replace("URL", &server.url()),
        "ws.yaml",
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
    let by = |label: &str| s.labels.iter().find(|l| l.label == label).unwrap();
    assert_eq!(
        (by("hello").samples, by("hello").errors),
        (10, 0),
        "{}",
        errors(&s)
    );
    assert_eq!(
        (by("again").samples, by("again").errors),
        (10, 0),
        "{}",
        errors(&s)
    );
    // A check that does not hold fails its step as class check.
    assert_eq!(class(by("wrong"), ErrorClass::Check), 10, "{}", errors(&s));
    assert_eq!(server.received(), 30);
}

#[test]
fn its_mistakes_are_named_at_their_place() {
    let protocols = Protocols::new().with(WsProtocol);
    let text =
        "targets:\n  chat: ws://127.0.0.1:9/\nsteps:\n  - label: a\n    ws:\n      sned: x\n";
    let e = match compile_str(text, "x.yaml", Path::new("."), &protocols) {
        Ok(_) => panic!("a misspelt field compiled"),
        Err(e) => e.to_string(),
    };
    assert!(e.starts_with("x.yaml:6:"), "{e}");
    assert!(e.contains("unknown field `sned`"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_in_a_steps_think_time_when_the_run_stops_close_normally() {
    let server = WsTarget::default().start().await.unwrap();
    let protocols = Protocols::new().with(WsProtocol);
    let text = format!(
        "targets:\n  chat: {}\nsteps:\n  - label: hello\n    ws: hi\n    think_time: 5s\n",
        server.url()
    );
    let scenario = compile_str(&text, "think.yaml", Path::new("."), &protocols).unwrap();
    let driver = ScenarioDriver::new(scenario, &options()).unwrap();
    let duration = Duration::from_millis(400);
    let s = tokio::time::timeout(
        Duration::from_secs(30),
        throng_engine::run(closed_for(3, duration), Arc::new(driver)),
    )
    .await
    .unwrap()
    .unwrap();
    let hello = s.labels.iter().find(|l| l.label == "hello").unwrap();
    assert_eq!((hello.samples, hello.errors), (3, 0), "{}", errors(&s));
    assert_eq!(server.handshakes(), 3);
    thinkers_closed(&server, 3, &s, duration).await;
}
