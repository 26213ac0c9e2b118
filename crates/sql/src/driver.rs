//! `throng run URL` for a database: its statements (or a sysbench workload) as steps of one
//! [`SqlClient`], the same client and steps as a scenario's `sql:` steps, run as core's
//! [`Steps`] plan like any protocol's URL run: each statement its row, the transaction a row
//! of its own, a retried transaction run again from its first step
//! ([`throng_core::Outcome::again`]).
//! [`SqlDriver::check`] makes that plan before the load: it connects, prepares every
//! statement and hands the parameters to their placeholders.

use throng_core::step::Place;
use throng_core::steps::Steps;
use throng_core::ErrorClass;

use crate::classify::failure;
use crate::client::SqlClient;
use crate::config::{label_of, unique, SqlConfig};
use crate::conn::{Conn, Target};
use crate::oltp::statements;
use crate::param::Expr;
use crate::step::{Param, SqlStep, Work};

/// Why a SQL load cannot start. The messages name what the configuration holds (statements,
/// parameters, a workload), not the flags that set them: the command line adds those.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// Bad input found without a database (a bad URL or TLS option).
    #[error("{0}")]
    Usage(String),
    /// No statement and no workload.
    #[error("a database URL needs statements, or a workload (oltp_read_only and the others)")]
    NoStatements,
    /// A workload runs its own statements: none of the user's may come with it.
    #[error("a workload runs sysbench's statements: give it no statements and no parameters")]
    WorkloadWithStatements,
    /// A workload needs at least one table of at least one row.
    #[error("a workload's tables and their rows must be at least 1")]
    NoTables,
    /// A label given to several statements outside a transaction.
    #[error(
        "a label names the transaction or a single statement; with several statements each is \
         labelled by its first words"
    )]
    LabelOfMany,
    /// A parameter that does not parse.
    #[error("{0}")]
    Param(String),
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
    /// A statement not prepared within the timeout: the database did not answer.
    #[error(
        "{target}: statement `{label}` was not prepared within {after:?}: the database did not \
         answer (a lock held on its tables?)"
    )]
    Slow {
        /// The database (password hidden).
        target: String,
        /// The statement's label.
        label: String,
        /// The timeout.
        after: std::time::Duration,
    },
    /// The parameters given do not match the placeholders.
    #[error(
        "statement `{label}` has {placeholders} placeholder(s) but {given} parameter(s) are \
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
    /// More parameters than placeholders.
    #[error(
        "{left} parameter(s) left over: the statements have fewer placeholders (the last is \
         `{last}`)"
    )]
    LeftOver {
        /// Parameters no placeholder took.
        left: usize,
        /// The last statement's label.
        last: String,
    },
}

impl SqlError {
    /// Whether the input is at fault (exit 2) rather than the database (exit 1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, SqlError::Connect(_) | SqlError::Slow { .. })
    }
}

/// The run of a SQL load: its steps on one [`SqlClient`], as [`Steps`] plans every protocol's
/// URL run.
pub type SqlSteps = Steps<SqlClient>;

