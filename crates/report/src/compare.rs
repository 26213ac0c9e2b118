//! Two or more results side by side: per label, each figure of every run against the first (the
//! baseline), its relative difference, and whether that difference is beyond the noise.
//!
//! **Noise.** With several rounds of each side (`A B A B ...`), a figure's rounds are samples
//! of it and two sides differ beyond noise when Welch's t-test says so at 95% (the t quantile
//! for the Welch-Satterthwaite degrees of freedom). With one run a side, the runs' one-second
//! intervals stand in for rounds: a figure's spread is the standard deviation of its
//! per-second values (the TOTAL series, scaled to each label as a relative spread), and a
//! difference is beyond noise when it exceeds twice the two runs' spreads combined
//! (`2·sqrt(sa² + sb²)`). That is deliberately wider than a standard error: seconds of one run
//! are not independent samples (the machine's state drifts), and a test that calls two runs of
//! one target "different" is worse than one that needs a clearer difference. A run of fewer
//! than three whole seconds cannot be judged (`?`).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::{LabelResult, Point, RunResult};

mod noise;
mod table;

pub(crate) use noise::MIN_ROUNDS;
use noise::{intervals, mean, welch};
pub(crate) use table::{all_tables, method_line};
pub use table::{comparison_markdown, render_comparison};

/// One side of a comparison: a target (or a result file) and its runs (several with rounds).
#[derive(Debug, Clone)]
pub struct Side {
    /// The name shown in the columns (`go`, `java`, a file's name).
    pub name: String,
    /// Its runs, one per round.
    pub runs: Vec<RunResult>,
}

/// The figures compared, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Requests that ended.
    Samples,
    /// Requests per second.
    Throughput,
    /// Failed requests, percent.
    ErrorRate,
    /// Mean latency, ms.
    Mean,
    /// Median latency, ms.
    P50,
    /// 90th percentile, ms.
    P90,
    /// 95th percentile, ms.
    P95,
    /// 99th percentile, ms.
    P99,
    /// 99.9th percentile, ms.
    P999,
    /// Maximum latency, ms.
    Max,
    /// Minimum latency, ms.
    Min,
    /// Kilobytes received per second.
    ReceivedKbPerS,
    /// Kilobytes sent per second.
    SentKbPerS,
    /// A stream's median time to first token, ms.
    TtftP50,
    /// A stream's 99th percentile time to first token, ms.
    TtftP99,
    /// A stream's median gap between tokens, ms.
    ItlP50,
    /// A stream's 99th percentile gap between tokens, ms.
    ItlP99,
    /// A stream's median time per output token, ms.
    TpotP50,
    /// A stream's 99th percentile time per output token, ms.
    TpotP99,
    /// A stream's 99th percentile end to end, ms.
    E2eP99,
    /// Output tokens per second.
    TokensPerS,
    /// Requests that met goodput's objectives, per second.
    Goodput,
}

impl Figure {
    /// Every figure, in table order.
    pub const ALL: [Figure; 13] = [
        Figure::Samples,
        Figure::Throughput,
        Figure::ErrorRate,
        Figure::Mean,
        Figure::Min,
        Figure::P50,
        Figure::P90,
        Figure::P95,
        Figure::P99,
        Figure::P999,
        Figure::Max,
        Figure::ReceivedKbPerS,
        Figure::SentKbPerS,
    ];

    /// The figures of replies streamed in tokens, compared when every side has them.
    pub const STREAM: [Figure; 9] = [
        Figure::TtftP50,
        Figure::TtftP99,
        Figure::ItlP50,
        Figure::ItlP99,
        Figure::TpotP50,
        Figure::TpotP99,
        Figure::E2eP99,
        Figure::TokensPerS,
        Figure::Goodput,
    ];

