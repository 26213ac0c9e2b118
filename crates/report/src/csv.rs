//! Reports as CSV (RFC 4180): the per-label table with unrounded figures, the one-second
//! series, and the databases' counters (`--db-stats`), for a spreadsheet or a plotting script.

use std::fmt::Write as _;

use crate::RunResult;

/// A field quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(crate) fn line(out: &mut String, fields: &[String]) {
    let f: Vec<String> = fields.iter().map(|s| field(s)).collect();
    let _ = write!(out, "{}\r\n", f.join(","));
}

/// The per-label table: one line per label and TOTAL; latencies in ms, rates per second.
pub fn render_csv_table(r: &RunResult) -> String {
    let mut out = String::new();
    line(
        &mut out,
        &[
            "label",
            "group",
            "samples",
            "errors",
            "error_rate",
            "throughput",
            "mean_ms",
            "p50_ms",
            "p90_ms",
            "p95_ms",
            "p99_ms",
            "p999_ms",
            "min_ms",
            "max_ms",
            "received_kb_per_s",
            "sent_kb_per_s",
        ]
        .map(String::from),
    );
    let mut rows: Vec<&crate::LabelResult> = r.labels.iter().collect();
    rows.push(&r.total);
    for (i, l) in rows.iter().enumerate() {
        let total = i == rows.len() - 1;
        let s = &l.latency;
        let lat = |v: f64| {
            if s.count == 0 {
                String::new()
            } else {
                v.to_string()
            }
        };
        line(
            &mut out,
            &[
                if total {
                    "TOTAL".into()
                } else {
                    l.label.clone()
                },
                l.group.to_string(),
                l.samples.to_string(),
                l.errors.to_string(),
                l.error_rate.to_string(),
                l.throughput.to_string(),
                lat(s.mean),
                lat(s.p50),
                lat(s.p90),
                lat(s.p95),
                lat(s.p99),
                lat(s.p999),
                lat(s.min),
                lat(s.max),
                l.received_kb_per_s.to_string(),
                l.sent_kb_per_s.to_string(),
            ],
        );
    }
    out
}

/// The one-second series: one line per second of the run (all labels together).
pub fn render_csv_series(r: &RunResult) -> String {
    let mut out = String::new();
    line(
        &mut out,
        &[
            "t",
            "requests",
            "errors",
            "bytes_sent",
            "bytes_received",
            "mean_ms",
            "p50_ms",
            "p90_ms",
            "p95_ms",
            "p99_ms",
            "p999_ms",
            "max_ms",
            "active",
            "target_rate",
        ]
        .map(String::from),
    );
    for p in &r.series {
        line(
            &mut out,
            &[
                p.t.to_string(),
                p.requests.to_string(),
                p.errors.to_string(),
                p.bytes_sent.to_string(),
                p.bytes_received.to_string(),
                p.mean.to_string(),
                p.p50.to_string(),
                p.p90.to_string(),
                p.p95.to_string(),
                p.p99.to_string(),
                p.p999.to_string(),
                p.max.to_string(),
                p.active.to_string(),
                p.target_rate.to_string(),
            ],
        );
    }
    out
}

/// The databases read with `--db-stats`: a line per database and counter (its transactions,
/// committed transactions, statements and statements by kind first), rates per second idle and
/// under load, the load's total, per request and per completed pass of each flow (a column
/// `per_flow:FLOW` each).
pub fn render_csv_databases(r: &RunResult) -> String {
    let mut out = String::new();
    let mut head: Vec<String> = [
        "database",
        "counter",
        "idle_per_s",
        "load_per_s",
        "load_total",
        "per_request",
    ]
    .map(String::from)
    .to_vec();
    if let Some(d) = r.databases.first() {
        head.extend(d.flows.iter().map(|f| format!("per_flow:{}", f.flow)));
    }
    line(&mut out, &head);
    for d in &r.databases {
        for row in d.rows(|v| v.to_string()) {
            let mut fields = vec![d.name.clone()];
            fields.extend(
                row.into_iter()
                    .map(|f| if f == "-" { String::new() } else { f }),
            );
            line(&mut out, &fields);
        }
    }
    out
}
