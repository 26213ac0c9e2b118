//! Totals and byte rates, under the latency panel when the terminal is tall enough.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};
use throng_core::{per_second, Snapshot};

use crate::format;
use crate::state::ViewState;

/// Requests, errors, bytes per second, and the changes this UI's keys made.
pub struct TrafficPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
    /// The view state (changes made by keys).
    pub state: &'a ViewState,
}

impl TrafficPanel<'_> {
    /// Rows the panel wants: borders and its lines.
    pub fn height(snap: &Snapshot, state: &ViewState) -> u16 {
        let lines = 4
            + u16::from(snap.aborted > 0)
            + u16::from(snap.lag.is_some())
            + u16::from((state.rate_factor - 1.0).abs() > 1e-9)
            + u16::from(state.user_delta != 0);
        lines + 2
    }
}

impl Widget for TrafficPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let s = self.snap;
        let dim = Style::new().fg(Color::DarkGray);
        let kv = |k: &'static str, v: String| Line::from(vec![Span::styled(k, dim), Span::raw(v)]);
        let last = s.series.last().copied().unwrap_or_default();
        let mut lines = vec![
            kv("requests  ", format::count(s.total.samples)),
            kv(
                "now       ",
                format!("{} req/s", format::count(last.requests)),
            ),
            kv(
                "received  ",
                format!(
                    "{}/s",
                    format::bytes(per_second(s.total.bytes_received, s.elapsed) as u64)
                ),
            ),
            kv(
                "sent      ",
                format!(
                    "{}/s",
                    format::bytes(per_second(s.total.bytes_sent, s.elapsed) as u64)
                ),
            ),
        ];
        if s.aborted > 0 {
            lines.push(kv("aborted   ", format::count(s.aborted)));
        }
        if let Some(lag) = &s.lag {
            lines.push(kv(
                "arrivals  ",
                format!(
                    "{}/s started",
                    format::rate(per_second(lag.lag.len(), s.elapsed))
                ),
            ));
        }
        if (self.state.rate_factor - 1.0).abs() > 1e-9 {
            lines.push(kv(
                "rate      ",
                format!("x{:.2} by keys", self.state.rate_factor),
            ));
        }
        if self.state.user_delta != 0 {
            lines.push(kv(
                "users     ",
                format!("{:+} by keys", self.state.user_delta),
            ));
        }
        Paragraph::new(lines)
            .block(
                Block::bordered()
                    .title(" Traffic ")
                    .border_style(dim)
                    .title_style(Style::new().fg(Color::White)),
            )
            .render(area, buf);
    }
}
