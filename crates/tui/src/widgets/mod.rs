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
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Widget};

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
