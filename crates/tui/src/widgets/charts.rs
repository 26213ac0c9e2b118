//! The run over time, one point per second from the interval histograms: requests and errors per
//! second, and p50/p99 latency; and the shared pieces of every chart (legends in the title, lines
//! broken where there is nothing to draw).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Widget};
use throng_core::{Change, SeriesPoint};

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
    /// The run's changes: the seconds between `paused` and `resumed` are left blank.
    pub changes: &'a [Change],
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

/// The colours of charts with a line per side or workload, in order.
pub const PALETTE: [Color; 6] = [
    Color::Magenta,
    Color::Cyan,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Red,
];

/// One line of a chart: its name in the legend, its colour, and its points (`None` is a gap).
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// The line's colour.
    pub color: Color,
    /// `(x, y)`; a `None` y breaks the line there.
    pub points: Vec<(f64, Option<f64>)>,
}

impl Series {
    /// A line with no gaps.
    pub fn whole(name: impl Into<String>, color: Color, points: &[(f64, f64)]) -> Series {
        Series {
            name: name.into(),
            color,
            points: points.iter().map(|&(x, y)| (x, Some(y))).collect(),
        }
    }

    /// The runs of points between the gaps.
    fn segments(&self) -> Vec<Vec<(f64, f64)>> {
        let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(x, y) in &self.points {
            match (y, out.last_mut()) {
                (Some(y), Some(seg)) => seg.push((x, y)),
                (None, Some(seg)) if !seg.is_empty() => out.push(Vec::new()),
                _ => {}
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// The largest y.
    pub fn max(&self) -> f64 {
        self.points
            .iter()
            .filter_map(|(_, y)| *y)
            .fold(0.0, f64::max)
    }
}

/// A chart's block: the title, then a legend of each line's name in its colour (`━ p99`), so a
/// chart says which line is which even where colours are hard to tell apart.
pub fn legend_block<'a>(title: &str, lines: &[Series], note: Option<&str>) -> Block<'a> {
    let mut spans = vec![Span::raw(format!(" {title} "))];
    for s in lines {
        spans.push(Span::styled("━ ", Style::new().fg(s.color)));
        spans.push(Span::styled(
            format!("{} ", s.name),
            Style::new().fg(s.color).bold(),
        ));
    }
    if let Some(n) = note {
        spans.push(Span::styled(
            format!("· {n} "),
            Style::new().fg(Color::Yellow),
        ));
    }
    Block::bordered()
        .title(Line::from(spans))
        .border_style(Style::new().fg(Color::DarkGray))
        .title_style(Style::new().fg(Color::White).bold())
}

/// A line chart of `lines` over `x` and `y` with their labels (spread evenly along x); each
/// line's runs between gaps are drawn apart (a lone point as a dot).
pub fn line_chart<'a>(
    lines: &'a [Series],
    segments: &'a [(usize, Vec<(f64, f64)>)],
    x: ([f64; 2], Vec<String>),
    y: ([f64; 2], [String; 2]),
    block: Block<'a>,
) -> Chart<'a> {
    let datasets = segments
        .iter()
        .map(|(i, points)| {
            let s = &lines[*i];
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(match points.len() {
                    1 => GraphType::Scatter,
                    _ => GraphType::Line,
                })
                .style(Style::new().fg(s.color))
                .data(points)
        })
        .collect();
    let [y0, y1] = y.1;
    Chart::new(datasets)
        .block(block)
        .x_axis(
            Axis::default()
                .bounds(x.0)
                .style(Style::new().fg(Color::DarkGray))
                .labels(x.1.into_iter().map(Line::from).collect::<Vec<_>>()),
        )
        .y_axis(
            Axis::default()
                .bounds(y.0)
                .style(Style::new().fg(Color::DarkGray))
                .labels(vec![Line::from(y0), Line::from(y1).bold()]),
        )
        .legend_position(None)
}

/// Each line's segments, tagged with the line they belong to.
pub fn segments(lines: &[Series]) -> Vec<(usize, Vec<(f64, f64)>)> {
    lines
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.segments().into_iter().map(move |seg| (i, seg)))
        .collect()
}

/// The spans of the run that were paused, in seconds from the start; a pause not yet resumed
/// runs to infinity.
pub fn paused_spans(changes: &[Change]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut from = None;
    for c in changes {
        match c.what.as_str() {
            "paused" => from = from.or(Some(c.t)),
            "resumed" => {
                if let Some(f) = from.take() {
                    out.push((f, c.t));
                }
            }
            _ => {}
        }
    }
    if let Some(f) = from {
        out.push((f, f64::INFINITY));
    }
    out
}

