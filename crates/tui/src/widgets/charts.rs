//! The run over time, one point per second from the interval histograms: requests and errors per
//! second, and p50/p99 latency.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Widget};
use throng_core::SeriesPoint;

use crate::format;

/// Which series a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Requests and errors per second.
    Throughput,
    /// Interval p50 and p99 latency.
    Latency,
}

/// A chart of the run's series.
pub struct SeriesChart<'a> {
    /// One point per second.
    pub series: &'a [SeriesPoint],
    /// What to plot.
    pub metric: Metric,
}

/// The largest value, rounded up to a "nice" axis bound (1, 2 or 5 times a power of ten).
pub fn nice_ceiling(v: f64) -> f64 {
    if !(v > 0.0 && v.is_finite()) {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if v <= m * magnitude {
            return m * magnitude;
        }
    }
    10.0 * magnitude
}

impl Widget for SeriesChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let pts = |f: &dyn Fn(&SeriesPoint) -> f64| -> Vec<(f64, f64)> {
            self.series.iter().map(|p| (p.t, f(p))).collect()
        };
        let (title, a, b) = match self.metric {
            Metric::Throughput => (
                "",
                ("req/s", Color::Cyan, pts(&|p| p.requests as f64)),
                ("errors/s", Color::Red, pts(&|p| p.errors as f64)),
            ),
            Metric::Latency => (
                "ms",
                ("p50", Color::Green, pts(&|p| p.p50 as f64 / 1000.0)),
                ("p99", Color::Magenta, pts(&|p| p.p99 as f64 / 1000.0)),
            ),
        };
        let block = Block::bordered()
            .title(Line::from(vec![
                Span::raw(" "),
                Span::styled(a.0, Style::new().fg(a.1).bold()),
                Span::raw(" and "),
                Span::styled(b.0, Style::new().fg(b.1).bold()),
                Span::raw(if title.is_empty() {
                    " ".to_string()
                } else {
                    format!(" ({title}) ")
                }),
            ]))
            .border_style(Style::new().fg(Color::DarkGray))
            .title_style(Style::new().fg(Color::White).bold());
        // Each point closes a one-second interval, so the first one starts the axis.
        let t_start = match self.series {
            [first, _, ..] => first.t,
            _ => 0.0,
        };
        let t_end = self.series.last().map_or(1.0, |p| p.t).max(t_start + 1.0);
        let y_max = nice_ceiling(
            a.2.iter()
                .chain(b.2.iter())
                .map(|(_, y)| *y)
                .fold(0.0, f64::max),
        );
        let y_label = |v: f64| match self.metric {
            Metric::Throughput => format::rate(v),
            Metric::Latency => format::ms((v * 1000.0) as u64),
        };
        let datasets = vec![
            Dataset::default()
                .name(a.0)
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(a.1))
                .data(&a.2),
            Dataset::default()
                .name(b.0)
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(b.1))
                .data(&b.2),
        ];
        Chart::new(datasets)
            .block(block)
            .x_axis(
                Axis::default()
                    .bounds([t_start, t_end])
                    .style(Style::new().fg(Color::DarkGray))
                    .labels(vec![
                        Line::from(format!("{t_start:.0}s")),
                        Line::from(format!("{t_end:.0}s")),
                    ]),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, y_max])
                    .style(Style::new().fg(Color::DarkGray))
                    .labels(vec![Line::from("0"), Line::from(y_label(y_max)).bold()]),
            )
            .legend_position(None)
            .render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::nice_ceiling;

    #[test]
    fn nice_bounds() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(7.0), 8.0);
        assert_eq!(nice_ceiling(12.0), 15.0);
        assert_eq!(nice_ceiling(2_240.0), 2_500.0);
        assert_eq!(nice_ceiling(4_300.0), 5_000.0);
        assert_eq!(nice_ceiling(9_000.0), 10_000.0);
        assert_eq!(nice_ceiling(5_000.0), 5_000.0);
    }
}
