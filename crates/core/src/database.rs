//! A watched server's own figures (a database's with `--db-stats`, a broker's with its
//! monitor flag), read once a second by the protocol crate that speaks to the server
//! ([`crate::watch`]); the aggregator keeps them in the snapshot beside the latency, as it keeps
//! containers' readings. Here they are named numbers, each saying what it is ([`Figure`]: a
//! label, a unit, a counter or a gauge), so the reports print what a server reported and
//! nothing else. A database also says which of its counters are its transactions and
//! statements; a server that names none has none shown.
//!
//! The types keep the name of their first user (`Database...`): the result's JSON calls the
//! list `databases`, and renaming it would break every reader of schema 3 for no figure gained.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a figure reads over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A running total the server keeps (messages received since it started): shown as its
    /// rate idle and under the load, and its increase over the load.
    #[default]
    Counter,
    /// A level read at each reading (connections open, messages queued): shown as its
    /// minimum, mean and maximum under the load, and its last reading.
    Gauge,
}

/// One figure a watched server reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figure {
    /// Its name, as the server names it (`xact_commit`, `in_msgs`): the key in the result.
    pub name: String,
    /// What it is, for people (`messages received`).
    pub label: String,
    /// What it counts or measures (`messages`, `bytes`, `connections`).
    pub unit: String,
    /// A counter or a gauge.
    pub kind: FigureKind,
}

impl Figure {
    /// A counter `name`: `label`, in `unit`.
    pub fn counter(name: &str, label: &str, unit: &str) -> Figure {
        Figure {
            name: name.into(),
            label: label.into(),
            unit: unit.into(),
            kind: FigureKind::Counter,
        }
    }

    /// A gauge `name`: `label`, in `unit`.
    pub fn gauge(name: &str, label: &str, unit: &str) -> Figure {
        Figure {
            kind: FigureKind::Gauge,
            ..Figure::counter(name, label, unit)
        }
    }
}

/// What is known of one watched server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseInfo {
    /// The server (a database's URL, password hidden; a broker's monitoring URL).
    pub name: String,
    /// What it is, for a heading (`Database`, `Broker`).
    pub kind: String,
    /// Its figures, in the order of each reading's values.
    pub figures: Vec<Figure>,
    /// A database's: the counters whose sum is its transactions (committed and rolled back);
    /// empty for a server that has none.
    pub transactions: Vec<usize>,
    /// A database's: the counters whose sum is its committed transactions.
    pub commits: Vec<usize>,
    /// A database's: the counter of its statements, if it keeps one (MySQL's `Questions`).
    pub statements: Option<usize>,
    /// A database's statements by kind, where it counts them: each kind's name, the same on
    /// every database (`selects`, `inserts`, `updates`, `deletes`), and its counter.
    pub kinds: Vec<(String, usize)>,
}

impl DatabaseInfo {
    /// What the server's readings are best summed up by, for a line of its own (the
    /// dashboard's): its transactions where it has them, else its first counter; the name
    /// and the counters to sum. `None` for a server of gauges only.
    pub fn headline(&self) -> Option<(&str, Vec<usize>)> {
        if !self.transactions.is_empty() {
            return Some(("transactions", self.transactions.clone()));
        }
        let i = self
            .figures
            .iter()
            .position(|f| f.kind == FigureKind::Counter)?;
        Some((&self.figures[i].name, vec![i]))
    }
}

/// One reading of one server's figures.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct DatabaseSample {
    /// Seconds since the start of the load; negative for idle readings taken before it.
    pub t: f64,
    /// The counters' values (cumulative, as the database keeps them), in the counters' order.
    pub values: Vec<u64>,
}

/// What the watch of servers sends to the aggregator.
#[derive(Debug, Clone, PartialEq)]
pub enum DatabaseEvent {
    /// A server is being watched (sent once per server, before its readings; servers are
    /// numbered in the order of these events, from 0).
    Info(DatabaseInfo),
    /// A reading of the server with this number.
    Sample(usize, DatabaseSample),
    /// The readings of the server with this number that failed, sent once after its last
    /// reading when any did.
    Failed(usize, ReadFailures),
}

