//! A comparison as people read it: a table per label (each side's figure, its change against
//! the baseline, a mark for the noise verdict), the containers' and databases' tables, and
//! the legend saying how noise was judged.

use std::fmt::Write as _;

use super::{Cell, Comparison, ContainerRow, Figure, NoiseMethod, Verdict, MIN_ROUNDS};

/// A figure as text: counts whole, latencies to three significant figures, rates to one decimal.
fn value_text(f: Figure, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) => match f {
            Figure::Samples => format!("{v:.0}"),
            Figure::Throughput | Figure::TokensPerS | Figure::Goodput => format!("{v:.1}"),
            Figure::ErrorRate | Figure::ReceivedKbPerS | Figure::SentKbPerS => format!("{v:.2}"),
            _ => throng_core::row::ms(v),
        },
    }
}

/// A cell as text: `4.12 (+96.2%)*`: `*` beyond noise, `~` within, nothing when not judged.
fn cell_text(f: Figure, c: &Cell) -> String {
    let mut s = value_text(f, c.value);
    if let Some(ch) = c.change {
        let _ = write!(s, " ({ch:+.1}%)");
    }
    match c.verdict {
        Verdict::Beyond => s.push('*'),
        Verdict::Within => s.push('~'),
        Verdict::Unknown => {}
    }
    s
}

/// The comparison's tables as rows of cells (header first), one table per label.
fn tables(c: &Comparison) -> Vec<(String, Vec<Vec<String>>)> {
    c.labels
        .iter()
        .map(|l| {
            let mut head = vec![l.label.clone()];
            for (i, n) in c.names.iter().enumerate() {
                head.push(if i == 0 {
                    format!("{n} (baseline)")
                } else {
                    n.clone()
                });
            }
            let mut rows = vec![head];
            for r in &l.rows {
                let mut row = vec![r.figure.name().to_string()];
                row.extend(r.cells.iter().map(|cell| cell_text(r.figure, cell)));
                rows.push(row);
            }
            (l.label.clone(), rows)
        })
        .collect()
}

/// The legend under the tables: how noise was judged, or, when no cell was, why not (a legend
/// of marks that no cell carries would read as if the changes had been judged).
pub(crate) fn method_line(c: &Comparison) -> String {
    let rounds = c
        .rounds
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(" and ");
    let judged = c
        .labels
        .iter()
        .flat_map(|l| &l.rows)
        .flat_map(|r| &r.cells)
        .any(|cell| cell.verdict != Verdict::Unknown);
    let how = match (c.method, judged) {
        (NoiseMethod::Rounds, true) => {
            format!(
                "* beyond the noise, ~ within it: Welch's t-test at 95% over the rounds ({rounds})"
            )
        }
        (NoiseMethod::Intervals, true) => {
            "* beyond the noise, ~ within it: beyond twice the runs' \
             one-second spreads combined, one run a side"
                .to_string()
        }
        (NoiseMethod::Rounds, false) if c.rounds.iter().any(|&n| n < MIN_ROUNDS) => format!(
            "not judged against the noise: the rounds ({rounds}) are too few to judge (--rounds \
             {MIN_ROUNDS} or more)"
        ),
        (NoiseMethod::Intervals, false) => "not judged against the noise: the runs have fewer \
             than three whole seconds to judge by (-z 3s or more; --rounds 3 or more is better)"
            .to_string(),
        (NoiseMethod::Rounds, false) => "not judged against the noise: no figure of the rounds \
             could be"
            .to_string(),
    };
    format!("{how}; changes in % of the baseline")
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

fn container_cells(r: &ContainerRow) -> Vec<String> {
    let cpu = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}%"));
    let mem = |v: Option<u64>| v.map_or("-".into(), mib);
    vec![
        r.side.clone(),
        r.name.clone(),
        format!("{:.1} MB", r.image_size as f64 / 1e6),
        cpu(r.cpu_idle),
        cpu(r.cpu_load),
        mem(r.mem_idle),
        mem(r.mem_idle_after),
        mem(r.mem_load),
    ]
}

const CONTAINER_HEAD: [&str; 8] = [
    "Side",
    "Container",
    "Image",
    "CPU idle",
    "CPU load",
    "Memory idle",
    "Memory idle after load",
    "Memory load",
];

/// Every table of the comparison: one per label, then the containers' and the databases' (if
/// any).
pub(crate) fn all_tables(c: &Comparison) -> Vec<Vec<Vec<String>>> {
    let mut out: Vec<Vec<Vec<String>>> = tables(c).into_iter().map(|(_, rows)| rows).collect();
    if !c.containers.is_empty() {
        let mut rows = vec![CONTAINER_HEAD.map(String::from).to_vec()];
        rows.extend(c.containers.iter().map(container_cells));
        out.push(rows);
    }
    if !c.databases.is_empty() {
        out.push(crate::databases::database_table(&c.databases));
    }
    out
}

/// The comparison as aligned text tables, for the terminal.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    for rows in all_tables(c) {
        out.push_str(&crate::table::aligned(&rows));
        out.push('\n');
    }
    let _ = writeln!(out, "{}", method_line(c));
    out
}

/// The comparison as Markdown tables, ready to paste into an issue.
pub fn comparison_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    for rows in all_tables(c) {
        out.push_str(&crate::markdown::table(&rows));
        out.push('\n');
    }
    let _ = writeln!(out, "{}", method_line(c).replace('*', "\\*"));
    out
}