    /// The row's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Samples => "Samples",
            Figure::Throughput => "Throughput /s",
            Figure::ErrorRate => "Error %",
            Figure::Mean => "Mean ms",
            Figure::P50 => "p50 ms",
            Figure::P90 => "p90 ms",
            Figure::P95 => "p95 ms",
            Figure::P99 => "p99 ms",
            Figure::P999 => "p99.9 ms",
            Figure::Max => "Max ms",
            Figure::Min => "Min ms",
            Figure::ReceivedKbPerS => "Received KB/s",
            Figure::SentKbPerS => "Sent KB/s",
            Figure::TtftP50 => "TTFT p50 ms",
            Figure::TtftP99 => "TTFT p99 ms",
            Figure::ItlP50 => "ITL p50 ms",
            Figure::ItlP99 => "ITL p99 ms",
            Figure::TpotP50 => "TPOT p50 ms",
            Figure::TpotP99 => "TPOT p99 ms",
            Figure::E2eP99 => "E2E p99 ms",
            Figure::TokensPerS => "Tokens /s",
            Figure::Goodput => "Goodput /s",
        }
    }

    /// The figures' names as thresholds, regressions and `--columns` write them.
    pub const NAMES: &'static str = "samples, rps, error_rate, mean, min, p50, p90, p95, p99, \
                                     p99.9, max, received_kb, sent_kb, ttft_p50, ttft_p99, \
                                     itl_p50, itl_p99, tpot_p50, tpot_p99, e2e_p99, tokens, \
                                     goodput";

    /// The figure a name says (`p99`, `rps`, `error_rate`; see [`Figure::NAMES`]), as
    /// thresholds and regressions name them.
    pub fn named(name: &str) -> Option<Figure> {
        Some(match name {
            "samples" => Figure::Samples,
            "rps" | "throughput" => Figure::Throughput,
            "error_rate" | "errors" => Figure::ErrorRate,
            "mean" | "avg" => Figure::Mean,
            "min" => Figure::Min,
            "p50" | "median" => Figure::P50,
            "p90" => Figure::P90,
            "p95" => Figure::P95,
            "p99" => Figure::P99,
            "p99.9" | "p999" => Figure::P999,
            "max" => Figure::Max,
            "received_kb" | "received" => Figure::ReceivedKbPerS,
            "sent_kb" | "sent" => Figure::SentKbPerS,
            "ttft_p50" => Figure::TtftP50,
            "ttft_p99" => Figure::TtftP99,
            "itl_p50" => Figure::ItlP50,
            "itl_p99" => Figure::ItlP99,
            "tpot_p50" => Figure::TpotP50,
            "tpot_p99" => Figure::TpotP99,
            "e2e_p99" => Figure::E2eP99,
            "tokens" | "tokens_per_s" => Figure::TokensPerS,
            "goodput" => Figure::Goodput,
            _ => return None,
        })
    }

    /// Whether a larger value is worse (latency, errors) rather than better (throughput).
    pub fn lower_is_better(self) -> bool {
        !matches!(
            self,
            Figure::Samples
                | Figure::Throughput
                | Figure::ReceivedKbPerS
                | Figure::SentKbPerS
                | Figure::TokensPerS
                | Figure::Goodput
        )
    }

    pub(crate) fn is_latency(self) -> bool {
        !matches!(
            self,
            Figure::Samples
                | Figure::Throughput
                | Figure::ErrorRate
                | Figure::ReceivedKbPerS
                | Figure::SentKbPerS
                | Figure::TokensPerS
                | Figure::Goodput
        )
    }

    /// The figure of a row; `None` for a latency figure of a row with no latency, and for a
    /// stream's figure of a row without streams (or with none of the requests it is of).
    pub fn of(self, r: &LabelResult) -> Option<f64> {
        if Figure::STREAM.contains(&self) {
            return self.of_stream(r.stream.as_ref()?);
        }
        let l = &r.latency;
        if self.is_latency() && l.count == 0 {
            return None;
        }
        Some(match self {
            Figure::Samples => r.samples as f64,
            Figure::Throughput => r.throughput,
            Figure::ErrorRate => r.error_rate * 100.0,
            Figure::Mean => l.mean,
            Figure::P50 => l.p50,
            Figure::P90 => l.p90,
            Figure::P95 => l.p95,
            Figure::P99 => l.p99,
            Figure::P999 => l.p999,
            Figure::Max => l.max,
            Figure::Min => l.min,
            Figure::ReceivedKbPerS => r.received_kb_per_s,
            Figure::SentKbPerS => r.sent_kb_per_s,
            _ => return None,
        })
    }

    fn of_stream(self, s: &crate::StreamResult) -> Option<f64> {
        let time = |p: &crate::PhaseResult, v: f64| (p.stats.count > 0).then_some(v);
        match self {
            Figure::TtftP50 => time(&s.ttft, s.ttft.stats.p50),
            Figure::TtftP99 => time(&s.ttft, s.ttft.stats.p99),
            Figure::ItlP50 => time(&s.itl, s.itl.stats.p50),
            Figure::ItlP99 => time(&s.itl, s.itl.stats.p99),
            Figure::TpotP50 => time(&s.tpot, s.tpot.stats.p50),
            Figure::TpotP99 => time(&s.tpot, s.tpot.stats.p99),
            Figure::E2eP99 => time(&s.e2e, s.e2e.stats.p99),
            Figure::TokensPerS => Some(s.tokens_per_s),
            Figure::Goodput => s.goodput.as_ref().map(|g| g.per_s),
            _ => None,
        }
    }

    /// The figure in one second of the run's series (TOTAL); `None` for a count (samples are
    /// not a rate: they are not judged) and for a latency in a second that had none.
    fn of_point(self, p: &Point) -> Option<f64> {
        let latency = p.requests > p.errors;
        match self {
            Figure::Samples => None,
            Figure::Throughput => Some(p.requests as f64),
            Figure::ReceivedKbPerS => Some(p.bytes_received as f64 / 1024.0),
            Figure::SentKbPerS => Some(p.bytes_sent as f64 / 1024.0),
            // A second's minimum is not kept: judged over rounds only.
            Figure::Min => None,
            Figure::ErrorRate if p.requests > 0 => {
                Some(p.errors as f64 / p.requests as f64 * 100.0)
            }
            Figure::ErrorRate => None,
            _ if !latency => None,
            Figure::Mean => Some(p.mean),
            Figure::P50 => Some(p.p50),
            Figure::P90 => Some(p.p90),
            Figure::P95 => Some(p.p95),
            Figure::P99 => Some(p.p99),
            Figure::P999 => Some(p.p999),
            Figure::Max => Some(p.max),
            // The series keeps no stream's figures: judged over rounds only.
            _ => None,
        }
    }
}

