//! The latency distribution of the whole run: the HdrHistogram's percentile spectrum, as the HTML
//! report draws it (x is `log10(1 / (1 - q))`, so 90%, 99% and 99.9% are evenly spaced and the
//! tail gets the room it deserves). In the open loop, service time beside latency: the gap
//! between the two lines is the time requests waited for their turn.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::widgets::Widget;
use throng_core::histogram::{spectrum, spectrum_label};
use throng_core::Snapshot;

use super::charts::{legend_block, line_chart, nice_ceiling, segments, Series};
use crate::format;

/// A label per decade of the axis (`0%`, `90%`, `99%`, ...) when they fit, else its ends.
fn decades(top: f64, width: u16) -> Vec<String> {
    let n = top as usize;
    let all: Vec<String> = (0..=n).map(|d| spectrum_label(d as f64)).collect();
    let room: usize = all.iter().map(|l| l.len() + 2).sum();
    match room + 8 <= usize::from(width) {
        true => all,
        false => vec![all[0].clone(), all[n].clone()],
    }
}

/// The percentile spectrum chart.
pub struct Spectrum<'a> {
    /// The run.
    pub snap: &'a Snapshot,
}

impl Widget for Spectrum<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let s = self.snap;
        let mut lines = vec![Series::whole(
            "latency",
            Color::Magenta,
            &spectrum(&s.total.latency),
        )];
        if s.lag.is_some() {
            lines.push(Series::whole(
                "service",
                Color::Green,
                &spectrum(&s.total.service),
            ));
        }
        // The axis ends on a whole decade (a label per decade: 0%, 90%, 99%, ...).
        let top = lines
            .iter()
            .flat_map(|l| l.points.last().map(|p| p.0))
            .fold(1.0, f64::max)
            .ceil();
        let y_max = nice_ceiling(lines.iter().map(Series::max).fold(0.0, f64::max));
        let segs = segments(&lines);
        line_chart(
            &lines,
            &segs,
            ([0.0, top], decades(top, area.width)),
            (
                [0.0, y_max],
                ["0".into(), format::ms((y_max * 1000.0) as u64)],
            ),
            legend_block("Percentiles ms", &lines, None),
        )
        .render(area, buf);
    }
}
