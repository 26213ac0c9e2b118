//! `throng sql prepare|cleanup` (sysbench's tables), and `--db-stats`: databases watched beside
//! any run. SQL's flags of `throng run` are `throng_sql::flags`.

use std::sync::Arc;

use clap::{Args, Subcommand};
use throng_sql::OltpOptions;

use super::args::RunArgs;
use super::runner::Outputs;
use super::CliError;

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
