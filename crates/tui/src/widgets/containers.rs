//! The target's containers: CPU, memory, network and block I/O, with CPU and memory sparklines.
//! Rendered only when containers are watched; the layout leaves the panel out otherwise.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Sparkline, Widget};
use throng_core::{ContainerSample, ContainerSeries};

use crate::format;

/// Bytes per second between the last two samples of a counter.
fn per_second(c: &ContainerSeries, f: impl Fn(&ContainerSample) -> u64) -> f64 {
    match c.samples.as_slice() {
        [.., a, b] if b.t > a.t => f(b).saturating_sub(f(a)) as f64 / (b.t - a.t),
        _ => 0.0,
    }
}

/// The last `n` values of a sample field, scaled to integers for a sparkline.
fn spark(c: &ContainerSeries, n: usize, f: impl Fn(&ContainerSample) -> u64) -> Vec<u64> {
    let skip = c.samples.len().saturating_sub(n);
    c.samples.iter().skip(skip).map(f).collect()
}

fn cpu_tenths(s: &ContainerSample) -> u64 {
    (s.cpu_percent * 10.0).round().max(0.0) as u64
}

fn mem(last: &ContainerSample) -> String {
    if last.mem_limit > 0 {
        format!(
            "{} / {}",
            format::bytes(last.mem_used),
            format::bytes(last.mem_limit)
        )
    } else {
        format::bytes(last.mem_used)
    }
}

/// One line per container: name, CPU with a sparkline, memory, network rates.
pub struct ContainersPanel<'a> {
    /// The watched containers.
    pub containers: &'a [ContainerSeries],
}

impl ContainersPanel<'_> {
    /// Rows the panel wants.
    pub fn height(containers: &[ContainerSeries]) -> u16 {
        (containers.len() as u16).saturating_add(3)
    }
}

const NAME: u16 = 18;
const CPU: u16 = 8;
const MEM: u16 = 21;
const NET: u16 = 23;

impl Widget for ContainersPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = super::panel(" Containers ");
        let inner = block.inner(area);
        block.render(area, buf);
        let widths = [
            Constraint::Length(NAME),
            Constraint::Length(CPU),
            Constraint::Min(4),
            Constraint::Length(MEM),
            Constraint::Length(NET),
        ];
        let mut rows = inner.rows();
        if let Some(head) = rows.next() {
            let cols = Layout::horizontal(widths).spacing(1).split(head);
            let titles = [
                ("container", false),
                ("CPU", true),
                ("CPU over time", false),
                ("memory", true),
                ("net rx/s  tx/s", true),
            ];
            super::heading(&cols, &titles, buf);
        }
        for (c, row) in self.containers.iter().zip(rows) {
            let cols = Layout::horizontal(widths).spacing(1).split(row);
            let last = c.samples.last().copied().unwrap_or_default();
            let name = Line::from(c.info.name.clone());
            if c.info.gone.is_some() {
                name.fg(Color::DarkGray).render(cols[0], buf);
            } else {
                name.bold().render(cols[0], buf);
            }
            Line::from(format!("{:.1}%", last.cpu_percent))
                .right_aligned()
                .render(cols[1], buf);
            Sparkline::default()
                .data(spark(c, cols[2].width as usize, cpu_tenths))
                .max(cpu_scale(c))
                .style(Style::new().fg(Color::Cyan))
                .render(cols[2], buf);
            Line::from(mem(&last)).right_aligned().render(cols[3], buf);
            Line::from(format!(
                "{}  {}",
                format::bytes(per_second(c, |s| s.net_rx) as u64),
                format::bytes(per_second(c, |s| s.net_tx) as u64)
            ))
            .right_aligned()
            .render(cols[4], buf);
        }
    }
}

/// The containers view: per container, its numbers and sparklines of CPU and memory.
pub struct ContainersView<'a> {
    /// The watched containers.
    pub containers: &'a [ContainerSeries],
    /// Containers skipped from the top (scrolling).
    pub scroll: usize,
}

/// Rows each container's card takes in the containers view.
const CARD: u16 = 6;

impl Widget for ContainersView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if self.containers.is_empty() {
            Paragraph::new("No containers are watched.")
                .block(Block::bordered().title(" Containers "))
                .render(area, buf);
            return;
        }
        let fit = (area.height / CARD).max(1) as usize;
        let scroll = self.scroll.min(self.containers.len().saturating_sub(fit));
        let cards = Layout::vertical(vec![Constraint::Length(CARD); fit]).split(area);
        for (c, card) in self.containers.iter().skip(scroll).zip(cards.iter()) {
            render_card(c, *card, buf);
        }
    }
}

fn render_card(c: &ContainerSeries, area: Rect, buf: &mut Buffer) {
    let last = c.samples.last().copied().unwrap_or_default();
    let mut title = vec![
        Span::raw(" "),
        Span::raw(c.info.name.clone()).bold(),
        Span::styled(
            format!("  {} ", c.info.image),
            Style::new().fg(Color::DarkGray),
        ),
    ];
    if let Some(why) = &c.info.gone {
        title.push(Span::styled(
            format!("gone: {why} "),
            Style::new().fg(Color::Red),
        ));
    }
    let block = Block::bordered()
        .title(Line::from(title))
        .border_style(Style::new().fg(Color::DarkGray));
    let inner = block.inner(area);
    block.render(area, buf);
    let [numbers, charts] =
        Layout::horizontal([Constraint::Length(42), Constraint::Min(10)]).areas(inner);
    let dim = Style::new().fg(Color::DarkGray);
    let kv = |k: &'static str, v: String| Line::from(vec![Span::styled(k, dim), Span::raw(v)]);
    Paragraph::new(vec![
        kv(
            "CPU     ",
            format!("{:.1}%   pids {}", last.cpu_percent, last.pids),
        ),
        kv("memory  ", mem(&last)),
        kv(
            "net     ",
            format!(
                "rx {}/s  tx {}/s",
                format::bytes(per_second(c, |s| s.net_rx) as u64),
                format::bytes(per_second(c, |s| s.net_tx) as u64)
            ),
        ),
        kv(
            "block   ",
            format!(
                "read {}  written {}",
                format::bytes(last.blk_read),
                format::bytes(last.blk_write)
            ),
        ),
    ])
    .render(numbers, buf);
    let [labels, charts] =
        Layout::horizontal([Constraint::Length(4), Constraint::Min(1)]).areas(charts);
    let [cpu, memory] =
        Layout::vertical([Constraint::Length(2), Constraint::Length(2)]).areas(charts);
    let [cpu_label, memory_label] =
        Layout::vertical([Constraint::Length(2), Constraint::Length(2)]).areas(labels);
    Line::styled("cpu", dim).render(cpu_label, buf);
    Line::styled("mem", dim).render(memory_label, buf);
    let w = cpu.width as usize;
    Sparkline::default()
        .data(spark(c, w, cpu_tenths))
        .max(cpu_scale(c))
        .style(Style::new().fg(Color::Cyan))
        .render(cpu, buf);
    // Memory against the limit when there is one, so a flat line reads as headroom, not as full.
    let memory_chart = Sparkline::default()
        .data(spark(c, w, |s| s.mem_used))
        .style(Style::new().fg(Color::Magenta));
    match last.mem_limit {
        0 => memory_chart.render(memory, buf),
        limit => memory_chart.max(limit).render(memory, buf),
    }
}

/// The CPU sparkline's top: one core at least, so an idle container does not draw full bars.
fn cpu_scale(c: &ContainerSeries) -> u64 {
    c.samples
        .iter()
        .map(cpu_tenths)
        .max()
        .unwrap_or(0)
        .max(1000)
}
