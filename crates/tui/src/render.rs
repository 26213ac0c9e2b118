//! The whole screen as a pure function of a snapshot and the view state.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use ratatui::Frame;
use throng_core::{Percentiles, Snapshot};

use crate::format;
use crate::state::{View, ViewState};
use crate::widgets::{
    ContainersPanel, ContainersView, DatabasesPanel, ErrorsPanel, Footer, Header, LabelTable,
    LatencyPanel, Metric, SeriesChart, StatusPanel, TabBar, TrafficPanel,
};

/// The narrowest terminal the dashboard draws in.
pub const MIN_WIDTH: u16 = 72;
/// The shortest terminal the dashboard draws in.
pub const MIN_HEIGHT: u16 = 20;

/// Draws a frame: [`render`] into the frame's buffer.
pub fn draw(frame: &mut Frame, snap: &Snapshot, state: &ViewState) {
    let area = frame.area();
    render(area, frame.buffer_mut(), snap, state);
}

/// Renders the dashboard into `buf`. Reads nothing but its arguments, so the same inputs give
/// the same screen.
pub fn render(area: Rect, buf: &mut Buffer, snap: &Snapshot, state: &ViewState) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(area, buf, snap);
        return;
    }
    let [header, tabs, body, footer] = Layout::vertical([
        Constraint::Length(Header::HEIGHT),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    Header { snap, state }.render(header, buf);
    let view = if View::available(snap).contains(&state.view) {
        state.view
    } else {
        View::Overview
    };
    TabBar { snap, view }.render(tabs, buf);
    match view {
        View::Overview => overview(body, buf, snap, state),
        View::Labels => labels(body, buf, snap, state.scroll),
        View::Errors => errors(body, buf, snap),
        View::Containers => ContainersView {
            containers: &snap.containers,
            scroll: state.scroll,
        }
        .render(body, buf),
    }
    Footer { snap, state }.render(footer, buf);
}

/// Latency and charts on top, then the label table, errors and status codes, containers,
/// databases.
fn overview(area: Rect, buf: &mut Buffer, snap: &Snapshot, state: &ViewState) {
    let top_min = LatencyPanel::height(snap);
    let mut left = area.height.saturating_sub(top_min);
    let table = LabelTable::height(snap).min(8).min(left);
    left -= table;
    let containers = if snap.containers.is_empty() {
        0
    } else {
        ContainersPanel::height(&snap.containers).min(6)
    };
    let containers = if containers <= left { containers } else { 0 };
    left -= containers;
    let databases = match snap.databases.is_empty() {
        true => 0,
        false => DatabasesPanel::height(&snap.databases).min(5),
    };
    let databases = if databases <= left { databases } else { 0 };
    left -= databases;
    let errors = if left >= 5 { 5 } else { 0 };
    let [top, table_area, errors_area, containers_area, databases_area] = Layout::vertical([
        Constraint::Min(top_min),
        Constraint::Length(table),
        Constraint::Length(errors),
        Constraint::Length(containers),
        Constraint::Length(databases),
    ])
    .areas(area);

    let [latency, charts] = Layout::horizontal([
        Constraint::Length(LatencyPanel::width(snap)),
        Constraint::Min(0),
    ])
    .areas(top);
    let [latency, traffic] = Layout::vertical([
        Constraint::Length(LatencyPanel::height(snap)),
        Constraint::Min(0),
    ])
    .areas(latency);
    LatencyPanel { snap }.render(latency, buf);
    if traffic.height >= 3 {
        TrafficPanel { snap, state }.render(traffic, buf);
    }
    render_charts(charts, buf, snap);

    LabelTable {
        snap,
        scroll: state.scroll,
    }
    .render(table_area, buf);
    if errors > 0 {
        let [e, s] = Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
            .areas(errors_area);
        ErrorsPanel { snap }.render(e, buf);
        StatusPanel { snap }.render(s, buf);
    }
    if containers > 0 {
        ContainersPanel {
            containers: &snap.containers,
        }
        .render(containers_area, buf);
    }
    if databases > 0 {
        DatabasesPanel {
            databases: &snap.databases,
        }
        .render(databases_area, buf);
    }
}

/// Two charts stacked when tall, side by side when wide, else the throughput chart alone.
fn render_charts(area: Rect, buf: &mut Buffer, snap: &Snapshot) {
    let series = snap.series.as_slice();
    let throughput = SeriesChart {
        series,
        metric: Metric::Throughput,
    };
    let latency = SeriesChart {
        series,
        metric: Metric::Latency,
    };
    if area.height >= 14 {
        let [a, b] = Layout::vertical([Constraint::Ratio(1, 2); 2]).areas(area);
        throughput.render(a, buf);
        latency.render(b, buf);
    } else if area.width >= 60 {
        let [a, b] = Layout::horizontal([Constraint::Ratio(1, 2); 2]).areas(area);
        throughput.render(a, buf);
        latency.render(b, buf);
    } else {
        throughput.render(area, buf);
    }
}

/// The full table; below it, when there is room, latency over time.
fn labels(area: Rect, buf: &mut Buffer, snap: &Snapshot, scroll: usize) {
    let want = LabelTable::height(snap);
    let chart = if area.height >= want + 8 {
        area.height - want
    } else {
        0
    };
    let [table, rest] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(chart)]).areas(area);
    LabelTable { snap, scroll }.render(table, buf);
    if chart > 0 {
        SeriesChart {
            series: snap.series.as_slice(),
            metric: Metric::Latency,
        }
        .render(rest, buf);
    }
}

/// Errors on top, status codes below, then errors over time.
fn errors(area: Rect, buf: &mut Buffer, snap: &Snapshot) {
    let errors = (snap.errors.len() as u16 + 3).max(4);
    let statuses = (snap.statuses.len() as u16 + 2).max(3);
    let [e, s, chart] = Layout::vertical([
        Constraint::Length(errors),
        Constraint::Length(statuses),
        Constraint::Min(0),
    ])
    .areas(area);
    ErrorsPanel { snap }.render(e, buf);
    StatusPanel { snap }.render(s, buf);
    if chart.height >= 6 {
        SeriesChart {
            series: snap.series.as_slice(),
            metric: Metric::Throughput,
        }
        .render(chart, buf);
    }
}

/// A short message instead of a squeezed layout, with the headline numbers.
fn too_small(area: Rect, buf: &mut Buffer, snap: &Snapshot) {
    let p = Percentiles::of(&snap.total.latency);
    let lines = vec![
        Line::from("throng").cyan().bold(),
        Line::from(format!(
            "Terminal too small: {}x{}",
            area.width, area.height
        )),
        Line::from(format!("the dashboard needs {MIN_WIDTH}x{MIN_HEIGHT}")),
        Line::from(format!(
            "{} req  p50 {} ms  p99 {} ms",
            format::count(snap.total.samples),
            format::ms(p.p50),
            format::ms(p.p99),
        ))
        .style(Style::new().fg(Color::Gray)),
        Line::from("q stops the run"),
    ];
    let top = area.height.saturating_sub(lines.len() as u16) / 2;
    let [_, middle] = Layout::vertical([Constraint::Length(top), Constraint::Min(0)]).areas(area);
    Paragraph::new(lines)
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true })
        .render(middle, buf);
}
