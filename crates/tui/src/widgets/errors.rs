//! Errors by class with a sample message, and the status-code distribution.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Widget};
use throng_core::{Snapshot, StatusClass};

use crate::format;

fn block(title: &str) -> Block<'_> {
    Block::bordered()
        .title(title)
        .border_style(Style::new().fg(Color::DarkGray))
        .title_style(Style::new().fg(Color::White).bold())
}

/// Error classes, their counts and share of requests, and a sample message each.
pub struct ErrorsPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
}

impl Widget for ErrorsPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let s = self.snap;
        let title = format!(" Errors: {} ", format::count(s.total.errors));
        let block = block(&title);
        // Requests cut off at the end are errors of their own class (`aborted`), listed here.
        if s.errors.is_empty() {
            Paragraph::new(vec![Line::from("No errors.").fg(Color::Green)])
                .block(block)
                .render(area, buf);
            return;
        }
        let samples = s.total.samples.max(1) as f64;
        let rows: Vec<Row> = s
            .errors
            .iter()
            .map(|e| {
                Row::new(vec![
                    Cell::from(e.class.name()).fg(Color::Red),
                    Cell::from(Line::from(format::count(e.count)).right_aligned()),
                    Cell::from(
                        Line::from(format::percent(e.count as f64 / samples)).right_aligned(),
                    ),
                    Cell::from(e.sample.clone()).fg(Color::DarkGray),
                ])
            })
            .collect();
        Table::new(
            rows,
            [
                Constraint::Length(12),
                Constraint::Length(10),
                Constraint::Length(8),
                Constraint::Min(10),
            ],
        )
        .header(
            Row::new(vec![
                Cell::from("class"),
                Cell::from(Line::from("count").right_aligned()),
                Cell::from(Line::from("share").right_aligned()),
                Cell::from("sample"),
            ])
            .style(Style::new().fg(Color::Cyan).bold()),
        )
        .column_spacing(1)
        .block(block)
        .render(area, buf);
    }
}

/// Status codes with counts, shares and a bar.
pub struct StatusPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
}

impl Widget for StatusPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let s = self.snap;
        let block = block(" Status codes ");
        if s.statuses.is_empty() {
            Paragraph::new("No responses yet.")
                .block(block)
                .render(area, buf);
            return;
        }
        let all: u64 = s.statuses.iter().map(|(_, n)| n).sum::<u64>().max(1);
        let code_width = s
            .statuses
            .iter()
            .map(|(code, _)| code.to_string().chars().count())
            .max()
            .unwrap_or(4)
            .max(4) as u16;
        let bar_width = area
            .width
            .saturating_sub(2 + code_width + 11 + 8 + 3)
            .max(1) as f64;
        let rows = s.statuses.iter().map(|(code, n)| {
            let share = *n as f64 / all as f64;
            let color = match code.class() {
                StatusClass::Success => Color::Green,
                StatusClass::Redirect => Color::Cyan,
                StatusClass::Warning => Color::Yellow,
                StatusClass::Failure | StatusClass::None => Color::Red,
            };
            let bar = "█".repeat(((share * bar_width).round() as usize).max(1));
            Row::new(vec![
                Cell::from(code.to_string()).fg(color).bold(),
                Cell::from(Line::from(format::count(*n)).right_aligned()),
                Cell::from(Line::from(format::percent(share)).right_aligned()),
                Cell::from(bar).fg(color),
            ])
        });
        Table::new(
            rows,
            [
                Constraint::Length(code_width),
                Constraint::Length(11),
                Constraint::Length(8),
                Constraint::Min(1),
            ],
        )
        .column_spacing(1)
        .block(block)
        .render(area, buf);
    }
}
