//! A grid as it goes: the level table filling in (the running row marked, its figures live), the
//! capacity once a level has crossed the thresholds, and the latency–throughput curve.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};
use throng_core::Snapshot;

use super::charts::{legend_block, line_chart, nice_ceiling, segments, Series, PALETTE};
use super::{LatencyPanel, Spectrum};
use crate::board::GridBoard;
use crate::format;

/// The level table's columns in the order they give way to a narrow terminal.
const DROP: [&str; 10] = [
    "Aborted",
    "Memory (MiB)",
    "Mean",
    "p95",
    "Samples",
    "p90",
    "DB TPS",
    "Max",
    "CPU %",
    "Error %",
];

/// The mark before the running row.
const RUNNING: &str = "▶ ";

/// The grid view.
pub struct GridView<'a> {
    /// The grid.
    pub grid: &'a GridBoard,
    /// The run going now (or the last one, between runs).
    pub snap: &'a Snapshot,
}

impl GridView<'_> {
    /// Rows the level table wants: borders, header, rows.
    fn table_height(g: &GridBoard) -> u16 {
        (g.table.len().max(2) + 2) as u16
    }
}

impl Widget for GridView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let g = self.grid;
        let notes = g.notes.len() as u16;
        let table = Self::table_height(g).min(area.height.saturating_sub(notes + 1));
        let [at, table_area, notes_area, rest] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(table),
            Constraint::Length(notes),
            Constraint::Min(0),
        ])
        .areas(area);
        let mut head = vec![
            Span::styled(" ", Style::new()),
            Span::raw(g.at.clone()).bold(),
        ];
        if g.cooling {
            head.push(Span::styled(
                "  cooling down before the next run",
                Style::new().fg(Color::Yellow),
            ));
        }
        Line::from(head).render(at, buf);
        LevelTable { grid: g }.render(table_area, buf);
        let dim = Style::new().fg(Color::Gray);
        Paragraph::new(
            g.notes
                .iter()
                .map(|n| Line::styled(format!(" {n}"), dim))
                .collect::<Vec<_>>(),
        )
        .render(notes_area, buf);
        if rest.height < 6 {
            return;
        }
        // The curve beside the running level's own numbers, and its distribution under them
        // when there is room.
        let side = LatencyPanel::width(self.snap);
        let latency = LatencyPanel::height(self.snap);
        if rest.width >= side + 40 && rest.height >= latency {
            let [curve, column] =
                Layout::horizontal([Constraint::Min(40), Constraint::Length(side)]).areas(rest);
            Curve { grid: g }.render(curve, buf);
            let spectrum = match rest.height - latency {
                h if h >= SPECTRUM_MIN => h,
                _ => 0,
            };
            let [latency_area, spectrum_area] =
                Layout::vertical([Constraint::Length(latency), Constraint::Length(spectrum)])
                    .areas(column);
            LatencyPanel { snap: self.snap }.render(latency_area, buf);
            if spectrum > 0 {
                Spectrum { snap: self.snap }.render(spectrum_area, buf);
            }
        } else {
            Curve { grid: g }.render(rest, buf);
        }
    }
}

/// The fewest rows the percentile spectrum is drawn in.
const SPECTRUM_MIN: u16 = 8;

/// The level table as the report makes it, the running row marked.
struct LevelTable<'a> {
    grid: &'a GridBoard,
}

impl Widget for LevelTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let g = self.grid;
        let block = super::panel(" Levels (latency in ms) ");
        let Some((header, rows)) = g.table.split_first() else {
            block.render(area, buf);
            return;
        };
        let columns = header.len();
        let width = |c: usize| {
            g.table
                .iter()
                .map(|r| r.get(c).map_or(0, |s| format::width(s)))
                .max()
                .unwrap_or(0) as u16
                + if c == 0 { RUNNING.len() as u16 } else { 0 }
        };
        // Every column when they fit; else the least read go first, so the level, side,
        // throughput, p50, p99, errors and the verdict stay.
        let mut keep: Vec<(usize, u16)> = (0..columns).map(|c| (c, width(c))).collect();
        let fits = |k: &[(usize, u16)]| k.iter().map(|(_, w)| w + 1).sum::<u16>() < area.width;
        for name in DROP {
            if fits(&keep) {
                break;
            }
            keep.retain(|&(c, _)| header[c] != name);
        }
        let cell = |text: &str, c: usize| {
            let line = Line::from(text.to_string());
            Cell::from(if c == 0 { line } else { line.right_aligned() })
        };
        let head = Row::new(keep.iter().map(|&(c, _)| cell(&header[c], c)))
            .style(Style::new().fg(Color::Cyan).bold());
        let body = rows.iter().enumerate().map(|(i, r)| {
            let running = g.running == Some(i);
            let row = Row::new(keep.iter().map(|&(c, _)| {
                let text = r.get(c).map_or("", String::as_str);
                match c {
                    0 if running => cell(&format!("{RUNNING}{text}"), c),
                    0 => cell(&format!("  {text}"), c),
                    _ => cell(text, c),
                }
            }));
            let verdict = r.last().map_or("", String::as_str);
            match (running, verdict.starts_with("FAIL")) {
                (true, _) => row.style(Style::new().fg(Color::Yellow)),
                (false, true) => row.style(Style::new().fg(Color::Red)),
                _ => row,
            }
        });
        let widths = keep.iter().map(|&(_, w)| Constraint::Length(w));
        Table::new(body, widths)
            .header(head)
            .column_spacing(1)
            .block(block)
            .render(area, buf);
    }
}

/// Latency against throughput, a point per level: where the line turns up is where the target
/// saturates.
struct Curve<'a> {
    grid: &'a GridBoard,
}

impl Widget for Curve<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines: Vec<Series> = self
            .grid
            .curve
            .iter()
            .enumerate()
            .map(|(i, l)| Series::whole(l.name.clone(), PALETTE[i % PALETTE.len()], &l.points))
            .collect();
        let x_max = nice_ceiling(
            self.grid
                .curve
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .fold(0.0, f64::max),
        );
        let y_max = nice_ceiling(lines.iter().map(Series::max).fold(0.0, f64::max));
        let segs = segments(&lines);
        line_chart(
            &lines,
            &segs,
            (
                [0.0, x_max],
                vec!["0".into(), format!("{} req/s", format::rate(x_max))],
            ),
            (
                [0.0, y_max],
                ["0".into(), format::ms((y_max * 1000.0) as u64)],
            ),
            legend_block("Latency ms by throughput", &lines, None),
        )
        .render(area, buf);
    }
}
