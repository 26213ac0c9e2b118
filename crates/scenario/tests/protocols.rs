//! The scenario crate knows no protocol: a protocol registered from outside (here `echo`, a
//! stand-in written for this test because the point is a protocol the crate has never heard
//! of; the real ones, HTTP's and gRPC's, are tested against real servers elsewhere) gets its
//! steps, its targets, its status checks, and checks and extraction on its replies, and mixes
//! with HTTP steps in one file.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use throng_core::step::{
    Client, ClientOptions, Node, NodeValue, Protocol, Protocols, Render, Reply, StepError,
    TemplateCompiler, Text,
};
use throng_core::{Driver, ErrorClass, Outcome, Status, StatusClass, StatusSpace};

/// The echo protocol's statuses: 0 is OK, any other code a failure.
static ECHO: StatusSpace = StatusSpace {
    name: "echo",
    write: |code, f| write!(f, "echo {code}"),
    class: |code| match code {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};
use throng_scenario::{compile_str, ScenarioDriver, StepKind};

/// Replies with the rendered `say` text as `{"said": ...}`, status `code` (0 is OK).
struct Echo {
    connects: Arc<AtomicU64>,
}

#[derive(Debug)]
struct Say {
    text: Text,
    code: u8,
}

impl Protocol for Echo {
    type Client = EchoClient;

    fn name(&self) -> &'static str {
        "echo"
    }
    fn schemes(&self) -> &'static [&'static str] {
        &["echo"]
    }
    fn key(&self) -> &'static str {
        "echo"
    }
    fn check_target(&self, url: &str) -> Result<(), String> {
        match url.strip_prefix("echo://") {
            Some(rest) if !rest.is_empty() => Ok(()),
            _ => Err("an echo target is echo://NAME".into()),
        }
    }
    fn compile(&self, request: &Node, t: &mut dyn TemplateCompiler) -> Result<Say, StepError> {
        let f = request.fields("echo", &["say", "code"])?;
        let say = f.require("say", "an echo step")?;
        let code = match f.get("code").map(|c| &c.value) {
            None => 0,
            Some(NodeValue::Number(n)) => n.as_u64().unwrap_or(0) as u8,
            Some(_) => return Err(StepError::at(f.at, "code is a number")),
        };
        Ok(Say {
            text: t.text(&say.text("say")?, say.at)?,
            code,
        })
    }
    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        match &expected.value {
            NodeValue::String(s) if s == "OK" => Ok(ECHO.status(0)),
            NodeValue::Number(n) => Ok(ECHO.status(n.as_u64().unwrap_or(0))),
            _ => Err(StepError::at(
                expected.at,
                "an echo status is OK or a number",
            )),
        }
    }
    fn client(&self, _url: &str, _o: &ClientOptions) -> Result<EchoClient, String> {
        Ok(EchoClient {
            connects: self.connects.clone(),
        })
    }
}

struct EchoClient {
    connects: Arc<AtomicU64>,
}

impl Client for EchoClient {
    type Step = Say;
    type Worker = ();
    type Session = u64;

