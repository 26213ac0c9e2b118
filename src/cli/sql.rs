//! `throng run postgres://…|mysql://…|sqlite://…` and `throng sql prepare|cleanup`: SQL flags
//! to a [`throng_sql::SqlConfig`], checked against the database before any load.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use throng_sql::{OltpOptions, SqlConfig, SqlDriver, SqlError, Workload};

use super::args::RunArgs;
use super::runner::{ensure_open_files, run_load, Outputs};
use super::CliError;

/// SQL flags of `throng run` (a database URL).
#[derive(Debug, Clone, Default, Args)]
pub struct SqlArgs {
    /// A statement each iteration runs, with the database's placeholders ($1 for PostgreSQL,
    /// ? for MySQL and SQLite); repeatable, run in order, each its own row labelled by its first
    /// words (SELECT c FROM sbtest1). Each user prepares it once on its own connection.
    /// PostgreSQL infers each placeholder's type from the statement: cast where it cannot
    /// (SELECT $1::int + 1).
    #[arg(long = "sql", value_name = "STATEMENT", help_heading = "SQL")]
    pub sql: Vec<String>,
    /// Statements from a file, separated by `;` (after any --sql).
    #[arg(long, value_name = "FILE", help_heading = "SQL")]
    pub sql_file: Option<PathBuf>,
    /// A value for the next placeholder, evaluated per execution (repeatable; taken in order,
    /// statement by statement): a number, 'text', null, true, false, rand_int(A, B) (uniform,
    /// both ends included), rand_str(N), seq() (1, 2, ... across the run; shard I of N of a
    /// --shard run: I+1, I+1+N, ..., unique across the shards), user() (the user's number).
    #[arg(
        long = "param",
        value_name = "EXPR",
        help_heading = "SQL",
        allow_hyphen_values = true
    )]
    pub params: Vec<String>,
    /// Run each iteration's statements in one transaction (BEGIN ... COMMIT, rolled back when
    /// a statement fails); the transaction gets a row of its own (TPS beside the statements'
    /// QPS), labelled by --label or `transaction`.
    #[arg(long, help_heading = "SQL")]
    pub transaction: bool,
    /// A sysbench workload instead of statements: oltp_point_select, oltp_read_only,
    /// oltp_write_only, oltp_read_write, oltp_insert (tables from `throng sql prepare`).
    #[arg(long, value_name = "NAME", help_heading = "SQL", value_parser = workload)]
    pub workload: Option<String>,
    /// --workload: tables sbtest1..N [default: 1].
    #[arg(long, value_name = "N", help_heading = "SQL")]
    pub tables: Option<u32>,
    /// --workload: rows in each table [default: 10000].
    #[arg(long, value_name = "ROWS", help_heading = "SQL")]
    pub table_size: Option<u32>,
    /// --workload: how row ids are drawn, as sysbench's --rand-type computes them: special
    /// (sysbench 1.0's default: three quarters of the ids from the middle 1% of the table, the
    /// rest bell-shaped over it), uniform, gaussian or pareto (80% from the first 20%)
    /// [default: special].
    #[arg(long, value_name = "NAME", help_heading = "SQL", value_parser = rand_type)]
    pub rand_type: Option<throng_sql::RandType>,
    /// Roll back a transaction that meets these failures and run it again from its first
    /// statement, as sysbench ignores them: deadlock (PostgreSQL 40P01, MySQL 1213),
    /// serialization (40001). Each failure still counts as its statement's error, and the
    /// retried transactions are counted apart.
    #[arg(long, value_name = "deadlock,serialization", help_heading = "SQL", value_parser = retry)]
    pub retry_on: Option<throng_sql::Retry>,
    /// Read this database's own counters once a second: before the load (1s, or --idle),
    /// through it (the dashboard) and after it; print them beside the load's requests and keep
    /// every reading in the JSON result: PostgreSQL's pg_stat_database (xact_commit,
    /// tup_returned, ...), MySQL/MariaDB's SHOW GLOBAL STATUS (Com_commit, Questions,
    /// Innodb_rows_*). Any run, HTTP or gRPC too (repeatable).
    #[arg(long = "db-stats", value_name = "URL", help_heading = "SQL")]
    pub db_stats: Vec<String>,
}

