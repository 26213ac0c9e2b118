//! The header (what runs, how far along, how fast) and the tab bar.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{LineGauge, Paragraph, Tabs, Widget};
use throng_core::{LoadModel, RunState, Snapshot};

use crate::board::{model, Board};
use crate::format;
use crate::state::{View, ViewState};

/// Three lines: target and model (each workload's, in a mix), a progress gauge, live rates.
pub struct Header<'a> {
    /// The run in focus.
    pub snap: &'a Snapshot,
    /// The grid and the workloads around it.
    pub board: &'a Board,
    /// The view state (pause, changes made by keys).
    pub state: &'a ViewState,
}

impl Header<'_> {
    /// How many rows the header takes.
    pub const HEIGHT: u16 = 3;

    /// The run's state as a badge.
    fn badge(&self) -> Span<'static> {
        let (text, color) = match (self.snap.state, self.state.stopping, self.state.paused) {
            (RunState::Done, _, _) => (" DONE ", Color::Green),
            (RunState::Stopping, _, _) | (_, true, _) => (" STOPPING ", Color::Yellow),
            (_, _, true) => (" PAUSED ", Color::Yellow),
            _ => (" RUNNING ", Color::Green),
        };
        Span::styled(text, Style::new().fg(Color::Black).bg(color).bold())
    }

    /// Progress as a ratio and a label: in a mix, as far as its least advanced workload, out of
    /// the longest one's time when every workload has a planned time.
    fn progress(&self) -> (f64, String) {
        if !self.board.is_mix() {
            return progress(self.snap);
        }
        let each: Vec<&Snapshot> = self.board.workloads.iter().map(|w| &*w.snap).collect();
        let ratio = each
            .iter()
            .map(|s| progress(s).0)
            .fold(f64::INFINITY, f64::min);
        let elapsed = format::duration(self.snap.elapsed);
        let planned: Option<Vec<_>> = each.iter().map(|s| s.plan.planned_duration()).collect();
        let label = match planned.and_then(|p| p.into_iter().max()) {
            Some(planned) => format!(
                "{elapsed} of {}, {} left",
                format::duration(planned),
                format::duration(planned.saturating_sub(self.snap.elapsed))
            ),
            None => elapsed,
        };
        (ratio, label)
    }

    /// Users or in flight, achieved against target rate, totals.
    fn rates(&self) -> Line<'static> {
        let s = self.snap;
        let point = s.series.last().copied().unwrap_or_default();
        let label = Style::new().fg(Color::DarkGray);
        let mut spans = Vec::new();
        match &s.plan.model {
            // A mix's users and rates are each workload's, in the title.
            _ if self.board.is_mix() => {
                spans.push(Span::styled("rate ", label));
                spans.push(Span::raw(format!("{} req/s", format::count(point.requests))).bold());
                if self.state.user_delta != 0 {
                    spans.push(Span::raw(format!(" (users {:+})", self.state.user_delta)));
                }
                if (self.state.rate_factor - 1.0).abs() > 1e-9 {
                    spans.push(Span::raw(format!(" (x{:.2})", self.state.rate_factor)));
                }
            }
            LoadModel::Closed(_) => {
                spans.push(Span::styled("users ", label));
                spans.push(Span::raw(format::count(s.active)).bold());
                if self.state.user_delta != 0 {
                    spans.push(Span::raw(format!(" ({:+})", self.state.user_delta)));
                }
                spans.push(Span::styled("  rate ", label));
                spans.push(Span::raw(format!("{} req/s", format::count(point.requests))).bold());
            }
            LoadModel::Open(_) => {
                spans.push(Span::styled("in flight ", label));
                spans.push(Span::raw(format::count(s.active)).bold());
                spans.push(Span::styled("  rate ", label));
                spans.push(Span::raw(format::count(point.requests)).bold());
                spans.push(Span::raw(format!(
                    "/{} req/s",
                    format::rate(point.target_rate)
                )));
                if (self.state.rate_factor - 1.0).abs() > 1e-9 {
                    spans.push(Span::raw(format!(" (x{:.2})", self.state.rate_factor)));
                }
            }
        }
        spans.push(Span::styled("  total ", label));
        spans.push(Span::raw(format::count(s.total.samples)));
        spans.push(Span::raw(format!(" ({}/s)", format::rate(s.throughput()))));
        spans.push(Span::styled("  errors ", label));
        let err = format!(
            "{} ({})",
            format::count(s.total.errors),
            format::percent(s.total.error_rate())
        );
        spans.push(if s.total.errors > 0 {
            Span::styled(err, Style::new().fg(Color::Red).bold())
        } else {
            Span::raw(err)
        });
        Line::from(spans)
    }
}

