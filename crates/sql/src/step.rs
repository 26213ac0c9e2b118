//! SQL as a scenario protocol: `sql:` steps on `postgres://`, `mysql://`, `mariadb://` and
//! `sqlite://` targets.
//!
//! ```yaml
//! sql:
//!   query: SELECT balance FROM accounts WHERE id = $1
//!   params: ["{{ a }}"]          # templates; a rendered whole number is bound as one
//! extract:
//!   before: { jsonpath: $.rows[0].balance }   # a column of the first row (or `metadata: balance`)
//! checks:
//!   - jsonpath: $.row_count
//!     equals: 1
//!   - status: "23505"            # a SQLSTATE: the step passes when the database says exactly this
//! ```
//!
//! The reply is `{"rows": [{column: value}], "row_count": N, "affected": N}` as JSON, and the
//! first row's columns as metadata (text). Steps run in autocommit unless a `sql: BEGIN` step
//! opens a transaction on the user's connection (ended by a `COMMIT` or `ROLLBACK` step); one
//! left open by a failed iteration is rolled back before the next.

use std::sync::Arc;
use std::time::Duration;

use throng_core::step::{
    Client, ClientOptions, Node, NodeValue, Place, Protocol, Render, Reply, StepError,
    TemplateCompiler, Text,
};
use throng_core::{ErrorClass, Outcome, Status};

use crate::classify::{failure, lost};
use crate::conn::{Conn, Target};
use crate::param::Value;

/// The SQLSTATE of success.
pub(crate) const OK: Status = Status::Sql(*b"00000");

/// The SQL protocol of scenarios.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqlProtocol;

/// A parameter of a step.
#[derive(Debug, Clone)]
enum Param {
    Fixed(Value),
    Text(Text),
}

/// A compiled `sql:` step.
#[derive(Debug)]
pub struct SqlStep {
    /// Where its statement is written.
    at: Place,
    query: Arc<str>,
    params: Vec<Param>,
    /// Transaction control (sent unprepared): `Some(true)` opens one, `Some(false)` ends it.
    control: Option<bool>,
}

/// Whether a statement opens (`Some(true)`) or ends (`Some(false)`) a transaction.
fn control(query: &str) -> Option<bool> {
    if !crate::config::is_control(query) {
        return None;
    }
    let first = query.trim_start().get(..5).unwrap_or_default();
    Some(first.eq_ignore_ascii_case("BEGIN") || first.eq_ignore_ascii_case("START"))
}

impl Protocol for SqlProtocol {
    type Client = SqlClient;

    fn name(&self) -> &'static str {
        "sql"
    }

    fn schemes(&self) -> &'static [&'static str] {
        crate::url::SCHEMES
    }

    fn key(&self) -> &'static str {
        "sql"
    }

    fn step_help(&self) -> &'static str {
        "a statement, or query and params"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::url::check(url).map(drop)
    }

    fn compile(&self, request: &Node, t: &mut dyn TemplateCompiler) -> Result<SqlStep, StepError> {
        if let NodeValue::String(q) = &request.value {
            return Ok(SqlStep {
                at: request.at,
                query: Arc::from(q.as_str()),
                params: Vec::new(),
                control: control(q),
            });
        }
        let f = request.fields("sql", &["query", "params"])?;
        let q = f.require("query", "a sql step")?;
        let query = q.text("query")?;
        if query.contains("{{") || query.contains("{%") {
            return Err(StepError::at(
                q.at,
                "a query is prepared once per connection, so it holds no template: \
                 put the values in `params` ($1 or ?)",
            ));
        }
        let mut params = Vec::new();
        if let Some(p) = f.get("params") {
            let NodeValue::List(items) = &p.value else {
                return Err(StepError::at(
                    p.at,
                    format!("params: expected a list, found {}", p.kind()),
                ));
            };
            for item in items {
                params.push(match &item.value {
                    NodeValue::Null => Param::Fixed(Value::Null),
                    NodeValue::Bool(b) => Param::Fixed(Value::Bool(*b)),
                    NodeValue::Number(n) => Param::Fixed(match n.as_i64() {
                        Some(i) => Value::Int(i),
                        None => Value::Float(n.as_f64().unwrap_or_default()),
                    }),
                    NodeValue::String(s) => match t.text(s, item.at)? {
                        Text::Static(s) => Param::Fixed(Value::Text(s)),
                        tpl => Param::Text(tpl),
                    },
                    _ => {
                        return Err(StepError::at(
                            item.at,
                            format!("a parameter is a scalar, not {}", item.kind()),
                        ))
                    }
                });
            }
        }
        Ok(SqlStep {
            at: q.at,
            control: control(&query),
            query: Arc::from(query.as_str()),
            params,
        })
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        let text = match &expected.value {
            NodeValue::String(s) => s.trim().to_string(),
            // YAML reads 23505 as a number; a SQLSTATE of five digits is still one.
            NodeValue::Number(n) => format!("{n:0>5}"),
            _ => String::new(),
        };
        Status::sqlstate(&text.to_uppercase()).ok_or_else(|| {
            StepError::at(
                expected.at,
                format!(
                    "a SQL status is a SQLSTATE of five letters or digits (\"00000\", \
                     \"23505\", \"40001\"), not {text:?}"
                ),
            )
        })
    }

    fn is_status_failure(&self, class: ErrorClass) -> bool {
        class == ErrorClass::Sql
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<SqlClient, String> {
        // TLS as the URL says (`?sslmode=verify-full&sslrootcert=FILE`): a scenario's -k and
        // --cacert are its HTTPS targets', and must not force TLS on a database.
        Ok(SqlClient {
            target: Target::new(url, options.connect_timeout, 100)?,
            timeout: options.timeout,
        })
    }
}

