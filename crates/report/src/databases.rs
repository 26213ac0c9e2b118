//! A watched server's own figures in the result (a database's with `--db-stats`, a broker's
//! with `--nats-monitor` or `--amqp-monitor`): what the server says it did while idle and under
//! the load, beside what the load says it sent, so a service test shows how many database
//! transactions each of its requests costs. The figures are read once a second by the protocol
//! crate that speaks to the server; each says what it is (label, unit, counter or gauge), so
//! here they are printed as the server named them, and a database's transactions and
//! statements only where the server has them.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use throng_core::{DatabaseSample, DatabaseSeries, FigureKind};

/// One watched server's figures over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DatabaseResult {
    /// The server (a database's URL, password hidden; a broker's monitoring URL).
    pub name: String,
    /// What it is, as its heading names it (`Database`, `Broker`); absent from results of
    /// schema 3, which watched databases only.
    #[serde(default = "database")]
    pub kind: String,
    /// Seconds of the idle window read before the load.
    pub idle_seconds: f64,
    /// Seconds of the load the rates are over.
    pub load_seconds: f64,
    /// Requests of the load (for the per-request figures).
    pub requests: u64,
    /// The database's transactions (committed and rolled back) per second: idle, under load;
    /// absent for a server that counts none (a broker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<Rates>,
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
    /// Every counter read (a running total the server keeps): its rates and its increase.
    pub counters: Vec<CounterResult>,
    /// Every gauge read (a level at each reading: connections open, messages queued).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gauges: Vec<GaugeResult>,
    /// Every reading, once a second: idle ones first (negative `t`: seconds before the load
    /// started), the last one after the load; values in the order of `counters`, then of
    /// `gauges`, as the server gives them (a counter's total since it started). Absent from
    /// results of throng before it read databases once a second.
    #[serde(default)]
    pub samples: Vec<DatabaseSample>,
    /// The readings that failed, when any did (the monitor refused, did not answer in time,
    /// answered an error): how many of how many, by class, and what the first said. A server
    /// with no figures says here why; absent when every reading succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_failures: Option<throng_core::ReadFailures>,
}

fn database() -> String {
    "Database".into()
}

/// One gauge over the run: its readings from the load's start to the one after it, and its
/// mean before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GaugeResult {
    /// Its name, as the server names it (`connections`).
    pub name: String,
    /// What it is, for people.
    pub label: String,
    /// What it measures.
    pub unit: String,
    /// Its mean before the load (`None` without an idle reading).
    pub idle: Option<f64>,
    /// Its lowest reading under the load.
    pub min: u64,
    /// The mean of its readings under the load.
    pub mean: f64,
    /// Its highest reading under the load.
    pub max: u64,
    /// Its last reading, after the load.
    pub last: u64,
}

