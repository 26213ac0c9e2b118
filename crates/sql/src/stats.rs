//! A database's own counters (`--db-stats`): PostgreSQL's `pg_stat_database` for the URL's
//! database, MySQL/MariaDB's `SHOW GLOBAL STATUS`. Read over a connection of their own, apart
//! from the load's, so a load's transactions can be set beside the database's.

use std::sync::Arc;
use std::time::Duration;

use throng_core::watch::ReadError;
use throng_core::ErrorClass;

use crate::conn::{Conn, Target};
use crate::url::Dialect;

/// PostgreSQL's counters: `pg_stat_database`'s as it names them, then the statements that
/// the `pg_stat_statements` extension counts ([`STATEMENTS`]).
const PG: &[&str] = &[
    "xact_commit",
    "xact_rollback",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "blks_read",
    "blks_hit",
    "deadlocks",
    "calls",
    "calls_select",
    "calls_insert",
    "calls_update",
    "calls_delete",
];

/// Where PostgreSQL's statement counters start in [`PG`]: `pg_stat_statements`' `calls` of
/// the URL's database, all of them, then by the statement's kind (its first keyword; a `WITH`
/// statement's is the keyword after its common table expressions). The reader's own
/// statements are left out: they start with [`MARK`].
const STATEMENTS: usize = 10;

/// The comment every statement of the reader starts with, so that `pg_stat_statements` (which
/// keeps a statement's text, its leading comment too) tells them from the load's.
const MARK: &str = "/* throng --db-stats */";

/// The statements by kind, in the figures' uniform names (the same on every server), and the
/// counters that give them on PostgreSQL and on MySQL/MariaDB.
const KINDS: [(&str, &str, &str); 4] = [
    ("selects", "calls_select", "Com_select"),
    ("inserts", "calls_insert", "Com_insert"),
    ("updates", "calls_update", "Com_update"),
    ("deletes", "calls_delete", "Com_delete"),
];

/// What enables PostgreSQL's statement counters, said when they are not available.
const ENABLE: &str = "shared_preload_libraries = 'pg_stat_statements' in postgresql.conf (a \
                      restart), then CREATE EXTENSION pg_stat_statements in the database";

/// MySQL's and MariaDB's, as `SHOW GLOBAL STATUS` names them: transactions, the storage
/// engines' commits, statements (all, then by kind), rows. MariaDB (10.11) keeps no
/// `Innodb_rows_*`: counters a server does not keep are left out (see [`DbStats::missing`]),
/// never shown as 0. Then the transactions, which no status variable counts ([`MY_DERIVED`]).
/// The reader's own statements (its `SHOW GLOBAL STATUS`, and its SELECTs of
/// `performance_schema`) are left out of `Questions` and `Com_select`, counted as they run.
const MY: &[&str] = &[
    "Com_commit",
    "Com_rollback",
    "Handler_commit",
    "Handler_rollback",
    "Questions",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Innodb_rows_read",
    "Innodb_rows_inserted",
    "Innodb_rows_updated",
    "Innodb_rows_deleted",
    "events_transactions",
    "transactions_derived",
    "commits_derived",
];

/// Where MySQL's transaction counters start in [`MY`]. No status variable of MySQL's means
/// what PostgreSQL's `xact_commit` and `xact_rollback` mean (every transaction, an autocommit
/// statement's too). Measured on MariaDB 10.11: `Com_commit` and `Com_rollback` count COMMIT
/// and ROLLBACK statements only (0 for a service of autocommit statements); `Handler_commit`
/// counts one for each autocommit statement on a table, but inside BEGIN ... COMMIT one for
/// each statement on a table and one for the COMMIT (3 for BEGIN, a SELECT, an UPDATE, COMMIT),
/// and nothing for a statement on no table (`SELECT 1`); `Handler_rollback` one for each
/// statement rolled back. So the transactions are, in this order of preference:
///
/// - `events_transactions`: `performance_schema`'s count of transactions
///   (`events_transactions_summary_global_by_event_name`'s `COUNT_STAR`), which counts an
///   autocommit statement's transaction as one and BEGIN ... COMMIT as one, when its
///   `transaction` instrument is on (MySQL 8.0's default; MariaDB's needs
///   `performance_schema = ON` and the instrument enabled);
/// - otherwise `transactions_derived`, from the status variables second by second (between
///   two readings): COMMIT and ROLLBACK statements (`Com_commit + Com_rollback`) where there
///   were any, else the autocommit statements' commits and rollbacks
///   (`Handler_commit + Handler_rollback`). Exact for a load of explicit transactions and for
///   one of autocommit statements; where both run in the same second, the autocommit
///   statements beside the transactions are not counted (the counters cannot tell them from
///   the statements inside the transactions).
///
/// `commits_derived` is the committed ones by the same rule (`Com_commit`, else
/// `Handler_commit`), read in both cases (`performance_schema` does not count commits apart).
/// The derived counters count from the first reading.
const MY_DERIVED: usize = 13;

