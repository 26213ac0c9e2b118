//! A scenario of `tcp:` steps, through the scenario crate with a registry holding only this
//! protocol: templates, `expect`, checks and extraction on the reply, a status check.

use std::path::Path;
use std::time::Duration;

use throng_core::step::Protocols;
use throng_core::ErrorClass;
use throng_scenario::{compile_str, ScenarioDriver};
use throng_tcp::serve::TcpTarget;
use throng_tcp::{TcpOptions, TcpProtocol};

use crate::common::*;

/// Two echo servers: LINES (the targets' framing) and LEN4 (a step's own). With two targets
/// each step names its own, so none is written as a bare string (`tcp: PING`).
const FLOW: &str = r#"
targets:
  lines: LINES
  l4: LEN4
load:
  users: 2
  iterations: 10
steps:
  - label: ping
    tcp:
      target: lines
      send: PING
    checks:
      - status: ok
      - body_contains: PING
  - label: json
    tcp:
      target: l4
      send: '{"user": {{ user }}, "word": "hi"}'
      frame: len4
    extract:
      word: { jsonpath: "$.word" }
  - label: again
    tcp:
      target: lines
      send: "{{ word }} again"
      expect: "{{ word }} again"
  - label: bytes
    tcp:
      target: lines
      hex: "68 69 0a"
    checks:
      - body_contains: hi
  - label: wrong
    tcp:
      target: lines
      send: hello
    checks:
      - body_contains: nope
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_of_tcp_steps_checks_and_extracts_replies() {
    let lines = TcpTarget::default().start().await.unwrap();
    let len4 = TcpTarget {
        framing: "len4".parse().unwrap(),
        ..TcpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let text = FLOW
        .replace("LINES", &lines.url())
        .replace("LEN4", &len4.url());
    let protocols = Protocols::new().with(TcpProtocol);
    let scenario = compile_str(&text, "tcp.yaml", Path::new("."), &protocols).unwrap();
    let options = client_options(Duration::from_secs(5), TcpOptions::default());
    let driver = ScenarioDriver::new(scenario, &options).unwrap();
    let plan = driver
        .scenario()
        .load
        .plan(&lines.url(), &throng_core::spec::keys)
        .unwrap();
    let s = run(plan, driver).await;
    let row = |l: &str| s.labels.iter().find(|r| r.label == l).unwrap();
    for l in ["ping", "json", "again", "bytes"] {
        assert_eq!(row(l).samples, 20, "{l}: {}", errors(&s));
        assert_eq!(row(l).errors, 0, "{l}: {}", errors(&s));
    }
    assert_eq!(row("wrong").errors, 20, "{}", errors(&s));
    assert_eq!(class(&s, ErrorClass::Check), 20, "{}", errors(&s));
    assert_eq!(s.total.errors, 20, "{}", errors(&s));
    assert_eq!(lines.requests(), 20 * 4, "ping, again, bytes and wrong");
    assert_eq!(len4.requests(), 20, "json");
}

#[test]
fn scenario_mistakes_in_tcp_steps_are_named_at_their_place() {
    let protocols = Protocols::new().with(TcpProtocol);
    let head = "targets:\n  t: tcp://127.0.0.1:9\nsteps:\n  - label: a\n";
    for (body, want) in [
        (
            "    tcp:\n      send: x\n      hex: '00'\n",
            "tcp.yaml:7:12: give one of",
        ),
        (
            "    tcp:\n      send: x\n      frame: len3\n",
            "tcp.yaml:7:14: frame: `len3`",
        ),
        (
            "    tcp: x\n    checks:\n      - status: 200\n",
            "tcp.yaml:7:17: a tcp status is ok",
        ),
    ] {
        let text = format!("{head}{body}");
        let e = compile_str(&text, "tcp.yaml", Path::new("."), &protocols)
            .err()
            .unwrap_or_else(|| panic!("compiled: {text}"))
            .to_string();
        assert!(e.starts_with(want), "{e}\nwanted {want}");
    }
    let bad_target = "targets:\n  t: tcp://127.0.0.1\nsteps:\n  - tcp: x\n";
    let e = compile_str(bad_target, "tcp.yaml", Path::new("."), &protocols)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("the port is missing"), "{e}");
}