/// Whether a second has a latency: some request was timed in it (a failure is timed apart, so
/// a second of failures only has none).
pub(crate) fn timed(p: &SeriesPoint) -> bool {
    p.requests > 0 && p.max > 0
}

/// Whether the second that ends at `t` lies wholly in a pause (nothing was scheduled in it).
fn paused_at(spans: &[(f64, f64)], t: f64) -> bool {
    spans
        .iter()
        .any(|&(a, b)| t - 1.0 >= a - 1e-9 && t <= b + 1e-9)
}

impl Widget for SeriesChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let spans = paused_spans(self.changes);
        let paused = |p: &SeriesPoint| paused_at(&spans, p.t);
        // A paused second has no throughput to speak of, and a second without a timed response
        // has no latency: both are gaps, not zeros.
        let pts = |f: &dyn Fn(&SeriesPoint) -> Option<f64>| -> Vec<(f64, Option<f64>)> {
            self.series
                .iter()
                .map(|p| (p.t, if paused(p) { None } else { f(p) }))
                .collect()
        };
        let latency = |v: u64| move |p: &SeriesPoint| timed(p).then_some(v as f64);
        let (title, lines) = match self.metric {
            Metric::Throughput => (
                "Throughput /s",
                [
                    Series {
                        name: "req/s".into(),
                        color: Color::Cyan,
                        points: pts(&|p| Some(p.requests as f64)),
                    },
                    Series {
                        name: "errors/s".into(),
                        color: Color::Red,
                        points: pts(&|p| Some(p.errors as f64)),
                    },
                ],
            ),
            Metric::Latency => (
                "Latency ms",
                [
                    Series {
                        name: "p50".into(),
                        color: Color::Green,
                        points: pts(&|p| latency(p.p50)(p).map(|v| v / 1000.0)),
                    },
                    Series {
                        name: "p99".into(),
                        color: Color::Magenta,
                        points: pts(&|p| latency(p.p99)(p).map(|v| v / 1000.0)),
                    },
                ],
            ),
        };
        let gaps = self.series.iter().filter(|p| paused(p)).count();
        let note = (gaps > 0).then(|| format!("paused {gaps}s (blank)"));
        // Each point closes a one-second interval, so the first one starts the axis.
        let t_start = match self.series {
            [first, _, ..] => first.t,
            _ => 0.0,
        };
        let t_end = self.series.last().map_or(1.0, |p| p.t).max(t_start + 1.0);
        let y_max = nice_ceiling(lines.iter().map(Series::max).fold(0.0, f64::max));
        let y_label = match self.metric {
            Metric::Throughput => format::rate(y_max),
            Metric::Latency => format::ms((y_max * 1000.0) as u64),
        };
        let segs = segments(&lines);
        line_chart(
            &lines,
            &segs,
            (
                [t_start, t_end],
                vec![format!("{t_start:.0}s"), format!("{t_end:.0}s")],
            ),
            ([0.0, y_max], ["0".into(), y_label]),
            legend_block(title, &lines, note.as_deref()),
        )
        .render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn gaps_split_lines_and_pauses_are_spans() {
        let s = Series {
            name: "x".into(),
            color: Color::Cyan,
            points: vec![
                (1.0, Some(1.0)),
                (2.0, Some(2.0)),
                (3.0, None),
                (4.0, None),
                (5.0, Some(5.0)),
            ],
        };
        assert_eq!(
            s.segments(),
            vec![vec![(1.0, 1.0), (2.0, 2.0)], vec![(5.0, 5.0)]]
        );
        let c = |t: f64, what: &str| Change {
            t,
            what: what.into(),
        };
        let spans = paused_spans(&[
            c(2.0, "paused"),
            c(3.0, "rate x1.10"),
            c(5.0, "resumed"),
            c(7.5, "paused"),
        ]);
        assert_eq!(spans, vec![(2.0, 5.0), (7.5, f64::INFINITY)]);
        // The seconds ending at 3, 4 and 5 were paused throughout; the one ending at 2 was not,
        // nor the one ending at 8 (half of it ran).
        let p: Vec<bool> = [2.0, 3.0, 5.0, 6.0, 8.0, 9.0]
            .iter()
            .map(|t| paused_at(&spans, *t))
            .collect();
        assert_eq!(p, [false, true, true, false, false, true]);
    }
}
