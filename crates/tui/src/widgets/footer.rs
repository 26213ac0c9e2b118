//! The key reminder on the last row.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use throng_core::{LoadModel, Snapshot};

use crate::board::Board;
use crate::state::{View, ViewState};

/// The footer: each key and what it does now.
pub struct Footer<'a> {
    /// The run (open or closed loop decides what `+`/`-` change).
    pub snap: &'a Snapshot,
    /// The grid and workloads (decide which views exist).
    pub board: &'a Board,
    /// The view state (pause, stopping).
    pub state: &'a ViewState,
}

impl Widget for Footer<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let key = |k: String| Span::styled(k, Style::new().fg(Color::Black).bg(Color::Cyan));
        let what = |w: &'static str| Span::styled(w, Style::new().fg(Color::Gray));
        let spans = if self.state.stopping {
            vec![
                Span::raw(" stopping: finishing requests in flight ").yellow(),
                key(" q ".into()),
                what(" leave now"),
            ]
        } else {
            // In a mix every key acts on every workload, and says so.
            let mix = self.board.is_mix();
            let more = match self.snap.plan.model {
                _ if mix => " all workloads ±10% ",
                LoadModel::Open(_) => " rate ±10% ",
                LoadModel::Closed(_) => " users ±10% ",
            };
            // The number keys reach only the views this run has (no containers, no view 4).
            let views = match View::available(self.snap, self.board).len() {
                1 => " Tab 1 ".to_string(),
                n => format!(" Tab 1-{n} "),
            };
            let pause = match (self.state.paused, mix) {
                (true, false) => " resume ",
                (false, false) => " pause ",
                (true, true) => " resume all ",
                (false, true) => " pause all ",
            };
            vec![
                key(" q ".into()),
                what(if mix { " stop all " } else { " stop " }),
                key(views),
                what(" views "),
                key(" +/- ".into()),
                what(more),
                key(" p ".into()),
                what(pause),
                key(" ↑↓ ".into()),
                what(" scroll"),
            ]
        };
        Line::from(spans).render(area, buf);
    }
}