/// How noise was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseMethod {
    /// Welch's t-test over the rounds of each side.
    Rounds,
    /// The spread of each run's one-second intervals.
    Intervals,
}

/// Whether a difference is beyond the noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Beyond the noise.
    Beyond,
    /// Within the noise.
    Within,
    /// Not enough data to judge (fewer than three whole seconds or three rounds a side, a
    /// figure that is not judged, or a figure missing on one side).
    Unknown,
}

/// One side's value of one figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The value (the mean of the rounds), if the side has it.
    pub value: Option<f64>,
    /// Relative difference against the baseline, percent (none for the baseline itself, or
    /// when either value is missing or the baseline is 0).
    pub change: Option<f64>,
    /// Whether the difference from the baseline is beyond the noise (the baseline: `Unknown`).
    pub verdict: Verdict,
}

/// One figure of one label across the sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureRow {
    /// The figure.
    pub figure: Figure,
    /// One cell per side, the baseline first.
    pub cells: Vec<Cell>,
}

/// One label's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelComparison {
    /// The label (`TOTAL` for all requests).
    pub label: String,
    /// Its figures.
    pub rows: Vec<FigureRow>,
}

/// One container row: a side's container, idle and under load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContainerRow {
    /// The side it belongs to.
    pub side: String,
    /// The container's name.
    pub name: String,
    /// The image's size, bytes.
    pub image_size: u64,
    /// Mean CPU at idle before the side's first load, percent of a core.
    pub cpu_idle: Option<f64>,
    /// Mean CPU under load, percent of a core.
    pub cpu_load: Option<f64>,
    /// Mean memory at idle before the side's first load (the container fresh), bytes.
    pub mem_idle: Option<u64>,
    /// Mean memory at idle between rounds, after the side's earlier loads (what the container
    /// kept), bytes; none with one round.
    pub mem_idle_after: Option<u64>,
    /// Mean memory under load, bytes.
    pub mem_load: Option<u64>,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The sides' names, the baseline first.
    pub names: Vec<String>,
    /// Rounds per side.
    pub rounds: Vec<usize>,
    /// How noise was judged.
    pub method: NoiseMethod,
    /// Per label, TOTAL last.
    pub labels: Vec<LabelComparison>,
    /// Each side's containers.
    pub containers: Vec<ContainerRow>,
    /// Each side's databases read with `--db-stats`.
    pub databases: Vec<crate::DatabaseRow>,
}

/// Why results cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// Fewer than two sides, or a side with no run.
    #[error("{0}")]
    Shape(String),
    /// The results ran different plans or steps (refused without `force`).
    #[error("{0}")]
    Different(String),
}

fn row_of<'a>(r: &'a RunResult, label: &str) -> Option<&'a LabelResult> {
    if label == "TOTAL" {
        return Some(&r.total);
    }
    r.labels.iter().find(|l| l.label == label)
}

