//! Reports as one self-contained HTML file: the summary table, latency over time, throughput and
//! errors over time, the latency distribution (the percentile spectrum from the HdrHistogram),
//! container CPU and memory, thresholds and warnings; for a comparison, the runs overlaid.
//!
//! Charts are SVG drawn by plotters from the result's own data (the one-second series and the
//! histograms) and inlined in the page, so the file opens with no network and no script.

use std::fmt::Write as _;

use plotters::prelude::*;

use crate::{RunResult, Side};
use throng_core::histogram::spectrum_label;

/// Colours of overlaid runs, in order (the baseline first).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One line of a chart.
struct Line {
    name: String,
    color: RGBColor,
    dashed: bool,
    /// A dot at each point, and the x axis from 0: levels of a grid, not a time series.
    dots: bool,
    points: Vec<(f64, f64)>,
}

/// Text made safe in HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line chart as an SVG document; `None` when no line has a point.
fn chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    spectrum: bool,
) -> Option<String> {
    let all = lines.iter().flat_map(|l| l.points.iter());
    // Levels are drawn from 0, each with a dot: a curve through a few levels, not a series.
    let levels = lines.iter().any(|l| l.dots);
    let (mut x0, mut x1, mut y1) = (if levels { 0.0 } else { f64::MAX }, f64::MIN, 0.0f64);
    let mut any = false;
    for &(x, y) in all {
        any = true;
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !any {
        return None;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
    // The spectrum's axis ends on a whole decade, so its labels fall on 90%, 99%, 99.9%, ...
    if spectrum {
        x1 = x1.ceil();
    }
    let mut svg = String::new();
    let drawn = (|| -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::with_string(&mut svg, (760, 300)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, 0.0..y1)?;
        let mut mesh = c.configure_mesh();
        mesh.x_desc(x_desc)
            .y_desc(y_desc)
            .light_line_style(WHITE.mix(0.0));
        if spectrum {
            mesh.x_labels(x1 as usize + 1)
                .x_label_formatter(&|x| spectrum_label(*x));
        }
        mesh.draw()?;
        for l in lines {
            let style = ShapeStyle::from(&l.color).stroke_width(2);
            if levels {
                c.draw_series(
                    l.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, ShapeStyle::from(&l.color).filled())),
                )?;
            }
            let series = if l.dashed {
                c.draw_series(DashedLineSeries::new(l.points.iter().copied(), 6, 4, style))?
            } else {
                c.draw_series(LineSeries::new(l.points.iter().copied(), style))?
            };
            let color = l.color;
            series
                .label(l.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
        root.present()?;
        Ok(())
    })();
    drawn.ok().map(|()| svg)
}

/// The percentile spectrum of a run's TOTAL latency, from its histogram.
fn spectrum(r: &RunResult) -> Vec<(f64, f64)> {
    throng_core::histogram::decode(&r.total.latency_hdr)
        .map(|h| throng_core::histogram::spectrum(&h))
        .unwrap_or_default()
}

fn series_of(r: &RunResult, f: impl Fn(&crate::Point) -> Option<f64>) -> Vec<(f64, f64)> {
    r.series
        .iter()
        .filter_map(|p| f(p).map(|v| (p.t, v)))
        .collect()
}

/// A count per second of each point, over the point's own length: the last point is often a
/// fraction of a second (the drain after the load), and its count is not a second's worth.
fn rate_of(r: &RunResult, f: impl Fn(&crate::Point) -> u64) -> Vec<(f64, f64)> {
    let mut prev = 0.0;
    r.series
        .iter()
        .filter_map(|p| {
            let dt = p.t - prev;
            prev = p.t;
            (dt > 0.05).then(|| (p.t, f(p) as f64 / dt))
        })
        .collect()
}

fn latency_of(p: &crate::Point, v: f64) -> Option<f64> {
    (p.requests > p.errors).then_some(v)
}

/// The charts of several runs overlaid (one run: its percentiles as separate lines); the
/// percentile spectrum is drawn from `spectra` (each side's rounds merged, where `runs` has
/// every round).
fn charts(
    runs: &[(&str, &RunResult)],
    spectra: &[(&str, &RunResult)],
) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let color = |i: usize| PALETTE[i % PALETTE.len()];
    let mut latency = Vec::new();
    if runs.len() == 1 {
        let r = runs[0].1;
        for (i, (name, f)) in [
            (
                "p50",
                (|p: &crate::Point| p.p50) as fn(&crate::Point) -> f64,
            ),
            ("p90", |p| p.p90),
            ("p99", |p| p.p99),
            ("max", |p| p.max),
        ]
        .into_iter()
        .enumerate()
        {
            latency.push(Line {
                name: name.into(),
                color: color(i),
                dashed: name == "max",
                dots: false,
                points: series_of(r, |p| latency_of(p, f(p))),
            });
        }
    } else {
        for (i, (name, r)) in runs.iter().enumerate() {
            latency.push(Line {
                name: format!("{name} p50"),
                color: color(i),
                dashed: false,
                dots: false,
                points: series_of(r, |p| latency_of(p, p.p50)),
            });
            latency.push(Line {
                name: format!("{name} p99"),
                color: color(i),
                dashed: true,
                dots: false,
                points: series_of(r, |p| latency_of(p, p.p99)),
            });
        }
    }
    out.push((
        "latency".into(),
        chart("Latency over time", "seconds", "ms", &latency, false),
    ));
    let mut rate = Vec::new();
    for (i, (name, r)) in runs.iter().enumerate() {
        rate.push(Line {
            name: format!("{name} requests/s"),
            color: color(i),
            dashed: false,
            dots: false,
            points: rate_of(r, |p| p.requests),
        });
        rate.push(Line {
            name: format!("{name} errors/s"),
            color: color(i),
            dashed: true,
            dots: false,
            points: rate_of(r, |p| p.errors),
        });
    }
    out.push((
        "throughput".into(),
        chart(
            "Throughput and errors over time",
            "seconds",
            "per second",
            &rate,
            false,
        ),
    ));
    let spectra: Vec<Line> = spectra
        .iter()
        .enumerate()
        .map(|(i, (name, r))| Line {
            name: (*name).into(),
            color: color(i),
            dashed: false,
            dots: false,
            points: spectrum(r),
        })
        .collect();
    out.push((
        "distribution".into(),
        chart("Latency by percentile", "percentile", "ms", &spectra, true),
    ));
    let mut cpu = Vec::new();
    let mut mem = Vec::new();
    let mut k = 0;
    for (name, r) in runs {
        for c in &r.containers {
            let label = if runs.len() == 1 {
                c.name.clone()
            } else {
                format!("{name}: {}", c.name)
            };
            cpu.push(Line {
                name: label.clone(),
                color: color(k),
                dashed: false,
                dots: false,
                points: c.samples.iter().map(|s| (s.t, s.cpu_percent)).collect(),
            });
            mem.push(Line {
                name: label,
                color: color(k),
                dashed: false,
                dots: false,
                points: c
                    .samples
                    .iter()
                    .map(|s| (s.t, s.mem_used as f64 / (1024.0 * 1024.0)))
                    .collect(),
            });
            k += 1;
        }
    }
    if !cpu.is_empty() {
        out.push((
            "containers-cpu".into(),
            chart(
                "Container CPU (idle before 0 s)",
                "seconds",
                "% of a core",
                &cpu,
                false,
            ),
        ));
        out.push((
            "containers-memory".into(),
            chart(
                "Container memory (idle before 0 s)",
                "seconds",
                "MiB",
                &mem,
                false,
            ),
        ));
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0}th,td{padding:3px 8px;border-bottom:1px solid #ddd}
td{text-align:right}td:first-child,th:first-child{text-align:left}
.fail{color:#b00;font-weight:bold}.pass{color:#070}.warn{color:#a60}
figure{margin:12px 0}";

fn html_table(rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n");
    for (i, r) in rows.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<{tag}>{}</{tag}>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
        esc(title)
    )
}

fn figures(out: &mut String, runs: &[(&str, &RunResult)], spectra: &[(&str, &RunResult)]) {
    for (id, svg) in charts(runs, spectra) {
        if let Some(svg) = svg {
            let _ = writeln!(out, "<figure id=\"chart-{id}\">{svg}</figure>");
        }
    }
}

/// One run as a self-contained HTML page.
pub fn render_html(r: &RunResult) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>{}</h1>\n<p>{} &rarr; <code>{}</code><br>started {}, {:.1} s{}</p>",
        esc(&format!("throng: {}", r.plan.target)),
        esc(&r.description),
        esc(&r.plan.target),
        esc(&r.started_at),
        r.duration,
        if r.interrupted { ", stopped early" } else { "" }
    );
    b.push_str("<h2>Summary (latencies in ms)</h2>\n");
    b.push_str(&html_table(&crate::table::table_rows(r)));
    let phases = crate::table::phases_rows(r);
    if !phases.is_empty() {
        b.push_str("<h2>Where the time went (phases, ms; latency = blocked + the rest)</h2>\n");
        b.push_str(&html_table(&phases));
    }
    let streams = crate::stream::stream_rows(r);
    if !streams.is_empty() {
        b.push_str("<h2>Streams of tokens (ms, from each request's intended start)</h2>\n");
        b.push_str(&html_table(&streams));
    }
    if !r.thresholds.is_empty() {
        b.push_str("<h2>Thresholds</h2>\n<ul>\n");
        for t in &r.thresholds {
            let (class, word) = if t.passed {
                ("pass", "pass")
            } else {
                ("fail", "FAIL")
            };
            let observed = t.observed.map_or("nothing".into(), |o| format!("{o:.3}"));
            let _ = writeln!(
                b,
                "<li><span class=\"{class}\">{word}</span> {} (observed {})</li>",
                esc(&t.threshold),
                esc(&observed)
            );
        }
        b.push_str("</ul>\n");
    }
    if !r.errors.is_empty() {
        let mut rows = vec![vec!["Error".into(), "Count".into(), "Sample".into()]];
        rows.extend(
            r.errors
                .iter()
                .map(|e| vec![e.class.clone(), e.count.to_string(), e.sample.clone()]),
        );
        b.push_str("<h2>Errors</h2>\n");
        b.push_str(&html_table(&rows));
        let by_label = crate::errors_by_label(r);
        if !by_label.is_empty() {
            b.push_str("<h3>By label</h3>\n");
            b.push_str(&html_table(&by_label));
        }
    }
    if let Some(c) = &r.connection {
        let _ = writeln!(b, "<p>connections: <code>{}</code></p>", esc(c));
    }
    if !r.protocol_counts.is_empty() {
        let mut rows = vec![vec!["Count".to_string(), "".to_string()]];
        rows.extend(
            r.protocol_counts
                .iter()
                .map(|(k, v)| vec![k.clone(), v.to_string()]),
        );
        b.push_str(&html_table(&rows));
    }
    for d in &r.databases {
        let _ = writeln!(b, "<h2>{}</h2>", esc(&d.heading()));
        for rows in d.tables(|v| format!("{v:.1}")) {
            b.push_str(&html_table(&rows));
        }
    }
    for w in &r.warnings {
        let _ = writeln!(b, "<p class=\"warn\">warning: {}</p>", esc(w));
    }
    b.push_str("<h2>Charts</h2>\n");
    figures(&mut b, &[("run", r)], &[("run", r)]);
    page(&format!("throng: {}", r.plan.target), &b)
}

