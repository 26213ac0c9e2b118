//! sysbench's OLTP workloads, statement for statement (sysbench 1.0.20, `oltp_common.lua`):
//! the same tables (`sbtestN`: id, k, c CHAR(120), pad CHAR(60), an index on k), the same
//! statements with the same parameters, and the same number of statements per transaction
//! (point select 1, read only 16, write only 6, read write 20, insert 1, BEGIN and COMMIT
//! counted as sysbench counts them). Ids are drawn from sysbench's distributions
//! ([`RandType`]), `special` by default as in sysbench 1.0.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use crate::conn::Conn;
pub use crate::dist::RandType;
use crate::error::DbError;
use crate::param::{digits, Value};
use crate::url::Dialect;

/// sysbench's template of `c`: ten groups of eleven digits.
const C: &str = "###########-###########-###########-###########-###########-\
                 ###########-###########-###########-###########-###########";
/// sysbench's template of `pad`: five groups of eleven digits.
const PAD: &str = "###########-###########-###########-###########-###########";

/// A workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// One point select per transaction, no BEGIN/COMMIT.
    PointSelect,
    /// BEGIN, 10 point selects, 4 range selects, COMMIT.
    ReadOnly,
    /// BEGIN, an index update, a non-index update, a delete and an insert, COMMIT.
    WriteOnly,
    /// The read-only body then the write-only body in one transaction.
    ReadWrite,
    /// One insert with a new id, no BEGIN/COMMIT.
    Insert,
}

impl Workload {
    /// Every workload and its name.
    pub const ALL: [(Workload, &'static str); 5] = [
        (Workload::PointSelect, "oltp_point_select"),
        (Workload::ReadOnly, "oltp_read_only"),
        (Workload::WriteOnly, "oltp_write_only"),
        (Workload::ReadWrite, "oltp_read_write"),
        (Workload::Insert, "oltp_insert"),
    ];

    /// The workload of a name (`oltp_read_only`).
    pub fn named(name: &str) -> Option<Workload> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(w, _)| *w)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(w, _)| *w == self)
            .map_or("oltp", |(_, n)| n)
    }

    /// Whether a transaction wraps each event.
    pub fn transaction(self) -> bool {
        matches!(
            self,
            Workload::ReadOnly | Workload::WriteOnly | Workload::ReadWrite
        )
    }

    /// The steps of one event: a kind of statement and how many of it.
    pub fn steps(self) -> Vec<(Kind, u32)> {
        let read = [
            (Kind::PointSelects, 10),
            (Kind::SimpleRanges, 1),
            (Kind::SumRanges, 1),
            (Kind::OrderRanges, 1),
            (Kind::DistinctRanges, 1),
        ];
        let write = [
            (Kind::IndexUpdates, 1),
            (Kind::NonIndexUpdates, 1),
            (Kind::Deletes, 1),
            (Kind::Inserts, 1),
        ];
        match self {
            Workload::PointSelect => vec![(Kind::PointSelects, 1)],
            Workload::ReadOnly => read.to_vec(),
            Workload::WriteOnly => write.to_vec(),
            Workload::ReadWrite => read.iter().chain(write.iter()).copied().collect(),
            Workload::Insert => vec![(Kind::Insert, 1)],
        }
    }
}

/// The tables a workload runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OltpOptions {
    /// Tables `sbtest1` to `sbtestN`.
    pub tables: u32,
    /// Rows in each.
    pub table_size: u32,
    /// Rows a range select spans.
    pub range_size: u32,
    /// How ids are drawn (`--rand-type`).
    pub rand: RandType,
}

impl Default for OltpOptions {
    fn default() -> Self {
        OltpOptions {
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            rand: RandType::default(),
        }
    }
}

/// A kind of statement of the workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `SELECT c FROM sbtest%u WHERE id=?`
    PointSelects,
    /// `SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ?`
    SimpleRanges,
    /// `SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN ? AND ?`
    SumRanges,
    /// `SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c`
    OrderRanges,
    /// `SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c`
    DistinctRanges,
    /// `UPDATE sbtest%u SET k=k+1 WHERE id=?`
    IndexUpdates,
    /// `UPDATE sbtest%u SET c=? WHERE id=?`
    NonIndexUpdates,
    /// `DELETE FROM sbtest%u WHERE id=?`
    Deletes,
    /// `INSERT INTO sbtest%u (id, k, c, pad) VALUES (?, ?, ?, ?)`, the deleted id again.
    Inserts,
    /// oltp_insert's insert of a new row (the database picks the id).
    Insert,
}

