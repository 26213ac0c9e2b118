//! A protocol written outside throng's crates: a line-based TCP protocol (a request is a line,
//! the answer is a line), implemented here in one `Protocol` and one `Client`, and nothing else.
//! It gets what every protocol gets: scenario steps under its own key (`line:`) with templates,
//! checks and extraction, mixed with throng's own protocols; thresholds; the JSON result.
//!
//!     cargo run --example line_protocol [RESULT.json]
//!
//! The target is an echo server started in-process on 127.0.0.1 that answers `PING` with
//! `PONG` and any other line with itself, upper-cased; a line `FAIL` is answered `ERR`, a
//! failing status.

use std::sync::Arc;

use throng::core::step::{
    Client, ClientOptions, Node, NodeValue, Protocol, Render, Reply, StepError, TemplateCompiler,
    Text,
};
use throng::core::{ErrorClass, Outcome, Status, StatusClass, StatusSpace};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The protocol: `line://HOST:PORT` targets, `line:` steps.
struct Line;

/// A compiled `line:` step: the text to send (a template or not).
#[derive(Debug)]
struct Send(Text);

/// One target's client.
struct LineClient {
    addr: String,
    timeout: std::time::Duration,
}

/// A user's connection.
#[derive(Default)]
struct Conn(Option<BufReader<TcpStream>>);

/// Its own space of statuses: `line OK` (0) and `line ERR` (1), which checks compare and
/// reports print as they are, a success and a failure.
static LINE: StatusSpace = StatusSpace {
    name: "line",
    write: |code, f| match code {
        0 => f.write_str("line OK"),
        _ => f.write_str("line ERR"),
    },
    class: |code| match code {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};
const OK: Status = LINE.status(0);
const ERR: Status = LINE.status(1);

impl Protocol for Line {
    type Client = LineClient;

    fn name(&self) -> &'static str {
        "line"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["line"]
    }

    fn key(&self) -> &'static str {
        "line"
    }

    fn step_help(&self) -> &'static str {
        "the line to send"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        match url.strip_prefix("line://") {
            Some(addr) if addr.contains(':') => Ok(()),
            _ => Err("a line target is line://HOST:PORT".into()),
        }
    }

    fn compile(&self, step: &Node, t: &mut dyn TemplateCompiler) -> Result<Send, StepError> {
        let text = step.text("line")?;
        if text.contains('\n') {
            return Err(StepError::at(step.at, "a line step sends one line"));
        }
        Ok(Send(t.text(&text, step.at)?))
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        match &expected.value {
            NodeValue::String(s) if s == "OK" => Ok(OK),
            NodeValue::String(s) if s == "ERR" => Ok(ERR),
            _ => Err(StepError::at(expected.at, "a line status is OK or ERR")),
        }
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<LineClient, String> {
        self.check_target(url)?;
        Ok(LineClient {
            addr: url.trim_start_matches("line://").to_string(),
            timeout: options.timeout,
        })
    }
}

impl Client for LineClient {
    type Step = Send;
    type Worker = ();
    type Session = Conn;

    fn worker_of(&self, _index: usize, _workers: usize) {}

    fn session(&self, _worker: &(), _user: u64) -> Conn {
        Conn::default()
    }

    async fn connect(&self, s: &mut Conn) -> Result<(), Outcome> {
        if s.0.is_none() {
            let stream = TcpStream::connect(&self.addr)
                .await
                .map_err(|e| Outcome::failed(ErrorClass::Connect, e.to_string()))?;
            s.0 = Some(BufReader::new(stream));
        }
        Ok(())
    }

    async fn call(
        &self,
        s: &mut Conn,
        step: &Send,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let line = match render.render(&step.0) {
            Ok(l) => l + "\n",
            Err(e) => return (Outcome::failed(ErrorClass::Check, e), None),
        };
        if let Err(o) = self.connect(s).await {
            return (o, None);
        }
        let Some(conn) = s.0.as_mut() else {
            return (Outcome::failed(ErrorClass::Connect, "no connection"), None);
        };
        let exchange = async {
            conn.get_mut().write_all(line.as_bytes()).await?;
            let mut answer = String::new();
            conn.read_line(&mut answer).await?;
            Ok::<_, std::io::Error>(answer)
        };
        let answer = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(a)) if !a.is_empty() => a,
            Ok(Ok(_)) => {
                s.0 = None;
                return (
                    Outcome::failed(ErrorClass::Reset, "the server closed"),
                    None,
                );
            }
            Ok(Err(e)) => {
                s.0 = None;
                return (Outcome::failed(ErrorClass::Reset, e.to_string()), None);
            }
            Err(_) => {
                s.0 = None;
                return (
                    Outcome::failed(ErrorClass::Timeout, "no answer in time"),
                    None,
                );
            }
        };
        let answer = answer.trim_end().to_string();
        let status = if answer == "ERR" { ERR } else { OK };
        let mut outcome = Outcome {
            status,
            bytes_sent: line.len() as u64,
            bytes_received: answer.len() as u64 + 1,
            ..Outcome::default()
        };
        if status == ERR {
            outcome.error = Some(ErrorClass::Status);
            outcome.message = Some("the server answered ERR".into());
        }
        let reply = want_reply.then(|| Reply {
            status,
            metadata: vec![("answer".into(), answer.clone())],
            body: answer.clone().into(),
            json: Some(serde_json::json!({ "answer": answer })),
        });
        (outcome, reply)
    }
}

/// The target: an echo server on a free port of 127.0.0.1.
async fn echo_server() -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut conn = BufReader::new(stream);
                let mut line = String::new();
                while conn.read_line(&mut line).await.unwrap_or(0) > 0 {
                    let answer = match line.trim_end() {
                        "PING" => "PONG".to_string(),
                        "FAIL" => "ERR".to_string(),
                        other => other.to_uppercase(),
                    };
                    if conn
                        .get_mut()
                        .write_all(format!("{answer}\n").as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                    line.clear();
                }
            });
        }
    });
    Ok(format!("line://{addr}"))
}

const SCENARIO: &str = r#"
targets:
  echo: ECHO
load:
  users: 4
  iterations: 250
steps:
  - label: ping
    line: PING
    checks:
      - status: OK
      - body_contains: PONG
  - label: greet
    line: "hello {{ user }}"
    extract:
      greeting: { metadata: answer }
  - label: again
    line: "{{ greeting }}"
    checks:
      - jsonpath: $.answer
        equals: "{{ greeting }}"
"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = echo_server().await?;
    let protocols = throng::protocols().with(Line);
    let scenario = throng::scenario::compile_str(
        &SCENARIO.replace("ECHO", &url),
        "line.yaml",
        std::path::Path::new("."),
        &protocols,
    )?;
    let driver = throng::scenario::ScenarioDriver::new(scenario, &ClientOptions::default())?;
    let plan = driver
        .scenario()
        .load
        .plan(&url, &throng::core::spec::keys)?;
    let mut run = throng::Run::new(plan, Arc::new(driver))
        .thresholds(["error_rate<1%".parse()?, "p99{ping}<100ms".parse()?])
        .summary(true);
    if let Some(path) = std::env::args().nth(1) {
        run = run.json(path);
    }
    let finished = run.execute().await?;
    std::process::exit(finished.exit_code().into());
}
