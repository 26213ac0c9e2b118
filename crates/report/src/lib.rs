//! throng's results: the versioned JSON result, the aggregate table, thresholds, comparisons of
//! several results, and reports in other formats (Markdown, CSV, JUnit).
//!
//! Everything here is a pure function of the final [`throng_core::Snapshot`], so a run with the
//! live UI and a headless run report the same numbers. The JSON result ([`RunResult`]) is a
//! contract: its schema is generated from these types ([`schema`]) and checked into the
//! repository as `schema.json`, and it carries every histogram encoded exactly, so results can be
//! merged and compared without loss.
#![deny(missing_docs)]

mod compare;
mod containers;
mod csv;
mod databases;
mod grid;
mod histogram;
mod html;
mod jtl;
mod junit;
mod markdown;
mod merge;
mod regression;
mod result;
mod stream;
mod table;
mod threshold;

pub use compare::{
    compare, compare_columns, comparison_markdown, render_comparison, Cell, CompareError,
    Comparison, ContainerRow, Figure, FigureRow, LabelComparison, NoiseMethod, Side, Verdict,
};
pub use csv::{render_csv_databases, render_csv_series, render_csv_table};
pub use databases::{
    render_databases, CounterResult, DatabaseResult, DatabaseRow, FlowCost, Rates, Spread,
};
pub use grid::{
    grid_csv, grid_markdown, grid_schema, merge_concurrent, merge_rounds, per_round, read_grid,
    render_grid, Across, Capacity, Column, Coordinates, GridResult, GridRun, Level, LevelContainer,
    LevelRow, Pivot, Shape, Unit, GRID_KIND,
};
pub use html::{grid_html, render_comparison_html, render_html};
pub use jtl::{jtl_line, JTL_HEADER};
pub use junit::render_junit;
pub use markdown::{render_markdown, sides_markdown};
pub use merge::{merge, MergeError};
pub use regression::{Regression, RegressionResult};

pub use containers::{render_containers, ContainerResult, Usage};
pub use result::{
    schema, ChangeResult, ErrorResult, HoldResult, LabelResult, LagResult, PhaseResult,
    PhasesResult, Point, RunResult, Stats, SCHEMA_VERSION,
};
pub use stream::{GoodputResult, StreamResult, TokensResult};
pub use table::{errors_by_label, render_summary, render_table};
pub use threshold::{Metric, Op, Threshold, ThresholdError, ThresholdResult};

/// A finished run's result: the snapshot's numbers (the changes made while it ran included),
/// and each threshold evaluated. [`RunResult::passed`] says whether the run passed; the command
/// line prints [`render_summary`] of it and writes it as JSON.
pub fn finish(snapshot: &throng_core::Snapshot, thresholds: &[Threshold]) -> RunResult {
    let mut result = RunResult::from_snapshot(snapshot);
    result.thresholds = thresholds.iter().map(|t| t.evaluate(&result)).collect();
    result
}

/// A report format other than the JSON result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// One self-contained HTML page with charts.
    Html,
    /// The aggregate table and the summary as Markdown.
    Markdown,
    /// The per-label table and the one-second series as CSV (two files).
    Csv,
    /// One JUnit test case per threshold, and one for the checks.
    Junit,
    /// The JSON result itself.
    Json,
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(Format::Html),
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "junit" => Ok(Format::Junit),
            "json" => Ok(Format::Json),
            other => Err(format!(
                "`{other}` is not a report format (html, markdown, csv, junit, json)"
            )),
        }
    }
}

/// A report of `result` in `format`: one or more documents, each with the suffix its file name
/// takes after the name the user gave (`""` for the main one; CSV's series is `.series.csv`
/// beside `report.csv`, and with `--db-stats` its databases' `.databases.csv`).
pub fn render_report(result: &RunResult, format: Format) -> Vec<(&'static str, String)> {
    match format {
        Format::Html => vec![("", render_html(result))],
        Format::Markdown => vec![("", render_markdown(result))],
        Format::Csv => {
            let mut files = vec![
                ("", render_csv_table(result)),
                ("series", render_csv_series(result)),
            ];
            if !result.databases.is_empty() {
                files.push(("databases", render_csv_databases(result)));
            }
            files
        }
        Format::Junit => vec![("", render_junit(result))],
        Format::Json => vec![(
            "",
            serde_json::to_string_pretty(result)
                .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")),
        )],
    }
}
