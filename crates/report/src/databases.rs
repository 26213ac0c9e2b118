//! A database's own counters in the result (`--db-stats`): what the database says it did while
//! idle and under the load, beside what the load says it sent, so a service test shows how many
//! database transactions each of its requests costs. The counters are read once a second by
//! the protocol crate that speaks to the database; here they are only numbers with names.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use throng_core::{DatabaseSample, DatabaseSeries};

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
    /// The database's committed transactions (PostgreSQL's `xact_commit`, MySQL's
    /// `Com_commit`); absent from results of throng before it told them apart.
    #[serde(default)]
    pub committed: Option<Rates>,
    /// The database's statements per second, when it counts them (MySQL's `Questions`,
    /// PostgreSQL's `calls` of `pg_stat_statements`).
    pub statements: Option<Rates>,
    /// Its statements by kind, named the same on every database (`selects`, `inserts`,
    /// `updates`, `deletes`): MySQL's `Com_select` ..., PostgreSQL's `pg_stat_statements` calls
    /// by the statement's kind. Empty where the database does not count them (PostgreSQL
    /// without `pg_stat_statements`): not available, never 0.
    #[serde(default)]
    pub statements_by_kind: Vec<CounterResult>,
    /// The run's flows (its groups of steps, a mix's flows), each with the database's
    /// transactions per completed pass; empty for a run without flows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowCost>,
    /// The database's transactions in each second of the load (from its readings), when it
    /// was read at least twice from the load's start.
    #[serde(default)]
    pub transactions_per_second: Option<Spread>,
    /// Every counter read.
    pub counters: Vec<CounterResult>,
    /// Every reading, once a second: idle ones first (negative `t`: seconds before the load
    /// started), the last one after the load; values in the order of `counters`, as the
    /// database keeps them (totals since it started). Absent from results of throng before
    /// it read databases once a second.
    #[serde(default)]
    pub samples: Vec<DatabaseSample>,
}

/// The database's transactions per completed pass of one flow: its transactions over the load
/// divided by the flow's passes, so the cost of one flow where every iteration is that flow (a
/// mix's flows share one database, which cannot tell them apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowCost {
    /// The flow (its row's label).
    pub flow: String,
    /// Its passes that ended during the load (succeeded or failed; not aborted).
    pub completed: u64,
    /// The database's transactions (committed and rolled back) per completed pass.
    pub transactions: f64,
    /// The database's committed transactions per completed pass, where it tells them apart.
    pub committed: Option<f64>,
}

/// How a per-second rate spread over the readings of the load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// Intervals between readings it is over.
    pub intervals: usize,
    /// The median of the intervals' rates, per second.
    pub median: f64,
    /// The highest interval's rate, per second.
    pub max: f64,
}

impl Spread {
    /// The spread of the rate of the counters at `ix` between consecutive readings.
    fn of(samples: &[DatabaseSample], ix: &[usize]) -> Option<Spread> {
        let mut rates: Vec<f64> = samples
            .windows(2)
            .filter(|w| w[1].t > w[0].t)
            .map(|w| {
                let d =
                    DatabaseSeries::sum(&w[1], ix).saturating_sub(DatabaseSeries::sum(&w[0], ix));
                d as f64 / (w[1].t - w[0].t)
            })
            .collect();
        if rates.is_empty() {
            return None;
        }
        rates.sort_by(f64::total_cmp);
        let n = rates.len();
        let median = match n % 2 {
            1 => rates[n / 2],
            _ => (rates[n / 2 - 1] + rates[n / 2]) / 2.0,
        };
        Some(Spread {
            intervals: n,
            median,
            max: rates[n - 1],
        })
    }
}