/// A comparison as a self-contained HTML page: its tables, each side's aggregate table (its
/// rounds merged), every round's time series, and each side's percentile spectrum from its
/// rounds' merged histograms (exact: one round never stands for the others).
pub fn render_comparison_html(c: &crate::Comparison, sides: &[Side]) -> String {
    let mut b = String::from("<h1>throng: comparison</h1>\n");
    for rows in crate::compare::all_tables(c) {
        b.push_str(&html_table(&rows));
    }
    let _ = writeln!(b, "<p>{}</p>", esc(&crate::compare::method_line(c)));
    sides_html(&mut b, sides);
    page("throng: comparison", &b)
}

/// Each side's aggregate table and the charts of its rounds.
fn sides_html(b: &mut String, sides: &[Side]) {
    let merged: Vec<(String, RunResult)> = sides
        .iter()
        .filter_map(|s| {
            let refs: Vec<&RunResult> = s.runs.iter().collect();
            crate::merge_rounds(&refs).ok().map(|m| (s.name.clone(), m))
        })
        .collect();
    for (name, m) in &merged {
        let _ = writeln!(
            b,
            "<h2>{} (latencies in ms{})</h2>",
            esc(name),
            if m.duration > 0.0 && sides.iter().any(|s| s.runs.len() > 1) {
                ", rounds merged"
            } else {
                ""
            }
        );
        b.push_str(&html_table(&crate::table::table_rows(m)));
    }
    let names: Vec<String> = sides
        .iter()
        .flat_map(|s| {
            (0..s.runs.len()).map(move |i| match s.runs.len() {
                1 => s.name.clone(),
                _ => format!("{} round {}", s.name, i + 1),
            })
        })
        .collect();
    let rounds: Vec<(&str, &RunResult)> = names
        .iter()
        .map(String::as_str)
        .zip(sides.iter().flat_map(|s| s.runs.iter()))
        .collect();
    let spectra: Vec<(&str, &RunResult)> = merged.iter().map(|(n, m)| (n.as_str(), m)).collect();
    b.push_str("<h2>Charts</h2>\n");
    figures(b, &rounds, &spectra);
}

