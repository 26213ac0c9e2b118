//! The dashboard's widgets: small structs borrowing the data they draw, each rendering into a
//! `Buffer` with no state of its own.

pub mod charts;
pub mod containers;
pub mod databases;
pub mod errors;
pub mod footer;
pub mod grid;
pub mod header;
pub mod labels;
pub mod latency;
pub mod mix;
pub mod phases;
pub mod spectrum;
pub mod streams;
pub mod traffic;

pub use charts::{Metric, SeriesChart};
pub use containers::{ContainersPanel, ContainersView};
pub use databases::DatabasesPanel;
pub use errors::{ErrorsPanel, LabelErrorsPanel, StatusPanel};
pub use footer::Footer;
pub use grid::GridView;
pub use header::{Header, TabBar};
pub use labels::{Aggregate, LabelTable, TableRow};
pub use latency::LatencyPanel;
pub use mix::{MixTable, WorkloadsChart};
pub use phases::PhasesPanel;
pub use spectrum::Spectrum;
pub use streams::StreamsPanel;
pub use traffic::TrafficPanel;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Row, Table, Widget};
use throng_core::histogram::Histogram;
use throng_core::Percentiles;

use crate::format;

/// A bordered panel with a bold title, as the overview's tables are drawn.
pub(crate) fn panel(title: &str) -> Block<'_> {
    Block::bordered()
        .title(title)
        .border_style(Style::new().fg(Color::DarkGray))
        .title_style(Style::new().fg(Color::White).bold())
}

/// A table's heading row: each title in its column, right-aligned when marked so.
pub(crate) fn heading(cols: &[Rect], titles: &[(&str, bool)], buf: &mut Buffer) {
    let style = Style::new().fg(Color::Cyan).bold();
    for (col, (title, right)) in cols.iter().zip(titles) {
        let line = Line::styled(*title, style);
        match right {
            true => line.right_aligned().render(*col, buf),
            false => line.render(*col, buf),
        }
    }
}

/// A histogram's cell in a table of quantiles: its p50 and p99 in milliseconds when `both`, else
/// its p99 alone; `-` when it holds nothing.
pub(crate) fn quantiles(h: &Histogram<u64>, both: bool) -> String {
    let p = Percentiles::of(h);
    match (p.count, both) {
        (0, _) => "-".to_string(),
        (_, true) => format!("{}/{}", format::ms(p.p50), format::ms(p.p99)),
        (_, false) => format::ms(p.p99),
    }
}

/// A table of labels by their quantiles, as the phases' and the streams' panels draw it: the
/// label column headed by what the quantile cells show, a column `wide` cells wide (8 when not
/// `both`) for each of `figures`, then each of `more` in its own width, every heading but the
/// first right-aligned.
pub(crate) fn quantiles_table<'a>(
    rows: Vec<Row<'a>>,
    both: bool,
    figures: impl IntoIterator<Item = Line<'a>>,
    wide: u16,
    more: &[(&'a str, u16)],
) -> Table<'a> {
    let first = match both {
        true => "p50/p99 ms",
        false => "p99 ms",
    };
    let mut heading = vec![Cell::from(first)];
    let mut widths = vec![Constraint::Min(10)];
    for figure in figures {
        heading.push(Cell::from(figure.right_aligned()));
        widths.push(Constraint::Length(if both { wide } else { 8 }));
    }
    for (title, width) in more {
        heading.push(Cell::from(Line::from(*title).right_aligned()));
        widths.push(Constraint::Length(*width));
    }
    Table::new(rows, widths)
        .header(Row::new(heading).style(Style::new().fg(Color::Cyan).bold()))
        .column_spacing(1)
        .flex(Flex::Start)
}
