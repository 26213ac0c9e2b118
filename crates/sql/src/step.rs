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
//! left open by a failed iteration is rolled back before the next. A step's `retry_on:
//! [deadlock, serialization]` is `--retry-on` for its statement: when it fails so inside a
//! transaction, the transaction is rolled back, counted as retried, and the scenario runs again
//! from the first step of the step's group (or of its flow), through
//! [`throng_core::Outcome::again`].

use std::sync::Arc;

use throng_core::step::{
    ClientOptions, Node, NodeValue, Place, Protocol, StepError, TemplateCompiler, Text,
};
use throng_core::Status;

use crate::client::SqlClient;
use crate::conn::Target;
use crate::oltp::Kind;
use crate::param::{Expr, Value};

/// The SQL protocol of scenarios.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqlProtocol;

/// A parameter of a step.
#[derive(Debug, Clone)]
pub(crate) enum Param {
    /// A value, or an expression drawn per execution (`rand_int(1, 10)`, `seq()`).
    Expr(Expr),
    /// A template of the scenario's, rendered per execution.
    Text(Text),
}

/// What a step sends.
#[derive(Debug, Clone)]
pub(crate) enum Work {
    /// A statement, prepared once per connection, with its parameters.
    Statement { sql: Arc<str>, params: Vec<Param> },
    /// Transaction control, sent unprepared: `opens` for BEGIN, else it ends one.
    Control { sql: String, opens: bool },
    /// `repeat` statements of a sysbench workload, on a table drawn per step.
    Oltp {
        kind: Kind,
        repeat: u32,
        tables: Vec<Arc<str>>,
    },
}

/// A compiled SQL step: a scenario's `sql:` step, or one of a URL run's statements.
#[derive(Debug, Clone)]
pub struct SqlStep {
    /// Where its statement is written.
    pub(crate) at: Place,
    pub(crate) work: Work,
    /// `BEGIN` before it, unless a transaction is open (a URL run's `--transaction`).
    pub(crate) begin: bool,
    /// `COMMIT` after it, if a transaction is open.
    pub(crate) commit: bool,
    /// A scenario step's own `retry_on`, over its client's.
    pub(crate) retry: Option<crate::Retry>,
}

impl SqlStep {
    /// A statement (transaction control is recognised and sent unprepared) with its
    /// parameters.
    pub(crate) fn statement(sql: &str, params: Vec<Param>, at: Place) -> SqlStep {
        let work = match control(sql) {
            Some(opens) => Work::Control {
                sql: sql.to_string(),
                opens,
            },
            None => Work::Statement {
                sql: Arc::from(sql),
                params,
            },
        };
        SqlStep {
            at,
            work,
            begin: false,
            commit: false,
            retry: None,
        }
    }
}

/// A step's `retry_on`: the failures that roll its transaction back and run it again, as
/// `--retry-on` takes them (`deadlock, serialization`) or as a list of their names.
fn retry_on(node: &Node) -> Result<crate::Retry, StepError> {
    let list = match &node.value {
        NodeValue::String(s) => s.clone(),
        NodeValue::List(items) => items
            .iter()
            .map(|i| i.text("retry_on"))
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        _ => String::new(),
    };
    match crate::Retry::parse(&list) {
        Ok(r) if r != crate::Retry::default() => Ok(r),
        Ok(_) => Err(StepError::at(
            node.at,
            format!(
                "retry_on: expected failures to retry, one or more of {}",
                crate::Retry::NAMES.join(", ")
            ),
        )),
        Err(e) => Err(StepError::at(node.at, format!("retry_on: {e}"))),
    }
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
            return Ok(SqlStep::statement(q, Vec::new(), request.at));
        }
        let f = request.fields("sql", &["query", "params", "retry_on"])?;
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
                    NodeValue::Null => Param::Expr(Expr::Literal(Value::Null)),
                    NodeValue::Bool(b) => Param::Expr(Expr::Literal(Value::Bool(*b))),
                    NodeValue::Number(n) => Param::Expr(Expr::Literal(match n.as_i64() {
                        Some(i) => Value::Int(i),
                        None => Value::Float(n.as_f64().unwrap_or_default()),
                    })),
                    NodeValue::String(s) => match t.text(s, item.at)? {
                        Text::Static(s) => Param::Expr(Expr::Literal(Value::Text(s))),
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
        let mut step = SqlStep::statement(&query, params, q.at);
        step.retry = f.get("retry_on").map(retry_on).transpose()?;
        Ok(step)
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        let text = match &expected.value {
            NodeValue::String(s) => s.trim().to_string(),
            // YAML reads 23505 as a number; a SQLSTATE of five digits is still one.
            NodeValue::Number(n) => format!("{n:0>5}"),
            _ => String::new(),
        };
        crate::status::sqlstate(&text.to_uppercase()).ok_or_else(|| {
            StepError::at(
                expected.at,
                format!(
                    "a SQL status is a SQLSTATE of five letters or digits (\"00000\", \
                     \"23505\", \"40001\"), not {text:?}"
                ),
            )
        })
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<SqlClient, String> {
        // TLS as the URL says (`?sslmode=verify-full&sslrootcert=FILE`): a scenario's -k and
        // --cacert are its HTTPS targets', and must not force TLS on a database.
        Ok(SqlClient::new(
            Target::new(url, options.connect_timeout, 100)?,
            options.timeout,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::step::Place;

    use throng_core::step::Uncompiled as Plain;

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
        let Work::Statement { params, .. } = &ok.work else {
            panic!("{ok:?}")
        };
        assert!(matches!(params[0], Param::Text(_)));
        assert!(matches!(
            params[1],
            Param::Expr(Expr::Literal(Value::Int(5)))
        ));
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
            (
                serde_json::json!({"query": "x", "retry_on": "deadlocks"}),
                "retry_on: \"deadlocks\" is not a failure to retry",
            ),
            (
                serde_json::json!({"query": "x", "retry_on": []}),
                "one or more of deadlock, serialization",
            ),
        ] {
            let e = p.compile(&node(bad), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
            assert_eq!(e.at.line, 4);
        }
        assert_eq!(
            p.status(&node(serde_json::json!("40001"))).unwrap(),
            crate::status::state(*b"40001")
        );
        assert_eq!(
            p.status(&node(serde_json::json!(23505))).unwrap(),
            crate::status::state(*b"23505")
        );
        assert!(p.status(&node(serde_json::json!("4001"))).is_err());
        for (retry_on, serialization) in [
            (serde_json::json!("deadlock"), false),
            (serde_json::json!(["deadlock", "serialization"]), true),
        ] {
            let step = p
                .compile(
                    &node(serde_json::json!({"query": "UPDATE t SET v = 1", "retry_on": retry_on})),
                    &mut Plain,
                )
                .unwrap();
            let retry = step.retry.expect("retry_on");
            assert!(retry.deadlock);
            assert_eq!(retry.serialization, serialization);
        }
    }
}