/// What each counter of [`PG`] and [`MY`] is, for the reports: its label and unit.
const FIGURES: &[(&str, &str, &str)] = &[
    ("xact_commit", "transactions committed", "transactions"),
    ("xact_rollback", "transactions rolled back", "transactions"),
    ("tup_returned", "rows scanned", "rows"),
    ("tup_fetched", "rows fetched", "rows"),
    ("tup_inserted", "rows inserted", "rows"),
    ("tup_updated", "rows updated", "rows"),
    ("tup_deleted", "rows deleted", "rows"),
    ("blks_read", "blocks read from disk", "blocks"),
    ("blks_hit", "blocks found in the buffer cache", "blocks"),
    ("deadlocks", "deadlocks", "deadlocks"),
    ("calls", "statements", "statements"),
    ("calls_select", "SELECT statements", "statements"),
    ("calls_insert", "INSERT statements", "statements"),
    ("calls_update", "UPDATE statements", "statements"),
    ("calls_delete", "DELETE statements", "statements"),
    ("Com_commit", "COMMIT statements", "statements"),
    ("Com_rollback", "ROLLBACK statements", "statements"),
    ("Handler_commit", "storage engine commits", "commits"),
    ("Handler_rollback", "storage engine rollbacks", "rollbacks"),
    ("Questions", "statements", "statements"),
    ("Com_select", "SELECT statements", "statements"),
    ("Com_insert", "INSERT statements", "statements"),
    ("Com_update", "UPDATE statements", "statements"),
    ("Com_delete", "DELETE statements", "statements"),
    ("Innodb_rows_read", "rows read", "rows"),
    ("Innodb_rows_inserted", "rows inserted", "rows"),
    ("Innodb_rows_updated", "rows updated", "rows"),
    ("Innodb_rows_deleted", "rows deleted", "rows"),
    ("events_transactions", "transactions", "transactions"),
    (
        "transactions_derived",
        "transactions (derived)",
        "transactions",
    ),
    (
        "commits_derived",
        "transactions committed (derived)",
        "transactions",
    ),
];

/// The counter `name` as a figure: every counter a database keeps is a running total.
fn figure(name: &str) -> throng_core::Figure {
    let (label, unit) = FIGURES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map_or((name, ""), |(_, l, u)| (*l, *u));
    throng_core::Figure::counter(name, label, unit)
}

/// Samples one database's counters.
pub struct DbStats {
    target: Target,
    conn: Option<Conn>,
    timeout: Duration,
    /// The counters this server keeps (their places in [`PG`] or [`MY`]), known from the
    /// first reading.
    kept: Option<Vec<usize>>,
    /// Why PostgreSQL's statement counters are not available (`pg_stat_statements` not
    /// created in the database, or not loaded), known from the first reading.
    unavailable: Option<String>,
    /// MySQL: whether `performance_schema` counts transactions (known from the first
    /// reading), and the derivation's state ([`MY_DERIVED`]).
    my: MyTransactions,
}

/// MySQL's transactions as [`MY_DERIVED`] defines them.
#[derive(Default)]
struct MyTransactions {
    /// `performance_schema`'s `transaction` instrument is on.
    events: bool,
    /// The last reading's `Com_commit`, `Com_rollback`, `Handler_commit`, `Handler_rollback`.
    last: Option<[u64; 4]>,
    /// Transactions and commits derived so far.
    transactions: u64,
    commits: u64,
    /// The reader's own statements so far, all of them and its SELECTs: left out of
    /// `Questions` and `Com_select`, as PostgreSQL's reader leaves its own out.
    own: (u64, u64),
}

