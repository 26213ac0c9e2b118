//! Errors by class with a sample message, which step failed how, and the status-code
//! distribution.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Widget};
use throng_core::{ErrorClass, LabelStats, Snapshot, StatusClass};

use unicode_width::UnicodeWidthStr as _;

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

/// Which step failed how, when more than one did: a row per failing step, a column per class
/// that failed (as the reports' errors by label). A flow's row repeats its steps' failures and
/// a parts row has none of its own, so neither is listed.
pub struct LabelErrorsPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
}

impl<'a> LabelErrorsPanel<'a> {
    /// The failing steps, and the classes that failed among them, in [`ErrorClass::ALL`]'s
    /// order; no step unless at least two failed.
    fn failing(&self) -> (Vec<&'a LabelStats>, Vec<ErrorClass>) {
        let steps: Vec<&LabelStats> = self
            .snap
            .labels
            .iter()
            .filter(|l| !l.group && !l.parts && l.errors_by_class().next().is_some())
            .collect();
        if steps.len() < 2 {
            return (Vec::new(), Vec::new());
        }
        let classes = ErrorClass::ALL
            .into_iter()
            .filter(|c| steps.iter().any(|l| l.classes[c.index()] > 0))
            .collect();
        (steps, classes)
    }

    /// Rows it takes, borders and header included; 0 when it has nothing to show.
    pub fn height(&self) -> u16 {
        match self.failing().0.len() {
            0 => 0,
            n => n as u16 + 3,
        }
    }
}

impl Widget for LabelErrorsPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (steps, classes) = self.failing();
        if steps.is_empty() {
            return;
        }
        let rows = steps.iter().map(|l| {
            let counts = classes.iter().map(|c| {
                let n = l.classes[c.index()];
                let cell = Cell::from(Line::from(format::count(n)).right_aligned());
                match n {
                    0 => cell.fg(Color::DarkGray),
                    _ => cell.fg(Color::Red),
                }
            });
            Row::new(std::iter::once(Cell::from(l.label.clone())).chain(counts))
        });
        // The labels' own width (display columns: labels are user text), the counts beside them.
        let label = steps
            .iter()
            .map(|l| l.label.width())
            .max()
            .unwrap_or(0)
            .max(5) as u16;
        let widths = std::iter::once(Constraint::Length(label)).chain(
            classes
                .iter()
                .map(|c| Constraint::Length(c.name().len().max(8) as u16)),
        );
        let header = std::iter::once(Cell::from("label")).chain(
            classes
                .iter()
                .map(|c| Cell::from(Line::from(c.name()).right_aligned())),
        );
        Table::new(rows, widths)
            .header(Row::new(header).style(Style::new().fg(Color::Cyan).bold()))
            .column_spacing(3)
            .flex(Flex::Start)
            .block(block(" Errors by label "))
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
