//! The whole screen as a pure function of a snapshot and the view state.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use ratatui::Frame;
use throng_core::{Percentiles, Snapshot};

use crate::board::Board;
use crate::format;
use crate::state::{View, ViewState};
use crate::widgets::{
    ContainersPanel, ContainersView, DatabasesPanel, ErrorsPanel, Footer, GridView, Header,
    LabelErrorsPanel, LabelTable, LatencyPanel, Metric, MixTable, PhasesPanel, SeriesChart,
    Spectrum, StatusPanel, StreamsPanel, TabBar, TrafficPanel, WorkloadsChart,
};

/// The narrowest terminal the dashboard draws in.
pub const MIN_WIDTH: u16 = 72;
/// The shortest terminal the dashboard draws in.
pub const MIN_HEIGHT: u16 = 20;

/// Draws a frame of a single run: [`render`] into the frame's buffer.
pub fn draw(frame: &mut Frame, snap: &Snapshot, state: &ViewState) {
    draw_board(frame, snap, &Board::default(), state);
}

/// Draws a frame of the run in focus on `board`: [`render_board`] into the frame's buffer.
pub fn draw_board(frame: &mut Frame, snap: &Snapshot, board: &Board, state: &ViewState) {
    let area = frame.area();
    render_board(area, frame.buffer_mut(), snap, board, state);
}

/// Renders a single run's dashboard into `buf` (see [`render_board`]).
pub fn render(area: Rect, buf: &mut Buffer, snap: &Snapshot, state: &ViewState) {
    render_board(area, buf, snap, &Board::default(), state);
}

/// Renders the dashboard of `snap` on `board` (its grid, the workloads beside it) into `buf`:
/// `snap` is the run in focus, or in a mix every workload [`merge`](crate::merge)d (what
/// [`Live::snapshot`](crate::Live::snapshot) gives), which every view then shows. Reads nothing
/// but its arguments, so the same inputs give the same screen.
pub fn render_board(
    area: Rect,
    buf: &mut Buffer,
    snap: &Snapshot,
    board: &Board,
    state: &ViewState,
) {
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
    Header { snap, board, state }.render(header, buf);
    let view = if View::available(snap, board).contains(&state.view) {
        state.view
    } else {
        View::Overview
    };
    TabBar { snap, board, view }.render(tabs, buf);
    match (view, &board.grid) {
        (View::Labels, _) => labels(body, buf, snap, board, state.scroll),
        (View::Errors, _) => errors(body, buf, snap),
        (View::Containers, _) => ContainersView {
            containers: &snap.containers,
            scroll: state.scroll,
        }
        .render(body, buf),
        (View::Grid, Some(grid)) => GridView { grid, snap }.render(body, buf),
        (View::Mix, _) => mix(body, buf, snap, board, state.scroll),
        (View::Phases, _) => {
            over_chart(body, buf, snap, board, PhasesPanel::height(snap), |a, b| {
                PhasesPanel {
                    snap,
                    scroll: state.scroll,
                }
                .render(a, b)
            })
        }
        (View::Streams, _) => over_chart(
            body,
            buf,
            snap,
            board,
            StreamsPanel::height(snap),
            |a, b| {
                StreamsPanel {
                    snap,
                    scroll: state.scroll,
                }
                .render(a, b)
            },
        ),
        _ => overview(body, buf, snap, board, state),
    }
    Footer { snap, board, state }.render(footer, buf);
}

/// Latency, traffic and the percentile spectrum on the left, charts on the right; under them
/// the label table with every row it needs, then errors and status codes, containers,
/// databases. The charts take what is left, so they grow last.
fn overview(area: Rect, buf: &mut Buffer, snap: &Snapshot, board: &Board, state: &ViewState) {
    let top_min = LatencyPanel::height(snap);
    let mut left = area.height.saturating_sub(top_min);
    let containers = match snap.containers.is_empty() {
        true => 0,
        false => ContainersPanel::height(&snap.containers).min(6),
    };
    let databases = match snap.databases.is_empty() {
        true => 0,
        false => DatabasesPanel::height(&snap.databases).min(5),
    };
    const ERRORS: u16 = 5;
    // The table gets every row it wants, unless that would leave the other panels no room;
    // then it still gets eight (it scrolls).
    let want = LabelTable::height(snap);
    let others = ERRORS + containers + databases;
    let mut table = want
        .min(left.saturating_sub(others).max(want.min(8)))
        .min(left);
    left -= table;
    let containers = if containers <= left { containers } else { 0 };
    left -= containers;
    let databases = if databases <= left { databases } else { 0 };
    left -= databases;
    let errors = if left >= ERRORS { ERRORS } else { 0 };
    left -= errors;
    // Rows no panel could use go to the table before the charts.
    table += left.min(want - table);
    let [top, table_area, errors_area, containers_area, databases_area] = Layout::vertical([
        Constraint::Min(top_min),
        Constraint::Length(table),
        Constraint::Length(errors),
        Constraint::Length(containers),
        Constraint::Length(databases),
    ])
    .areas(area);

    let [side, charts] = Layout::horizontal([
        Constraint::Length(LatencyPanel::width(snap)),
        Constraint::Min(0),
    ])
    .areas(top);
    let traffic_want = TrafficPanel::height(snap, state);
    let below = side.height.saturating_sub(top_min);
    // Under the latency panel: the traffic, then the distribution in what is left; a column
    // too short for the distribution gives the traffic all of it.
    let (traffic, spectrum) = match below {
        b if b >= traffic_want + SPECTRUM_MIN => (traffic_want, b - traffic_want),
        b => (b, 0),
    };
    let [latency, traffic_area, spectrum_area] = Layout::vertical([
        Constraint::Length(top_min),
        Constraint::Length(traffic),
        Constraint::Length(spectrum),
    ])
    .areas(side);
    LatencyPanel { snap }.render(latency, buf);
    if traffic >= 3 {
        TrafficPanel { snap, state }.render(traffic_area, buf);
    }
    if spectrum > 0 {
        Spectrum { snap }.render(spectrum_area, buf);
    }
    render_charts(charts, buf, snap, board, spectrum == 0);

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

/// The fewest rows the percentile spectrum is drawn in.
const SPECTRUM_MIN: u16 = 8;

/// The mix: a row per workload and flow, then each workload's throughput (and p99, when tall)
/// over time.
fn mix(area: Rect, buf: &mut Buffer, snap: &Snapshot, board: &Board, scroll: usize) {
    let table = MixTable {
        workloads: &board.workloads,
        snap,
        scroll,
    };
    let want = table.height();
    let chart = match area.height.checked_sub(want) {
        Some(rest) if rest >= 8 => rest,
        _ => 0,
    };
    let [table_area, chart_area] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(chart)]).areas(area);
    table.render(table_area, buf);
    if chart == 0 {
        return;
    }
    if board.is_mix() {
        let chart = |metric| WorkloadsChart {
            workloads: &board.workloads,
            metric,
        };
        if chart_area.height >= 16 {
            let [a, b] = Layout::vertical([Constraint::Ratio(1, 2); 2]).areas(chart_area);
            chart(Metric::Throughput).render(a, buf);
            chart(Metric::Latency).render(b, buf);
        } else {
            chart(Metric::Throughput).render(chart_area, buf);
        }
    } else {
        SeriesChart {
            series: snap.series.as_slice(),
            changes: &snap.changes,
            metric: Metric::Throughput,
        }
        .render(chart_area, buf);
    }
}

