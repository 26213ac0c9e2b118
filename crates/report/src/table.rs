//! The aggregate table (JMeter's columns) and the rest of the end-of-run summary, as text.

use std::fmt::Write as _;

use unicode_width::UnicodeWidthStr as _;

use crate::{LabelResult, RunResult};

use throng_core::row::{ms, Row, COLUMNS as HEADERS};

/// Which step failed how, when more than one did: a header (`Label`, then each class that
/// failed, in the run's order) and a row of counts per failing step; empty when one step or
/// none failed (the run's errors say it all then). A flow's row repeats its steps' failures
/// and a parts row has none of its own, so neither is listed. The summary, the Markdown and
/// the HTML reports show it under the run's errors.
pub fn errors_by_label(r: &RunResult) -> Vec<Vec<String>> {
    let failing: Vec<&LabelResult> = r
        .labels
        .iter()
        .filter(|l| !l.group && !l.parts && !l.errors_by_class.is_empty())
        .collect();
    if failing.len() < 2 {
        return Vec::new();
    }
    let classes: Vec<&str> = r
        .errors
        .iter()
        .map(|e| e.class.as_str())
        .filter(|c| failing.iter().any(|l| l.errors_by_class.contains_key(*c)))
        .collect();
    let header = std::iter::once("Label".to_string()).chain(classes.iter().map(|c| c.to_string()));
    let mut rows = vec![header.collect()];
    for l in failing {
        let counts = classes
            .iter()
            .map(|c| l.errors_by_class.get(*c).copied().unwrap_or(0).to_string());
        rows.push(std::iter::once(l.label.clone()).chain(counts).collect());
    }
    rows
}

/// `s` padded with spaces to `width` terminal columns. Labels are user text: `查询余额` is four
/// characters but eight columns, so counting characters would push the columns after it out of
/// line.
pub(crate) fn pad_right(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.width())))
}

/// A result's row as the one row model formats it (the dashboard formats the same).
fn row(r: &LabelResult) -> [String; 13] {
    let l = &r.latency;
    Row {
        label: r.label.clone(),
        group: r.group,
        samples: r.samples,
        latency: (l.count > 0).then_some([l.mean, l.p50, l.p90, l.p95, l.p99, l.min, l.max]),
        error_rate: r.error_rate,
        throughput: r.throughput,
        received_kb_per_s: r.received_kb_per_s,
        sent_kb_per_s: r.sent_kb_per_s,
    }
    .cells()
}

/// The aggregate table: one row per label and a TOTAL row; latencies in ms.
pub fn render_table(result: &RunResult) -> String {
    aligned(&table_rows(result))
}

/// The aggregate table's cells, the header first (the Markdown and CSV reports use the same).
pub(crate) fn table_rows(result: &RunResult) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = vec![HEADERS.map(String::from).to_vec()];
    rows.extend(result.labels.iter().map(|l| row(l).to_vec()));
    if result.labels.len() != 1 || result.labels[0].label != "TOTAL" {
        let mut total = row(&result.total);
        total[0] = "TOTAL".into();
        rows.push(total.to_vec());
    }
    rows
}

/// Rows of cells as a text table: the first column left-aligned, the others right-aligned (by
/// display width), two spaces apart, a rule under the header.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.width()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.width());
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
            let width = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
            out.push_str(&"-".repeat(width));
            out.push('\n');
        }
    }
    out
}

/// The holds of a staged run as a level table: a row per hold.
pub(crate) fn holds_table(r: &RunResult, exact: bool) -> Vec<Vec<String>> {
    let rows: Vec<crate::LevelRow> = r.holds.iter().map(crate::LevelRow::of_hold).collect();
    crate::grid::level_table(&rows, exact, false)
}

/// The phases of a row as one line: each phase's p50 and p99 (ms; `-` for a phase no request
/// had), then the share of requests on a reused connection.
pub(crate) fn phases_line(p: &crate::PhasesResult) -> String {
    let cells: Vec<String> = p
        .named()
        .iter()
        .map(|(name, r)| match r.stats.count {
            0 => format!("{name} -"),
            _ => format!("{name} {}/{}", ms(r.stats.p50), ms(r.stats.p99)),
        })
        .collect();
    format!(
        "Phases p50/p99 ms   {}   connections {} new, {:.1}% of requests on a reused one\n",
        cells.join("  "),
        p.new_connections,
        100.0 * p.reused_share
    )
}