impl DatabaseResult {
    /// The result of one database's readings: the idle rates from its first reading to its last
    /// before the load, the load's from there to its last reading (taken after the load);
    /// `load_seconds` and `requests` are the load's, `flows` its flows and their completed
    /// passes.
    pub fn from_series(
        d: &DatabaseSeries,
        load_seconds: f64,
        requests: u64,
        flows: &[(String, u64)],
    ) -> DatabaseResult {
        let split = d.samples.partition_point(|s| s.t < 0.0);
        let empty = DatabaseSample::default();
        let start = d.samples.first().unwrap_or(&empty);
        let before = d.samples[..split].last().unwrap_or(start);
        let after = d.samples.last().unwrap_or(before);
        let idle_seconds = before.t - start.t;
        let rates = |ix: &[usize]| {
            let sum = |s: &DatabaseSample| DatabaseSeries::sum(s, ix);
            Rates::of(
                sum(start),
                sum(before),
                sum(after),
                idle_seconds,
                load_seconds,
                requests,
            )
        };
        let load = &d.samples[split.saturating_sub(1)..];
        let transactions = rates(&d.info.transactions);
        let committed = (!d.info.commits.is_empty()).then(|| rates(&d.info.commits));
        let per = |total: u64, passes: u64| total as f64 / passes as f64;
        DatabaseResult {
            name: d.info.name.clone(),
            idle_seconds,
            load_seconds,
            requests,
            transactions,
            committed,
            statements: d.info.statements.map(|i| rates(&[i])),
            statements_by_kind: d
                .info
                .kinds
                .iter()
                .map(|(name, i)| CounterResult {
                    name: name.clone(),
                    rates: rates(&[*i]),
                })
                .collect(),
            flows: flows
                .iter()
                .filter(|(_, passes)| *passes > 0)
                .map(|(flow, passes)| FlowCost {
                    flow: flow.clone(),
                    completed: *passes,
                    transactions: per(transactions.load_total, *passes),
                    committed: committed.map(|c| per(c.load_total, *passes)),
                })
                .collect(),
            transactions_per_second: Spread::of(load, &d.info.transactions),
            counters: d
                .info
                .counters
                .iter()
                .enumerate()
                .map(|(i, name)| CounterResult {
                    name: name.clone(),
                    rates: rates(&[i]),
                })
                .collect(),
            samples: d.samples.clone(),
        }
    }
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

impl DatabaseResult {
    /// Its figures as rows, `name, idle/s, load/s, load total, per request`, then per
    /// completed pass of each flow, through `num` (the reports round, the CSV keeps every
    /// digit): the transactions, the committed ones, the statements and the statements by kind
    /// where the database counts them, then each counter.
    pub(crate) fn rows(&self, num: impl Fn(f64) -> String) -> Vec<Vec<String>> {
        let row = |name: &str, r: &Rates| {
            let mut row = vec![
                name.to_string(),
                num(r.idle_per_s),
                num(r.load_per_s),
                r.load_total.to_string(),
                match self.requests {
                    0 => "-".to_string(),
                    _ => num(r.per_request),
                },
            ];
            row.extend(
                self.flows
                    .iter()
                    .map(|f| num(r.load_total as f64 / f.completed as f64)),
            );
            row
        };
        let mut rows = vec![row("transactions", &self.transactions)];
        rows.extend(self.committed.iter().map(|c| row("committed", c)));
        rows.extend(
            self.statements
                .iter()
                .map(|s| row("statements (BEGIN/COMMIT included)", s)),
        );
        if let Some(dml) = self.dml() {
            rows.push(row("statements (SELECT+INSERT+UPDATE+DELETE)", &dml));
        }
        rows.extend(
            self.statements_by_kind
                .iter()
                .chain(&self.counters)
                .map(|c| row(&c.name, &c.rates)),
        );
        rows
    }

    /// Its SELECT, INSERT, UPDATE and DELETE statements (the sum of the kinds; BEGIN and
    /// COMMIT not among them), where it counts them by kind.
    pub fn dml(&self) -> Option<Rates> {
        let kinds = &self.statements_by_kind;
        let sum = |f: fn(&Rates) -> f64| kinds.iter().map(|k| f(&k.rates)).sum::<f64>();
        (!kinds.is_empty()).then(|| Rates {
            idle_per_s: sum(|r| r.idle_per_s),
            load_per_s: sum(|r| r.load_per_s),
            load_total: kinds.iter().map(|k| k.rates.load_total).sum(),
            per_request: sum(|r| r.per_request),
        })
    }

    /// The header of [`DatabaseResult::rows`]: [`DatabaseResult::HEADER`], then `Per FLOW`
    /// for each flow.
    pub(crate) fn header(&self) -> Vec<String> {
        let mut h: Vec<String> = Self::HEADER.map(String::from).to_vec();
        h.extend(self.flows.iter().map(|f| format!("Per {}", f.flow)));
        h
    }

    /// Its heading in the Markdown and HTML reports.
    pub(crate) fn heading(&self) -> String {
        format!(
            "Database `{}`: its own counters, idle {:.1} s before the load, load {:.1} s",
            self.name, self.idle_seconds, self.load_seconds
        )
    }

