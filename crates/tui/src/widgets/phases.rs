//! Where the requests' time goes: a row per label whose protocol times its phases (and TOTAL),
//! each phase's p50 and p99 (the p99 alone when narrow), new connections and the share of requests on a reused one; above
//! the table, a bar of TOTAL's mean latency split into its phases.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Widget};
use throng_core::{Phase, PhaseStats, Snapshot};

use super::{quantiles, quantiles_table};
use crate::format;

/// The phases' table and the bar of the mean request.
pub struct PhasesPanel<'a> {
    /// The run.
    pub snap: &'a Snapshot,
    /// Label rows skipped from the top (scrolling); TOTAL always shows.
    pub scroll: usize,
}

/// The phases as the table shows them: blocked first (before the request), then a request's
/// own in order, each with its bar's colour.
const SHOWN: [(&str, Color); 6] = [
    ("blocked", Color::DarkGray),
    ("connect", Color::Magenta),
    ("tls", Color::Red),
    ("send", Color::Yellow),
    ("wait", Color::Cyan),
    ("receive", Color::Green),
];

/// The width from which each phase shows its p50 and p99 (else its p99).
const WIDE: u16 = 100;

fn histograms(p: &PhaseStats) -> [&throng_core::histogram::Histogram<u64>; 6] {
    [
        &p.blocked,
        p.of(Phase::Connect),
        p.of(Phase::Tls),
        p.of(Phase::Send),
        p.of(Phase::Wait),
        p.of(Phase::Receive),
    ]
}

impl PhasesPanel<'_> {
    /// Rows the panel wants: the bar, a blank line, the heading, a row per label with phases,
    /// TOTAL when more than one has them.
    pub fn height(snap: &Snapshot) -> u16 {
        let rows = snap.labels.iter().filter(|l| l.phases.is_some()).count();
        let total = usize::from(rows > 1);
        (3 + rows + total) as u16
    }

    /// The mean request, phase by phase, as one bar as wide as `width`, with a legend of the
    /// mean milliseconds (a phase's mean over every request, those without it counting 0).
    fn bar(p: &PhaseStats, width: u16) -> Line<'static> {
        let requests = (p.new + p.reused).max(1) as f64;
        let means: Vec<f64> = histograms(p)
            .iter()
            .map(|h| h.mean() * h.len() as f64 / requests)
            .collect();
        let sum: f64 = means.iter().sum();
        let legend: Vec<String> = SHOWN
            .iter()
            .zip(&means)
            .map(|((name, _), m)| format!("{name} {}", format::ms(m.round() as u64)))
            .collect();
        let legend = format!(" mean ms: {}", legend.join("  "));
        // The legend when the bar keeps ten cells beside it; else the bar alone (the table's
        // headings are its legend, in the same colours).
        let (legend, room) = match (width as usize).checked_sub(format::width(&legend)) {
            Some(room) if room >= 10 => (legend, room),
            _ => (String::new(), width as usize),
        };
        let mut spans = Vec::new();
        if sum > 0.0 {
            let mut used = 0usize;
            for ((_, colour), m) in SHOWN.iter().zip(&means) {
                let cells = ((m / sum) * room as f64).round() as usize;
                let cells = cells.min(room - used);
                used += cells;
                spans.push(Span::styled("█".repeat(cells), Style::new().fg(*colour)));
            }
        }
        spans.push(Span::raw(legend));
        Line::from(spans)
    }
}

impl Widget for PhasesPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let with: Vec<_> = self
            .snap
            .labels
            .iter()
            .filter_map(|l| l.phases.as_deref().map(|p| (l.label.as_str(), p)))
            .collect();
        let Some(total) = self.snap.total.phases.as_deref() else {
            Line::from("No request of this run times its phases (its protocol reports none).")
                .fg(Color::Gray)
                .render(area, buf);
            return;
        };
        let [bar, _, table] = ratatui::layout::Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(0),
        ])
        .areas(area);
        Self::bar(total, bar.width).render(bar, buf);
        // Narrower than both figures of every phase need: the p99 alone.
        let both = area.width >= WIDE;
        let row = |label: &str, p: &PhaseStats, style: Style| {
            let mut cells = vec![Cell::from(label.to_string())];
            cells.extend(
                histograms(p)
                    .iter()
                    .map(|h| Cell::from(Line::from(quantiles(h, both)).right_aligned())),
            );
            cells.push(Cell::from(Line::from(format::count(p.new)).right_aligned()));
            cells.push(Cell::from(
                Line::from(format::percent(p.reused_share())).right_aligned(),
            ));
            Row::new(cells).style(style)
        };
        let mut rows: Vec<Row> = with
            .iter()
            .skip(self.scroll)
            .map(|(label, p)| row(label, p, Style::new()))
            .collect();
        if with.len() > 1 {
            rows.push(row(
                "TOTAL",
                total,
                Style::new().add_modifier(Modifier::BOLD),
            ));
        }
        let figures = SHOWN.map(|(name, colour)| Line::from(name).style(Style::new().fg(colour)));
        let more = [("new", 6), ("reused", 7)];
        quantiles_table(rows, both, figures, 11, &more).render(table, buf);
    }
}