impl throng_run::flags::ProtocolFlags for SqlArgs {
    fn protocol(&self) -> &'static str {
        "sql"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["postgres", "mysql", "sqlite"]
    }

    fn given(&self) -> Vec<&'static str> {
        let s = self;
        [
            ("--sql", !s.sql.is_empty()),
            ("--sql-file", s.sql_file.is_some()),
            ("--param", !s.params.is_empty()),
            ("--transaction", s.transaction),
            ("--workload", s.workload.is_some()),
            ("--retry-on", s.retry_on.is_some()),
            (
                "--tables, --table-size and --rand-type",
                s.tables.is_some() || s.table_size.is_some() || s.rand_type.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }

    /// Takes back the load's flags; `--db-stats` watches databases beside any run, so it stays.
    fn clear(&mut self) {
        *self = SqlArgs {
            db_stats: std::mem::take(&mut self.db_stats),
            ..SqlArgs::default()
        };
    }

    fn reads(&self) -> &'static [&'static str] {
        &[]
    }

    fn scenario_options(
        &self,
        options: throng_core::step::ClientOptions,
        _targets: usize,
        source: &str,
    ) -> Result<throng_core::step::ClientOptions, throng_run::RunError> {
        match self.given().first() {
            Some(flag) => Err(throng_run::RunError::Input(format!(
                "{flag} applies to a database URL; {source} is a scenario file, whose sql steps \
                 say what they run"
            ))),
            None => Ok(options),
        }
    }
}

fn workload(v: &str) -> Result<String, String> {
    match Workload::named(v) {
        Some(_) => Ok(v.to_string()),
        None => Err(format!(
            "not a workload; one of {}",
            Workload::ALL.map(|(_, n)| n).join(", ")
        )),
    }
}

fn retry(v: &str) -> Result<throng_sql::Retry, String> {
    throng_sql::Retry::parse(v)
}

fn rand_type(v: &str) -> Result<throng_sql::RandType, String> {
    throng_sql::RandType::named(v).ok_or_else(|| {
        format!(
            "not a distribution; one of {}",
            throng_sql::RandType::ALL.map(|(_, n)| n).join(", ")
        )
    })
}

/// `throng sql`: sysbench's tables.
#[derive(Debug, Clone, Args)]
pub struct SqlCommand {
    /// What to do.
    #[command(subcommand)]
    pub action: SqlAction,
}

/// `throng sql` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum SqlAction {
    /// Create and fill sbtest1..N as sysbench's prepare does.
    #[command(after_help = "Example:
  throng sql prepare postgres://bench:pw@127.0.0.1:5432/bench --tables 4 --table-size 100000")]
    Prepare(TablesArgs),
    /// Drop sbtest1..N.
    Cleanup(TablesArgs),
}

/// The tables of `throng sql prepare` and `cleanup`.
#[derive(Debug, Clone, Args)]
pub struct TablesArgs {
    /// The database URL (postgres://, mysql://, mariadb://, sqlite://FILE).
    pub url: String,
    /// Tables sbtest1..N.
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    /// Rows in each table.
    #[arg(long, default_value_t = 10_000)]
    pub table_size: u32,
    /// Connect timeout.
    #[arg(long, default_value = "10s")]
    pub connect_timeout: String,
    /// Each statement's timeout (a statement waiting on another session's lock fails after
    /// it; an index on a large table takes a while).
    #[arg(short = 't', long, default_value = "10m")]
    pub timeout: String,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn duration(flag: &str, v: &str) -> Result<std::time::Duration, CliError> {
    match throng_core::stages::parse_duration(v) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(usage(format!(
            "{flag} {v:?}: not a duration longer than zero; write e.g. 30s, 500ms"
        ))),
    }
}

/// The SQL load the flags describe.
pub fn config(a: &RunArgs) -> Result<SqlConfig, CliError> {
    let s = &a.sql;
    let mut cfg = SqlConfig::new(&a.url);
    cfg.statements = s.sql.clone();
    if let Some(path) = &s.sql_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            usage(format!(
                "--sql-file {}: cannot read it: {e}",
                path.display()
            ))
        })?;
        let found = throng_sql::split_statements(&text);
        if found.is_empty() {
            return Err(usage(format!(
                "--sql-file {}: holds no statement",
                path.display()
            )));
        }
        cfg.statements.extend(found);
    }
    cfg.params = s.params.clone();
    cfg.transaction = s.transaction;
    cfg.label = a.request.label.clone();
    cfg.workload = s.workload.as_deref().and_then(Workload::named);
    if cfg.workload.is_none()
        && (s.tables.is_some() || s.table_size.is_some() || s.rand_type.is_some())
    {
        return Err(usage(
            "--tables, --table-size and --rand-type go with --workload",
        ));
    }
    let d = OltpOptions::default();
    cfg.oltp = OltpOptions {
        tables: s.tables.unwrap_or(d.tables),
        table_size: s.table_size.unwrap_or(d.table_size),
        range_size: d.range_size,
        rand: s.rand_type.unwrap_or(d.rand),
    };
    cfg.retry = s.retry_on.unwrap_or_default();
    cfg.timeout = a.request.timeout()?;
    cfg.connect_timeout = a.request.connect_timeout()?;
    cfg.tls = throng_sql::Tls {
        insecure: a.request.insecure,
        cacert: a.request.cacert.clone(),
    };
    Ok(cfg)
}

