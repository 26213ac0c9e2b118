//! The key reminder on the last row.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use throng_core::{LoadModel, Snapshot};

use crate::state::ViewState;

/// The footer: each key and what it does now.
pub struct Footer<'a> {
    /// The run (open or closed loop decides what `+`/`-` change).
    pub snap: &'a Snapshot,
    /// The view state (pause, stopping).
    pub state: &'a ViewState,
}

impl Widget for Footer<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let key = |k: &'static str| Span::styled(k, Style::new().fg(Color::Black).bg(Color::Cyan));
        let what = |w: &'static str| Span::styled(w, Style::new().fg(Color::Gray));
        let spans = if self.state.stopping {
            vec![
                Span::raw(" stopping: finishing requests in flight ").yellow(),
                key(" q "),
                what(" leave now"),
            ]
        } else {
            let more = match self.snap.plan.model {
                LoadModel::Open(_) => " rate ±10% ",
                LoadModel::Closed(_) => " users ±10% ",
            };
            let pause = if self.state.paused {
                " resume "
            } else {
                " pause "
            };
            vec![
                key(" q "),
                what(" stop "),
                key(" Tab 1-4 "),
                what(" views "),
                key(" +/- "),
                what(more),
                key(" p "),
                what(pause),
                key(" ↑↓ "),
                what(" scroll"),
            ]
        };
        Line::from(spans).render(area, buf);
    }
}