/// A grid as a self-contained HTML page: the level table (every column of the aggregate
/// table), the pivot, the latency–throughput curve (p50 and p99 against achieved throughput, a
/// line per side), error % and container CPU by level, and each run's aggregate table.
pub fn grid_html(g: &crate::GridResult, shape: &crate::Shape) -> String {
    let mut b = String::from("<h1>throng: grid</h1>\n");
    let _ = writeln!(
        b,
        "<p>{} ({})</p>",
        esc(&g.description),
        esc(&crate::grid::runs_text(g))
    );
    b.push_str("<section id=\"levels\">\n");
    b.push_str(&html_table(&shape.named(g.report_rows(false))));
    b.push_str("</section>\n<ul>\n");
    for n in g.notes() {
        let _ = writeln!(b, "<li>{}</li>", esc(&n));
    }
    b.push_str("</ul>\n");
    if let Some(p) = shape.pivot_of(g) {
        b.push_str("<h2>Pivot</h2>\n<section id=\"pivot\">\n");
        b.push_str(&html_table(&shape.named(p.rows(g, false))));
        let _ = writeln!(b, "</section>\n<p>{}</p>", esc(&p.note(g)));
    }
    let mut sides: Vec<Option<String>> = Vec::new();
    for r in &g.rows {
        if !sides.contains(&r.side) {
            sides.push(r.side.clone());
        }
    }
    let levels = g.rows.iter().any(|r| r.level.is_some());
    if levels {
        let (mut curve, mut errors, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
        for (i, side) in sides.iter().enumerate() {
            let rows: Vec<&crate::LevelRow> = g.rows.iter().filter(|r| &r.side == side).collect();
            let name = side.clone().unwrap_or_default();
            let prefix = if name.is_empty() {
                String::new()
            } else {
                format!("{name} ")
            };
            let color = PALETTE[i % PALETTE.len()];
            let timed: Vec<&&crate::LevelRow> =
                rows.iter().filter(|r| r.total.latency.count > 0).collect();
            for (q, dashed) in [("p50", false), ("p99", true)] {
                curve.push(Line {
                    name: format!("{prefix}{q}"),
                    color,
                    dashed,
                    dots: true,
                    points: timed
                        .iter()
                        .map(|r| {
                            let l = &r.total.latency;
                            (r.total.throughput, if dashed { l.p99 } else { l.p50 })
                        })
                        .collect(),
                });
            }
            let at = |r: &crate::LevelRow| r.level.map_or(0.0, |l| l.value());
            errors.push(Line {
                name: format!("{prefix}error %"),
                color,
                dashed: false,
                dots: true,
                points: rows.iter().map(|r| (at(r), r.failed_percent)).collect(),
            });
            if rows.iter().any(|r| !r.containers.is_empty()) {
                cpu.push(Line {
                    name: format!("{prefix}CPU %"),
                    color,
                    dashed: false,
                    dots: true,
                    points: rows
                        .iter()
                        .map(|r| (at(r), r.containers.iter().map(|c| c.cpu_percent).sum()))
                        .collect(),
                });
            }
        }
        let kind = g
            .rows
            .iter()
            .find_map(|r| r.level)
            .map_or("level", |l| match l {
                crate::Level::Users(_) => "users",
                crate::Level::Rate(_) | crate::Level::Paired { .. } => "target rate (/s)",
            });
        b.push_str("<h2>Charts</h2>\n");
        let drawn = [
            (
                "curve",
                chart(
                    "Latency against throughput",
                    "requests/s achieved",
                    "ms",
                    &curve,
                    false,
                ),
            ),
            (
                "errors",
                chart("Error % by level", kind, "%", &errors, false),
            ),
            (
                "cpu",
                chart("Container CPU by level", kind, "% of a core", &cpu, false),
            ),
        ];
        for (id, svg) in drawn {
            if let Some(svg) = svg {
                let _ = writeln!(b, "<figure id=\"chart-{id}\">{svg}</figure>");
            }
        }
    } else {
        sides_html(&mut b, &g.comparison_sides(None));
    }
    b.push_str("<h2>Each run (latencies in ms)</h2>\n<section id=\"runs\">\n");
    for (title, rows, streams) in g.run_tables() {
        let _ = writeln!(b, "<h3>{}</h3>", esc(&title));
        b.push_str(&html_table(&shape.named(rows)));
        if !streams.is_empty() {
            b.push_str(&html_table(&streams));
        }
    }
    b.push_str("</section>\n");
    page("throng: grid", &b)
}
