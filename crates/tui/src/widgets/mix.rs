//! A mix as it goes: a row per workload (its load model is in the header) and, under each,
//! a row per flow, then the TOTAL of them all; the same columns as the per-label table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::Widget;
use throng_core::Snapshot;

use super::charts::{
    legend_block, line_chart, nice_ceiling, segments, timed, Metric, Series, PALETTE,
};
use super::labels::{Aggregate, TableRow, GROUP};
use crate::board::Workload;

/// The mix table.
pub struct MixTable<'a> {
    /// The workloads; empty for a single run, whose flows are then the rows.
    pub workloads: &'a [Workload],
    /// The run, or in a mix its workloads merged ([`crate::merge`]): its TOTAL is the table's.
    pub snap: &'a Snapshot,
    /// Rows skipped from the top.
    pub scroll: usize,
}

impl<'a> MixTable<'a> {
    /// The table's rows.
    fn table(&self) -> Aggregate<'a> {
        fn flows<'s>(s: &'s Snapshot, indent: &str) -> Vec<TableRow<'s>> {
            s.labels
                .iter()
                .filter(|l| l.group)
                .map(|l| TableRow {
                    label: format!("{indent}{GROUP}{}", l.label),
                    stats: l,
                    secs: s.elapsed,
                    style: Style::new().fg(Color::Cyan),
                })
                .collect()
        }
        let mut rows = Vec::new();
        let title = if self.workloads.is_empty() {
            rows.extend(flows(self.snap, ""));
            "Flows"
        } else {
            for w in self.workloads {
                // The load model is in the header: the label column stays narrow.
                rows.push(TableRow {
                    label: w.name.clone(),
                    stats: &w.snap.total,
                    secs: w.snap.elapsed,
                    style: Style::new().add_modifier(Modifier::BOLD),
                });
                rows.extend(flows(w.snap.as_ref(), "  "));
            }
            "Workloads and their flows"
        };
        Aggregate {
            title,
            rows,
            total: Some(TableRow::total(
                "TOTAL",
                &self.snap.total,
                self.snap.elapsed,
            )),
            scroll: self.scroll,
        }
    }

    /// Rows the table wants.
    pub fn height(&self) -> u16 {
        self.table().height()
    }
}

impl Widget for MixTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.table().render(area, buf);
    }
}

/// Each workload's requests per second (or p99) over time, a line each: the mix as it shifts.
pub struct WorkloadsChart<'a> {
    /// The workloads.
    pub workloads: &'a [Workload],
    /// Requests per second, or the interval p99.
    pub metric: Metric,
}

impl Widget for WorkloadsChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines: Vec<Series> = self
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| {
                // A second without a timed response has no latency: a gap.
                let points = w
                    .snap
                    .series
                    .iter()
                    .map(|p| match self.metric {
                        Metric::Throughput => (p.t, Some(p.requests as f64)),
                        Metric::Latency => (p.t, timed(p).then_some(p.p99 as f64 / 1000.0)),
                    })
                    .collect();
                Series {
                    name: w.name.clone(),
                    color: PALETTE[i % PALETTE.len()],
                    points,
                }
            })
            .collect();
        let t_end = lines
            .iter()
            .flat_map(|l| l.points.last().map(|p| p.0))
            .fold(1.0, f64::max);
        let y_max = nice_ceiling(lines.iter().map(Series::max).fold(0.0, f64::max));
        let (title, y_label) = match self.metric {
            Metric::Throughput => ("Throughput /s by workload", crate::format::rate(y_max)),
            Metric::Latency => (
                "p99 ms by workload",
                crate::format::ms((y_max * 1000.0) as u64),
            ),
        };
        let segs = segments(&lines);
        line_chart(
            &lines,
            &segs,
            ([0.0, t_end], vec!["0s".into(), format!("{t_end:.0}s")]),
            ([0.0, y_max], ["0".into(), y_label]),
            legend_block(title, &lines, None),
        )
        .render(area, buf);
    }
}