impl Kind {
    /// The row label (sysbench's option name).
    pub fn label(self) -> &'static str {
        match self {
            Kind::PointSelects => "point_selects",
            Kind::SimpleRanges => "simple_ranges",
            Kind::SumRanges => "sum_ranges",
            Kind::OrderRanges => "order_ranges",
            Kind::DistinctRanges => "distinct_ranges",
            Kind::IndexUpdates => "index_updates",
            Kind::NonIndexUpdates => "non_index_updates",
            Kind::Deletes => "deletes",
            Kind::Inserts => "inserts",
            Kind::Insert => "insert",
        }
    }

    /// The statement on table `t`, with the dialect's placeholders.
    pub fn sql(self, dialect: Dialect, t: u32) -> String {
        let text = match self {
            Kind::PointSelects => "SELECT c FROM sbtest%u WHERE id=?",
            Kind::SimpleRanges => "SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ?",
            Kind::SumRanges => "SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN ? AND ?",
            Kind::OrderRanges => "SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c",
            Kind::DistinctRanges => {
                "SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c"
            }
            Kind::IndexUpdates => "UPDATE sbtest%u SET k=k+1 WHERE id=?",
            Kind::NonIndexUpdates => "UPDATE sbtest%u SET c=? WHERE id=?",
            Kind::Deletes => "DELETE FROM sbtest%u WHERE id=?",
            Kind::Inserts => "INSERT INTO sbtest%u (id, k, c, pad) VALUES (?, ?, ?, ?)",
            Kind::Insert => match dialect {
                // sysbench: id 0 asks MySQL's AUTO_INCREMENT for the next one.
                Dialect::MySql => "INSERT INTO sbtest%u (id, k, c, pad) VALUES (0, ?, ?, ?)",
                Dialect::Postgres | Dialect::Sqlite => {
                    "INSERT INTO sbtest%u (k, c, pad) VALUES (?, ?, ?)"
                }
            },
        };
        placeholders(dialect, &text.replace("%u", &t.to_string()))
    }

    /// The parameters of one execution; `pair` carries a delete's table and id to its insert.
    pub fn args<R: Rng>(
        self,
        rng: &mut R,
        o: &OltpOptions,
        pair: &mut (u32, i64),
        out: &mut Vec<Value>,
    ) {
        out.clear();
        let id = |rng: &mut R| i64::from(o.rand.draw(rng, 1, o.table_size.max(1)));
        match self {
            Kind::PointSelects | Kind::IndexUpdates => out.push(Value::Int(id(rng))),
            Kind::SimpleRanges | Kind::SumRanges | Kind::OrderRanges | Kind::DistinctRanges => {
                let lo = id(rng);
                out.push(Value::Int(lo));
                out.push(Value::Int(lo + i64::from(o.range_size) - 1));
            }
            Kind::NonIndexUpdates => {
                out.push(Value::Text(digits(rng, C)));
                out.push(Value::Int(id(rng)));
            }
            Kind::Deletes => {
                pair.1 = id(rng);
                out.push(Value::Int(pair.1));
            }
            Kind::Inserts => {
                out.push(Value::Int(pair.1));
                out.push(Value::Int(id(rng)));
                out.push(Value::Text(digits(rng, C)));
                out.push(Value::Text(digits(rng, PAD)));
            }
            Kind::Insert => {
                out.push(Value::Int(id(rng)));
                out.push(Value::Text(digits(rng, C)));
                out.push(Value::Text(digits(rng, PAD)));
            }
        }
    }
}

/// `?` placeholders as the dialect writes them (`$1`, `$2` for PostgreSQL).
fn placeholders(dialect: Dialect, sql: &str) -> String {
    let mut n = 0;
    let mut out = String::with_capacity(sql.len() + 8);
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&dialect.placeholder(n));
        } else {
            out.push(c);
        }
    }
    out
}

/// The statements of `kind` for every table (index 0 is `sbtest1`).
pub fn statements(kind: Kind, dialect: Dialect, tables: u32) -> Vec<Arc<str>> {
    (1..=tables.max(1))
        .map(|t| Arc::from(kind.sql(dialect, t)))
        .collect()
}