    /// The header of [`DatabaseResult::rows`].
    pub(crate) const HEADER: [&'static str; 5] =
        ["Counter", "Idle/s", "Load/s", "Load total", "Per request"];
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
                "   statements/s (BEGIN/COMMIT included)  idle {:.1}  load {:.1}",
                s.idle_per_s, s.load_per_s
            );
        }
        if let Some(dml) = d.dml() {
            let _ = write!(
                out,
                "   SELECT+INSERT+UPDATE+DELETE/s  load {:.1}",
                dml.load_per_s
            );
        }
        if d.requests > 0 {
            let _ = write!(
                out,
                "   database transactions per request of the load: {:.2}",
                d.transactions.per_request
            );
        }
        for f in &d.flows {
            let _ = write!(
                out,
                "\n  database transactions per completed {} ({} completed): {:.2}",
                f.flow, f.completed, f.transactions
            );
            if let Some(c) = f.committed {
                let _ = write!(out, ", committed {c:.2}");
            }
        }
        match d.statements_by_kind.as_slice() {
            [] => out.push_str("\n  statements by kind: not available"),
            kinds => {
                out.push_str("\n  statements by kind under load");
                for k in kinds {
                    let _ = write!(
                        out,
                        "  {} {} ({:.1}/s)",
                        k.name, k.rates.load_total, k.rates.load_per_s
                    );
                }
            }
        }
        if let Some(p) = &d.transactions_per_second {
            let _ = write!(
                out,
                "\n  transactions/s second by second under load  median {:.1}  max {:.1}  ({} intervals)",
                p.median, p.max, p.intervals
            );
        }
        let rows = d.rows(|v| format!("{v:.2}"));
        let w = rows.iter().map(|r| r[0].len()).max().unwrap_or(0).max(22);
        let _ = write!(
            out,
            "\n  {:<w$} {:>12} {:>12} {:>14} {:>12}",
            "counter", "idle/s", "load/s", "load total", "per request"
        );
        for f in &d.flows {
            let _ = write!(out, " {:>12}", format!("per {}", f.flow));
        }
        out.push('\n');
        for row in rows {
            let _ = write!(
                out,
                "  {:<w$} {:>12} {:>12} {:>14}",
                row[0], row[1], row[2], row[3]
            );
            for cell in &row[4..] {
                let _ = write!(out, " {cell:>12}");
            }
            out.push('\n');
        }
    }
    out
}

/// One database row of a comparison: a side's database read with `--db-stats`, its figures the
/// mean over the side's rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatabaseRow {
    /// The side it belongs to.
    pub side: String,
    /// The database (its URL, password hidden).
    pub name: String,
    /// Its transactions per second before the load.
    pub transactions_idle: f64,
    /// Its transactions per second under the load.
    pub transactions_load: f64,
    /// Its transactions per request of the load.
    pub per_request: f64,
    /// Its transactions per completed pass of each flow, by flow.
    pub per_flow: Vec<(String, f64)>,
    /// Its statements per second under the load, when it counts them: every statement,
    /// BEGIN and COMMIT included, as sysbench counts its queries.
    pub statements_load: Option<f64>,
    /// Its statements by kind per second under the load (`selects`, ...), where it counts them.
    pub kinds_load: Vec<(String, f64)>,
    /// The load's requests per second.
    pub requests_per_s: f64,
    /// The load's completed passes per second of each flow (its Global-TPS), by flow.
    pub flows_per_s: Vec<(String, f64)>,
    /// Its committed transactions per second under the load, where it tells them apart.
    pub committed_load: Option<f64>,
}

impl DatabaseRow {
    /// Its SELECT, INSERT, UPDATE and DELETE statements per second under the load (the sum of
    /// the kinds; BEGIN and COMMIT not among them), where it counts them by kind.
    pub fn dml_load(&self) -> Option<f64> {
        (!self.kinds_load.is_empty()).then(|| self.kinds_load.iter().map(|(_, v)| v).sum())
    }
}

/// The mean of some figures (0 of none).
fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The mean of named figures over the results that have them, names in their first order.
fn means<'a>(named: impl Iterator<Item = (&'a str, f64)>) -> Vec<(String, f64)> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    for (name, v) in named {
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, vs)) => vs.push(v),
            None => out.push((name.to_string(), vec![v])),
        }
    }
    out.into_iter().map(|(n, vs)| (n, mean(&vs))).collect()
}

