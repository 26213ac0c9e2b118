//! A database's own counters (`--db-stats`): PostgreSQL's `pg_stat_database` for the URL's
//! database, MySQL/MariaDB's `SHOW GLOBAL STATUS`. Read over a connection of their own, apart
//! from the load's, so a load's transactions can be set beside the database's.

use std::sync::Arc;
use std::time::Duration;

use crate::conn::{Conn, Target};
use crate::url::Dialect;

/// PostgreSQL's counters, as `pg_stat_database` names them.
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
];

/// MySQL's and MariaDB's, as `SHOW GLOBAL STATUS` names them: transactions, the storage
/// engines' commits, statements (all, then by kind), rows. MariaDB (10.11) keeps no
/// `Innodb_rows_*`: counters a server does not keep are left out (see [`DbStats::missing`]),
/// never shown as 0.
///
/// No counter of MySQL's means what PostgreSQL's `xact_commit` means (every committed
/// transaction, an autocommit statement's too): `Com_commit` counts COMMIT statements only, and
/// `Handler_commit` (measured on MariaDB 10.11) one for each autocommit statement on a table,
/// but inside BEGIN ... COMMIT one for each statement on a table and one for the COMMIT (3 for
/// BEGIN, a SELECT, an UPDATE, COMMIT). The transactions are `Com_commit` and `Com_rollback`;
/// `Handler_commit` is shown beside them for a load of autocommit statements.
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
];

/// Samples one database's counters.
pub struct DbStats {
    target: Target,
    conn: Option<Conn>,
    timeout: Duration,
    /// The counters this server keeps (their places in [`PG`] or [`MY`]), known from the
    /// first reading.
    kept: Option<Vec<usize>>,
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
        self.all()
            .iter()
            .filter(|n| !kept.contains(*n))
            .copied()
            .collect()
    }

    fn place(&self, name: &str) -> Option<usize> {
        self.names().iter().position(|n| *n == name)
    }

    /// The counters whose sum is the database's transactions (committed and rolled back):
    /// `xact_commit` and `xact_rollback`, `Com_commit` and `Com_rollback`.
    pub fn transactions(&self) -> Vec<usize> {
        ["xact_commit", "xact_rollback", "Com_commit", "Com_rollback"]
            .iter()
            .filter_map(|n| self.place(n))
            .collect()
    }

    /// The counter whose delta is the database's statements, if it keeps one (MySQL's
    /// `Questions`; PostgreSQL counts no statements without an extension).
    pub fn statements(&self) -> Option<usize> {
        self.place("Questions")
    }

    /// This database as the snapshot knows it ([`throng_core::DatabaseInfo`]).
    pub fn info(&self) -> throng_core::DatabaseInfo {
        throng_core::DatabaseInfo {
            name: self.shown().to_string(),
            counters: self.names().iter().map(|n| n.to_string()).collect(),
            transactions: self.transactions(),
            statements: self.statements(),
        }
    }

    /// Reads the counters now (connecting first if need be; a lost connection is reopened at
    /// the next call). A database that does not answer within the connect timeout is an error
    /// (its connection is dropped), never a wait without end.
    pub async fn sample(&mut self) -> Result<Sample, String> {
        let limit = self.timeout;
        match tokio::time::timeout(limit, self.read()).await {
            Ok(read) => read,
            Err(_) => {
                self.conn = None;
                Err(format!(
                    "{}: no answer within {} ms",
                    self.shown(),
                    limit.as_millis()
                ))
            }
        }
    }

    async fn read(&mut self) -> Result<Sample, String> {
        if self.conn.is_none() {
            let c = self
                .target
                .connect()
                .await
                .map_err(|o| o.message.unwrap_or_default())?;
            self.conn = Some(c);
        }
        let names = self.all();
        let Some(conn) = self.conn.as_mut() else {
            return Err("no connection".into());
        };
        let sql: Arc<str> = match self.target.dialect() {
            Dialect::Postgres => Arc::from(format!(
                "SELECT {} FROM pg_stat_database WHERE datname = current_database()",
                PG.join(", ")
            )),
            _ => Arc::from(format!(
                "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
                MY.iter()
                    .map(|n| format!("'{n}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        let done = match conn.run(&sql, &[], true).await {
            Ok(d) => d,
            Err(e) => {
                self.conn = None;
                return Err(self
                    .target
                    .scrub(&crate::failure(&e).message.unwrap_or_default()));
            }
        };
        let number = |v: &serde_json::Value| match v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        };
        let mut read: Vec<Option<u64>> = vec![None; names.len()];
        match self.target.dialect() {
            Dialect::Postgres => {
                let row = done
                    .data
                    .first()
                    .ok_or("pg_stat_database has no row for the database")?;
                for (i, n) in names.iter().enumerate() {
                    read[i] = row.get(*n).and_then(number);
                }
            }
            _ => {
                for row in &done.data {
                    let name = row.get("Variable_name").and_then(|v| v.as_str());
                    if let Some(i) = names.iter().position(|n| Some(*n) == name) {
                        read[i] = row.get("Value").and_then(number);
                    }
                }
            }
        }
        let kept = self
            .kept
            .get_or_insert_with(|| (0..names.len()).filter(|&i| read[i].is_some()).collect());
        Ok(kept.iter().map(|&i| read[i].unwrap_or(0)).collect())
    }
}
