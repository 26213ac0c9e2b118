//! The driver: one connection per session, statements prepared once per connection (sqlx's
//! per-connection statement cache) and run with fresh parameters each time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use throng_core::{Driver, ErrorClass, GroupInfo, Outcome, SetupError, StepInfo};

use crate::classify::{failure, lost};
use crate::config::{is_control, label_of, unique, SqlConfig};
use crate::conn::{Conn, Target};
use crate::oltp::{statements, Kind, OltpOptions};
use crate::param::{Context, Expr, Seq, Value};

/// Why a SQL load cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// Bad input found without a database (no statement, a bad parameter, a bad URL).
    #[error("{0}")]
    Usage(String),
    /// The database could not be reached, refused us, or did not answer in time (its message;
    /// password hidden).
    #[error("{0}")]
    Connect(String),
    /// A statement the database would not prepare.
    #[error("statement `{label}` does not prepare: {message}")]
    Statement {
        /// The statement's label.
        label: String,
        /// The database's message.
        message: String,
    },
    /// The parameters given do not match the placeholders.
    #[error(
        "statement `{label}` has {placeholders} placeholder(s) but {given} --param value(s) are \
         left for it (parameters are taken in order, statement by statement)"
    )]
    Params {
        /// The statement's label.
        label: String,
        /// Placeholders the database counted.
        placeholders: usize,
        /// Parameters left for it.
        given: usize,
    },
}

impl SqlError {
    /// Whether the input is at fault (exit 2) rather than the database (exit 1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, SqlError::Connect(_))
    }
}

/// What one step sends.
#[derive(Debug)]
enum Work {
    /// A statement of the user's, with its parameters (handed out by [`SqlDriver::check`]).
    Statement {
        sql: Arc<str>,
        params: OnceLock<Vec<Expr>>,
    },
    /// Transaction control written by the user, sent unprepared.
    Control(String),
    /// `repeat` statements of a workload, on a table drawn per step.
    Oltp {
        kind: Kind,
        repeat: u32,
        tables: Vec<Arc<str>>,
    },
}

#[derive(Debug)]
struct Step {
    label: String,
    begin: bool,
    commit: bool,
    work: Work,
}

/// A SQL load's driver. Build it with [`SqlDriver::new`], then [`SqlDriver::check`] before the
/// load (the engine's `setup` does it too, when a caller did not).
#[derive(Debug)]
pub struct SqlDriver {
    target: Target,
    steps: Vec<Step>,
    group: Option<String>,
    params: Vec<Expr>,
    oltp: OltpOptions,
    timeout: std::time::Duration,
    seq: Seq,
    reconnects: AtomicU64,
    /// Transactions rolled back after an iteration that failed in them.
    rolled_back: AtomicU64,
    /// Transactions still open when the run ended (their sessions dropped: the database
    /// rolls them back as the connections close).
    open_at_end: Arc<AtomicU64>,
    checked: AtomicBool,
    /// How the check's connection went ([`Conn::path`]).
    path: OnceLock<String>,
}

