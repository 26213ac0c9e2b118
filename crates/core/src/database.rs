//! A database's own counters (`--db-stats`), read once a second by the protocol crate that
//! speaks to the database; the aggregator keeps them in the snapshot beside the latency, as it
//! keeps containers' readings. Here they are only named numbers: which counters exist, and
//! which of them are transactions and statements, is the reader's business.

/// What is known of one watched database.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseInfo {
    /// The database (its URL, password hidden).
    pub name: String,
    /// The counters' names, as the database names them (`xact_commit`, `Com_commit`).
    pub counters: Vec<String>,
    /// The counters whose sum is the database's transactions (committed and rolled back).
    pub transactions: Vec<usize>,
    /// The counters whose sum is its committed transactions.
    pub commits: Vec<usize>,
    /// The counter of the database's statements, if it keeps one (MySQL's `Questions`).
    pub statements: Option<usize>,
    /// Its statements by kind, where it counts them: each kind's name, the same on every
    /// database (`selects`, `inserts`, `updates`, `deletes`), and its counter.
    pub kinds: Vec<(String, usize)>,
}

/// One reading of one database's counters.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct DatabaseSample {
    /// Seconds since the start of the load; negative for idle readings taken before it.
    pub t: f64,
    /// The counters' values (cumulative, as the database keeps them), in the counters' order.
    pub values: Vec<u64>,
}

/// What the database monitor sends to the aggregator.
#[derive(Debug, Clone, PartialEq)]
pub enum DatabaseEvent {
    /// A database is being watched (sent once per database, before its readings; databases
    /// are numbered in the order of these events, from 0).
    Info(DatabaseInfo),
    /// A reading of the database with this number.
    Sample(usize, DatabaseSample),
}

/// A watched database and every reading taken of it (one a second: small, however long the run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseSeries {
    /// The database.
    pub info: DatabaseInfo,
    /// Its readings in time order, idle ones (negative `t`) first.
    pub samples: Vec<DatabaseSample>,
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

    /// Statements per second between the last two readings, when the database counts them.
    pub fn statements_per_s(&self) -> Option<f64> {
        self.info.statements.map(|i| self.last_rate(&[i]))
    }

    /// Transactions in each second between consecutive readings, the last `n`.
    pub fn transactions_series(&self, n: usize) -> Vec<u64> {
        let ix = &self.info.transactions;
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
                counters: vec!["commit".into(), "rollback".into(), "questions".into()],
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
        };
        assert_eq!(d.transactions_per_s(), 20.0);
        assert_eq!(d.statements_per_s(), Some(200.0));
        assert_eq!(d.transactions_series(5), vec![3, 40]);
        assert_eq!(d.transactions_series(1), vec![40]);
    }
}
