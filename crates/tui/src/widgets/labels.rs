//! The per-label table with JMeter's aggregate columns and a TOTAL row.

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
const GROUP: &str = "> ";

/// Which of [`COLUMNS`] the compact table keeps.
const COMPACT: [usize; 9] = [0, 1, 2, 3, 4, 6, 8, 9, 10];

/// A row's cells: the one row model the end-of-run summary prints too.
fn cells(l: &LabelStats, secs: std::time::Duration) -> [String; 13] {
    AggregateRow::of(l, secs).cells()
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
        let label_width = s
            .labels
            .iter()
            // In terminal columns: a label of wide characters (Chinese, emoji) sized by its
            // characters would be cut off halfway.
            .map(|l| format::width(&l.label) + if l.group { GROUP.len() } else { 0 })
            .max()
            .unwrap_or(0)
            .clamp(8, 40) as u16;
        let width = |c: usize| match c {
            0 => label_width,
            1 | 10 => 10,
            _ => COLUMNS[c].len().max(6) as u16,
        };
        let full: u16 = (0..COLUMNS.len()).map(|c| width(c) + 1).sum::<u16>() + 1;
        // All of JMeter's columns when they fit, else the ones that matter most.
        let keep: Vec<usize> = if full <= area.width {
            (0..COLUMNS.len()).collect()
        } else {
            COMPACT.to_vec()
        };
        let visible = area.height.saturating_sub(4) as usize;
        let scroll = self.scroll.min(s.labels.len().saturating_sub(visible));
        // Group rows (a flow of steps) are marked: their requests are already in the step rows.
        let mut rows: Vec<([String; 13], Style)> = s
            .labels
            .iter()
            .skip(scroll)
            .take(visible)
            .map(|l| {
                let mut r = cells(l, s.elapsed);
                if l.group {
                    r[0] = format!("{GROUP}{}", r[0]);
                    (r, Style::new().fg(Color::Cyan))
                } else {
                    (r, Style::new())
                }
            })
            .collect();
        let mut total = cells(&s.total, s.elapsed);
        total[0] = "TOTAL".into();
        rows.push((total, Style::new().add_modifier(Modifier::BOLD)));

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
        let title = if s.labels.len() > visible {
            format!(
                " Per label ({}-{} of {}, ↑↓ to scroll) ",
                scroll + 1,
                (scroll + visible).min(s.labels.len()),
                s.labels.len()
            )
        } else {
            " Per label (latency in ms) ".to_string()
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