impl Widget for Header<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [title, gauge, rates] = Layout::vertical([Constraint::Length(1); 3]).areas(area);
        let badge = self.badge();
        let badge_width = badge.width() as u16;
        let [left, right] =
            Layout::horizontal([Constraint::Min(0), Constraint::Length(badge_width)]).areas(title);
        let mut title = vec![Span::styled(
            " throng ",
            Style::new().fg(Color::Cyan).bold(),
        )];
        if self.board.is_mix() {
            // Each workload's own load model: users or a rate, as it is now.
            for (i, w) in self.board.workloads.iter().enumerate() {
                if i > 0 {
                    title.push(Span::styled(" · ", Style::new().fg(Color::DarkGray)));
                }
                title.push(Span::raw(w.name.clone()).bold());
                title.push(Span::raw(format!(" {}", model(&w.snap))));
            }
        } else {
            title.extend([
                Span::raw(self.snap.plan.target.clone()).bold(),
                Span::styled("  ", Style::new()),
                Span::raw(self.snap.plan.describe()),
            ]);
        }
        Line::from(title).render(left, buf);
        Line::from(badge).render(right, buf);

        let (ratio, label) = self.progress();
        LineGauge::default()
            .ratio(ratio.clamp(0.0, 1.0))
            .label(Line::from(format!(" {label} ")))
            .filled_style(Style::new().fg(Color::Cyan))
            .unfilled_style(Style::new().fg(Color::DarkGray))
            .render(gauge, buf);

        Paragraph::new(self.rates().patch_style(Style::new()))
            .render(rates.inner(ratatui::layout::Margin::new(1, 0)), buf);
    }
}

/// The row of view names with their number keys.
pub struct TabBar<'a> {
    /// The run (decides whether the containers view exists).
    pub snap: &'a Snapshot,
    /// The grid and workloads (decide whether their views exist).
    pub board: &'a Board,
    /// The view on screen.
    pub view: View,
}

impl Widget for TabBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let views = View::available(self.snap, self.board);
        let titles = views
            .iter()
            .enumerate()
            .map(|(i, v)| Line::from(format!("{} {}", i + 1, v.title())));
        let selected = views.iter().position(|v| *v == self.view).unwrap_or(0);
        Tabs::new(titles)
            .select(selected)
            .highlight_style(Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD))
            .divider("│")
            .render(area, buf);
    }
}

/// A run's progress as a ratio and a label: by its planned time, else by its request count.
fn progress(s: &Snapshot) -> (f64, String) {
    let elapsed = format::duration(s.elapsed);
    if let Some(planned) = s.plan.planned_duration() {
        let left = planned.saturating_sub(s.elapsed);
        let ratio = s.elapsed.as_secs_f64() / planned.as_secs_f64().max(1e-9);
        return (
            ratio,
            format!(
                "{elapsed} of {}, {} left",
                format::duration(planned),
                format::duration(left)
            ),
        );
    }
    let requests = match &s.plan.model {
        LoadModel::Closed(c) => c.requests,
        LoadModel::Open(o) => o.requests,
    };
    match requests {
        Some(n) if n > 0 => (
            s.total.samples as f64 / n as f64,
            format!(
                "{elapsed}, {} of {} requests",
                format::count(s.total.samples),
                format::count(n)
            ),
        ),
        _ => (0.0, elapsed),
    }
}