impl GaugeResult {
    /// The gauge at `i` of `samples`, the load's readings from `split` (the first at or after
    /// its start) on, the idle ones before.
    fn of(
        f: &throng_core::Figure,
        i: usize,
        samples: &[DatabaseSample],
        split: usize,
    ) -> GaugeResult {
        let v = |s: &DatabaseSample| s.values.get(i).copied().unwrap_or(0);
        let idle: Vec<u64> = samples[..split].iter().map(v).collect();
        let load: Vec<u64> = samples[split..].iter().map(v).collect();
        let mean = |x: &[u64]| x.iter().sum::<u64>() as f64 / x.len().max(1) as f64;
        GaugeResult {
            name: f.name.clone(),
            label: f.label.clone(),
            unit: f.unit.clone(),
            idle: (!idle.is_empty()).then(|| mean(&idle)),
            min: load.iter().copied().min().unwrap_or(0),
            mean: mean(&load),
            max: load.iter().copied().max().unwrap_or(0),
            last: load.last().copied().unwrap_or(0),
        }
    }
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
    /// The result of one server's readings: the idle rates from its first reading to its last
    /// before the load, the load's from there to its last reading (taken after the load);
    /// `load_seconds` and `requests` are the load's, `flows` its flows and their completed
    /// passes (a database's transactions per pass).
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
        // A server never read (its monitor refused, stalled, answered 500) has no figures to
        // show, not zeros: its block says so, and the warnings say why.
        let read = !d.samples.is_empty();
        let has = read && !d.info.transactions.is_empty();
        let transactions = has.then(|| rates(&d.info.transactions));
        let committed = (has && !d.info.commits.is_empty()).then(|| rates(&d.info.commits));
        let per = |total: u64, passes: u64| total as f64 / passes as f64;
        let kind = |k| {
            let figures = d.info.figures.iter().enumerate();
            figures.filter(move |(_, f)| read && f.kind == k)
        };
        let order: Vec<usize> = kind(FigureKind::Counter)
            .chain(kind(FigureKind::Gauge))
            .map(|(i, _)| i)
            .collect();
        DatabaseResult {
            name: d.info.name.clone(),
            kind: match d.info.kind.as_str() {
                "" => database(),
                k => k.to_string(),
            },
            idle_seconds,
            load_seconds,
            requests,
            transactions,
            committed,
            statements: d.info.statements.filter(|_| read).map(|i| rates(&[i])),
            statements_by_kind: d
                .info
                .kinds
                .iter()
                .filter(|_| read)
                .map(|(name, i)| CounterResult {
                    name: name.clone(),
                    label: String::new(),
                    unit: String::new(),
                    rates: rates(&[*i]),
                })
                .collect(),
            flows: flows
                .iter()
                .filter(|(_, passes)| *passes > 0)
                .filter_map(|(flow, passes)| {
                    Some(FlowCost {
                        flow: flow.clone(),
                        completed: *passes,
                        transactions: per(transactions?.load_total, *passes),
                        committed: committed.map(|c| per(c.load_total, *passes)),
                    })
                })
                .collect(),
            transactions_per_second: has
                .then(|| Spread::of(load, &d.info.transactions))
                .flatten(),
            counters: kind(FigureKind::Counter)
                .map(|(i, f)| CounterResult {
                    name: f.name.clone(),
                    label: f.label.clone(),
                    unit: f.unit.clone(),
                    rates: rates(&[i]),
                })
                .collect(),
            gauges: kind(FigureKind::Gauge)
                .map(|(i, f)| GaugeResult::of(f, i, &d.samples, split))
                .collect(),
            samples: d
                .samples
                .iter()
                .map(|s| DatabaseSample {
                    t: s.t,
                    values: order
                        .iter()
                        .map(|&i| s.values.get(i).copied().unwrap_or(0))
                        .collect(),
                })
                .collect(),
            read_failures: d.failures.clone(),
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
    /// Its name, as the server names it (`xact_commit`, `Com_commit`, `in_msgs`).
    pub name: String,
    /// What it is, for people (`messages received`); empty in results of schema 3 and for a
    /// database's figures made of its counters (`selects`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// What it counts (`messages`); empty where the label is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
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
    /// Its counters as rows, `name, idle/s, load/s, load total, per request`, then per
    /// completed pass of each flow, through `num` (the CSV's: every digit).
    pub(crate) fn rows(&self, num: impl Fn(f64) -> String) -> Vec<Vec<String>> {
        let mut rows = self.labelled_rows(num);
        for r in &mut rows {
            r.truncate(r.len() - 2);
        }
        rows
    }

    /// [`DatabaseResult::rows`] with each counter's unit and label after it, through `num` (the reports round, the
    /// CSV keeps every digit): a database's transactions, committed ones, statements and
    /// statements by kind first, where it counts them, then each counter.
    pub(crate) fn labelled_rows(&self, num: impl Fn(f64) -> String) -> Vec<Vec<String>> {
        let row = |name: &str, r: &Rates, unit: &str, label: &str| {
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
            row.extend([unit.to_string(), label.to_string()]);
            row
        };
        let mut rows = Vec::new();
        let transactions = "transactions";
        rows.extend(
            self.transactions
                .iter()
                .map(|t| row("transactions", t, transactions, "")),
        );
        rows.extend(
            self.committed
                .iter()
                .map(|c| row("committed", c, transactions, "")),
        );
        rows.extend(
            self.statements
                .iter()
                .map(|s| row("statements (BEGIN/COMMIT included)", s, "statements", "")),
        );
        if let Some(dml) = self.dml() {
            rows.push(row(
                "statements (SELECT+INSERT+UPDATE+DELETE)",
                &dml,
                "statements",
                "",
            ));
        }
        rows.extend(
            self.statements_by_kind
                .iter()
                .map(|c| row(&c.name, &c.rates, "statements", "")),
        );
        rows.extend(
            self.counters
                .iter()
                .map(|c| row(&c.name, &c.rates, &c.unit, &c.label)),
        );
        rows
    }

    /// Its gauges as rows, `name, idle, min, mean, max, last, unit, label`, through `num`.
    pub(crate) fn gauge_rows(&self, num: impl Fn(f64) -> String) -> Vec<Vec<String>> {
        self.gauges
            .iter()
            .map(|g| {
                vec![
                    g.name.clone(),
                    g.idle.map_or("-".into(), &num),
                    g.min.to_string(),
                    num(g.mean),
                    g.max.to_string(),
                    g.last.to_string(),
                    g.unit.clone(),
                    g.label.clone(),
                ]
            })
            .collect()
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

    /// Its tables in the Markdown and HTML reports, each with its header: the counters (then
    /// per completed pass of each flow) and, where it has any, the gauges; through `num`.
    pub(crate) fn tables(&self, num: impl Fn(f64) -> String + Copy) -> Vec<Vec<Vec<String>>> {
        if self.samples.is_empty() {
            return Vec::new();
        }
        let mut head: Vec<String> = ["Counter", "Idle/s", "Load/s", "Load total", "Per request"]
            .map(String::from)
            .to_vec();
        head.extend(self.flows.iter().map(|f| format!("Per {}", f.flow)));
        head.extend(["Unit".to_string(), "What".to_string()]);
        let mut counters = vec![head];
        counters.extend(self.labelled_rows(num));
        let mut tables = vec![counters];
        if !self.gauges.is_empty() {
            let head = [
                "Gauge", "Idle", "Min", "Mean", "Max", "Last", "Unit", "What",
            ];
            let mut gauges = vec![head.map(String::from).to_vec()];
            gauges.extend(self.gauge_rows(num));
            tables.push(gauges);
        }
        tables
    }

    /// Its heading in the Markdown and HTML reports.
    pub(crate) fn heading(&self) -> String {
        if self.samples.is_empty() {
            return format!(
                "{} `{}`: not read, no reading succeeded (the warnings say why)",
                self.kind, self.name
            );
        }
        format!(
            "{} `{}`: its own figures, idle {:.1} s before the load, load {:.1} s",
            self.kind, self.name, self.idle_seconds, self.load_seconds
        )
    }
}

/// The watched servers' section of the summary (empty without any): a block each.
pub fn render_databases(dbs: &[DatabaseResult]) -> String {
    let mut out = String::new();
    for d in dbs {
        let _ = writeln!(
            out,
            "{} {}: its own figures, idle {:.1} s before the load, load {:.1} s",
            d.kind, d.name, d.idle_seconds, d.load_seconds
        );
        if d.samples.is_empty() {
            out.push_str("  not read: no reading succeeded (the warnings say why)\n");
            continue;
        }
        if let Some(t) = &d.transactions {
            transactions_lines(&mut out, d, t);
        }
        let rows = d.labelled_rows(|v| format!("{v:.2}"));
        let w = rows.iter().map(|r| r[0].len()).max().unwrap_or(0).max(22);
        let _ = write!(
            out,
            "  {:<w$} {:>12} {:>12} {:>14} {:>12}",
            "counter", "idle/s", "load/s", "load total", "per request"
        );
        for f in &d.flows {
            let _ = write!(out, " {:>12}", format!("per {}", f.flow));
        }
        out.push_str(&unit_what("unit", "what"));
        out.push('\n');
        for row in rows {
            let _ = write!(
                out,
                "  {:<w$} {:>12} {:>12} {:>14}",
                row[0], row[1], row[2], row[3]
            );
            let n = row.len();
            for cell in &row[4..n - 2] {
                let _ = write!(out, " {cell:>12}");
            }
            out.push_str(&unit_what(&row[n - 2], &row[n - 1]));
            out.push('\n');
        }
        let gauges = d.gauge_rows(|v| format!("{v:.1}"));
        if !gauges.is_empty() {
            let w = gauges.iter().map(|r| r[0].len()).max().unwrap_or(0).max(22);
            let _ = writeln!(
                out,
                "  {:<w$} {:>10} {:>10} {:>10} {:>10} {:>10}{}",
                "gauge",
                "idle",
                "min",
                "mean",
                "max",
                "last",
                unit_what("unit", "what")
            );
            for r in gauges {
                let _ = writeln!(
                    out,
                    "  {:<w$} {:>10} {:>10} {:>10} {:>10} {:>10}{}",
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    r[5],
                    unit_what(&r[6], &r[7])
                );
            }
        }
    }
    out
}

/// The unit and label columns after a row's figures (nothing where the server named neither).
fn unit_what(unit: &str, label: &str) -> String {
    match (unit, label) {
        ("", "") => String::new(),
        (u, l) => format!("  {u:<12} {l}").trim_end().to_string(),
    }
}

/// A database's lines of the summary above its counters: transactions and statements per
/// second, per request and per flow, by kind, second by second.
fn transactions_lines(out: &mut String, d: &DatabaseResult, t: &Rates) {
    let _ = write!(
        out,
        "  transactions/s  idle {:.1}  load {:.1}",
        t.idle_per_s, t.load_per_s
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
            t.per_request
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
    out.push('\n');
}

/// One watched server's row of a comparison: a side's server, its figures the mean over the
/// side's rounds. A database's transactions and statements where it has them; a server that
/// counts no transactions (a broker) is compared by its own figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatabaseRow {
    /// The side it belongs to.
    pub side: String,
    /// The server (a database's URL, password hidden).
    pub name: String,
    /// What it is (`Database`, `Broker`).
    pub kind: String,
    /// Its transactions per second before the load, where it counts them.
    pub transactions_idle: Option<f64>,
    /// Its transactions per second under the load, where it counts them.
    pub transactions_load: Option<f64>,
    /// Its transactions per request of the load, where it counts them.
    pub per_request: Option<f64>,
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
    /// A server without transactions: its own figures, each a row of the table: a counter's
    /// rate under the load (`messages received/s`), a gauge's mean and maximum under it.
    pub figures: Vec<(String, f64)>,
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

/// A server's own figures as a comparison's rows name them, where it has no transactions.
fn own_figures(d: &DatabaseResult) -> Vec<(String, f64)> {
    if d.transactions.is_some() {
        return Vec::new();
    }
    let what = |label: &str, name: &str| match label {
        "" => name.to_string(),
        l => l.to_string(),
    };
    let counters = d
        .counters
        .iter()
        .map(|c| (format!("{}/s", what(&c.label, &c.name)), c.rates.load_per_s));
    let gauges = d.gauges.iter().flat_map(|g| {
        let w = what(&g.label, &g.name);
        [
            (format!("{w}, mean"), g.mean),
            (format!("{w}, max"), g.max as f64),
        ]
    });
    counters.chain(gauges).collect()
}

/// The rows of one side's watched servers, over its rounds' results.
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
            let some = |f: &dyn Fn(&DatabaseResult) -> Option<f64>| {
                let v: Vec<f64> = seen.iter().filter_map(|d| f(d)).collect();
                (!v.is_empty()).then(|| mean(&v))
            };
            let of = |f: fn(&DatabaseResult) -> f64| {
                mean(&seen.iter().map(|d| f(d)).collect::<Vec<_>>())
            };
            DatabaseRow {
                side: side.to_string(),
                name: name.to_string(),
                kind: seen.first().map_or_else(database, |d| d.kind.clone()),
                transactions_idle: some(&|d| d.transactions.map(|t| t.idle_per_s)),
                transactions_load: some(&|d| d.transactions.map(|t| t.load_per_s)),
                per_request: some(&|d| d.transactions.map(|t| t.per_request)),
                per_flow: means(
                    seen.iter()
                        .flat_map(|d| d.flows.iter().map(|f| (f.flow.as_str(), f.transactions))),
                ),
                statements_load: some(&|d| d.statements.map(|s| s.load_per_s)),
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
                committed_load: some(&|d| d.committed.map(|c| c.load_per_s)),
                figures: {
                    let own: Vec<Vec<(String, f64)>> =
                        seen.iter().map(|d| own_figures(d)).collect();
                    means(own.iter().flatten().map(|(n, v)| (n.as_str(), *v)))
                },
            }
        })
        .collect()
}

