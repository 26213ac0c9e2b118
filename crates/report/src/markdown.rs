//! Reports as Markdown: the aggregate table and the rest of the summary, ready to paste into an
//! issue, a pull request or a blog.

use std::fmt::Write as _;

use crate::RunResult;

/// A cell's text made safe inside a Markdown table (pipes escaped, no line breaks).
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('*', "\\*")
        .replace(['\n', '\r'], " ")
}

/// Rows of cells (header first) as a Markdown table; every column but the first is
/// right-aligned, as numbers read best.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = (0..columns)
            .map(|c| cell(r.get(c).map_or("", String::as_str)))
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let rule: Vec<&str> = (0..columns)
                .map(|c| if c == 0 { ":---" } else { "---:" })
                .collect();
            let _ = writeln!(out, "| {} |", rule.join(" | "));
        }
    }
    out
}

/// A run as Markdown: what ran, the aggregate table (latencies in ms), statuses, errors,
/// thresholds and warnings.
pub fn render_markdown(r: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**{}** -> `{}`\n", cell(&r.description), r.plan.target);
    let _ = writeln!(
        out,
        "Started {}, {:.1} s{}. Latencies in ms.\n",
        r.started_at,
        r.duration,
        if r.interrupted { ", stopped early" } else { "" }
    );
    out.push_str(&table(&crate::table::table_rows(r)));
    if !r.holds.is_empty() {
        out.push_str("\nEach hold of the stages (its seconds' requests):\n\n");
        out.push_str(&table(&crate::table::holds_table(r, false)));
    }
    let phases = crate::table::phases_rows(r);
    if !phases.is_empty() {
        out.push_str("\nWhere the time went (phases, ms; latency = blocked + the rest):\n\n");
        out.push_str(&table(&phases));
    }
    let streams = crate::stream::stream_rows(r);
    if !streams.is_empty() {
        out.push_str("\nStreams of tokens (ms, from each request's intended start):\n\n");
        out.push_str(&table(&streams));
    }
    if !r.status_codes.is_empty() {
        let mut rows = vec![vec!["Status".to_string(), "Count".to_string()]];
        rows.extend(
            r.status_codes
                .iter()
                .map(|(s, n)| vec![s.clone(), n.to_string()]),
        );
        out.push('\n');
        out.push_str(&table(&rows));
    }
    if !r.errors.is_empty() {
        let mut rows = vec![vec![
            "Error".to_string(),
            "Count".to_string(),
            "Sample".to_string(),
        ]];
        rows.extend(
            r.errors
                .iter()
                .map(|e| vec![e.class.clone(), e.count.to_string(), e.sample.clone()]),
        );
        out.push('\n');
        out.push_str(&table(&rows));
        let by_label = crate::errors_by_label(r);
        if !by_label.is_empty() {
            out.push_str("\nErrors by label:\n\n");
            out.push_str(&table(&by_label));
        }
    }
    for d in &r.databases {
        let _ = writeln!(out, "\n{}\n", d.heading());
        for (i, rows) in d.tables(|v| format!("{v:.1}")).iter().enumerate() {
            out.push_str(&match i {
                0 => table(rows),
                _ => format!("\n{}", table(rows)),
            });
        }
    }
    if !r.thresholds.is_empty() {
        let mut rows = vec![vec![
            "Threshold".to_string(),
            "Observed".to_string(),
            "Result".to_string(),
        ]];
        rows.extend(r.thresholds.iter().map(|t| {
            vec![
                t.threshold.clone(),
                t.observed.map_or("-".into(), |o| format!("{o:.3}")),
                if t.passed { "pass" } else { "FAIL" }.into(),
            ]
        }));
        out.push('\n');
        out.push_str(&table(&rows));
    }
    for w in &r.warnings {
        let _ = write!(out, "\n> warning: {}\n", cell(w));
    }
    out
}

/// Each side's aggregate table (JMeter's columns, its rounds merged), under the side's name.
pub fn sides_markdown(sides: &[crate::Side]) -> String {
    let mut out = String::new();
    for s in sides {
        let rounds: Vec<&RunResult> = s.runs.iter().collect();
        let Ok(merged) = crate::merge_rounds(&rounds) else {
            continue;
        };
        let how = match rounds.len() {
            1 => String::new(),
            n => format!(", {n} rounds merged"),
        };
        let _ = writeln!(out, "\n**{}** (latencies in ms{how})\n", cell(&s.name));
        out.push_str(&table(&crate::table::table_rows(&merged)));
    }
    out
}
