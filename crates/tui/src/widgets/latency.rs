//! Percentiles for the last interval and the whole run; in the open loop, latency beside service
//! time, and the schedule's lag.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Row, Table, Widget};
use throng_core::{Percentiles, Snapshot};

use crate::format;

/// The latency panel.
pub struct LatencyPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
}

const ROWS: [&str; 6] = ["p50", "p90", "p95", "p99", "p99.9", "max"];

fn column(p: &Percentiles) -> [u64; 6] {
    [p.p50, p.p90, p.p95, p.p99, p.p999, p.max]
}

impl LatencyPanel<'_> {
    /// Rows the panel needs: borders, a heading, six percentiles, and the lag line when open.
    pub fn height(snap: &Snapshot) -> u16 {
        2 + 1 + 6 + u16::from(snap.lag.is_some())
    }

    /// Columns the panel needs.
    pub fn width(snap: &Snapshot) -> u16 {
        if snap.lag.is_some() {
            48
        } else {
            32
        }
    }
}

impl Widget for LatencyPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let s = self.snap;
        let open = s.lag.is_some();
        let title = if open {
            " Latency | service time (ms) "
        } else {
            " Latency (ms) "
        };
        let block = Block::bordered()
            .title(title)
            .border_style(Style::new().fg(Color::DarkGray))
            .title_style(Style::new().fg(Color::White).bold());
        let inner = block.inner(area);
        block.render(area, buf);

        let mut cols = vec![column(&Percentiles::of(&s.last.latency))];
        cols.push(column(&Percentiles::of(&s.total.latency)));
        let mut header = vec!["", "last 1s", "run"];
        if open {
            cols.push(column(&Percentiles::of(&s.last.service)));
            cols.push(column(&Percentiles::of(&s.total.service)));
            header.extend(["svc 1s", "svc run"]);
        }
        let rows = ROWS.iter().enumerate().map(|(i, name)| {
            let mut cells = vec![Cell::from(*name).fg(Color::DarkGray)];
            for (c, col) in cols.iter().enumerate() {
                let text = Line::from(format::ms(col[i])).right_aligned();
                // The run's column is the headline; the interval is context.
                cells.push(if c % 2 == 1 {
                    Cell::from(text.bold())
                } else {
                    Cell::from(text)
                });
            }
            Row::new(cells)
        });
        let heading = Row::new(
            header
                .iter()
                .map(|h| Cell::from(Line::from(*h).right_aligned())),
        )
        .style(Style::new().fg(Color::Cyan));
        let mut widths = vec![Constraint::Length(6)];
        widths.extend(std::iter::repeat_n(Constraint::Length(9), cols.len()));

        let [table_area, lag_area] =
            Layout::vertical([Constraint::Length(7), Constraint::Min(0)]).areas(inner);
        Table::new(rows, widths)
            .header(heading)
            .column_spacing(1)
            .render(table_area, buf);

        if let Some(lag) = &s.lag {
            let p = Percentiles::of(&lag.lag);
            let dim = Style::new().fg(Color::DarkGray);
            let warn = |n: u64| {
                if n > 0 {
                    Style::new().fg(Color::Yellow).bold()
                } else {
                    Style::new()
                }
            };
            Line::from(vec![
                Span::styled("lag ", dim),
                Span::raw(format!(
                    "p99 {} max {}",
                    format::ms(p.p99),
                    format::ms(p.max)
                )),
                Span::styled("  late ", dim),
                Span::styled(format::count(lag.late), warn(lag.late)),
                Span::styled("  dropped ", dim),
                Span::styled(format::count(lag.dropped), warn(lag.dropped)),
            ])
            .render(lag_area, buf);
        }
    }
}