/// Runs `sql` unprepared, failing when the database does not answer within `timeout` (a lock
/// another session holds on the table would otherwise hold `throng sql prepare` forever).
async fn within(conn: &mut Conn, sql: &str, timeout: Duration) -> Result<(), DbError> {
    match tokio::time::timeout(timeout, conn.raw(sql)).await {
        Ok(done) => done,
        Err(_) => Err(DbError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "`{}` got no answer within {timeout:?} (-t/--timeout): a lock held on the \
                 table?",
                sql.split_whitespace().take(5).collect::<Vec<_>>().join(" ")
            ),
        ))),
    }
}

/// Creates and fills `sbtest1..N` as sysbench's `prepare` does, each statement within
/// `timeout`; `progress` hears of each table.
pub async fn prepare(
    conn: &mut Conn,
    dialect: Dialect,
    o: &OltpOptions,
    timeout: Duration,
    mut progress: impl FnMut(u32),
) -> Result<(), DbError> {
    let mut rng = rand::rng();
    for t in 1..=o.tables {
        let create = match dialect {
            Dialect::Postgres => format!(
                "CREATE TABLE sbtest{t}(id SERIAL, k INTEGER DEFAULT '0' NOT NULL, \
                 c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))"
            ),
            Dialect::MySql => format!(
                "CREATE TABLE sbtest{t}(id INTEGER NOT NULL AUTO_INCREMENT, \
                 k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, \
                 pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) /*! ENGINE = innodb */"
            ),
            Dialect::Sqlite => format!(
                "CREATE TABLE sbtest{t}(id INTEGER PRIMARY KEY AUTOINCREMENT, \
                 k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, \
                 pad CHAR(60) DEFAULT '' NOT NULL)"
            ),
        };
        within(conn, &create, timeout).await?;
        within(conn, "BEGIN", timeout).await?;
        let mut left = o.table_size;
        while left > 0 {
            let n = left.min(1000);
            left -= n;
            // The values are digits and dashes made here: literal text is safe, and one
            // statement of a thousand rows loads far faster than a thousand binds.
            let rows: Vec<String> = (0..n)
                .map(|_| {
                    format!(
                        "({}, '{}', '{}')",
                        o.rand.draw(&mut rng, 1, o.table_size),
                        digits(&mut rng, C),
                        digits(&mut rng, PAD)
                    )
                })
                .collect();
            let insert = format!("INSERT INTO sbtest{t}(k, c, pad) VALUES {}", rows.join(","));
            within(conn, &insert, timeout).await?;
        }
        within(conn, "COMMIT", timeout).await?;
        within(
            conn,
            &format!("CREATE INDEX k_{t} ON sbtest{t}(k)"),
            timeout,
        )
        .await?;
        progress(t);
    }
    Ok(())
}

/// Drops `sbtest1..N` (those that exist), each within `timeout`.
pub async fn cleanup(conn: &mut Conn, tables: u32, timeout: Duration) -> Result<(), DbError> {
    for t in 1..=tables {
        within(conn, &format!("DROP TABLE IF EXISTS sbtest{t}"), timeout).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statements per event, BEGIN and COMMIT included, as sysbench counts its queries.
    #[test]
    fn statement_counts_per_transaction_are_sysbenchs() {
        for (w, n) in [
            (Workload::PointSelect, 1),
            (Workload::ReadOnly, 16),
            (Workload::WriteOnly, 6),
            (Workload::ReadWrite, 20),
            (Workload::Insert, 1),
        ] {
            let body: u32 = w.steps().iter().map(|(_, k)| k).sum();
            let trx = if w.transaction() { 2 } else { 0 };
            assert_eq!(body + trx, n, "{}", w.name());
        }
    }

    #[test]
    fn statements_in_each_dialect() {
        assert_eq!(
            Kind::SimpleRanges.sql(Dialect::Postgres, 3),
            "SELECT c FROM sbtest3 WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(
            Kind::Inserts.sql(Dialect::MySql, 1),
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)"
        );
        let mut rng = rand::rng();
        let (mut pair, mut args) = ((0, 0), Vec::new());
        let o = OltpOptions::default();
        Kind::Deletes.args(&mut rng, &o, &mut pair, &mut args);
        let deleted = args[0].clone();
        Kind::Inserts.args(&mut rng, &o, &mut pair, &mut args);
        assert_eq!(args[0], deleted, "the insert puts back the deleted id");
        match &args[2] {
            Value::Text(c) => assert_eq!(c.len(), 119),
            other => panic!("{other:?}"),
        }
    }
}
