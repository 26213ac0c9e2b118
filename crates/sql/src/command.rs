//! SQL's parts of the command line beside `throng run`'s flags ([`crate::flags`]):
//! `throng sql prepare|cleanup` (sysbench's tables), and the databases of `--db-stats`,
//! watched beside any run.

use std::time::Duration;

use clap::{Args, Subcommand};
use throng_core::flags::{positive, FlagsError, Request, WatchArgs};
use throng_core::watch::Watched;

use crate::flags::SqlFlags;
use crate::stats::DbStats;
use crate::{Dialect, OltpOptions};

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
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

impl SqlCommand {
    /// Makes or drops the tables, saying so on standard error.
    pub async fn run(self) -> Result<(), FlagsError> {
        let (t, prepare) = match self.action {
            SqlAction::Prepare(t) => (t, true),
            SqlAction::Cleanup(t) => (t, false),
        };
        if t.tables == 0 || t.table_size == 0 {
            return Err(input("--tables and --table-size must be at least 1"));
        }
        let timeout = positive("--connect-timeout", &t.connect_timeout)?;
        let statement = positive("-t/--timeout", &t.timeout)?;
        let mut target = crate::Target::new(&t.url, timeout, 16).map_err(input)?;
        if prepare {
            target = target.create_if_missing();
        }
        let mut conn = target
            .connect()
            .await
            .map_err(|o| FlagsError::Runtime(o.message.unwrap_or_default()))?;
        let o = OltpOptions {
            tables: t.tables,
            table_size: t.table_size,
            ..OltpOptions::default()
        };
        let shown = target.shown().to_string();
        let done = if prepare {
            crate::oltp::prepare(&mut conn, target.dialect(), &o, statement, |n| {
                eprintln!("sbtest{n}: {} rows and index k_{n} made", o.table_size)
            })
            .await
        } else {
            crate::oltp::cleanup(&mut conn, o.tables, statement).await
        };
        conn.close().await;
        done.map_err(|e| {
            FlagsError::Runtime(target.scrub(&format!(
                "{shown}: {}",
                crate::failure(&e).message.unwrap_or_default()
            )))
        })?;
        if !prepare {
            eprintln!("dropped sbtest1..sbtest{} where they existed", o.tables);
        }
        Ok(())
    }
}

/// The databases of `--db-stats`, their URLs checked (nothing is connected yet).
pub(crate) fn db_stats(flags: &SqlFlags, request: &Request) -> Result<Vec<DbStats>, FlagsError> {
    let connect = request.connect_timeout()?;
    flags
        .db_stats
        .iter()
        .map(|u| DbStats::new(u, connect).map_err(|e| input(format!("--db-stats {e}"))))
        .collect()
}

/// The databases of `--db-stats` read through their idle window (`--idle`, 1 s by default),
/// ready to be watched through the load of a run of `url`; `None` without `--db-stats`.
pub(crate) async fn watch(
    flags: &SqlFlags,
    request: &Request,
    args: WatchArgs<'_>,
) -> Result<Option<Watched>, FlagsError> {
    let url = args.url;
    if flags.db_stats.is_empty() {
        return Ok(None);
    }
    let mut dbs = db_stats(flags, request)?;
    let idle = args.idle()?;
    // A service's pooled connections publish their counters to PostgreSQL only when idle.
    let pooled = dbs.iter().any(|d| d.dialect() == Dialect::Postgres) && Dialect::of(url).is_none();
    let settle = match pooled {
        true => {
            if !args.quiet {
                eprintln!(
                    "--db-stats: the last reading waits until the service's connections have \
                     been idle 10 s (at most 10.5 s after the load), when PostgreSQL publishes \
                     their last counters"
                );
            }
            Duration::from_millis(10_500)
        }
        false => Duration::from_millis(500),
    };
    // A database that cannot be read at all is the user's to fix before any load (a broker's
    // monitor is not: it is counted and told); the first reading also tells which counters
    // the server keeps.
    for d in &mut dbs {
        d.sample()
            .await
            .map_err(|e| FlagsError::Runtime(format!("--db-stats: {e}")))?;
    }
    let watched = Watched::idle(dbs, idle, settle).await;
    for note in watched.notes() {
        eprintln!("{note}");
    }
    Ok(Some(watched))
}
