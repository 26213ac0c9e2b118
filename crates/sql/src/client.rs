//! The SQL client: core's [`Client`] for one database target, written once for scenario steps
//! and for `throng run URL` (whose plan, [`crate::SqlDriver`], is its steps on this client).
//!
//! A session owns one connection, opened before its first step and reopened (counted) when a
//! step lost it. A step may open a transaction (`BEGIN` riding with its first statement, or a
//! `BEGIN` statement of its own) and another may commit it; one left open when an iteration
//! ends is rolled back here, once, for both kinds of run, and counted. With
//! [`Retry`] a transaction that meets a deadlock or a serialization failure is rolled back
//! and run again from its first step ([`Outcome::again`]), counted apart.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use throng_core::step::{Client, Render, Reply, StepError};
use throng_core::{ErrorClass, Outcome, Status};
use tokio::task::coop;
use tokio::time::Sleep;

use crate::classify::{failure, lost};
use crate::conn::{Conn, Done, Target};
use crate::error::DbError;
use crate::oltp::OltpOptions;
use crate::param::{Context, Seq, Value};
use crate::step::{Param, SqlStep, Work};

/// The SQLSTATE of success.
pub(crate) const OK: Status = crate::status::state(*b"00000");

/// Which failures of a statement in a transaction roll it back and run it again, as sysbench's
/// `--mysql-ignore-errors`/`--pgsql-ignore-errors` defaults do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retry {
    /// Deadlocks: PostgreSQL's 40P01, MySQL's 1213 (SQLSTATE 40001 with that code).
    pub deadlock: bool,
    /// Serialization failures: SQLSTATE 40001.
    pub serialization: bool,
}