impl MyTransactions {
    /// Adds what happened since the last reading and returns the derived totals.
    fn add(&mut self, now: [u64; 4]) -> (u64, u64) {
        if let Some(last) = self.last {
            let d: Vec<u64> = now
                .iter()
                .zip(last)
                .map(|(n, l)| n.saturating_sub(l))
                .collect();
            let (t, c) = match d[0] + d[1] {
                0 => (d[2] + d[3], d[2]),
                explicit => (explicit, d[0]),
            };
            self.transactions += t;
            self.commits += c;
        }
        self.last = Some(now);
        (self.transactions, self.commits)
    }
}

/// Counter values, in [`DbStats::names`] order.
pub type Sample = Vec<u64>;

impl DbStats {
    /// A sampler of the database at `url` (PostgreSQL or MySQL/MariaDB; SQLite keeps no
    /// counters).
    pub fn new(url: &str, connect_timeout: Duration) -> Result<DbStats, String> {
        let target = Target::new(url, connect_timeout, 4)?;
        if target.dialect() == Dialect::Sqlite {
            return Err(format!(
                "{}: SQLite keeps no server counters; --db-stats takes a postgres:// or mysql:// URL",
                target.shown()
            ));
        }
        Ok(DbStats {
            target,
            conn: None,
            timeout: connect_timeout,
            kept: None,
            unavailable: None,
            my: MyTransactions::default(),
        })
    }

    /// Which database.
    pub fn dialect(&self) -> Dialect {
        self.target.dialect()
    }

    /// The database, password hidden.
    pub fn shown(&self) -> &str {
        self.target.shown()
    }

