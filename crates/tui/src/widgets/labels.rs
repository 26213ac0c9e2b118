//! The per-label table with JMeter's aggregate columns and a TOTAL row; the same table, with a
//! row per workload and per flow, shows a mix.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Row, Table, Widget};
use throng_core::row::Row as AggregateRow;
use throng_core::{LabelStats, Snapshot};

use crate::format;

/// The aggregate table.
pub struct LabelTable<'a> {
    /// The run.
    pub snap: &'a Snapshot,
    /// Label rows skipped from the top (scrolling); TOTAL always shows.
    pub scroll: usize,
}

pub use throng_core::row::COLUMNS;

/// The mark before a group row's label.
pub const GROUP: &str = "> ";

/// Which of [`COLUMNS`] the compact table keeps.
const COMPACT: [usize; 9] = [0, 1, 2, 3, 4, 6, 8, 9, 10];

/// One row of an aggregate table: its label as shown, its numbers over `secs`, its style.
pub struct TableRow<'a> {
    /// The label as shown (marks included).
    pub label: String,
    /// The numbers.
    pub stats: &'a LabelStats,
    /// The time its rates are over.
    pub secs: Duration,
    /// How the row is drawn.
    pub style: Style,
}

impl<'a> TableRow<'a> {
    /// A run's label row: a group (a flow of steps) marked and coloured, since its requests are
    /// already in the step rows.
    pub fn label(l: &'a LabelStats, secs: Duration) -> Self {
        match l.group {
            true => TableRow {
                label: format!("{GROUP}{}", l.label),
                stats: l,
                secs,
                style: Style::new().fg(Color::Cyan),
            },
            false => TableRow {
                label: l.label.clone(),
                stats: l,
                secs,
                style: Style::new(),
            },
        }
    }

    /// A TOTAL row, in bold, under `name`.
    pub fn total(name: impl Into<String>, l: &'a LabelStats, secs: Duration) -> Self {
        TableRow {
            label: name.into(),
            stats: l,
            secs,
            style: Style::new().add_modifier(Modifier::BOLD),
        }
    }

    /// The row's cells: the one row model the end-of-run summary prints too.
    fn cells(&self) -> [String; 13] {
        let mut c = AggregateRow::of(self.stats, self.secs).cells();
        c[0] = self.label.clone();
        c
    }
}

impl LabelTable<'_> {
    /// Rows the table wants: borders, header, its labels and TOTAL.
    pub fn height(snap: &Snapshot) -> u16 {
        (snap.labels.len() as u16).saturating_add(4)
    }
}

impl Widget for LabelTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let s = self.snap;
        Aggregate {
            title: "Per label",
            rows: s
                .labels
                .iter()
                .map(|l| TableRow::label(l, s.elapsed))
                .collect(),
            total: Some(TableRow::total("TOTAL", &s.total, s.elapsed)),
            scroll: self.scroll,
        }
        .render(area, buf);
    }
}

/// Rows with JMeter's aggregate columns (all of them when they fit, else the ones that matter
/// most), scrolled, with a TOTAL row that always shows.
pub struct Aggregate<'a> {
    /// The panel's title.
    pub title: &'a str,
    /// The rows, in order.
    pub rows: Vec<TableRow<'a>>,
    /// The last row, always shown.
    pub total: Option<TableRow<'a>>,
    /// Rows skipped from the top.
    pub scroll: usize,
}

impl Aggregate<'_> {
    /// Rows the table wants: borders, header, its rows and TOTAL.
    pub fn height(&self) -> u16 {
        (self.rows.len() + usize::from(self.total.is_some()) + 3) as u16
    }
}

impl Widget for Aggregate<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let label_width = self
            .rows
            .iter()
            .chain(self.total.iter())
            // In terminal columns: a label of wide characters (Chinese, emoji) sized by its
            // characters would be cut off halfway.
            .map(|r| format::width(&r.label))
            .max()
            .unwrap_or(0)
            .clamp(8, 40) as u16;
        let width = |c: usize| match c {
            0 => label_width,
            1 | 10 => 10,
            _ => COLUMNS[c].len().max(6) as u16,
        };
        let full: u16 = (0..COLUMNS.len()).map(|c| width(c) + 1).sum::<u16>() + 1;
        let keep: Vec<usize> = if full <= area.width {
            (0..COLUMNS.len()).collect()
        } else {
            COMPACT.to_vec()
        };
        let n = self.rows.len();
        let fixed = 3 + u16::from(self.total.is_some());
        let visible = area.height.saturating_sub(fixed) as usize;
        let scroll = self.scroll.min(n.saturating_sub(visible));
        let rows: Vec<([String; 13], Style)> = self
            .rows
            .iter()
            .skip(scroll)
            .take(visible)
            .chain(self.total.iter())
            .map(|r| (r.cells(), r.style))
            .collect();
        let others: u16 = keep.iter().skip(1).map(|&c| width(c) + 1).sum();
        let label_fits = area.width.saturating_sub(2 + others).clamp(5, label_width);
        let widths = keep.iter().map(|&c| match c {
            0 => Constraint::Length(label_fits),
            _ => Constraint::Length(width(c)),
        });
        let header = Row::new(keep.iter().map(|&c| {
            let line = Line::from(COLUMNS[c]);
            Cell::from(if c == 0 { line } else { line.right_aligned() })
        }))
        .style(Style::new().fg(Color::Cyan).bold());
        let body = rows.into_iter().map(|(r, style)| {
            Row::new(keep.iter().map(|&c| {
                let line = Line::from(r[c].clone());
                Cell::from(if c == 0 { line } else { line.right_aligned() })
            }))
            .style(style)
        });
        let title = if n > visible {
            format!(
                " {} ({}-{} of {}, ↑↓ to scroll) ",
                self.title,
                scroll + 1,
                (scroll + visible).min(n),
                n
            )
        } else {
            format!(" {} (latency in ms) ", self.title)
        };
        Table::new(body, widths)
            .header(header)
            .column_spacing(1)
            .flex(Flex::Start)
            .block(
                Block::bordered()
                    .title(title)
                    .border_style(Style::new().fg(Color::DarkGray))
                    .title_style(Style::new().fg(Color::White).bold()),
            )
            .render(area, buf);
    }
}
