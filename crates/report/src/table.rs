//! The aggregate table (JMeter's columns) and the rest of the end-of-run summary, as text.

use std::fmt::Write as _;

use crate::{LabelResult, RunResult};

const HEADERS: [&str; 13] = [
    "Label",
    "Samples",
    "Average",
    "Median",
    "90%",
    "95%",
    "99%",
    "Min",
    "Max",
    "Error %",
    "Throughput",
    "Received KB/s",
    "Sent KB/s",
];

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn row(r: &LabelResult) -> [String; 13] {
    let l = &r.latency;
    // No request counts in latency (all failed fast): a 0 would read as fast, so print `-`.
    let lat = |v: f64| if l.count == 0 { "-".to_string() } else { ms(v) };
    [
        r.label.clone(),
        r.samples.to_string(),
        lat(l.mean),
        lat(l.p50),
        lat(l.p90),
        lat(l.p95),
        lat(l.p99),
        lat(l.min),
        lat(l.max),
        format!("{:.2}%", r.error_rate * 100.0),
        format!("{:.1}/s", r.throughput),
        format!("{:.2}", r.received_kb_per_s),
        format!("{:.2}", r.sent_kb_per_s),
    ]
}

/// The aggregate table: one row per label and a TOTAL row; latencies in ms.
pub fn render_table(result: &RunResult) -> String {
    let mut rows: Vec<[String; 13]> = vec![HEADERS.map(String::from)];
    rows.extend(result.labels.iter().map(row));
    if result.labels.len() != 1 || result.labels[0].label != "TOTAL" {
        let mut total = row(&result.total);
        total[0] = "TOTAL".into();
        rows.push(total);
    }
    let widths: Vec<usize> = (0..13)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 {
            let width = widths.iter().sum::<usize>() + 2 * 12;
            out.push_str(&"-".repeat(width));
            out.push('\n');
        }
    }
    out
}

/// The whole end-of-run summary: header, table, tails, status codes, errors, open-loop schedule,
/// thresholds and warnings.
pub fn render_summary(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{} -> {}", r.description, r.plan.target);
    let stop = if r.interrupted {
        " (stopped early)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "{} requests in {:.2}s{stop}, latency in ms (of requests that succeeded or waited: failures timed apart)\n",
        r.total.samples, r.duration
    );
    out.push_str(&render_table(r));
    let t = &r.total;
    if t.latency.count > 0 {
        let _ = writeln!(
            out,
            "\nLatency   p99.9 {} ms   max {} ms      Service time   p50 {}  p99 {}  p99.9 {}  max {} ms",
            ms(t.latency.p999),
            ms(t.latency.max),
            ms(t.service.p50),
            ms(t.service.p99),
            ms(t.service.p999),
            ms(t.service.max)
        );
    } else {
        out.push('\n');
    }
    let f = &t.failed_latency;
    if f.count > 0 {
        let _ = writeln!(
            out,
            "Failures  {} timed apart   p50 {}  p99 {}  max {} ms",
            f.count,
            ms(f.p50),
            ms(f.p99),
            ms(f.max)
        );
    }
    if !r.status_codes.is_empty() {
        let codes: Vec<String> = r
            .status_codes
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        let _ = writeln!(out, "Status codes   {}", codes.join("   "));
    }
    if let Some(o) = &r.open_loop {
        let _ = writeln!(
            out,
            "Schedule   achieved {:.1} arrivals/s   lag p50 {} p99 {} max {} ms   late {}\n\
             Arrivals   {} due: {} started, {} dropped, {} still queued at the end",
            o.achieved_rate,
            ms(o.lag.p50),
            ms(o.lag.p99),
            ms(o.lag.max),
            o.late,
            o.scheduled,
            o.started,
            o.dropped,
            o.unstarted
        );
    }
    if r.aborted > 0 {
        let _ = writeln!(
            out,
            "Aborted at the end of the run (counted as errors): {}",
            r.aborted
        );
    }
    if !r.errors.is_empty() {
        let _ = writeln!(out, "Errors");
        for e in &r.errors {
            let _ = writeln!(out, "  {:<12} {:>10}   {}", e.class, e.count, e.sample);
        }
    }
    out.push_str(&crate::render_containers(&r.containers));
    if !r.changes.is_empty() {
        let changes: Vec<String> = r
            .changes
            .iter()
            .map(|c| format!("{:.1}s {}", c.t, c.what))
            .collect();
        let _ = writeln!(out, "Changed while running   {}", changes.join("   "));
    }
    if !r.thresholds.is_empty() {
        let _ = writeln!(out, "Thresholds");
        for t in &r.thresholds {
            let mark = if t.passed { "ok  " } else { "FAIL" };
            let observed = match (t.observed, &t.reason) {
                (Some(v), _) => format!("observed {v:.4}"),
                (None, Some(why)) => format!("nothing to observe: {why}"),
                (None, None) => "nothing to observe".to_string(),
            };
            let _ = writeln!(
                out,
                "  {mark} {:<28} {:<12} {observed}",
                t.threshold, t.label
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}