/// What differs between two results' plans or steps, in words; empty when nothing does.
fn differences(a: &RunResult, b: &RunResult) -> Vec<String> {
    let mut out = Vec::new();
    let model = |r: &RunResult| serde_json::to_value(&r.plan.model).ok();
    if model(a) != model(b) {
        out.push(format!(
            "the load differs ({} against {})",
            a.description, b.description
        ));
    }
    let labels =
        |r: &RunResult| -> BTreeSet<String> { r.labels.iter().map(|l| l.label.clone()).collect() };
    let (la, lb) = (labels(a), labels(b));
    if la != lb {
        let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| {
            x.difference(y).cloned().collect::<Vec<_>>().join(", ")
        };
        out.push(format!(
            "the steps differ (only in the first: [{}]; only in the other: [{}])",
            only(&la, &lb),
            only(&lb, &la)
        ));
    }
    out
}

/// Compares `sides`, the first being the baseline. Results of different plans or steps are
/// refused, naming what differs, unless `force`.
pub fn compare(sides: &[Side], force: bool) -> Result<Comparison, CompareError> {
    compare_columns(sides, &[], force)
}

/// As [`compare`], for sides read from files: `grids[i]` names the grid result that side `i` is
/// a column of (none for a run's result, or past the list's end). The columns of one grid at
/// several levels ran different plans by design, so they are compared with a baseline of their
/// own grid as they are; every other side must have run the baseline's plan (a 4-user run
/// against the 1, 2 and 3 users of a sweep is refused, unless `force`).
pub fn compare_columns(
    sides: &[Side],
    grids: &[Option<String>],
    force: bool,
) -> Result<Comparison, CompareError> {
    if sides.len() < 2 {
        return Err(CompareError::Shape(
            "a comparison needs at least two results".into(),
        ));
    }
    if let Some(s) = sides.iter().find(|s| s.runs.is_empty()) {
        return Err(CompareError::Shape(format!("{} has no run", s.name)));
    }
    let base = &sides[0].runs[0];
    let grid = |i: usize| grids.get(i).and_then(Option::as_deref);
    if !force {
        for (i, s) in sides.iter().enumerate() {
            if i > 0 && grid(i).is_some() && grid(i) == grid(0) {
                continue;
            }
            for r in &s.runs {
                let d = differences(base, r);
                if !d.is_empty() {
                    let of = |i: usize| grid(i).map_or(String::new(), |f| format!(" (of {f})"));
                    return Err(CompareError::Different(format!(
                        "{}{} and {}{} did not run the same plan: {} (--force compares them anyway)",
                        sides[0].name,
                        of(0),
                        s.name,
                        of(i),
                        d.join("; ")
                    )));
                }
            }
        }
    }
    let method = if sides.iter().all(|s| s.runs.len() >= 2) {
        NoiseMethod::Rounds
    } else {
        NoiseMethod::Intervals
    };
    let mut labels: Vec<String> = base.labels.iter().map(|l| l.label.clone()).collect();
    for s in sides {
        for r in &s.runs {
            for l in &r.labels {
                if !labels.contains(&l.label) {
                    labels.push(l.label.clone());
                }
            }
        }
    }
    if labels.len() != 1 {
        labels.push("TOTAL".into());
    }
    let labels = labels
        .iter()
        .map(|label| LabelComparison {
            label: label.clone(),
            rows: Figure::ALL
                .iter()
                .map(|&f| figure_row(sides, label, f, method))
                .chain(
                    Figure::STREAM
                        .iter()
                        .map(|&f| figure_row(sides, label, f, method))
                        .filter(|r| r.cells.iter().all(|c| c.value.is_some())),
                )
                .collect(),
        })
        .collect();
    Ok(Comparison {
        names: sides.iter().map(|s| s.name.clone()).collect(),
        rounds: sides.iter().map(|s| s.runs.len()).collect(),
        method,
        labels,
        containers: container_rows(sides),
        databases: sides
            .iter()
            .flat_map(|s| crate::databases::database_rows(&s.name, &s.runs))
            .collect(),
    })
}

fn figure_row(sides: &[Side], label: &str, f: Figure, method: NoiseMethod) -> FigureRow {
    let values = |s: &Side| -> Vec<f64> {
        s.runs
            .iter()
            .filter_map(|r| row_of(r, label).and_then(|row| f.of(row)))
            .collect()
    };
    let base_values = values(&sides[0]);
    let base = (!base_values.is_empty()).then(|| mean(&base_values));
    let cells = sides
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let v = values(s);
            let value = (!v.is_empty()).then(|| mean(&v));
            if i == 0 {
                return Cell {
                    value,
                    change: None,
                    verdict: Verdict::Unknown,
                };
            }
            let change = match (base, value) {
                (Some(b), Some(x)) if b != 0.0 => Some((x - b) / b * 100.0),
                _ => None,
            };
            let verdict = match (base, value) {
                (Some(b), Some(x)) if f != Figure::Samples => match method {
                    NoiseMethod::Rounds => welch(&base_values, &v),
                    NoiseMethod::Intervals => intervals(&sides[0].runs[0], &s.runs[0], f, b, x),
                },
                _ => Verdict::Unknown,
            };
            Cell {
                value,
                change,
                verdict,
            }
        })
        .collect();
    FigureRow { figure: f, cells }
}