/// The rows of one side's databases, over its rounds' results.
pub(crate) fn database_rows(side: &str, runs: &[crate::RunResult]) -> Vec<DatabaseRow> {
    let mut names: Vec<&str> = Vec::new();
    for d in runs.iter().flat_map(|r| &r.databases) {
        if !names.contains(&d.name.as_str()) {
            names.push(&d.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let seen: Vec<&DatabaseResult> = runs
                .iter()
                .flat_map(|r| r.databases.iter().filter(|d| d.name == name))
                .collect();
            let statements: Vec<f64> = seen
                .iter()
                .filter_map(|d| d.statements.as_ref().map(|s| s.load_per_s))
                .collect();
            let of = |f: fn(&DatabaseResult) -> f64| {
                mean(&seen.iter().map(|d| f(d)).collect::<Vec<_>>())
            };
            DatabaseRow {
                side: side.to_string(),
                name: name.to_string(),
                transactions_idle: of(|d| d.transactions.idle_per_s),
                transactions_load: of(|d| d.transactions.load_per_s),
                per_request: of(|d| d.transactions.per_request),
                per_flow: means(
                    seen.iter()
                        .flat_map(|d| d.flows.iter().map(|f| (f.flow.as_str(), f.transactions))),
                ),
                statements_load: (!statements.is_empty()).then(|| mean(&statements)),
                kinds_load: means(seen.iter().flat_map(|d| {
                    d.statements_by_kind
                        .iter()
                        .map(|k| (k.name.as_str(), k.rates.load_per_s))
                })),
                requests_per_s: of(|d| d.requests as f64 / d.load_seconds.max(1e-9)),
                flows_per_s: means(seen.iter().flat_map(|d| {
                    d.flows.iter().map(|f| {
                        (
                            f.flow.as_str(),
                            f.completed as f64 / d.load_seconds.max(1e-9),
                        )
                    })
                })),
                committed_load: {
                    let c: Vec<f64> = seen
                        .iter()
                        .filter_map(|d| d.committed.map(|c| c.load_per_s))
                        .collect();
                    (!c.is_empty()).then(|| mean(&c))
                },
            }
        })
        .collect()
}

/// The one table of the databases' figures: a column per side (per side and database where a
/// side read several), a row per figure: the load's flows per second (Global-TPS) and requests
/// per second beside the database's transactions per second (DB-TPS), and its statements per
/// second both ways (OPS): every statement, BEGIN and COMMIT included (sysbench's queries),
/// and the SELECT, INSERT, UPDATE and DELETE statements alone; then per request, per pass of
/// each flow and by kind. A figure a column lacks is `-`.
pub(crate) fn database_table(rows: &[DatabaseRow]) -> Vec<Vec<String>> {
    let several = rows
        .iter()
        .any(|r| rows.iter().filter(|o| o.side == r.side).count() > 1);
    let mut head = vec!["Figure".to_string()];
    head.extend(rows.iter().map(|r| match several {
        true => format!("{} {}", r.side, r.name),
        false => r.side.clone(),
    }));
    let mut out = vec![head];
    let names = |of: &dyn Fn(&DatabaseRow) -> &[(String, f64)]| {
        means(
            rows.iter()
                .flat_map(|r| of(r).iter().map(|(n, v)| (n.as_str(), *v))),
        )
    };
    let flows = names(&|r| &r.flows_per_s);
    let kinds = names(&|r| &r.kinds_load);
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let find =
        |list: &[(String, f64)], name: &str| list.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let mut row = |name: String, cell: &dyn Fn(&DatabaseRow) -> String| {
        let mut line = vec![name];
        line.extend(rows.iter().map(cell));
        out.push(line);
    };
    row("Database".into(), &|r| r.name.clone());
    for (f, _) in &flows {
        row(format!("Global-TPS: {f} passes/s"), &|r| {
            num(find(&r.flows_per_s, f), 1)
        });
    }
    row("Requests/s".into(), &|r| num(Some(r.requests_per_s), 1));
    row("DB-TPS: transactions/s".into(), &|r| {
        num(Some(r.transactions_load), 1)
    });
    row("DB committed/s".into(), &|r| num(r.committed_load, 1));
    row("DB transactions/s idle".into(), &|r| {
        num(Some(r.transactions_idle), 1)
    });
    row("OPS: statements/s, BEGIN/COMMIT included".into(), &|r| {
        num(r.statements_load, 1)
    });
    row("OPS: SELECT+INSERT+UPDATE+DELETE/s".into(), &|r| {
        num(r.dml_load(), 1)
    });
    row("DB transactions per request".into(), &|r| {
        num(Some(r.per_request), 2)
    });
    for (f, _) in &flows {
        row(format!("DB transactions per {f} pass"), &|r| {
            num(find(&r.per_flow, f), 2)
        });
    }
    for (k, _) in &kinds {
        row(format!("{}/s", capital(k)), &|r| {
            num(find(&r.kinds_load, k), 1)
        });
    }
    out
}

/// `selects` as `Selects`.
fn capital(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