/// The readings of a watched server that failed (its monitor refused, did not answer in time,
/// answered an error): kept beside its figures, so a server without figures says why, and one
/// with a gap in its readings says where it came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadFailures {
    /// Readings tried: the idle window's, the load's and the last one after it.
    pub tries: u64,
    /// Of them, those that failed.
    pub failed: u64,
    /// The failures by class (`connect`, `timeout`, `status`, `protocol`, ...).
    pub by_class: std::collections::BTreeMap<String, u64>,
    /// What the first failure said (passwords hidden).
    pub first: String,
}

/// A watched server and every reading taken of it (one a second: small, however long the run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseSeries {
    /// The server.
    pub info: DatabaseInfo,
    /// Its readings in time order, idle ones (negative `t`) first.
    pub samples: Vec<DatabaseSample>,
    /// Its readings that failed, once the last one was taken; `None` when none did.
    pub failures: Option<ReadFailures>,
}

impl DatabaseSeries {
    /// The sum of the counters at `ix` in a reading.
    pub fn sum(s: &DatabaseSample, ix: &[usize]) -> u64 {
        ix.iter().filter_map(|&i| s.values.get(i)).sum()
    }

    /// Transactions per second between the last two readings (0 before there are two).
    pub fn transactions_per_s(&self) -> f64 {
        self.last_rate(&self.info.transactions)
    }

    /// The [`DatabaseInfo::headline`] per second between the last two readings.
    pub fn headline_per_s(&self) -> Option<f64> {
        self.info.headline().map(|(_, ix)| self.last_rate(&ix))
    }

    /// Statements per second between the last two readings, when the database counts them.
    pub fn statements_per_s(&self) -> Option<f64> {
        self.info.statements.map(|i| self.last_rate(&[i]))
    }

    /// Transactions in each second between consecutive readings, the last `n`.
    pub fn transactions_series(&self, n: usize) -> Vec<u64> {
        self.series(&self.info.transactions, n)
    }

    /// The sum of the counters at `ix` in each second between consecutive readings, the last
    /// `n`.
    pub fn series(&self, ix: &[usize], n: usize) -> Vec<u64> {
        let deltas = self
            .samples
            .windows(2)
            .map(|w| Self::sum(&w[1], ix).saturating_sub(Self::sum(&w[0], ix)));
        let all: Vec<u64> = deltas.collect();
        all[all.len().saturating_sub(n)..].to_vec()
    }

    fn last_rate(&self, ix: &[usize]) -> f64 {
        match self.samples.as_slice() {
            [.., a, b] if b.t > a.t => {
                Self::sum(b, ix).saturating_sub(Self::sum(a, ix)) as f64 / (b.t - a.t)
            }
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_from_the_last_two_readings() {
        let s = |t: f64, v: [u64; 3]| DatabaseSample {
            t,
            values: v.to_vec(),
        };
        let d = DatabaseSeries {
            info: DatabaseInfo {
                name: "db".into(),
                kind: "Database".into(),
                figures: ["commit", "rollback", "questions"]
                    .map(|n| Figure::counter(n, n, "statements"))
                    .to_vec(),
                transactions: vec![0, 1],
                commits: vec![0],
                statements: Some(2),
                kinds: Vec::new(),
            },
            samples: vec![
                s(-1.0, [10, 0, 100]),
                s(0.0, [12, 1, 130]),
                s(2.0, [52, 1, 530]),
            ],
            failures: None,
        };
        assert_eq!(d.transactions_per_s(), 20.0);
        assert_eq!(d.statements_per_s(), Some(200.0));
        assert_eq!(d.transactions_series(5), vec![3, 40]);
        assert_eq!(d.transactions_series(1), vec![40]);
    }
}