/// Latency over time: the run's percentiles, or in a mix each workload's p99 (the workloads'
/// seconds hold percentiles, which do not add up into the mix's).
fn latency_chart(area: Rect, buf: &mut Buffer, snap: &Snapshot, board: &Board) {
    if board.is_mix() {
        WorkloadsChart {
            workloads: &board.workloads,
            metric: Metric::Latency,
        }
        .render(area, buf);
    } else {
        SeriesChart {
            series: snap.series.as_slice(),
            changes: &snap.changes,
            metric: Metric::Latency,
        }
        .render(area, buf);
    }
}

/// Two charts stacked when tall (and the spectrum under them when `spectrum` and taller still),
/// side by side when wide, else the throughput chart alone.
fn render_charts(area: Rect, buf: &mut Buffer, snap: &Snapshot, board: &Board, spectrum: bool) {
    let throughput = SeriesChart {
        series: snap.series.as_slice(),
        changes: &snap.changes,
        metric: Metric::Throughput,
    };
    let latency = |area, buf: &mut Buffer| latency_chart(area, buf, snap, board);
    if spectrum && area.height >= 3 * SPECTRUM_MIN {
        let [a, b, c] = Layout::vertical([Constraint::Ratio(1, 3); 3]).areas(area);
        throughput.render(a, buf);
        latency(b, buf);
        Spectrum { snap }.render(c, buf);
    } else if area.height >= 14 {
        let [a, b] = Layout::vertical([Constraint::Ratio(1, 2); 2]).areas(area);
        throughput.render(a, buf);
        latency(b, buf);
    } else if area.width >= 60 {
        let [a, b] = Layout::horizontal([Constraint::Ratio(1, 2); 2]).areas(area);
        throughput.render(a, buf);
        latency(b, buf);
    } else {
        throughput.render(area, buf);
    }
}

/// The full table; below it, when there is room, latency over time.
fn labels(area: Rect, buf: &mut Buffer, snap: &Snapshot, board: &Board, scroll: usize) {
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
        latency_chart(rest, buf, snap, board);
    }
}

/// A panel of `want` lines (where the time goes, or the streams of tokens) drawn by `panel`;
/// below it, when there is room, latency over time.
fn over_chart(
    area: Rect,
    buf: &mut Buffer,
    snap: &Snapshot,
    board: &Board,
    want: u16,
    panel: impl FnOnce(Rect, &mut Buffer),
) {
    let chart = match area.height.checked_sub(want + 1) {
        Some(rest) if rest >= 8 => rest,
        _ => 0,
    };
    let [table, _, rest] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(u16::from(chart > 0)),
        Constraint::Length(chart),
    ])
    .areas(area);
    panel(table, buf);
    if chart > 0 {
        latency_chart(rest, buf, snap, board);
    }
}

/// Errors on top, which step failed how (when more than one did), status codes below, then
/// errors over time.
fn errors(area: Rect, buf: &mut Buffer, snap: &Snapshot) {
    let errors = (snap.errors.len() as u16 + 3).max(4);
    let by_label = LabelErrorsPanel { snap };
    let statuses = (snap.statuses.len() as u16 + 2).max(3);
    let [e, l, s, chart] = Layout::vertical([
        Constraint::Length(errors),
        Constraint::Length(by_label.height()),
        Constraint::Length(statuses),
        Constraint::Min(0),
    ])
    .areas(area);
    ErrorsPanel { snap }.render(e, buf);
    by_label.render(l, buf);
    StatusPanel { snap }.render(s, buf);
    if chart.height >= 6 {
        SeriesChart {
            series: snap.series.as_slice(),
            changes: &snap.changes,
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