impl Retry {
    /// The names [`Retry::parse`] takes.
    pub const NAMES: [&'static str; 2] = ["deadlock", "serialization"];

    /// Reads a comma-separated list of [`Retry::NAMES`].
    pub fn parse(list: &str) -> Result<Retry, String> {
        let mut r = Retry::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "deadlock" => r.deadlock = true,
                "serialization" => r.serialization = true,
                other => {
                    return Err(format!(
                        "{other:?} is not a failure to retry; one of {}",
                        Retry::NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(r)
    }

    /// Whether a failure with this status is retried. MySQL's deadlock (1213) carries SQLSTATE
    /// 40001 like a serialization failure, so either name retries 40001 on MySQL; PostgreSQL
    /// tells them apart (40P01, 40001).
    fn covers(self, status: Status) -> bool {
        match status {
            s if s == crate::status::state(*b"40P01") => self.deadlock,
            s if s == crate::status::state(*b"40001") => self.deadlock || self.serialization,
            _ => false,
        }
    }
}

/// What a client counts across its sessions.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Connections reopened after one was lost.
    reconnects: AtomicU64,
    /// Transactions rolled back after an iteration that failed in them.
    rolled_back: AtomicU64,
    /// Transactions still open when their sessions ended.
    open_at_end: AtomicU64,
    /// Transactions rolled back by a retried failure and run again.
    retried: AtomicU64,
}

/// One database target: its connections' options, the statements' timeout, and what the run
/// counts of its sessions.
#[derive(Debug)]
pub struct SqlClient {
    target: Target,
    timeout: Duration,
    seq: Seq,
    oltp: OltpOptions,
    retry: Retry,
    counters: Arc<Counters>,
    /// How the connections go, as the check before the load found (see
    /// [`SqlClient::connected_by`]).
    path: std::sync::OnceLock<String>,
}

/// A user's connection to one database target, its transaction and its random numbers.
pub struct SqlSession {
    conn: Option<Conn>,
    in_tx: bool,
    /// Whether a connection was open once: opening another is a reconnect.
    opened: bool,
    rng: SmallRng,
    user: u64,
    args: Vec<Value>,
    /// A delete's table and id, for the insert after it (sysbench's write workloads).
    pair: (u32, i64),
    /// The step timeout's timer, made at the session's first step and moved on at each
    /// later one (see [`Deadline`]).
    deadline: Deadline,
    counters: Arc<Counters>,
}

impl Drop for SqlSession {
    fn drop(&mut self) {
        if self.in_tx && self.conn.is_some() {
            self.counters.open_at_end.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A rendered parameter: a whole number is bound as one, anything else as text.
pub(crate) fn value(text: String) -> Value {
    match text.parse::<i64>() {
        Ok(n) => Value::Int(n),
        Err(_) => Value::Text(text),
    }
}

impl SqlClient {
    /// A client of `target` whose steps must each finish within `timeout`.
    pub fn new(target: Target, timeout: Duration) -> SqlClient {
        SqlClient {
            target,
            timeout,
            seq: Seq::new(0, 1),
            oltp: OltpOptions::default(),
            retry: Retry::default(),
            counters: Arc::default(),
            path: std::sync::OnceLock::new(),
        }
    }

    /// Says how the connections go (`postgres-protocol, TLSv1.3, SCRAM-SHA-256-PLUS`), as a
    /// connection made before the load found: the result's connection line.
    pub fn connected_by(&self, path: String) {
        let _ = self.path.set(path);
    }

    /// How the connections go, once [`SqlClient::connected_by`] said it.
    pub fn path(&self) -> Option<&str> {
        self.path.get().map(String::as_str)
    }

    /// The database URL with its password hidden (what a result names as its target).
    pub fn shown(&self) -> &str {
        self.target.shown()
    }

    /// `seq()` parameters count as shard `index` of `count` (see [`Seq::new`]).
    pub fn with_shard(mut self, shard: throng_core::Shard) -> SqlClient {
        self.seq = Seq::new(shard.index, shard.count);
        self
    }

    /// The tables sysbench's workload steps draw their ids from.
    pub fn with_oltp(mut self, oltp: OltpOptions) -> SqlClient {
        self.oltp = oltp;
        self
    }

    /// Failures that roll a transaction back and run it again.
    pub fn with_retry(mut self, retry: Retry) -> SqlClient {
        self.retry = retry;
        self
    }

    /// The database.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The tables of sysbench's workload steps.
    pub fn oltp(&self) -> &OltpOptions {
        &self.oltp
    }

    /// Each step's timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Connections reopened during the run after one was lost.
    pub fn reconnects(&self) -> u64 {
        self.counters.reconnects.load(Ordering::Relaxed)
    }

    /// Transactions rolled back after an iteration failed in them (as sysbench's rolled-back
    /// events; a deadlock's or a serialization failure's among them, unless retried).
    pub fn rolled_back(&self) -> u64 {
        self.counters.rolled_back.load(Ordering::Relaxed)
    }

    /// Transactions still open when the run ended: their sessions were dropped, and the
    /// database rolled them back as their connections closed.
    pub fn open_at_end(&self) -> u64 {
        self.counters.open_at_end.load(Ordering::Relaxed)
    }

    /// Transactions rolled back by a deadlock or a serialization failure ([`Retry`]) and run
    /// again (sysbench's "ignored errors"); each failure is also its statement's error.
    pub fn retried(&self) -> u64 {
        self.counters.retried.load(Ordering::Relaxed)
    }

    /// Opens the session's connection if it has none (a lost one is counted as reopened).
    async fn reopen(&self, s: &mut SqlSession) -> Result<(), Outcome> {
        if s.conn.is_none() {
            s.conn = Some(self.target.connect().await?);
            s.in_tx = false;
            if std::mem::replace(&mut s.opened, true) {
                self.counters.reconnects.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// The step's parameters into `s.args`; a template that does not render fails the step
    /// (the error is the failure's message).
    fn bind(
        &self,
        s: &mut SqlSession,
        params: &[Param],
        render: &dyn Render,
    ) -> Result<(), String> {
        s.args.clear();
        let mut cx = Context {
            rng: &mut s.rng,
            seq: &self.seq,
            user: s.user,
        };
        for p in params {
            s.args.push(match p {
                Param::Expr(e) => e.eval(&mut cx),
                Param::Text(t) => match render.render(t) {
                    Ok(text) => value(text),
                    Err(e) => return Err(format!("template: {e}")),
                },
            });
        }
        Ok(())
    }

    /// Runs a step's statements on the open connection: its operations and what the last did.
    async fn run(
        s: &mut SqlSession,
        step: &SqlStep,
        oltp: &OltpOptions,
        keep: bool,
    ) -> Result<(u32, Done), DbError> {
        let SqlSession {
            conn,
            in_tx,
            rng,
            args,
            pair,
            ..
        } = s;
        let Some(conn) = conn.as_mut() else {
            return Ok((0, Done::default()));
        };
        let mut ops = 0;
        if step.begin && !*in_tx {
            conn.raw("BEGIN").await?;
            *in_tx = true;
            ops += 1;
        }
        let mut done = Done::default();
        match &step.work {
            Work::Statement { sql, .. } => {
                ops += 1;
                done = conn.run(sql, args, keep).await?;
            }
            Work::Control { sql, opens } => {
                ops += 1;
                conn.raw(sql).await?;
                *in_tx = *opens;
            }
            Work::Oltp {
                kind,
                repeat,
                tables,
            } => {
                use rand::Rng as _;
                let t = match kind {
                    crate::oltp::Kind::Inserts => pair.0,
                    _ if tables.len() == 1 => 0,
                    _ => rng.random_range(0..tables.len() as u32),
                };
                pair.0 = t;
                let sql = &tables[t as usize % tables.len()];
                for _ in 0..*repeat {
                    kind.args(rng, oltp, pair, args);
                    ops += 1;
                    conn.run(sql, args, false).await?;
                }
            }
        }
        if step.commit && *in_tx {
            ops += 1;
            conn.raw("COMMIT").await?;
            *in_tx = false;
        }
        Ok((ops, done))
    }

    /// Runs a step within the timeout: its outcome (without bytes) and, if wanted, its reply.
    async fn send(
        &self,
        s: &mut SqlSession,
        step: &SqlStep,
        want: bool,
    ) -> (Outcome, Option<Reply>) {
        let mut timer = s.deadline.start(self.timeout);
        let result = within(&mut timer, Self::run(s, step, &self.oltp, want)).await;
        s.deadline.0 = Some(timer);
        match result {
            Ok(Ok((ops, done))) => {
                let outcome = Outcome {
                    status: OK,
                    operations: ops,
                    ..Outcome::default()
                };
                (outcome, want.then(|| reply(done)))
            }
            Ok(Err(e)) => {
                let mut o = failure(&e);
                o.message = o.message.map(|m| self.target.scrub(&m));
                if lost(&e) {
                    s.conn = None;
                    s.in_tx = false;
                } else if s.in_tx && step.retry.unwrap_or(self.retry).covers(o.status) {
                    // The transaction is gone on the server; the next step is its first again.
                    if crate::conn::roll_back(&mut s.conn, &mut s.in_tx, self.timeout).await {
                        self.counters.retried.fetch_add(1, Ordering::Relaxed);
                        o.proceed = true;
                        o.again = true;
                    }
                }
                let reply = (want && o.status != Status::NONE).then(|| Reply {
                    status: o.status,
                    ..Reply::default()
                });
                (o, reply)
            }
            Err(_) => {
                // The statement may still run on the server: this connection is done.
                s.conn = None;
                s.in_tx = false;
                let what = match &step.work {
                    Work::Oltp { kind, .. } => format!("`{}`", kind.label()),
                    Work::Statement { sql, .. } => format!("`{}`", crate::label_of(sql)),
                    Work::Control { sql, .. } => format!("`{sql}`"),
                };
                let o = Outcome::failed(
                    ErrorClass::Timeout,
                    format!("{what} took longer than {:?}", self.timeout),
                );
                (o, None)
            }
        }
    }

    /// Prepares `sql` on `conn` within the timeout: how many parameters it takes; `Ok(Err)` is
    /// the database's refusal, `Err(None)` no answer in time.
    pub(crate) async fn parameters(
        &self,
        conn: &mut Conn,
        sql: &str,
    ) -> Result<usize, Option<DbError>> {
        match tokio::time::timeout(self.timeout, conn.parameters(sql)).await {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(Some(e)),
            Err(_) => Err(None),
        }
    }
}

/// A session's step timeout: one timer, reset at each step. `tokio::time::timeout` made a
/// timer per step, put it into the runtime's timer wheel (under its lock) and took it out again
/// (under its lock) when the step was done; a timer moved to a later deadline is an atomic
/// store, and the wheel moves it when its earlier deadline comes.
#[derive(Default)]
struct Deadline(Option<Pin<Box<Sleep>>>);

impl Deadline {
    /// The timer, set to `timeout` from now; the session holds none until it is put back (a
    /// step cut off by the end of the run drops it, and the next one makes another).
    fn start(&mut self, timeout: Duration) -> Pin<Box<Sleep>> {
        let at = tokio::time::Instant::now() + timeout;
        match self.0.take() {
            Some(mut t) => {
                t.as_mut().reset(at);
                t
            }
            None => Box::pin(tokio::time::sleep_until(at)),
        }
    }
}

/// `f`, unless `timer` ends first (`Err(())`), as `tokio::time::timeout` does: a future that
/// used up the task's budget does not keep the timer from being read.
async fn within<F: Future>(timer: &mut Pin<Box<Sleep>>, f: F) -> Result<F::Output, ()> {
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(|cx| {
        let had_budget = coop::has_budget_remaining();
        if let Poll::Ready(v) = f.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let elapsed = if had_budget && !coop::has_budget_remaining() {
            std::pin::pin!(coop::unconstrained(timer.as_mut())).poll(cx)
        } else {
            timer.as_mut().poll(cx)
        };
        elapsed.map(Err)
    })
    .await
}

/// A statement's reply as checks and extraction read it: `{"rows": [...], "row_count": N,
/// "affected": N}`, and the first row's columns as metadata.
fn reply(done: Done) -> Reply {
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
}

impl Client for SqlClient {
    type Step = SqlStep;
    type Worker = ();
    type Session = SqlSession;

    fn report(&self) -> throng_core::DriverReport {
        let counts = [
            ("transactions_rolled_back", self.rolled_back()),
            ("transactions_open_at_end", self.open_at_end()),
            ("transactions_retried", self.retried()),
            ("reconnects", self.reconnects()),
        ];
        let notes = [
            (
                "connections lost and reopened during the run",
                self.reconnects(),
            ),
            (
                "transactions rolled back after a failed statement",
                self.rolled_back(),
            ),
            (
                "transactions retried after a deadlock or serialization failure",
                self.retried(),
            ),
            (
                "transactions open when the run ended (rolled back by the database)",
                self.open_at_end(),
            ),
        ];
        throng_core::DriverReport {
            connection: self.path.get().cloned(),
            counts: counts.to_vec(),
            notes: notes
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(what, n)| format!("{what}: {n}"))
                .collect(),
        }
    }

    fn worker_of(&self, _index: usize, _workers: usize) {}

    fn session(&self, _worker: &(), user: u64) -> SqlSession {
        SqlSession {
            conn: None,
            in_tx: false,
            opened: false,
            rng: SmallRng::from_rng(&mut rand::rng()),
            user,
            args: Vec::with_capacity(8),
            pair: (0, 0),
            deadline: Deadline::default(),
            counters: self.counters.clone(),
        }
    }

    async fn connect(&self, s: &mut SqlSession) -> Result<(), Outcome> {
        self.reopen(s).await
    }

    async fn call(
        &self,
        s: &mut SqlSession,
        step: &SqlStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        if let Work::Statement { params, .. } = &step.work {
            if let Err(message) = self.bind(s, params, render) {
                return (Outcome::failed(ErrorClass::Check, message), None);
            }
        }
        // A connection lost by an earlier statement is reopened here, in this request's time.
        if let Err(o) = self.reopen(s).await {
            return (o, None);
        }
        let (mut o, reply) = self.send(s, step, want_reply).await;
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
        let statements: Vec<(&SqlStep, &str, usize)> = steps
            .iter()
            .filter_map(|s| match &s.work {
                Work::Statement { sql, params } => Some((*s, &**sql, params.len())),
                _ => None,
            })
            .collect();
        if statements.is_empty() {
            return Ok(());
        }
        let Ok(mut conn) = self.target.connect().await else {
            return Ok(());
        };
        let mut found = Ok(());
        for (s, sql, given) in statements {
            match self.parameters(&mut conn, sql).await {
                Ok(n) if n != given => {
                    found = Err(StepError::at(
                        s.at,
                        format!("`{sql}` takes {n} parameter(s), and the step gives {given}"),
                    ));
                }
                Ok(_) => continue,
                Err(Some(e)) => {
                    let o = failure(&e);
                    // 42601: PostgreSQL's (and SQLite's, as classified) syntax error; 42000:
                    // MySQL's (ER_PARSE_ERROR among others no later step can mend).
                    if o.status == crate::status::state(*b"42601")
                        || o.status == crate::status::state(*b"42000")
                    {
                        let why = self.target.scrub(&o.message.unwrap_or_default());
                        found = Err(StepError::at(s.at, format!("`{sql}`: {why}")));
                    } else {
                        continue;
                    }
                }
                // A database too slow to prepare is the load's business.
                Err(None) => {}
            }
            break;
        }
        conn.close().await;
        found
    }

    /// A transaction a step opened and no step ended (the iteration failed, or the flow left
    /// it open) is rolled back, so the next iteration starts clean, and counted.
    async fn end_iteration(&self, s: &mut SqlSession, _failed: Option<ErrorClass>) {
        if crate::conn::roll_back(&mut s.conn, &mut s.in_tx, self.timeout).await {
            self.counters.rolled_back.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_names_parse_and_cover_their_sqlstates() {
        let both = Retry::parse("deadlock, serialization").unwrap();
        assert!(both.deadlock && both.serialization);
        let d = Retry::parse("deadlock").unwrap();
        assert!(
            d.covers(crate::status::state(*b"40P01")) && d.covers(crate::status::state(*b"40001"))
        );
        let s = Retry::parse("serialization").unwrap();
        assert!(
            !s.covers(crate::status::state(*b"40P01")) && s.covers(crate::status::state(*b"40001"))
        );
        assert!(!both.covers(crate::status::state(*b"23505")));
        assert!(Retry::parse("deadlocks")
            .unwrap_err()
            .contains("deadlock, serialization"));
        assert_eq!(value("12".into()), Value::Int(12));
        assert_eq!(value("a12".into()), Value::Text("a12".into()));
    }
}