/// The one table of the watched servers' figures: a column per side (per side and server where
/// a side watched several), a row per figure, each shown only where some column has it (a
/// figure a column lacks is `-`). For databases: the load's flows per second (Global-TPS) and
/// requests per second beside the database's transactions per second (DB-TPS), and its
/// statements per second both ways (OPS): every statement, BEGIN and COMMIT included
/// (sysbench's queries), and the SELECT, INSERT, UPDATE and DELETE statements alone; then per
/// request, per pass of each flow and by kind. For a server without transactions (a broker):
/// its own figures, as it names them.
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
    let own = names(&|r| &r.figures);
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let find =
        |list: &[(String, f64)], name: &str| list.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let mut row = |name: String, cell: &dyn Fn(&DatabaseRow) -> Option<String>| {
        let cells: Vec<Option<String>> = rows.iter().map(cell).collect();
        if cells.iter().all(Option::is_none) {
            return;
        }
        let mut line = vec![name];
        line.extend(cells.into_iter().map(|c| c.unwrap_or_else(|| "-".into())));
        out.push(line);
    };
    let kind = match rows
        .iter()
        .all(|r| Some(&r.kind) == rows.first().map(|f| &f.kind))
    {
        true => rows.first().map_or_else(database, |r| r.kind.clone()),
        false => "Server".to_string(),
    };
    let some = |v: Option<f64>, digits: usize| v.map(|v| num(Some(v), digits));
    row(kind, &|r| Some(r.name.clone()));
    let databases = rows.iter().any(|r| r.transactions_load.is_some());
    for (f, _) in &flows {
        row(format!("Global-TPS: {f} passes/s"), &|r| {
            Some(num(find(&r.flows_per_s, f), 1))
        });
    }
    row("Requests/s".into(), &|r| {
        Some(num(Some(r.requests_per_s), 1))
    });
    if databases {
        row("DB-TPS: transactions/s".into(), &|r| {
            Some(num(r.transactions_load, 1))
        });
        row("DB committed/s".into(), &|r| some(r.committed_load, 1));
        row("DB transactions/s idle".into(), &|r| {
            Some(num(r.transactions_idle, 1))
        });
        row("OPS: statements/s, BEGIN/COMMIT included".into(), &|r| {
            some(r.statements_load, 1)
        });
        row("OPS: SELECT+INSERT+UPDATE+DELETE/s".into(), &|r| {
            some(r.dml_load(), 1)
        });
        row("DB transactions per request".into(), &|r| {
            Some(num(r.per_request, 2))
        });
    }
    for (f, _) in &flows {
        row(format!("DB transactions per {f} pass"), &|r| {
            some(find(&r.per_flow, f), 2)
        });
    }
    for (k, _) in &kinds {
        row(format!("{}/s", capital(k)), &|r| {
            some(find(&r.kinds_load, k), 1)
        });
    }
    for (f, _) in &own {
        row(capital(f), &|r| some(find(&r.figures, f), 1));
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

#[cfg(test)]
mod tests {
    use throng_core::{DatabaseInfo, Figure};

    use super::*;

    fn sample(t: f64, values: [u64; 2]) -> DatabaseSample {
        DatabaseSample {
            t,
            values: values.to_vec(),
        }
    }

    /// A broker's block: its counter with rates, its gauge with min, mean, max and last, no
    /// transactions, the readings' values reordered counters first.
    #[test]
    fn a_server_without_transactions_shows_its_own_figures_only() {
        let series = DatabaseSeries {
            info: DatabaseInfo {
                name: "broker".into(),
                kind: "Broker".into(),
                figures: vec![
                    Figure::gauge("open", "connections open", "connections"),
                    Figure::counter("in", "messages received", "messages"),
                ],
                ..DatabaseInfo::default()
            },
            samples: vec![
                sample(-1.0, [1, 10]),
                sample(0.0, [2, 10]),
                sample(1.0, [5, 20]),
                sample(2.0, [3, 30]),
            ],
            failures: None,
        };
        let d = DatabaseResult::from_series(&series, 2.0, 10, &[("flow".into(), 5)]);
        assert_eq!(
            (d.kind.as_str(), d.transactions, d.flows.len()),
            ("Broker", None, 0)
        );
        assert_eq!(d.counters.len(), 1);
        let c = &d.counters[0];
        assert_eq!(
            (c.name.as_str(), c.label.as_str(), c.unit.as_str()),
            ("in", "messages received", "messages")
        );
        assert_eq!(
            (c.rates.load_total, c.rates.load_per_s, c.rates.per_request),
            (20, 10.0, 2.0)
        );
        let g = &d.gauges[0];
        assert_eq!((g.idle, g.min, g.max, g.last), (Some(1.0), 2, 5, 3));
        assert!((g.mean - 10.0 / 3.0).abs() < 1e-9);
        assert_eq!(d.samples[0].values, [10, 1]);
        let summary = render_databases(std::slice::from_ref(&d));
        assert!(
            summary.starts_with("Broker broker: its own figures"),
            "{summary}"
        );
        assert!(!summary.contains("transactions"), "{summary}");
        assert!(
            summary.contains("messages     messages received"),
            "{summary}"
        );
        assert_eq!(d.tables(|v| format!("{v:.1}")).len(), 2);
        // In a comparison: its figures by their labels, no database row.
        let model = throng_core::LoadModel::Closed(throng_core::ClosedLoop {
            users: throng_core::Users::Fixed(1),
            requests: None,
            iterations: Some(1),
            duration: None,
            think_time: None,
        });
        let plan = throng_core::RunPlan::new("t", model);
        let snapshot = throng_core::Snapshot::empty(std::sync::Arc::new(plan), &[], 0);
        let mut run = crate::finish(&snapshot, &[]);
        run.databases = vec![d.clone()];
        let rows = database_rows("a", &[run]);
        let table = database_table(&rows);
        let names: Vec<&str> = table.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(
            names,
            [
                "Figure",
                "Broker",
                "Requests/s",
                "Messages received/s",
                "Connections open, mean",
                "Connections open, max"
            ]
        );
        // Never read: no figures made up.
        let unread = DatabaseSeries {
            samples: Vec::new(),
            ..series
        };
        let d = DatabaseResult::from_series(&unread, 2.0, 10, &[]);
        assert!(d.counters.is_empty() && d.gauges.is_empty() && d.transactions.is_none());
        assert!(render_databases(&[d]).contains("not read: no reading succeeded"));
    }
}
