//! The servers whose own figures are read (`--db-stats`, a broker's monitor): a database's
//! transactions and statements per second in the last second, transactions over time, and the
//! load's total so far; a server without transactions the same of its first counter, named.
//! Rendered only when servers are watched; the layout leaves the panel out otherwise.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Sparkline, Widget};
use throng_core::DatabaseSeries;

use crate::format;

/// One line per database: name, transactions/s with a sparkline, statements/s, load total.
pub struct DatabasesPanel<'a> {
    /// The databases read.
    pub databases: &'a [DatabaseSeries],
}

impl DatabasesPanel<'_> {
    /// Rows the panel wants.
    pub fn height(databases: &[DatabaseSeries]) -> u16 {
        (databases.len() as u16).saturating_add(3)
    }
}

const NAME: u16 = 30;
const RATE: u16 = 10;
const TOTAL: u16 = 14;

/// The headline's increase since the last reading before the load (the first reading when
/// there is none).
fn load_total(d: &DatabaseSeries, ix: &[usize]) -> u64 {
    let split = d.samples.partition_point(|s| s.t < 0.0);
    let base = d.samples[..split].last().or(d.samples.first());
    match (base, d.samples.last()) {
        (Some(a), Some(b)) => DatabaseSeries::sum(b, ix).saturating_sub(DatabaseSeries::sum(a, ix)),
        _ => 0,
    }
}

impl Widget for DatabasesPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = super::panel(" Databases (their own counters) ");
        let inner = block.inner(area);
        block.render(area, buf);
        let widths = [
            Constraint::Length(NAME),
            Constraint::Length(RATE),
            Constraint::Min(4),
            Constraint::Length(RATE),
            Constraint::Length(TOTAL),
        ];
        let mut rows = inner.rows();
        if let Some(head) = rows.next() {
            let cols = Layout::horizontal(widths).spacing(1).split(head);
            let titles = [
                ("database", false),
                ("trx/s", true),
                ("trx/s over time", false),
                ("stmt/s", true),
                ("trx in load", true),
            ];
            super::heading(&cols, &titles, buf);
        }
        for (d, row) in self.databases.iter().zip(rows) {
            let cols = Layout::horizontal(widths).spacing(1).split(row);
            let (what, ix) = d.info.headline().unwrap_or(("", Vec::new()));
            let name = match what {
                "transactions" | "" => d.info.name.clone(),
                w => format!("{} ({w})", d.info.name),
            };
            Line::from(name).bold().render(cols[0], buf);
            Line::from(format::rate(d.headline_per_s().unwrap_or(0.0)))
                .right_aligned()
                .render(cols[1], buf);
            Sparkline::default()
                .data(d.series(&ix, cols[2].width as usize))
                .style(Style::new().fg(Color::Cyan))
                .render(cols[2], buf);
            let statements = d
                .statements_per_s()
                .map_or_else(|| "-".to_string(), format::rate);
            Line::from(statements).right_aligned().render(cols[3], buf);
            Line::from(format::count(load_total(d, &ix)))
                .right_aligned()
                .render(cols[4], buf);
        }
    }
}