    fn all(&self) -> &'static [&'static str] {
        match self.target.dialect() {
            Dialect::Postgres => PG,
            _ => MY,
        }
    }

    /// The counters' names: those the server keeps (all of them before the first reading).
    pub fn names(&self) -> Vec<&'static str> {
        let all = self.all();
        match &self.kept {
            Some(kept) => kept.iter().map(|&i| all[i]).collect(),
            None => all.to_vec(),
        }
    }

    /// The counters this server does not keep (known after the first reading): not
    /// available, so left out rather than shown as 0.
    pub fn missing(&self) -> Vec<&'static str> {
        let kept = self.names();
        let real = match self.dialect() {
            Dialect::Postgres => PG,
            // The transactions' counters are one or the other, never missing.
            _ => &MY[..MY_DERIVED],
        };
        real.iter()
            .filter(|n| !kept.contains(*n))
            .copied()
            .collect()
    }

    fn place(&self, name: &str) -> Option<usize> {
        self.names().iter().position(|n| *n == name)
    }

    /// The counters whose sum is the database's transactions (committed and rolled back):
    /// `xact_commit` and `xact_rollback`; on MySQL `events_transactions` where
    /// `performance_schema` counts them, else `transactions_derived`
    /// (`MY_DERIVED` in the source says how it is derived).
    pub fn transactions(&self) -> Vec<usize> {
        if let Some(i) = self
            .place("events_transactions")
            .or_else(|| self.place("transactions_derived"))
        {
            return vec![i];
        }
        ["xact_commit", "xact_rollback"]
            .iter()
            .filter_map(|n| self.place(n))
            .collect()
    }

    /// The counter whose delta is the database's statements, if it keeps one (MySQL's
    /// `Questions`; PostgreSQL's `calls` of `pg_stat_statements`, without which it counts
    /// none).
    pub fn statements(&self) -> Option<usize> {
        self.place("Questions").or_else(|| self.place("calls"))
    }

    /// The statements by kind, where the server counts them: the uniform name of each
    /// (`selects`, `inserts`, `updates`, `deletes`) and the place of its counter (MySQL's
    /// `Com_select`, PostgreSQL's `calls_select`).
    pub fn kinds(&self) -> Vec<(String, usize)> {
        KINDS
            .iter()
            .filter_map(|(name, pg, my)| {
                let place = self.place(match self.dialect() {
                    Dialect::Postgres => pg,
                    _ => my,
                })?;
                Some((name.to_string(), place))
            })
            .collect()
    }

    /// The counters of committed transactions: `xact_commit`, `commits_derived`
    /// (derived as `MY_DERIVED` in the source says).
    pub fn commits(&self) -> Vec<usize> {
        ["xact_commit", "commits_derived"]
            .iter()
            .filter_map(|n| self.place(n))
            .collect()
    }

    /// This database as the snapshot knows it ([`throng_core::DatabaseInfo`]).
    pub fn info(&self) -> throng_core::DatabaseInfo {
        throng_core::DatabaseInfo {
            name: self.shown().to_string(),
            kind: "Database".into(),
            figures: self.names().iter().map(|n| figure(n)).collect(),
            transactions: self.transactions(),
            commits: self.commits(),
            statements: self.statements(),
            kinds: self.kinds(),
        }
    }

    /// What the first reading found not available, in a line to print once (none when the
    /// server keeps every counter): the counters left out, and on PostgreSQL without
    /// `pg_stat_statements` what enables its statement counts.
    pub fn note(&self) -> Option<String> {
        let missing = self.missing();
        let derived = self.place("transactions_derived").is_some();
        if missing.is_empty() && !derived {
            return None;
        }
        let mut line = format!("--db-stats {}: ", self.shown());
        if derived {
            line.push_str(DERIVED_NOTE);
            if missing.is_empty() {
                return Some(line);
            }
            line.push_str("; ");
        }
        line.push_str(&format!(
            "counters this server does not keep (not available): {}",
            missing.join(", ")
        ));
        if let Some(why) = &self.unavailable {
            line.push_str(&format!(
                "; statements, and statements by kind (selects, inserts, updates, deletes), are \
                 counted by pg_stat_statements, which {why}: to count them, set {ENABLE}"
            ));
        }
        Some(line)
    }

    /// Reads the counters now (connecting first if need be; a lost connection is reopened at
    /// the next call). A database that does not answer within the connect timeout is an error
    /// (its connection is dropped), never a wait without end.
    pub async fn sample(&mut self) -> Result<Sample, ReadError> {
        let limit = self.timeout;
        match tokio::time::timeout(limit, self.read()).await {
            Ok(read) => read,
            Err(_) => {
                self.conn = None;
                Err(ReadError::new(
                    ErrorClass::Timeout,
                    format!(
                        "{}: no answer within {} ms",
                        self.shown(),
                        limit.as_millis()
                    ),
                ))
            }
        }
    }

    /// How long until the database has published what the load did, `loaded` after the
    /// load started and `ended` after it ended (the watch asks again until it is
    /// nothing: [`throng_core::watch::Server::publishes_in`]).
    ///
    /// MySQL's status variables count as statements run: nothing to wait for. PostgreSQL 15
    /// and later keep a backend's counters in the backend until it flushes them, at most once
    /// a second (`PGSTAT_MIN_INTERVAL`) when it goes idle; a backend that flushed less than a
    /// second before its last statement arms a timer then and flushes the rest when it fires,
    /// `PGSTAT_IDLE_INTERVAL` (10 s) later, or when it exits. So the counters are complete
    /// once every other backend of the database that was idle at the end and ran a statement
    /// during the load has been idle 10 s (its timer was armed no later than its last
    /// statement, `pg_stat_activity.state_change`) or has exited: throng's own sessions exit
    /// at the end of the run, a service's pooled connections stay. Before 15 the statistics
    /// collector published every 500 ms and an idle backend's rest waited for its next
    /// statement: 0.6 s is all a wait can give.
    pub async fn flush_wait(
        &mut self,
        loaded: Duration,
        ended: Duration,
    ) -> Result<Duration, String> {
        if self.target.dialect() != Dialect::Postgres {
            return Ok(Duration::ZERO);
        }
        let limit = self.timeout;
        let conn = self.conn().await.map_err(|e| e.message)?;
        let sql: Arc<str> = Arc::from(format!(
            r"{MARK} SELECT current_setting('server_version_num')::int < 150000 AS old,
  COALESCE(ceil(EXTRACT(EPOCH FROM max(state_change) + interval '{IDLE_MS} ms'
    - clock_timestamp()) * 1000), 0)::int8 AS wait_ms
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND backend_type = 'client backend' AND state = 'idle'
  AND state_change > clock_timestamp() - make_interval(secs => {:.3})",
            loaded.as_secs_f64()
        ));
        let done = match tokio::time::timeout(limit, conn.run(&sql, &[], true)).await {
            Ok(Ok(d)) => d,
            Ok(Err(e)) => {
                self.conn = None;
                return Err(self
                    .target
                    .scrub(&crate::failure(&e).message.unwrap_or_default()));
            }
            Err(_) => {
                self.conn = None;
                return Err(format!("{}: no answer", self.shown()));
            }
        };
        let row = done.data.first();
        if row.and_then(|r| r.get("old")).and_then(|v| v.as_bool()) == Some(true) {
            return Ok(Duration::from_millis(600).saturating_sub(ended));
        }
        let ms = row
            .and_then(|r| r.get("wait_ms"))
            .and_then(|v| match v {
                serde_json::Value::Number(n) => n.as_i64(),
                serde_json::Value::String(s) => s.parse().ok(),
                _ => None,
            })
            .unwrap_or(0);
        Ok(Duration::from_millis(ms.max(0) as u64))
    }

    /// The reader's connection, opened if need be.
    async fn conn(&mut self) -> Result<&mut Conn, ReadError> {
        if self.conn.is_none() {
            let c = self.target.connect().await.map_err(|o| {
                let class = o.error.unwrap_or(ErrorClass::Connect);
                ReadError::new(class, o.message.unwrap_or_default())
            })?;
            self.conn = Some(c);
        }
        self.conn
            .as_mut()
            .ok_or_else(|| ReadError::new(ErrorClass::Connect, "no connection"))
    }

    async fn read(&mut self) -> Result<Sample, ReadError> {
        self.conn().await?;
        let names = self.all();
        let first = self.kept.is_none();
        let Some(conn) = self.conn.as_mut() else {
            return Err(ReadError::new(ErrorClass::Connect, "no connection"));
        };
        let sql: Arc<str> = match self.target.dialect() {
            Dialect::Postgres => Arc::from(format!(
                "{MARK} SELECT {} FROM pg_stat_database WHERE datname = current_database()",
                PG[..STATEMENTS].join(", ")
            )),
            _ => Arc::from(format!(
                "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
                MY[..MY_DERIVED]
                    .iter()
                    .map(|n| format!("'{n}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        let by_kind =
            self.target.dialect() == Dialect::Postgres && (first || self.unavailable.is_none());
        let mut statements = None;
        let mysql = self.target.dialect() != Dialect::Postgres;
        let mut events = self.my.events;
        let mut events_count = None;
        let mut own = (0, 0);
        let read = async {
            if mysql && first {
                own = (own.0 + 1, own.1 + 1);
                // A server without performance_schema's tables (or with them off) has no row.
                let on = conn.run(&Arc::from(MY_INSTRUMENT), &[], true).await;
                events = on.is_ok_and(|d| {
                    d.data
                        .first()
                        .and_then(|r| r.get("ENABLED"))
                        .and_then(|v| v.as_str())
                        == Some("YES")
                });
            }
            if mysql && events {
                own = (own.0 + 1, own.1 + 1);
                let done = conn.run(&Arc::from(MY_EVENTS), &[], true).await?;
                events_count = done.data.first().and_then(|r| r.get("COUNT_STAR").cloned());
            }
            own.0 += u64::from(mysql);
            let done = conn.run(&sql, &[], true).await?;
            if by_kind {
                statements = Some(conn.run(&Arc::from(by_kind_sql()), &[], true).await);
            }
            Ok(done)
        };
        let failed = |this: &mut DbStats, e: &crate::error::DbError| {
            this.conn = None;
            let failure = crate::failure(e);
            let message = this.target.scrub(&failure.message.unwrap_or_default());
            ReadError::new(failure.error.unwrap_or(ErrorClass::Other), message)
        };
        let done = read.await;
        self.my.own = (self.my.own.0 + own.0, self.my.own.1 + own.1);
        let done = match done {
            Ok(d) => d,
            Err(e) => return Err(failed(self, &e)),
        };
        let number = |v: &serde_json::Value| match v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        };
        let mut read: Vec<Option<u64>> = vec![None; names.len()];
        match self.target.dialect() {
            Dialect::Postgres => {
                let row = done.data.first().ok_or_else(|| {
                    let m = "pg_stat_database has no row for the database";
                    ReadError::new(ErrorClass::Protocol, m)
                })?;
                for (i, n) in names[..STATEMENTS].iter().enumerate() {
                    read[i] = row.get(*n).and_then(number);
                }
                match statements {
                    Some(Ok(done)) => {
                        let sums = sum_by_kind(&done.data, number);
                        read[STATEMENTS..].copy_from_slice(&sums.map(Some));
                    }
                    Some(Err(e)) => {
                        let status = crate::failure(&e).status;
                        // 42P01: the extension is not created in this database; 55000: it
                        // is, but the server did not load its library at start.
                        let why = match status {
                            s if s == crate::status::state(*b"42P01") => {
                                "is not created in this database"
                            }
                            s if s == crate::status::state(*b"55000") => {
                                "is not in shared_preload_libraries"
                            }
                            _ => return Err(failed(self, &e)),
                        };
                        if !first {
                            return Err(failed(self, &e));
                        }
                        self.unavailable = Some(why.to_string());
                    }
                    None => {}
                }
            }
            _ => {
                for row in &done.data {
                    let name = row.get("Variable_name").and_then(|v| v.as_str());
                    if let Some(i) = names.iter().position(|n| Some(*n) == name) {
                        read[i] = row.get("Value").and_then(number);
                    }
                }
                self.my.events = events;
                // The reader's own statements are counted as they run: left out.
                for (name, mine) in [("Questions", self.my.own.0), ("Com_select", self.my.own.1)] {
                    if let Some(i) = names.iter().position(|n| *n == name) {
                        read[i] = read[i].map(|v| v.saturating_sub(mine));
                    }
                }
                let (t, c) = self.my.add([0, 1, 2, 3].map(|i| read[i].unwrap_or(0)));
                match events {
                    true => {
                        read[MY_DERIVED] =
                            Some(events_count.as_ref().and_then(number).unwrap_or(0));
                    }
                    false => read[MY_DERIVED + 1] = Some(t),
                }
                read[MY_DERIVED + 2] = Some(c);
            }
        }
        let kept = self
            .kept
            .get_or_insert_with(|| (0..names.len()).filter(|&i| read[i].is_some()).collect());
        Ok(kept.iter().map(|&i| read[i].unwrap_or(0)).collect())
    }
}

/// Said when MySQL's transactions are derived ([`MY_DERIVED`]).
const DERIVED_NOTE: &str = "transactions are derived second by second (performance_schema does \
     not count them here): COMMIT and ROLLBACK statements (Com_commit + Com_rollback) where there \
     were any, else autocommit statements (Handler_commit + Handler_rollback); with \
     performance_schema = ON and its 'transaction' instrument enabled they are counted exactly";

/// PostgreSQL's `PGSTAT_IDLE_INTERVAL` (10 s, `pgstat.h`), and 100 ms for the backend to wake
/// and flush: see [`DbStats::flush_wait`].
const IDLE_MS: u64 = 10_100;

/// Whether `performance_schema` counts transactions (its `transaction` instrument).
const MY_INSTRUMENT: &str =
    "SELECT ENABLED FROM performance_schema.setup_instruments WHERE NAME = 'transaction'";

/// `performance_schema`'s count of transactions since the server started.
const MY_EVENTS: &str = "SELECT COUNT_STAR FROM \
     performance_schema.events_transactions_summary_global_by_event_name \
     WHERE EVENT_NAME = 'transaction'";

/// The statement that reads `pg_stat_statements`: its `calls` in the URL's database by the
/// statements' first keyword (after comments and opening parentheses), the reader's own left
/// out; a `WITH` statement's text comes with it, for [`with_kind`] to read its kind.
///
/// Its cost is reading the statements' texts (the extension keeps them in a file): measured on
/// PostgreSQL 15, 16-21 ms a reading with 3,300 distinct statements of 116 kB in all, 65 ms with
/// 3,000 of 8 kB each; without the texts (`pg_stat_statements(false)`) 4 ms, but then every
/// statement's row would cross the wire each second to be told apart here.
fn by_kind_sql() -> String {
    format!(
        r"{MARK} SELECT kind, CASE WHEN kind = 'WITH' THEN query END AS text,
  sum(calls)::int8 AS calls
FROM (SELECT calls, query, upper((regexp_match(query,
    '^(?:\s|/\*(?:[^*]|\*+[^*/])*\*+/|--[^\n]*|\()*([[:alpha:]]+)'))[1]) AS kind
  FROM pg_stat_statements
  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND query NOT LIKE '{MARK}%') s
GROUP BY 1, 2"
    )
}

/// The statement counters from [`by_kind_sql`]'s rows: all calls, then the calls of each of
/// [`KINDS`].
fn sum_by_kind(
    rows: &[serde_json::Value],
    number: impl Fn(&serde_json::Value) -> Option<u64>,
) -> [u64; 5] {
    let mut sums = [0u64; 5];
    for row in rows {
        let calls = row.get("calls").and_then(&number).unwrap_or(0);
        let mut kind = row.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
        if kind == "WITH" {
            kind = row
                .get("text")
                .and_then(|t| t.as_str())
                .and_then(with_kind)
                .unwrap_or_default();
        }
        sums[0] += calls;
        if let Some(k) = ["SELECT", "INSERT", "UPDATE", "DELETE"]
            .iter()
            .position(|w| w.eq_ignore_ascii_case(kind))
        {
            sums[k + 1] += calls;
        }
    }
    sums
}

/// The kind of a `WITH` statement: the first statement keyword outside parentheses after its
/// common table expressions (`WITH a AS (SELECT ...) DELETE FROM t ...` is a DELETE), quotes
/// and comments skipped.
fn with_kind(text: &str) -> Option<&'static str> {
    const MAIN: [&str; 7] = [
        "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES", "TABLE",
    ];
    let b = text.as_bytes();
    let (mut i, mut depth, mut seen_with) = (0, 0usize, false);
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                let word = &text[start..i];
                if depth > 0 {
                    continue;
                }
                if !seen_with {
                    seen_with = word.eq_ignore_ascii_case("WITH");
                    if !seen_with {
                        return None;
                    }
                } else if let Some(k) = MAIN.iter().find(|k| k.eq_ignore_ascii_case(word)) {
                    return Some(k);
                }
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_with_statement_is_of_its_main_statement_s_kind() {
        for (text, kind) in [
            ("WITH a AS (SELECT 1) SELECT * FROM a", Some("SELECT")),
            (
                "WITH a AS (SELECT $1 AS x), b AS (UPDATE t SET v = v + $2 RETURNING id) \
                 DELETE FROM t WHERE id IN (SELECT x FROM a)",
                Some("DELETE"),
            ),
            (
                "with recursive \"t(\" (n) as materialized (values (1) union all select n + 1 \
                 from \"t(\" where n < 5) -- ( select\n/* ) update */ insert into u select n from \"t(\"",
                Some("INSERT"),
            ),
            ("WITH a AS (DELETE FROM t RETURNING *) UPDATE u SET x = 1", Some("UPDATE")),
            ("SELECT 1", None),
            ("WITH a AS (SELECT 1", None),
        ] {
            assert_eq!(with_kind(text), kind, "{text}");
        }
    }

    #[test]
    fn calls_add_up_by_kind_and_in_all() {
        let rows = serde_json::json!([
            {"kind": "SELECT", "text": null, "calls": 7},
            {"kind": "INSERT", "text": null, "calls": "3"},
            {"kind": "BEGIN", "text": null, "calls": 4},
            {"kind": "WITH", "text": "WITH a AS (SELECT 1) UPDATE t SET x = 1", "calls": 2},
            {"kind": "WITH", "text": "WITH a AS (SELECT 1) SELECT 2", "calls": 1},
            {"kind": null, "text": null, "calls": 1},
            {"kind": "delete", "text": null, "calls": 5},
        ]);
        let number = |v: &serde_json::Value| match v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        };
        let rows = rows.as_array().unwrap();
        assert_eq!(sum_by_kind(rows, number), [23, 8, 3, 2, 5]);
    }
}
