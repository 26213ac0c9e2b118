//! A database's own counters in the result (`--db-stats`): what the database says it did while
//! idle and under the load, beside what the load says it sent, so a service test shows how many
//! database transactions each of its requests costs. The counters are read by the protocol
//! crate that speaks to the database; here they are only numbers with names.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One database's counters over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DatabaseResult {
    /// The database (its URL, password hidden).
    pub name: String,
    /// Seconds of the idle window read before the load.
    pub idle_seconds: f64,
    /// Seconds of the load the rates are over.
    pub load_seconds: f64,
    /// Requests of the load (for the per-request figures).
    pub requests: u64,
    /// The database's transactions (committed and rolled back) per second: idle, under load.
    pub transactions: Rates,
    /// The database's statements per second, when it counts them (MySQL's `Questions`).
    pub statements: Option<Rates>,
    /// Every counter read.
    pub counters: Vec<CounterResult>,
}

/// A rate at idle and under load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rates {
    /// Per second before the load.
    pub idle_per_s: f64,
    /// Per second under the load.
    pub load_per_s: f64,
    /// Its increase over the load.
    pub load_total: u64,
    /// The increase per request of the load (0 without requests).
    pub per_request: f64,
}

/// One counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterResult {
    /// Its name, as the database names it (`xact_commit`, `Com_commit`).
    pub name: String,
    /// Its rates.
    #[serde(flatten)]
    pub rates: Rates,
}

impl Rates {
    /// The rates of a counter read at the idle window's start and end and after the load.
    pub fn of(
        start: u64,
        before: u64,
        after: u64,
        idle_s: f64,
        load_s: f64,
        requests: u64,
    ) -> Rates {
        let total = after.saturating_sub(before);
        Rates {
            idle_per_s: before.saturating_sub(start) as f64 / idle_s.max(1e-9),
            load_per_s: total as f64 / load_s.max(1e-9),
            load_total: total,
            per_request: match requests {
                0 => 0.0,
                n => total as f64 / n as f64,
            },
        }
    }
}

/// The databases' section of the summary (empty without any).
pub fn render_databases(dbs: &[DatabaseResult]) -> String {
    let mut out = String::new();
    for d in dbs {
        let _ = writeln!(
            out,
            "Database {}: its own counters, idle {:.1} s before the load, load {:.1} s",
            d.name, d.idle_seconds, d.load_seconds
        );
        let _ = write!(
            out,
            "  transactions/s  idle {:.1}  load {:.1}",
            d.transactions.idle_per_s, d.transactions.load_per_s
        );
        if let Some(s) = &d.statements {
            let _ = write!(
                out,
                "   statements/s  idle {:.1}  load {:.1}",
                s.idle_per_s, s.load_per_s
            );
        }
        if d.requests > 0 {
            let _ = write!(
                out,
                "   database transactions per request of the load: {:.2}",
                d.transactions.per_request
            );
        }
        let _ = writeln!(
            out,
            "\n  {:<22} {:>12} {:>12} {:>14} {:>12}",
            "counter", "idle/s", "load/s", "load total", "per request"
        );
        for c in &d.counters {
            let per = match d.requests {
                0 => "-".to_string(),
                _ => format!("{:.2}", c.rates.per_request),
            };
            let _ = writeln!(
                out,
                "  {:<22} {:>12.1} {:>12.1} {:>14} {per:>12}",
                c.name, c.rates.idle_per_s, c.rates.load_per_s, c.rates.load_total
            );
        }
    }
    out
}