/// The library's error, told in the flags that set what it names.
fn sql_error(e: SqlError) -> CliError {
    let told = match &e {
        SqlError::NoStatements => "a database URL needs statements: --sql 'SELECT ...' \
             (repeatable), --sql-file FILE, or --workload oltp_read_only (and the others)"
            .to_string(),
        SqlError::WorkloadWithStatements => "--workload runs sysbench's statements: give it \
             without --sql, --sql-file or --param"
            .to_string(),
        SqlError::NoTables => "--tables and --table-size must be at least 1".to_string(),
        SqlError::LabelOfMany => "--label names the transaction (--transaction) or a single \
             statement; with several statements each is labelled by its first words"
            .to_string(),
        SqlError::Param(m) => format!("--param {m}"),
        SqlError::Params {
            label,
            placeholders,
            given,
        } => format!(
            "statement `{label}` has {placeholders} placeholder(s) but {given} --param value(s) \
             are left for it (parameters are taken in order, statement by statement)"
        ),
        SqlError::LeftOver { left, last } => format!(
            "{left} --param value(s) left over: the statements have fewer placeholders (the \
             last is `{last}`)"
        ),
        SqlError::Slow { .. } => format!("{e} (-t/--timeout)"),
        _ => e.to_string(),
    };
    match e.is_usage() {
        true => CliError::Usage(told),
        false => CliError::Runtime(anyhow::anyhow!(told)),
    }
}

/// Runs a SQL load to its end: the statements are checked against the database first (exit 1
/// when it cannot be reached, 2 when a statement does not prepare), then the load runs.
pub async fn run(a: &RunArgs, out: Outputs) -> Result<throng_run::Finished, CliError> {
    let mut cfg = config(a)?;
    cfg.shard = out.run.shard;
    let driver = SqlDriver::new(cfg).map_err(sql_error)?;
    let mut plan = a.run.plan(&a.url).map_err(|e| match e {
        throng_run::RunError::Input(m) => {
            usage(throng_sql::redact(&m).replace(&a.url, driver.shown()))
        }
        other => other.into(),
    })?;
    // The result names the database without its password.
    plan.target = driver.shown().to_string();
    let thresholds = a.run.thresholds(&driver.labels())?;
    let containers = super::runner::containers(a)?;
    ensure_open_files(plan.peak_concurrency())?;
    driver.check().await.map_err(sql_error)?;
    if let (Some(path), false) = (driver.path(), a.run.quiet) {
        eprintln!("{}: {path}", driver.shown());
    }
    let driver = Arc::new(driver);
    let finished = run_load(plan, driver.clone(), &thresholds, containers.as_ref(), out).await?;
    if driver.reconnects() > 0 {
        eprintln!(
            "connections lost and reopened during the run: {}",
            driver.reconnects()
        );
    }
    if driver.rolled_back() > 0 {
        eprintln!(
            "transactions rolled back after a failed statement: {}",
            driver.rolled_back()
        );
    }
    if driver.retried() > 0 {
        eprintln!(
            "transactions retried after a deadlock or serialization failure (--retry-on): {}",
            driver.retried()
        );
    }
    if driver.open_at_end() > 0 {
        eprintln!(
            "transactions open when the run ended (rolled back by the database): {}",
            driver.open_at_end()
        );
    }
    Ok(finished)
}

