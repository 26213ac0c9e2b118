//! Replies streamed in tokens: a row per label that streams (and TOTAL, when more than one
//! does), its latency beside its time to first token, the gaps between tokens, time per output
//! token and end to end (p50 and p99, the p99 alone when narrow), its output tokens a second
//! and its goodput.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Row, Widget};
use throng_core::stream::StreamStats;
use throng_core::{LabelStats, Snapshot};

use super::{quantiles, quantiles_table};
use crate::format;

/// The streams' table.
pub struct StreamsPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
    /// Label rows skipped from the top (scrolling); TOTAL always shows.
    pub scroll: usize,
}

/// The width from which each figure shows its p50 and p99 (else its p99).
const WIDE: u16 = 110;

/// The figures' headings, latency first.
const SHOWN: [&str; 5] = ["latency", "ttft", "itl", "tpot", "e2e"];

fn histograms<'a>(
    l: &'a LabelStats,
    s: &'a StreamStats,
) -> [&'a throng_core::histogram::Histogram<u64>; 5] {
    [&l.latency, &s.ttft, &s.itl, &s.tpot, &s.e2e]
}

impl StreamsPanel<'_> {
    /// Rows the panel wants: the heading, a row per label that streams, TOTAL when more than
    /// one does.
    pub fn height(snap: &Snapshot) -> u16 {
        let rows = snap.labels.iter().filter(|l| l.stream.is_some()).count();
        (1 + rows + usize::from(rows > 1)) as u16
    }
}

impl Widget for StreamsPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let with: Vec<_> = self
            .snap
            .labels
            .iter()
            .filter_map(|l| l.stream.as_deref().map(|s| (l, s)))
            .collect();
        let Some(total) = self.snap.total.stream.as_deref() else {
            Line::from("No reply of this run is a stream of tokens (--llm reads them).")
                .fg(Color::Gray)
                .render(area, buf);
            return;
        };
        let both = area.width >= WIDE;
        let secs = self.snap.elapsed.as_secs_f64().max(1e-9);
        let goodput = !self.snap.plan.goodput.is_empty();
        let right = |s: String| Cell::from(Line::from(s).right_aligned());
        let row = |label: &str, l: &LabelStats, s: &StreamStats, style: Style| {
            let mut cells = vec![Cell::from(label.to_string())];
            cells.extend(histograms(l, s).iter().map(|h| right(quantiles(h, both))));
            cells.push(right(format!("{:.0}", s.output_tokens as f64 / secs)));
            if goodput {
                let share = match l.samples {
                    0 => 0.0,
                    n => s.good as f64 / n as f64,
                };
                cells.push(right(format!("{:.1}", s.good as f64 / secs)));
                cells.push(right(format::percent(share)));
            }
            Row::new(cells).style(style)
        };
        let mut rows: Vec<Row> = with
            .iter()
            .skip(self.scroll)
            .map(|(l, s)| row(&l.label, l, s, Style::new()))
            .collect();
        if with.len() > 1 {
            let bold = Style::new().add_modifier(Modifier::BOLD);
            rows.push(row("TOTAL", &self.snap.total, total, bold));
        }
        let mut more = vec![("tok/s", 7)];
        if goodput {
            more.extend([("good/s", 7), ("good", 6)]);
        }
        quantiles_table(rows, both, SHOWN.map(Line::from), 13, &more).render(area, buf);
    }
}
