//! SQL's own flags on `throng run` (`clap` feature): `--sql`, `--param`, `--transaction`,
//! `--workload`, `--retry-on`, `--db-stats`, ..., and the URL run they make with the shared
//! request flags: `throng run postgres://…|mysql://…|sqlite://…`, its statements checked
//! against the database before any load. Each library error is told here in the flags that set
//! what it names.

use std::future::Future;
use std::path::PathBuf;

use clap::Args;
use throng_core::flags::{FlagsError, ProtocolFlags, Request, UrlArgs, UrlRun, WatchArgs};
use throng_core::step::ClientOptions;
use throng_core::watch::Watched;
use throng_core::Shard;

use crate::{OltpOptions, SqlConfig, SqlDriver, SqlError, Workload};

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// SQL's flags of `throng run` (a database URL).
#[derive(Debug, Clone, Default, Args)]
pub struct SqlFlags {
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
    pub rand_type: Option<crate::RandType>,
    /// Roll back a transaction that meets these failures and run it again from its first
    /// statement, as sysbench ignores them: deadlock (PostgreSQL 40P01, MySQL 1213),
    /// serialization (40001). Each failure still counts as its statement's error, and the
    /// retried transactions are counted apart.
    #[arg(long, value_name = "deadlock,serialization", help_heading = "SQL", value_parser = retry)]
    pub retry_on: Option<crate::Retry>,
    /// Read this database's own counters once a second: before the load (1s, or --idle),
    /// through it (the dashboard) and after it; print them beside the load's requests and keep
    /// every reading in the JSON result: PostgreSQL's pg_stat_database (xact_commit,
    /// tup_returned, ...), MySQL/MariaDB's SHOW GLOBAL STATUS (Com_commit, Questions,
    /// Innodb_rows_*). Any run, HTTP or gRPC too (repeatable).
    #[arg(long = "db-stats", value_name = "URL", help_heading = "SQL")]
    pub db_stats: Vec<String>,
}

impl ProtocolFlags for SqlFlags {
    type Driver = crate::SqlSteps;

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
        *self = SqlFlags {
            db_stats: std::mem::take(&mut self.db_stats),
            ..SqlFlags::default()
        };
    }

    fn reads(&self) -> &'static [throng_core::flags::Shared] {
        &[]
    }

    fn check_offline(
        &self,
        url: &str,
        request: &Request,
        _plan: &throng_core::RunPlan,
    ) -> Result<(), FlagsError> {
        self.url_driver(url, request, Shard::WHOLE).map(|_| ())
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        _targets: usize,
        source: &str,
    ) -> Result<ClientOptions, FlagsError> {
        match self.given().first() {
            Some(flag) => Err(input(format!(
                "{flag} applies to a database URL; {source} is a scenario file, whose sql steps \
                 say what they run"
            ))),
            None => Ok(options),
        }
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        // `seq()` counts this shard's share of the run.
        let driver = self.url_driver(args.url, args.request, args.shard)?;
        let shown = driver.shown().to_string();
        let mut plan = args.plan?;
        plan.target = shown.clone();
        let connections = plan.peak_concurrency();
        // A threshold naming no row of these statements is bad input (exit 2), said before
        // the database is reached (one that cannot be is exit 1).
        (args.rows)(&driver.labels())?;
        let steps = check(driver).await?;
        // How the run connects (TLS, login) is said even with --quiet, which loses only the
        // progress line and the files' messages.
        if let Some(path) = steps.client().path() {
            eprintln!("{shown}: {path}");
        }
        Ok(UrlRun {
            plan,
            driver: steps,
            connections,
        })
    }

    fn watches(&self) -> bool {
        !self.db_stats.is_empty()
    }

    fn check_watched(&self, request: &Request) -> Result<(), FlagsError> {
        crate::command::db_stats(self, request).map(|_| ())
    }

    fn watch<'a>(
        &'a self,
        request: &'a Request,
        args: WatchArgs<'a>,
    ) -> impl Future<Output = Result<Option<Watched>, FlagsError>> + 'a {
        crate::command::watch(self, request, args)
    }

    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>) {
        self.db_stats = pick(&self.db_stats);
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

fn retry(v: &str) -> Result<crate::Retry, String> {
    crate::Retry::parse(v)
}

fn rand_type(v: &str) -> Result<crate::RandType, String> {
    crate::RandType::named(v).ok_or_else(|| {
        format!(
            "not a distribution; one of {}",
            crate::RandType::ALL.map(|(_, n)| n).join(", ")
        )
    })
}

impl SqlFlags {
    /// The SQL load of a run of `url` with `request`, every bad value named with its flag.
    pub fn config(&self, url: &str, request: &Request) -> Result<SqlConfig, FlagsError> {
        let s = self;
        let identity = request.identity()?;
        if crate::Dialect::of(url) == Some(crate::Dialect::Sqlite)
            && (request.insecure || request.cacert.is_some() || identity.is_some())
        {
            return Err(input(format!(
                "--insecure, --cacert, --cert and --key apply to postgres:// and mysql://; {url} \
                 is SQLite, which has no TLS"
            )));
        }
        let mut cfg = SqlConfig::new(url);
        cfg.statements = s.sql.clone();
        if let Some(path) = &s.sql_file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                input(format!(
                    "--sql-file {}: cannot read it: {e}",
                    path.display()
                ))
            })?;
            let found = crate::split_statements(&text);
            if found.is_empty() {
                return Err(input(format!(
                    "--sql-file {}: holds no statement",
                    path.display()
                )));
            }
            cfg.statements.extend(found);
        }
        cfg.params = s.params.clone();
        cfg.transaction = s.transaction;
        cfg.label = request.label.clone();
        cfg.workload = s.workload.as_deref().and_then(Workload::named);
        if cfg.workload.is_none()
            && (s.tables.is_some() || s.table_size.is_some() || s.rand_type.is_some())
        {
            return Err(input(
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
        cfg.timeout = request.timeout()?;
        cfg.connect_timeout = request.connect_timeout()?;
        cfg.tls = crate::Tls {
            insecure: request.insecure,
            cacert: request.cacert.clone(),
            identity,
        };
        Ok(cfg)
    }

    /// The driver of a run of `url` (its share `shard` of a sharded run), not yet checked
    /// against the database ([`check`] does that, before the load).
    pub fn url_driver(
        &self,
        url: &str,
        request: &Request,
        shard: Shard,
    ) -> Result<SqlDriver, FlagsError> {
        let mut cfg = self.config(url, request)?;
        cfg.shard = shard;
        SqlDriver::new(cfg).map_err(told)
    }
}

/// Checks `driver`'s statements against its database into the run's steps: a database that
/// cannot be reached is [`FlagsError::Runtime`]; a statement that does not prepare,
/// [`FlagsError::Input`].
pub async fn check(driver: SqlDriver) -> Result<crate::SqlSteps, FlagsError> {
    driver.check().await.map_err(told)
}

/// The library's error, told in the flags that set what it names.
pub fn told(e: SqlError) -> FlagsError {
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
        true => FlagsError::Input(told),
        false => FlagsError::Runtime(told),
    }
}