/// `throng sql prepare|cleanup`.
pub async fn command(c: SqlCommand) -> Result<u8, CliError> {
    let (t, prepare) = match c.action {
        SqlAction::Prepare(t) => (t, true),
        SqlAction::Cleanup(t) => (t, false),
    };
    if t.tables == 0 || t.table_size == 0 {
        return Err(usage("--tables and --table-size must be at least 1"));
    }
    let timeout = duration("--connect-timeout", &t.connect_timeout)?;
    let statement = duration("-t/--timeout", &t.timeout)?;
    let mut target = throng_sql::Target::new(&t.url, timeout, 16).map_err(usage)?;
    if prepare {
        target = target.create_if_missing();
    }
    let mut conn = target
        .connect()
        .await
        .map_err(|o| CliError::Runtime(anyhow::anyhow!(o.message.unwrap_or_default())))?;
    let o = OltpOptions {
        tables: t.tables,
        table_size: t.table_size,
        ..OltpOptions::default()
    };
    let shown = target.shown().to_string();
    let done = if prepare {
        throng_sql::oltp::prepare(&mut conn, target.dialect(), &o, statement, |n| {
            eprintln!("sbtest{n}: {} rows and index k_{n} made", o.table_size)
        })
        .await
    } else {
        throng_sql::oltp::cleanup(&mut conn, o.tables, statement).await
    };
    conn.close().await;
    done.map_err(|e| {
        CliError::Runtime(anyhow::anyhow!(target.scrub(&format!(
            "{shown}: {}",
            throng_sql::failure(&e).message.unwrap_or_default()
        ))))
    })?;
    if !prepare {
        eprintln!("dropped sbtest1..sbtest{} where they existed", o.tables);
    }
    Ok(super::EXIT_OK)
}

/// The databases of `--db-stats`, read through their idle window and ready for the load: the
/// run takes them once ([`DbWatch::take`]) and starts them right before its load.
pub struct DbWatch {
    monitor: std::sync::Mutex<Option<throng_sql::monitor::Monitor>>,
    /// How long the last reading waits after the load.
    settle: std::time::Duration,
}

impl std::fmt::Debug for DbWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbWatch")
            .field("settle", &self.settle)
            .finish_non_exhaustive()
    }
}

impl DbWatch {
    /// What starts the watch through the load (`Run::databases`), once.
    pub fn take(&self) -> Option<impl FnOnce() -> throng_run::DatabaseReadings + Send + 'static> {
        let monitor = self.monitor.lock().ok()?.take()?;
        let settle = self.settle;
        Some(move || {
            let (events, load_ended, warnings) = monitor.watch_load(settle);
            throng_run::DatabaseReadings {
                events,
                load_ended,
                warnings,
            }
        })
    }
}

/// The databases of `--db-stats`, their URLs checked (nothing is connected yet).
pub fn db_stats(a: &RunArgs) -> Result<Vec<throng_sql::stats::DbStats>, CliError> {
    let connect = a.request.connect_timeout()?;
    a.sql
        .db_stats
        .iter()
        .map(|u| {
            throng_sql::stats::DbStats::new(u, connect)
                .map_err(|e| usage(format!("--db-stats {e}")))
        })
        .collect()
}

/// Runs `run` with the databases of `--db-stats` read for an idle window before the load; the
/// result (summary and JSON) gets their counters beside the load's own requests.
pub async fn with_db_stats<F, Fut, T>(a: &RunArgs, mut out: Outputs, run: F) -> Result<T, CliError>
where
    F: FnOnce(Outputs) -> Fut,
    Fut: std::future::Future<Output = Result<T, CliError>>,
{
    if a.sql.db_stats.is_empty() {
        return run(out).await;
    }
    let dbs = db_stats(a)?;
    let idle = match &a.run.idle {
        Some(v) => duration("--idle", v)?,
        None => std::time::Duration::from_secs(1),
    };
    let runtime = |e: String| CliError::Runtime(anyhow::anyhow!("--db-stats: {e}"));
    let pooled = dbs
        .iter()
        .any(|d| d.dialect() == throng_sql::Dialect::Postgres)
        && throng_sql::Dialect::of(&a.url).is_none();
    let settle = match pooled {
        true => {
            if !a.run.quiet {
                eprintln!(
                    "--db-stats: the last reading waits 10.5 s after the load, until PostgreSQL \
                     has published the counters of the service's idle connections"
                );
            }
            std::time::Duration::from_millis(10_500)
        }
        false => std::time::Duration::from_millis(500),
    };
    let monitor = throng_sql::monitor::Monitor::start(dbs, idle)
        .await
        .map_err(runtime)?;
    for note in monitor.notes() {
        eprintln!("{note}");
    }
    out.databases = Some(Arc::new(DbWatch {
        monitor: std::sync::Mutex::new(Some(monitor)),
        settle,
    }));
    run(out).await
}