/// Each side's containers, their load figures the mean over the side's rounds. Idle figures
/// are of two kinds never mixed: before the side's first round (the container fresh), and
/// before its later rounds (after a load: 1.39 MiB fresh and 8.99 MiB after round 1 were once
/// shown as one 5.2 MiB).
fn container_rows(sides: &[Side]) -> Vec<ContainerRow> {
    let mut out = Vec::new();
    for s in sides {
        let mut names: Vec<&str> = Vec::new();
        for c in s.runs.iter().flat_map(|r| &r.containers) {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
        for name in names {
            let seen: Vec<&crate::ContainerResult> = s
                .runs
                .iter()
                .flat_map(|r| r.containers.iter().filter(|c| c.name == name))
                .collect();
            let fresh = seen.first().copied();
            let avg = |f: &dyn Fn(&crate::ContainerResult) -> Option<f64>| {
                let v: Vec<f64> = seen.iter().filter_map(|c| f(c)).collect();
                (!v.is_empty()).then(|| mean(&v))
            };
            out.push(ContainerRow {
                side: s.name.clone(),
                name: name.to_string(),
                image_size: seen.first().map_or(0, |c| c.image_size),
                cpu_idle: fresh.and_then(|c| c.idle.as_ref().map(|u| u.cpu_mean)),
                cpu_load: avg(&|c| c.load.as_ref().map(|u| u.cpu_mean)),
                mem_idle: fresh.and_then(|c| c.idle.as_ref().map(|u| u.mem_mean)),
                // A grid's one reading after its last load, else (runs of separate files)
                // the idle readings before the later rounds.
                mem_idle_after: match seen.last().and_then(|c| c.idle_after.as_ref()) {
                    Some(u) => Some(u.mem_mean),
                    None => {
                        let v: Vec<f64> = seen
                            .iter()
                            .skip(1)
                            .filter_map(|c| c.idle.as_ref().map(|u| u.mem_mean as f64))
                            .collect();
                        (!v.is_empty()).then(|| mean(&v) as u64)
                    }
                },
                mem_load: avg(&|c| c.load.as_ref().map(|u| u.mem_mean as f64)).map(|m| m as u64),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use throng_core::{
        ClosedLoop, ContainerInfo, ContainerSample, ContainerSeries, LoadModel, RunPlan, Snapshot,
        Users,
    };

    /// A run whose container used `idle` bytes before its load and `load` bytes under it.
    fn run_with(idle: u64, load: u64) -> RunResult {
        let plan = RunPlan::new(
            "t",
            LoadModel::Closed(ClosedLoop {
                users: Users::Fixed(1),
                requests: Some(1),
                iterations: None,
                duration: None,
                think_time: None,
            }),
        );
        let empty = Snapshot::empty(Arc::new(plan), &["GET /".to_string()], 0);
        let mut r = RunResult::from_snapshot(&empty);
        let at = |t: f64, mem_used: u64| ContainerSample {
            t,
            mem_used,
            ..ContainerSample::default()
        };
        let series = ContainerSeries {
            info: ContainerInfo {
                id: "1".into(),
                name: "web".into(),
                image: "web:1".into(),
                image_size: 1,
                gone: None,
            },
            samples: vec![at(-1.0, idle), at(1.0, load)],
        };
        r.containers = vec![crate::ContainerResult::from_series(&series)];
        r
    }

    #[test]
    fn fresh_idle_memory_and_idle_memory_after_a_load_are_never_averaged() {
        // 1.39 MiB fresh, 8.99 MiB before round 2 (after round 1's load): once shown as one 5.2.
        let side = Side {
            name: "a".into(),
            runs: vec![
                run_with(1_390_000, 9_000_000),
                run_with(8_990_000, 9_100_000),
            ],
        };
        let rows = container_rows(&[side]);
        assert_eq!(rows[0].mem_idle, Some(1_390_000));
        assert_eq!(rows[0].mem_idle_after, Some(8_990_000));
        assert_eq!(rows[0].mem_load, Some(9_050_000));
        let one = Side {
            name: "b".into(),
            runs: vec![run_with(1_000, 2_000)],
        };
        assert_eq!(container_rows(&[one])[0].mem_idle_after, None, "one round");
    }
}