/// One database target of a scenario.
pub struct SqlClient {
    target: Target,
    timeout: Duration,
}

/// A user's connection to one database target, and whether a step left a transaction open.
#[derive(Default)]
pub struct SqlSession {
    conn: Option<Conn>,
    in_tx: bool,
}

/// A rendered parameter: a whole number is bound as one, anything else as text.
fn value(text: String) -> Value {
    match text.parse::<i64>() {
        Ok(n) => Value::Int(n),
        Err(_) => Value::Text(text),
    }
}

impl SqlClient {
    async fn send(
        &self,
        s: &mut SqlSession,
        step: &SqlStep,
        args: &[Value],
        want: bool,
    ) -> (Outcome, Option<Reply>) {
        let c = &mut s.conn;
        if c.is_none() {
            match self.target.connect().await {
                Ok(new) => *c = Some(new),
                Err(o) => return (o, None),
            }
        }
        let Some(open) = c.as_mut() else {
            return (Outcome::failed(ErrorClass::Connect, "no connection"), None);
        };
        let run = async {
            match step.control {
                Some(_) => open
                    .raw(&step.query)
                    .await
                    .map(|()| crate::conn::Done::default()),
                None => open.run(&step.query, args, want).await,
            }
        };
        match tokio::time::timeout(self.timeout, run).await {
            Ok(Ok(done)) => {
                if let Some(opens) = step.control {
                    s.in_tx = opens;
                }
                let reply = want.then(|| {
                    let metadata = match done.data.first() {
                        Some(serde_json::Value::Object(m)) => m
                            .iter()
                            .map(|(k, v)| {
                                let text = match v {
                                    serde_json::Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                };
                                (k.to_lowercase(), text)
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    let json = serde_json::json!({
                        "rows": done.data,
                        "row_count": done.rows,
                        "affected": done.affected,
                    });
                    Reply {
                        status: OK,
                        metadata,
                        body: json.to_string().into(),
                        json: Some(json),
                    }
                });
                let outcome = Outcome {
                    status: OK,
                    ..Outcome::default()
                };
                (outcome, reply)
            }
            Ok(Err(e)) => {
                let mut o = failure(&e);
                o.message = o.message.map(|m| self.target.scrub(&m));
                if lost(&e) {
                    s.conn = None;
                    s.in_tx = false;
                }
                let reply = (want && o.status != Status::None).then(|| Reply {
                    status: o.status,
                    ..Reply::default()
                });
                (o, reply)
            }
            Err(_) => {
                s.conn = None;
                s.in_tx = false;
                (
                    Outcome::failed(
                        ErrorClass::Timeout,
                        format!("the query took longer than {:?}", self.timeout),
                    ),
                    None,
                )
            }
        }
    }
}

impl Client for SqlClient {
    type Step = SqlStep;
    type Worker = ();
    type Session = SqlSession;

    fn worker_of(&self, _index: usize, _workers: usize) {}

    fn session(&self, _worker: &(), _user: u64) -> SqlSession {
        SqlSession::default()
    }

    async fn connect(&self, s: &mut SqlSession) -> Result<(), Outcome> {
        if s.conn.is_none() {
            s.conn = Some(self.target.connect().await?);
            s.in_tx = false;
        }
        Ok(())
    }

    async fn call(
        &self,
        s: &mut SqlSession,
        step: &SqlStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let mut args = Vec::with_capacity(step.params.len());
        for p in &step.params {
            args.push(match p {
                Param::Fixed(v) => v.clone(),
                Param::Text(t) => match render.render(t) {
                    Ok(text) => value(text),
                    Err(e) => {
                        return (
                            Outcome::failed(ErrorClass::Check, format!("template: {e}")),
                            None,
                        )
                    }
                },
            });
        }
        let (mut o, reply) = self.send(s, step, &args, want_reply).await;
        if let Some(c) = s.conn.as_mut() {
            (o.bytes_sent, o.bytes_received) = c.traffic();
        }
        (o, reply)
    }

    /// Each statement prepared once on a connection of its own: a syntax error, or a number of
    /// params its placeholders do not take, is the step's error before any load. A table that
    /// does not exist yet is not (an earlier step of the flow may create it), nor is a database
    /// that cannot be reached (its steps say so when they run).
    async fn prepare(&self, steps: &[&SqlStep]) -> Result<(), StepError> {
        let statements: Vec<&&SqlStep> = steps.iter().filter(|s| s.control.is_none()).collect();
        if statements.is_empty() {
            return Ok(());
        }
        let Ok(mut conn) = self.target.connect().await else {
            return Ok(());
        };
        let mut found = Ok(());
        for s in statements {
            match tokio::time::timeout(self.timeout, conn.parameters(&s.query)).await {
                Ok(Ok(n)) if n != s.params.len() => {
                    found = Err(StepError::at(
                        s.at,
                        format!(
                            "`{}` takes {n} parameter(s), and the step gives {}",
                            s.query,
                            s.params.len()
                        ),
                    ));
                }
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => {
                    let o = failure(&e);
                    // 42601: PostgreSQL's (and SQLite's, as classified) syntax error; 42000:
                    // MySQL's (ER_PARSE_ERROR among others no later step can mend).
                    if matches!(o.status, Status::Sql(c) if &c == b"42601" || &c == b"42000") {
                        let why = self.target.scrub(&o.message.unwrap_or_default());
                        found = Err(StepError::at(s.at, format!("`{}`: {why}", s.query)));
                    } else {
                        continue;
                    }
                }
                // A database too slow to prepare is the load's business.
                Err(_) => {}
            }
            break;
        }
        conn.close().await;
        found
    }

    /// A transaction a step opened and no step ended (the iteration failed, or the flow left
    /// it open) is rolled back, so the next iteration starts clean.
    async fn end_iteration(&self, s: &mut SqlSession, _failed: Option<ErrorClass>) {
        let _ = crate::conn::roll_back(&mut s.conn, &mut s.in_tx, self.timeout).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::step::Place;

    struct Plain;
    impl TemplateCompiler for Plain {
        fn text(&mut self, source: &str, _at: Place) -> Result<Text, StepError> {
            Ok(match source.contains("{{") {
                true => Text::Template(source.into()),
                false => Text::Static(source.into()),
            })
        }
    }

    fn node(v: serde_json::Value) -> Node {
        Node::from_json(&v, Place { line: 4, column: 2 })
    }

    #[test]
    fn compiles_steps_and_statuses_and_refuses_bad_ones_at_their_place() {
        let p = SqlProtocol;
        let ok = p
            .compile(
                &node(serde_json::json!({"query": "SELECT $1, $2", "params": ["{{ a }}", 5]})),
                &mut Plain,
            )
            .unwrap();
        let step = ok;
        assert!(matches!(step.params[0], Param::Text(_)));
        assert!(matches!(step.params[1], Param::Fixed(Value::Int(5))));
        for (bad, says) in [
            (serde_json::json!({"params": []}), "needs `query`"),
            (
                serde_json::json!({"query": "x", "parms": []}),
                "unknown field `parms`",
            ),
            (
                serde_json::json!({"query": "x", "params": 3}),
                "expected a list",
            ),
            (
                serde_json::json!({"query": "SELECT {{ a }}"}),
                "holds no template",
            ),
        ] {
            let e = p.compile(&node(bad), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
            assert_eq!(e.at.line, 4);
        }
        assert_eq!(
            p.status(&node(serde_json::json!("40001"))).unwrap(),
            Status::Sql(*b"40001")
        );
        assert_eq!(
            p.status(&node(serde_json::json!(23505))).unwrap(),
            Status::Sql(*b"23505")
        );
        assert!(p.status(&node(serde_json::json!("4001"))).is_err());
        assert_eq!(value("12".into()), Value::Int(12));
        assert_eq!(value("a12".into()), Value::Text("a12".into()));
    }
}