/// The phases of each row that has them (and TOTAL, when more than one has), header first:
/// each phase's p50 and p99 in ms, new connections and the share of requests on a reused one.
/// Empty when no row has phases.
pub(crate) fn phases_rows(r: &RunResult) -> Vec<Vec<String>> {
    let mut rows: Vec<&LabelResult> = r.labels.iter().filter(|l| l.phases.is_some()).collect();
    if rows.is_empty() {
        return Vec::new();
    }
    if rows.len() > 1 && r.total.phases.is_some() {
        rows.push(&r.total);
    }
    let mut out = vec![std::iter::once("Label".to_string())
        .chain(
            ["blocked", "connect", "tls", "send", "wait", "receive"]
                .iter()
                .map(|n| format!("{n} p50/p99")),
        )
        .chain(["New conns".to_string(), "Reused".to_string()])
        .collect::<Vec<_>>()];
    for l in rows {
        let Some(p) = &l.phases else { continue };
        let mut row = vec![l.label.clone()];
        row.extend(p.named().iter().map(|(_, r)| match r.stats.count {
            0 => "-".to_string(),
            _ => format!("{}/{}", ms(r.stats.p50), ms(r.stats.p99)),
        }));
        row.push(p.new_connections.to_string());
        row.push(format!("{:.1}%", 100.0 * p.reused_share));
        out.push(row);
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
        "{} in {:.2}s{stop}, latency in ms (of requests that succeeded or waited: failures timed apart)\n",
        throng_core::plural(r.total.samples, "request"),
        r.duration
    );
    out.push_str(&render_table(r));
    if !r.holds.is_empty() {
        let _ = writeln!(
            out,
            "\nEach hold of the stages (its seconds' requests, TOTAL)\n"
        );
        out.push_str(&aligned(&holds_table(r, false)));
    }
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
        if let Ok(h) = throng_core::histogram::decode(&t.latency_hdr) {
            out.push_str(&crate::histogram::render_histogram(&h));
        }
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
    if let Some(p) = &t.phases {
        out.push_str(&phases_line(p));
    }
    if let Some(s) = &t.stream {
        out.push_str(&crate::stream::stream_line(s));
    }
    // Requests that were several operations each (a SQL transaction's statements, BEGIN and
    // COMMIT included): their rate beside the groups' passes, as sysbench prints queries per
    // second beside transactions per second.
    if t.operations > t.samples {
        let groups: Vec<String> = r
            .labels
            .iter()
            .filter(|l| l.group)
            .map(|l| format!("{} {:.1}/s", l.label, l.ok_per_s))
            .collect();
        let _ = write!(out, "Operations   {} ({:.1}/s)", t.operations, t.ops_per_s);
        if !groups.is_empty() {
            let _ = write!(out, "   transactions: {}", groups.join("   "));
        }
        out.push('\n');
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
        let by_label = errors_by_label(r);
        if !by_label.is_empty() {
            let widths: Vec<usize> = (0..by_label[0].len())
                .map(|c| by_label.iter().map(|row| row[c].width()).max().unwrap_or(0))
                .collect();
            let _ = writeln!(out, "  by label");
            for row in &by_label {
                let mut line = format!("    {}", pad_right(&row[0], widths[0]));
                for (cell, w) in row.iter().zip(&widths).skip(1) {
                    let _ = write!(line, "   {cell:>w$}");
                }
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out.push_str(&crate::render_containers(&r.containers));
    out.push_str(&crate::render_databases(&r.databases));
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
                "  {mark} {} {} {observed}",
                pad_right(&t.threshold, 28),
                pad_right(&t.label, 12),
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use throng_core::histogram::record;
    use throng_core::{ClosedLoop, LoadModel, RunPlan, Snapshot, Users};
    use unicode_width::UnicodeWidthStr as _;

    use super::*;

    /// A result with these labels, each with a few samples.
    fn result(labels: &[&str]) -> RunResult {
        let plan = RunPlan::new(
            "http://127.0.0.1:8080/",
            LoadModel::Closed(ClosedLoop {
                users: Users::Fixed(1),
                requests: Some(10),
                iterations: None,
                duration: None,
                think_time: None,
            }),
        );
        let labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let mut s = Snapshot::empty(Arc::new(plan), &labels, 0);
        s.elapsed = Duration::from_secs(1);
        for (i, row) in s.labels.iter_mut().enumerate() {
            for v in [900, 1_200, 15_000 * (i as u64 + 1)] {
                record(&mut row.latency, v);
                record(&mut row.service, v);
            }
            row.samples = 3;
            row.bytes_sent = 300;
            row.bytes_received = 900;
        }
        for row in s.labels.clone() {
            s.total.add(&row);
        }
        RunResult::from_snapshot(&s)
    }

    /// The terminal column just after each of the twelve numeric cells of a table row (labels
    /// may hold spaces, numbers never do; right alignment makes these equal down a column).
    fn numeric_ends(line: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut col = 0;
        let mut prev_blank = true;
        for c in line.chars() {
            let blank = c == ' ';
            if blank && !prev_blank {
                ends.push(col);
            }
            prev_blank = blank;
            col += c.to_string().width();
        }
        if !prev_blank {
            ends.push(col);
        }
        ends.split_off(ends.len().saturating_sub(12))
    }

    #[test]
    fn wide_labels_keep_every_column_in_line() {
        // Chinese is two columns a character, the emoji two, the accent one in two bytes.
        let text = render_table(&result(&["查询余额", "GET /🚀", "café", "POST /transfer"]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        let rows: Vec<Vec<usize>> = lines[2..].iter().map(|l| numeric_ends(l)).collect();
        for (line, ends) in lines[2..].iter().zip(&rows) {
            assert_eq!(ends.len(), 12, "{line}");
            assert_eq!(ends, &rows[0], "columns out of line:\n{text}");
        }
        // The label column is as wide as the widest label in terminal columns: "POST /transfer"
        // is 14, so Samples ends at 14 + 2 + 7 ("Samples" is the widest cell of its column).
        assert_eq!(rows[0][0], 14 + 2 + "Samples".len(), "{text}");
        // The header and the rule under it are as wide as the rows.
        assert_eq!(lines[0].width(), lines[2].width(), "{text}");
        assert_eq!(lines[1].width(), lines[2].width(), "{text}");
    }

    #[test]
    fn a_label_wider_than_the_others_sets_the_first_column() {
        // 12 characters, 24 columns: counting characters would end Samples at 12 + 2 + 7.
        let text = render_table(&result(&["查询余额查询余额查询余额", "GET /", "🚀"]));
        let lines: Vec<&str> = text.lines().collect();
        let rows: Vec<Vec<usize>> = lines[2..].iter().map(|l| numeric_ends(l)).collect();
        assert!(rows.iter().all(|r| r == &rows[0]), "{text}");
        assert_eq!(rows[0][0], 24 + 2 + "Samples".len(), "{text}");
    }
}