/// A SQL load as configured: its steps on one [`SqlClient`]. Build it with [`SqlDriver::new`],
/// then [`SqlDriver::check`] it against the database into the run's [`SqlSteps`] (or take
/// them [`SqlDriver::unchecked`], their statements unprepared and their parameters unbound).
#[derive(Debug)]
pub struct SqlDriver {
    client: SqlClient,
    /// The steps as configured; their statements' parameters are handed out by the check.
    draft: Vec<SqlStep>,
    labels: Vec<String>,
    group: Option<String>,
    params: Vec<Expr>,
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
            .map(|p| Expr::parse(p).map_err(SqlError::Param))
            .collect::<Result<Vec<_>, _>>()?;
        let (mut steps, mut labels, transaction, default_group) = match cfg.workload {
            Some(w) => {
                if !cfg.statements.is_empty() || !params.is_empty() {
                    return Err(SqlError::WorkloadWithStatements);
                }
                if cfg.oltp.tables == 0 || cfg.oltp.table_size == 0 {
                    return Err(SqlError::NoTables);
                }
                let (steps, labels) = w
                    .steps()
                    .into_iter()
                    .map(|(kind, repeat)| {
                        let tables = statements(kind, target.dialect(), cfg.oltp.tables);
                        let step = SqlStep {
                            at: Place::default(),
                            work: Work::Oltp {
                                kind,
                                repeat,
                                tables,
                            },
                            begin: false,
                            commit: false,
                            retry: None,
                        };
                        (step, kind.label().to_string())
                    })
                    .unzip::<_, _, Vec<_>, Vec<_>>();
                (steps, labels, w.transaction(), w.name().to_string())
            }
            None => {
                if cfg.statements.is_empty() {
                    return Err(SqlError::NoStatements);
                }
                if cfg.label.is_some() && !cfg.transaction && cfg.statements.len() > 1 {
                    return Err(SqlError::LabelOfMany);
                }
                let labels = unique(cfg.statements.iter().map(|s| label_of(s)).collect());
                let steps = cfg
                    .statements
                    .iter()
                    .map(|sql| SqlStep::statement(sql, Vec::new(), Place::default()))
                    .collect();
                (steps, labels, cfg.transaction, "transaction".to_string())
            }
        };
        if transaction {
            if let Some(first) = steps.first_mut() {
                first.begin = true;
            }
            if let Some(last) = steps.last_mut() {
                last.commit = true;
            }
        }
        let mut group = None;
        if steps.len() > 1 && (transaction || cfg.workload.is_some()) {
            group = Some(cfg.label.clone().unwrap_or(default_group));
        } else if let (Some(l), Some(only)) = (cfg.label.clone(), labels.first_mut()) {
            *only = l;
        } else if let (Some(w), Some(only)) = (cfg.workload, labels.first_mut()) {
            *only = w.name().to_string();
        }
        let client = SqlClient::new(target, cfg.timeout)
            .with_shard(cfg.shard)
            .with_oltp(cfg.oltp)
            .with_retry(cfg.retry);
        Ok(SqlDriver {
            client,
            draft: steps,
            labels,
            group,
            params,
        })
    }

    /// The client the steps run on (its counters: [`SqlClient::reconnects`],
    /// [`SqlClient::rolled_back`], [`SqlClient::open_at_end`], [`SqlClient::retried`]).
    pub fn client(&self) -> &SqlClient {
        &self.client
    }

    /// The database URL with its password hidden (what a result names as its target).
    pub fn shown(&self) -> &str {
        self.client.target().shown()
    }

    /// Row labels: the steps, then the transaction if it has a row of its own.
    pub fn labels(&self) -> Vec<String> {
        let mut l = self.labels.clone();
        l.extend(self.group.clone());
        l
    }

    /// Before any load: connects (an unreachable database, bad credentials or a missing
    /// database fail here), prepares every statement (one that does not prepare fails here,
    /// named), and hands the parameters to the statements' placeholders: the run's steps.
    pub async fn check(self) -> Result<SqlSteps, SqlError> {
        let mut conn = self.open().await?;
        self.client.connected_by(conn.path());
        let result = self.checked(&mut conn).await;
        match &result {
            // A statement still running on the server, or a connection gone: no goodbye.
            Err(SqlError::Connect(_) | SqlError::Slow { .. }) => drop(conn),
            _ => conn.close().await,
        }
        let steps = result?;
        // Each statement prepared just now: the run's prepare need not again.
        self.plan(steps).map(Steps::checked)
    }

    /// The steps as configured, unchecked: statements unprepared, parameters unbound. Under
    /// `throng::Run` they are prepared before the load, where a bad statement stops the run
    /// as bad input; under `engine::run` alone a statement with placeholders fails each call.
    /// For a caller that checked already, or tests of a database that goes bad after its check.
    pub fn unchecked(self) -> Result<SqlSteps, SqlError> {
        let steps = self.draft.clone();
        self.plan(steps)
    }

    fn plan(self, steps: Vec<SqlStep>) -> Result<SqlSteps, SqlError> {
        let labelled = self.labels.into_iter().zip(steps).collect();
        let plan = Steps::of(self.client, labelled).map_err(|e| SqlError::Usage(e.message))?;
        Ok(match self.group {
            Some(g) => plan.grouped(g),
            None => plan,
        })
    }

    async fn checked(&self, conn: &mut Conn) -> Result<Vec<SqlStep>, SqlError> {
        let mut left = self.params.as_slice();
        let mut steps = self.draft.clone();
        for (step, label) in steps.iter_mut().zip(&self.labels) {
            match &mut step.work {
                Work::Control { .. } => {}
                Work::Statement { sql, params } => {
                    let n = self.prepare(conn, label, sql, "").await?;
                    if n > left.len() {
                        return Err(SqlError::Params {
                            label: label.clone(),
                            placeholders: n,
                            given: left.len(),
                        });
                    }
                    let (mine, rest) = left.split_at(n);
                    left = rest;
                    *params = mine.iter().cloned().map(Param::Expr).collect();
                }
                Work::Oltp { tables, .. } => {
                    let t = self.client.target();
                    let hint = format!(
                        "; are the tables there? throng sql prepare {} --tables {} \
                         --table-size {}",
                        t.shown(),
                        tables.len(),
                        self.client.oltp().table_size
                    );
                    for sql in tables.iter() {
                        self.prepare(conn, label, sql, &hint).await?;
                    }
                }
            }
        }
        if let (Some(last), false) = (self.labels.last(), left.is_empty()) {
            return Err(SqlError::LeftOver {
                left: left.len(),
                last: last.clone(),
            });
        }
        Ok(steps)
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
        let target = self.client.target();
        let e = match self.client.parameters(conn, sql).await {
            Ok(n) => return Ok(n),
            Err(Some(e)) => e,
            Err(None) => {
                return Err(SqlError::Slow {
                    target: target.shown().to_string(),
                    label: label.to_string(),
                    after: self.client.timeout(),
                })
            }
        };
        let o = failure(&e);
        let message = o.message.unwrap_or_default();
        Err(match o.error {
            // The database's own refusal (SQLite's too).
            Some(ErrorClass::Status) => SqlError::Statement {
                label: label.to_string(),
                message: target.scrub(&format!("{message} (the statement: {sql}){hint}")),
            },
            _ => SqlError::Connect(target.scrub(&format!(
                "{}: while preparing `{label}`: {message}",
                target.shown()
            ))),
        })
    }

    /// Opens a connection to the database (for `throng sql prepare` and `cleanup`).
    pub async fn open(&self) -> Result<Conn, SqlError> {
        self.client
            .target()
            .connect()
            .await
            .map_err(|o| SqlError::Connect(o.message.unwrap_or_default()))
    }
}