    fn worker_of(&self, _index: usize, _workers: usize) {}
    fn session(&self, _w: &(), user: u64) -> u64 {
        user
    }
    async fn connect(&self, _s: &mut u64) -> Result<(), Outcome> {
        self.connects.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    async fn call(
        &self,
        _s: &mut u64,
        say: &Say,
        render: &dyn Render,
        want: bool,
    ) -> (Outcome, Option<Reply>) {
        let text = render.render(&say.text).expect("renders");
        let mut outcome = Outcome {
            status: ECHO.status(u64::from(say.code)),
            ..Outcome::default()
        };
        if say.code != 0 {
            outcome.error = Some(ErrorClass::Status);
            outcome.message = Some("not OK".into());
        }
        let reply = want.then(|| Reply {
            status: ECHO.status(u64::from(say.code)),
            metadata: vec![("x-said".into(), text.clone())],
            body: Default::default(),
            json: Some(serde_json::json!({ "said": text })),
        });
        (outcome, reply)
    }
}

fn protocols(connects: &Arc<AtomicU64>) -> Protocols {
    Protocols::new().with(throng_http::HttpProtocol).with(Echo {
        connects: connects.clone(),
    })
}

const FLOW: &str = r#"
targets:
  web: http://127.0.0.1:9
  e: echo://one
variables:
  name: ann
steps:
  - label: hello
    echo:
      say: "hi {{ name }}"
    extract:
      greeting: { jsonpath: "$.said" }
      header: { metadata: X-Said }
    checks:
      - status: OK
      - jsonpath: $.said
        equals: hi ann
  - label: again
    echo:
      say: "{{ greeting }} / {{ header }}"
    checks:
      - jsonpath: $.said
        equals: hi ann / hi ann
  - label: refused
    echo:
      say: x
      code: 14
    checks:
      - status: 14
  - label: failing
    echo:
      say: x
      code: 5
"#;

#[tokio::test(flavor = "current_thread")]
async fn a_protocol_from_outside_gets_steps_checks_and_extraction() {
    let connects = Arc::new(AtomicU64::new(0));
    let s = compile_str(FLOW, "flow.yaml", Path::new("."), &protocols(&connects)).unwrap();
    assert_eq!(s.targets[0].protocol.name(), "echo");
    assert!(matches!(&s.steps[0].kind, StepKind::Request(r) if r.target == 0));
    let driver = ScenarioDriver::new(s, &ClientOptions::default()).unwrap();
    let worker = driver.worker();
    let mut session = driver.session(&worker, 0);
    assert!(driver.begin_iteration(&mut session));
    let hello = driver.execute(&mut session, 0).await;
    assert_eq!(hello.error, None, "{:?}", hello.message);
    assert_eq!(hello.status, ECHO.status(0));
    // The second step renders what the first extracted (from JSON and from metadata).
    let again = driver.execute(&mut session, 1).await;
    assert_eq!(again.error, None, "{:?}", again.message);
    // A status check that expects the failing status makes it a success...
    let refused = driver.execute(&mut session, 2).await;
    assert_eq!(refused.error, None, "{:?}", refused.message);
    assert_eq!(refused.status, ECHO.status(14));
    // ...and without one the protocol's failure stands.
    let failing = driver.execute(&mut session, 3).await;
    assert_eq!(failing.error, Some(ErrorClass::Status));
}

#[test]
fn protocol_mistakes_are_named_at_their_place() {
    let connects = Arc::new(AtomicU64::new(0));
    let p = protocols(&connects);
    let error = |text: &str| match compile_str(text, "x.yaml", Path::new("."), &p) {
        Ok(_) => panic!("compiled: {text}"),
        Err(e) => e.to_string(),
    };
    let head = "targets:\n  web: http://127.0.0.1:9\n  e: echo://one\nsteps:\n  - label: a\n";
    for (body, want) in [
        // An HTTP step names an echo target.
        (
            "    request:\n      target: e\n      path: /\n",
            "x.yaml:7:15: target `e` is echo (echo://one), not a target of `request` steps (http)",
        ),
        // The protocol's own field check.
        (
            "    echo:\n      sey: x\n",
            "x.yaml:7:12: echo: unknown field `sey`, expected one of `say`, `code`",
        ),
        // The protocol reads its status checks.
        (
            "    echo:\n      say: x\n    checks:\n      - status: FINE\n",
            "x.yaml:9:17: an echo status is OK or a number",
        ),
        // A key no protocol has.
        (
            "    grpc:\n      call: a\n",
            "x.yaml:6:5: unknown field `grpc`, expected one of `label`, `extract`, `checks`, \
             `think_time`, `group`, `steps`, `when`, `repeat`, `until`, `on_failure`, `request`, `echo`",
        ),
        // Two requests in one step.
        (
            "    echo:\n      say: x\n    request:\n      path: /\n",
            "x.yaml:8:5: step `a` has a second request `request`: a step sends one",
        ),
        (
            "    checks: []\n",
            "x.yaml:5:12: step `a` needs a request: `request` (http: method, path, headers, body \
             or json, stream (sse, ndjson or chunks), and llm (api, model, prompts or \
             prompt_tokens, max_tokens)) or `echo` (echo)",
        ),
    ] {
        let e = error(&format!("{head}{body}"));
        assert!(e.starts_with(want), "{body}\n want {want}\n got  {e}");
    }
    // A target whose scheme no protocol has.
    let e = error("targets:\n  a: ftp://h\nsteps:\n  - label: a\n    echo: { say: x }\n");
    assert!(
        e.starts_with("x.yaml:2:6: target `a`: URL `ftp://h`: not a URL of a protocol throng loads (http://, https://, echo://)"),
        "{e}"
    );
}

#[test]
fn retargeting_keeps_each_target_in_its_protocol() {
    let connects = Arc::new(AtomicU64::new(0));
    let mut s = compile_str(FLOW, "flow.yaml", Path::new("."), &protocols(&connects)).unwrap();
    s.retarget("e", "echo://two").unwrap();
    assert_eq!(s.targets[0].url, "echo://two");
    let e = s.retarget("e", "http://127.0.0.1:8080").unwrap_err();
    assert!(e.contains("target `e` is echo (echo://)"), "{e}");
    let e = s.retarget("web", "http://127.0.0.1:99999").unwrap_err();
    assert!(e.contains("99999"), "{e}");
    let e = s.retarget("nope", "echo://x").unwrap_err();
    assert!(e.contains("no target named \"nope\""), "{e}");
}

#[test]
fn a_hand_built_scenario_that_does_not_hold_together_is_an_error() {
    let connects = Arc::new(AtomicU64::new(0));
    let mut s = compile_str(FLOW, "flow.yaml", Path::new("."), &protocols(&connects)).unwrap();
    s.targets.truncate(1);
    if let StepKind::Request(r) = &mut s.steps[1].kind {
        r.target = 5;
    }
    let e = ScenarioDriver::new(s, &ClientOptions::default())
        .err()
        .expect("an out-of-range target is refused")
        .to_string();
    assert!(e.contains("step `again` names target 5 of 1"), "{e}");

    let mut s = compile_str(FLOW, "flow.yaml", Path::new("."), &protocols(&connects)).unwrap();
    s.groups.push(throng_core::GroupInfo {
        label: "g".into(),
        first: 2,
        last: 9,
    });
    let e = ScenarioDriver::new(s, &ClientOptions::default())
        .err()
        .expect("a group past the last step is refused")
        .to_string();
    assert!(e.contains("group `g` spans steps 2..=9 of 4"), "{e}");
}