/// A virtual user's connection and state.
pub struct Session {
    conn: Option<Conn>,
    in_tx: bool,
    rng: SmallRng,
    user: u64,
    args: Vec<Value>,
    pair: (u32, i64),
    /// Whether a connection was open once: opening another is a reconnect.
    opened: bool,
    /// Where a transaction left open when the session ends is counted.
    open_at_end: Arc<AtomicU64>,
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.in_tx && self.conn.is_some() {
            self.open_at_end.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl SqlDriver {
    /// Checks what can be checked without a database and builds the steps.
    pub fn new(cfg: SqlConfig) -> Result<SqlDriver, SqlError> {
        let mut statements_n = cfg.statements.len();
        if let Some(w) = cfg.workload {
            statements_n = w.steps().len() * cfg.oltp.tables.max(1) as usize;
        }
        let target = Target::new(&cfg.url, cfg.connect_timeout, statements_n.max(100) + 16)
            .and_then(|t| t.with_tls(&cfg.tls))
            .map_err(SqlError::Usage)?;
        let params = cfg
            .params
            .iter()
            .map(|p| Expr::parse(p).map_err(|e| SqlError::Usage(format!("--param {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let (mut steps, transaction, default_group) = match cfg.workload {
            Some(w) => {
                if !cfg.statements.is_empty() || !params.is_empty() {
                    return Err(SqlError::Usage(
                        "--workload runs sysbench's statements: give it without --sql, \
                         --sql-file or --param"
                            .into(),
                    ));
                }
                if cfg.oltp.tables == 0 || cfg.oltp.table_size == 0 {
                    return Err(SqlError::Usage(
                        "--tables and --table-size must be at least 1".into(),
                    ));
                }
                let steps = w
                    .steps()
                    .into_iter()
                    .map(|(kind, repeat)| Step {
                        label: kind.label().to_string(),
                        begin: false,
                        commit: false,
                        work: Work::Oltp {
                            kind,
                            repeat,
                            tables: statements(kind, target.dialect(), cfg.oltp.tables),
                        },
                    })
                    .collect::<Vec<_>>();
                (steps, w.transaction(), w.name().to_string())
            }
            None => {
                if cfg.statements.is_empty() {
                    return Err(SqlError::Usage(
                        "a database URL needs statements: --sql 'SELECT ...' (repeatable), \
                         --sql-file FILE, or --workload oltp_read_only (and the others)"
                            .into(),
                    ));
                }
                if cfg.label.is_some() && !cfg.transaction && cfg.statements.len() > 1 {
                    return Err(SqlError::Usage(
                        "--label names the transaction (--transaction) or a single statement; \
                         with several statements each is labelled by its first words"
                            .into(),
                    ));
                }
                let labels = unique(cfg.statements.iter().map(|s| label_of(s)).collect());
                let steps = cfg
                    .statements
                    .iter()
                    .zip(labels)
                    .map(|(sql, label)| Step {
                        label,
                        begin: false,
                        commit: false,
                        work: match is_control(sql) {
                            true => Work::Control(sql.clone()),
                            false => Work::Statement {
                                sql: Arc::from(sql.as_str()),
                                params: OnceLock::new(),
                            },
                        },
                    })
                    .collect::<Vec<_>>();
                (steps, cfg.transaction, "transaction".to_string())
            }
        };
        let mut group = None;
        if transaction {
            if let Some(first) = steps.first_mut() {
                first.begin = true;
            }
            if let Some(last) = steps.last_mut() {
                last.commit = true;
            }
        }
        let label = cfg.label.clone();
        if steps.len() > 1 && (transaction || cfg.workload.is_some()) {
            group = Some(label.unwrap_or(default_group));
        } else if let (Some(l), Some(only)) = (label, steps.first_mut()) {
            only.label = l;
        } else if let (Some(w), Some(only)) = (cfg.workload, steps.first_mut()) {
            only.label = w.name().to_string();
        }
        Ok(SqlDriver {
            target,
            steps,
            group,
            params,
            oltp: cfg.oltp,
            timeout: cfg.timeout,
            seq: Seq::new(cfg.shard.index, cfg.shard.count),
            reconnects: AtomicU64::new(0),
            rolled_back: AtomicU64::new(0),
            open_at_end: Arc::new(AtomicU64::new(0)),
            checked: AtomicBool::new(false),
            path: OnceLock::new(),
        })
    }

    /// The database URL with its password hidden (what a result names as its target).
    pub fn shown(&self) -> &str {
        self.target.shown()
    }

    /// Row labels: the steps, then the transaction if it has a row of its own.
    pub fn labels(&self) -> Vec<String> {
        let mut l: Vec<String> = self.steps.iter().map(|s| s.label.clone()).collect();
        l.extend(self.group.clone());
        l
    }

    /// Connections reopened during the run after one was lost.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// How the connections go, as the check's went (`postgres-protocol, TLSv1.3,
    /// SCRAM-SHA-256-PLUS`), once [`SqlDriver::check`] connected.
    pub fn path(&self) -> Option<&str> {
        self.path.get().map(String::as_str)
    }

    /// Transactions rolled back after an iteration failed in them (as sysbench's rolled-back
    /// events; a deadlock's or a serialization failure's among them).
    pub fn rolled_back(&self) -> u64 {
        self.rolled_back.load(Ordering::Relaxed)
    }

    /// Transactions still open when the run ended: their sessions were dropped, and the
    /// database rolled them back as their connections closed.
    pub fn open_at_end(&self) -> u64 {
        self.open_at_end.load(Ordering::Relaxed)
    }

    /// Before any load: connects (an unreachable database, bad credentials or a missing
    /// database fail here), prepares every statement (one that does not prepare fails here,
    /// named), and hands the `--param` values to the statements' placeholders.
    pub async fn check(&self) -> Result<(), SqlError> {
        let mut conn = self
            .target
            .connect()
            .await
            .map_err(|o| SqlError::Connect(o.message.unwrap_or_default()))?;
        let _ = self.path.set(conn.path());
        let mut left = self.params.as_slice();
        let result = async {
            for step in &self.steps {
                match &step.work {
                    Work::Control(_) => {}
                    Work::Statement { sql, params } => {
                        let n = self.prepare(&mut conn, &step.label, sql, "").await?;
                        if n > left.len() {
                            return Err(SqlError::Params {
                                label: step.label.clone(),
                                placeholders: n,
                                given: left.len(),
                            });
                        }
                        let (mine, rest) = left.split_at(n);
                        left = rest;
                        // A second check hands out the same values again.
                        let _ = params.set(mine.to_vec());
                    }
                    Work::Oltp { tables, .. } => {
                        let hint = format!(
                            "; are the tables there? throng sql prepare {} --tables {} \
                             --table-size {}",
                            self.target.shown(),
                            self.oltp.tables,
                            self.oltp.table_size
                        );
                        for sql in tables {
                            self.prepare(&mut conn, &step.label, sql, &hint).await?;
                        }
                    }
                }
            }
            if let (Some(step), false) = (self.steps.last(), left.is_empty()) {
                return Err(SqlError::Usage(format!(
                    "{} --param value(s) left over: the statements have fewer placeholders \
                     (the last is `{}`)",
                    left.len(),
                    step.label
                )));
            }
            Ok(())
        }
        .await;
        match &result {
            // A statement still running on the server, or a connection gone: no goodbye.
            Err(SqlError::Connect(_)) => drop(conn),
            _ => conn.close().await,
        }
        result?;
        self.checked.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Prepares `sql` within the request timeout and says how many parameters it takes. The
    /// database's refusal is the input's fault, with `hint` after its message; no answer in
    /// time, or a connection lost, is the database's.
    async fn prepare(
        &self,
        conn: &mut Conn,
        label: &str,
        sql: &str,
        hint: &str,
    ) -> Result<usize, SqlError> {
        let e = match tokio::time::timeout(self.timeout, conn.parameters(sql)).await {
            Ok(Ok(n)) => return Ok(n),
            Ok(Err(e)) => e,
            Err(_) => {
                return Err(SqlError::Connect(format!(
                    "{}: statement `{label}` was not prepared within {:?} (-t/--timeout): the \
                     database did not answer (a lock held on its tables?)",
                    self.target.shown(),
                    self.timeout
                )))
            }
        };
        let message = failure(&e).message.unwrap_or_default();
        Err(match e {
            sqlx::Error::Database(_) => SqlError::Statement {
                label: label.to_string(),
                message: self
                    .target
                    .scrub(&format!("{message} (the statement: {sql}){hint}")),
            },
            _ => SqlError::Connect(self.target.scrub(&format!(
                "{}: while preparing `{label}`: {message}",
                self.target.shown()
            ))),
        })
    }

    /// Opens a connection to the database (for `throng sql prepare` and `cleanup`).
    pub async fn open(&self) -> Result<Conn, SqlError> {
        self.target
            .connect()
            .await
            .map_err(|o| SqlError::Connect(o.message.unwrap_or_default()))
    }

    async fn run_step(&self, s: &mut Session, step: &Step) -> Result<u32, sqlx::Error> {
        let Session {
            conn,
            in_tx,
            rng,
            user,
            args,
            pair,
            ..
        } = s;
        let Some(conn) = conn.as_mut() else {
            return Ok(0);
        };
        let mut ops = 0;
        if step.begin && !*in_tx {
            conn.raw("BEGIN").await?;
            *in_tx = true;
            ops += 1;
        }
        match &step.work {
            Work::Statement { sql, params } => {
                args.clear();
                let mut cx = Context {
                    rng,
                    seq: &self.seq,
                    user: *user,
                };
                for p in params.get().map_or(&[][..], Vec::as_slice) {
                    args.push(p.eval(&mut cx));
                }
                ops += 1;
                conn.run(sql, args, false).await?;
            }
            Work::Control(sql) => {
                ops += 1;
                conn.raw(sql).await?;
            }
            Work::Oltp {
                kind,
                repeat,
                tables,
            } => {
                use rand::Rng as _;
                let t = match kind {
                    Kind::Inserts => pair.0,
                    _ => rng.random_range(0..tables.len() as u32),
                };
                pair.0 = t;
                let sql = &tables[t as usize % tables.len()];
                for _ in 0..*repeat {
                    kind.args(rng, &self.oltp, pair, args);
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
        Ok(ops)
    }

    /// Opens the session's connection if it has none (a lost one is counted as reopened).
    async fn reopen(&self, s: &mut Session) -> Result<(), Outcome> {
        if s.conn.is_none() {
            s.conn = Some(self.target.connect().await?);
            s.in_tx = false;
            if s.opened {
                self.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            s.opened = true;
        }
        Ok(())
    }

    /// Runs a step within the timeout: its outcome, without bytes.
    async fn outcome(&self, s: &mut Session, st: &Step) -> Outcome {
        match tokio::time::timeout(self.timeout, self.run_step(s, st)).await {
            Ok(Ok(ops)) => Outcome {
                status: crate::step::OK,
                operations: ops,
                ..Outcome::default()
            },
            Ok(Err(e)) => {
                let mut o = failure(&e);
                o.message = o.message.map(|m| self.target.scrub(&m));
                if lost(&e) {
                    s.conn = None;
                    s.in_tx = false;
                }
                o
            }
            Err(_) => {
                // The statement may still run on the server: this connection is done.
                s.conn = None;
                s.in_tx = false;
                Outcome::failed(
                    ErrorClass::Timeout,
                    format!("`{}` took longer than {:?}", st.label, self.timeout),
                )
            }
        }
    }
}

impl Driver for SqlDriver {
    type Worker = ();
    type Session = Session;

    fn steps(&self) -> Vec<StepInfo> {
        self.steps
            .iter()
            .map(|s| StepInfo {
                label: s.label.clone(),
            })
            .collect()
    }

    fn groups(&self) -> Vec<GroupInfo> {
        self.group
            .iter()
            .map(|label| GroupInfo {
                label: label.clone(),
                first: 0,
                last: self.steps.len().saturating_sub(1),
            })
            .collect()
    }

    async fn setup(&self) -> Result<(), SetupError> {
        if self.checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.check().await.map_err(|e| SetupError(e.to_string()))
    }

    fn worker(&self) {}

    fn session(&self, _worker: &(), user: u64) -> Session {
        Session {
            conn: None,
            in_tx: false,
            rng: SmallRng::from_rng(&mut rand::rng()),
            user,
            args: Vec::with_capacity(8),
            pair: (0, 0),
            opened: false,
            open_at_end: self.open_at_end.clone(),
        }
    }

    async fn connect(&self, s: &mut Session, _step: usize) -> Result<(), Outcome> {
        self.reopen(s).await
    }

    async fn execute(&self, s: &mut Session, step: usize) -> Outcome {
        let Some(st) = self.steps.get(step) else {
            return Outcome::failed(ErrorClass::Other, format!("no step {step}"));
        };
        // A connection lost by an earlier statement is reopened here, in this request's time.
        if let Err(o) = self.reopen(s).await {
            return o;
        }
        let mut o = self.outcome(s, st).await;
        if let Some(c) = s.conn.as_mut() {
            (o.bytes_sent, o.bytes_received) = c.traffic();
        }
        o
    }

    async fn end_iteration(&self, s: &mut Session, _failed: Option<ErrorClass>) {
        if crate::conn::roll_back(&mut s.conn, &mut s.in_tx, self.timeout).await {
            self.rolled_back.fetch_add(1, Ordering::Relaxed);
        }
    }
}
