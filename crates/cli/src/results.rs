//! The commands on results written before: `throng compare` (results side by side,
//! regression thresholds against the first), `throng report` (a result in another format) and
//! `throng merge` (the results of a plan's shards as one result), their flags as clap types
//! and their runs on throng-report's pure functions and throng-run's one report writer
//! ([`throng_run::write_report`]). Each returns its exit code.

use std::path::{Path, PathBuf};

use clap::Args;
use throng_report::{
    compare_columns, comparison_markdown, merge, render_comparison, render_comparison_html,
    render_report, render_summary, Format, Regression, RunResult, Side,
};

use throng_run::observer::{Event, Observer, Stream};
use throng_run::{RunError, EXIT_OK, EXIT_THRESHOLDS};

/// Flags of `throng compare`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  throng compare go.json java.json
  throng compare base.json new.json --threshold 'p99<+10%' --threshold 'rps>-5%'
  throng compare a.json b.json --format markdown > comparison.md

Each figure of every result is shown against the first (the baseline), with its change in
percent: * marks a change beyond the run-to-run noise, ~ one within it (the book's Reports and CI
says how it is judged).
Exit codes: 0 passed, 2 usage or input error, 99 a regression threshold failed.")]
pub struct CompareArgs {
    /// Result files written by `throng run --json` (the first is the baseline); NAME=FILE
    /// names a column (several files of one name are its rounds). An A/B run's combined
    /// result brings all its sides.
    #[arg(required = true, num_args = 1.., value_name = "RESULT")]
    pub results: Vec<String>,
    /// A regression threshold against the baseline, e.g. 'p99<+10%', 'mean{GET /}<+2ms',
    /// 'rps>-5%', 'error_rate<+1%' (points) (repeatable); exit code 99 when one fails.
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
    /// Compare results of different plans or steps anyway.
    #[arg(long)]
    pub force: bool,
    /// How to print the comparison: text, markdown or html (a page with the runs' charts
    /// overlaid).
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Also write the comparison as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Flags of `throng report`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  throng report result.json --format html -o report.html
  throng report result.json --format markdown
  throng report result.json --format junit -o junit.xml
  throng report result.json --format csv -o table.csv      # also writes table.series.csv
  throng report grid.json --format markdown --pivot side --columns mean,error_rate --unit s")]
pub struct ReportArgs {
    /// A result file written by `throng run --json`.
    pub result: PathBuf,
    /// html, markdown, csv, junit or json.
    #[arg(long)]
    pub format: String,
    /// Write to this file instead of standard output (CSV writes the series beside it, as
    /// NAME.series.csv).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// The grid's shape beside its level table (see `throng run --pivot`).
    #[command(flatten)]
    pub shape: ShapeFlags,
}

/// The shape of a grid's report: a pivot of its level table, `--pivot side --columns
/// mean,error_rate --unit s` (levels as rows, a column group per side), as `throng run` and
/// `throng report` take it.
#[derive(Debug, Clone, Default, Args)]
pub struct ShapeFlags {
    /// A grid's report: pivot its level table, with `side` (a column group per side, levels
    /// as rows) or `level` (a column group per level, sides as rows) across.
    #[arg(long, value_name = "side|level", help_heading = "Levels")]
    pub pivot: Option<String>,
    /// The figures of each column group of --pivot, e.g. mean,error_rate or p99,rps (the
    /// thresholds' names), and cpu and memory (the containers' under load) [default:
    /// rps,mean,p99,error_rate].
    #[arg(
        long,
        value_name = "FIGURE,...",
        help_heading = "Levels",
        requires = "pivot"
    )]
    pub columns: Option<String>,
    /// The unit of --pivot's latencies: us, ms or s [default: ms].
    #[arg(
        long,
        value_name = "us|ms|s",
        help_heading = "Levels",
        requires = "pivot"
    )]
    pub unit: Option<String>,
    /// A grid's reports: call a column or a row this instead (repeatable), FROM=TO, e.g.
    /// TOTAL=合计 or 'Mean (s)=平均响应时间(s)'.
    #[arg(long = "rename", value_name = "FROM=TO", help_heading = "Levels")]
    pub renames: Vec<String>,
}

impl ShapeFlags {
    /// The shape the flags ask for, each bad word named with its flag.
    pub fn shape(&self) -> Result<throng_report::Shape, RunError> {
        let pivot = self
            .pivot
            .as_deref()
            .map(|p| throng_report::Pivot::parse(p, self.columns.as_deref(), self.unit.as_deref()))
            .transpose()
            .map_err(usage)?;
        let renames = throng_report::Shape::parse_renames(&self.renames).map_err(usage)?;
        Ok(throng_report::Shape { pivot, renames })
    }
}

fn usage(m: impl Into<String>) -> RunError {
    RunError::Input(m.into())
}

/// Checks before any work that the file a flag names can be written.
fn writable(flag: &str, path: &Path) -> Result<(), RunError> {
    throng_run::check_writable(path).map_err(|e| usage(format!("{flag} {e}")))
}

/// Reads a result file; a missing or malformed one is a usage error naming it.
pub fn read_result(path: &Path) -> Result<RunResult, RunError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("{}: cannot read the result: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "{}:{}:{}: not a throng result: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// The sides of a comparison from `NAME=FILE` or `FILE` arguments, in order of first mention
/// (a grid's result brings a column per level and side), and the grid file each side is a
/// column of, if any.
fn sides(results: &[String]) -> Result<(Vec<Side>, Vec<Option<String>>), RunError> {
    let mut sides: Vec<Side> = Vec::new();
    let mut grids: Vec<Option<String>> = Vec::new();
    for arg in results {
        let (name, file) = match arg.split_once('=') {
            Some((n, f)) if !n.is_empty() && !Path::new(arg).exists() => (n.to_string(), f),
            _ => {
                let stem = Path::new(arg)
                    .file_stem()
                    .map_or(arg.clone(), |s| s.to_string_lossy().into_owned());
                (stem, arg.as_str())
            }
        };
        if let Some(grid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| throng_report::read_grid(&t))
        {
            // A grid's result: its sides (at one level), in its order.
            let grid = grid.map_err(|e| {
                usage(format!(
                    "{file}:{}:{}: not a throng grid: {e}",
                    e.line(),
                    e.column()
                ))
            })?;
            // Each level and side a column; levels are different plans by design.
            let columns = grid.columns();
            grids.resize(sides.len(), None);
            grids.extend(columns.iter().map(|_| Some(file.to_string())));
            sides.extend(columns);
            continue;
        }
        let result = read_result(Path::new(file))?;
        match sides.iter_mut().find(|s| s.name == name) {
            Some(s) if arg.contains('=') => s.runs.push(result),
            Some(_) => {
                // Two files of the same stem without names: keep them apart.
                let n = sides.len() + 1;
                sides.push(Side {
                    name: format!("{name} ({n})"),
                    runs: vec![result],
                });
            }
            None => sides.push(Side {
                name,
                runs: vec![result],
            }),
        }
    }
    grids.resize(sides.len(), None);
    Ok((sides, grids))
}

/// Runs `throng compare`: prints the comparison, evaluates the regression thresholds.
pub fn run_compare(a: &CompareArgs) -> Result<u8, RunError> {
    compare_with(a, &throng_run::Console)
}

/// [`run_compare`], its text told to `out` rather than printed.
pub fn compare_with(a: &CompareArgs, out: &dyn Observer) -> Result<u8, RunError> {
    let regressions = a
        .thresholds
        .iter()
        .map(|t| {
            t.parse::<Regression>()
                .map_err(|e| usage(format!("--threshold {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let format = a.format.as_str();
    if !["text", "markdown", "md", "html"].contains(&format) {
        return Err(usage(format!(
            "--format {format:?}: compare prints text, markdown or html"
        )));
    }
    if let Some(path) = &a.json {
        writable("--json", path)?;
    }
    let (sides, grids) = sides(&a.results)?;
    let c = compare_columns(&sides, &grids, a.force).map_err(|e| usage(e.to_string()))?;
    for r in &regressions {
        if let Some(l) = r.label() {
            if !c.labels.iter().any(|x| x.label == l) {
                let labels: Vec<&str> = c.labels.iter().map(|x| x.label.as_str()).collect();
                return Err(usage(format!(
                    "--threshold `{}`: no step is labelled {l:?} (the labels are {labels:?})",
                    r.text
                )));
            }
        }
    }
    say(
        out,
        Stream::Out,
        match format {
            "html" => render_comparison_html(&c, &sides),
            "text" => render_comparison(&c),
            _ => comparison_markdown(&c) + &throng_report::sides_markdown(&sides),
        },
    );
    let results: Vec<_> = regressions.iter().flat_map(|r| r.evaluate(&c)).collect();
    let mut code = EXIT_OK;
    if !results.is_empty() {
        say(out, Stream::Out, "\n".into());
        for r in &results {
            let observed = r
                .observed
                .map_or("nothing to compare".into(), |o| format!("{o:+.2}"));
            say(
                out,
                Stream::Out,
                format!(
                    "{}  {} ({}: {observed})\n",
                    if r.passed { "pass" } else { "FAIL" },
                    r.threshold,
                    r.side
                ),
            );
            if !r.passed {
                code = EXIT_THRESHOLDS;
            }
        }
    }
    if let Some(path) = &a.json {
        let doc = serde_json::json!({ "comparison": c, "thresholds": results });
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| RunError::Runtime(format!("the comparison as JSON: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| RunError::Runtime(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(code)
}

/// Runs `throng report`.
pub fn run_report(a: &ReportArgs) -> Result<u8, RunError> {
    report_with(a, &throng_run::Console)
}

/// [`run_report`], its text told to `out` rather than printed.
pub fn report_with(a: &ReportArgs, out: &dyn Observer) -> Result<u8, RunError> {
    let format: Format = a
        .format
        .parse()
        .map_err(|e| usage(format!("--format {e}")))?;
    if let Some(grid) = std::fs::read_to_string(&a.result)
        .ok()
        .and_then(|t| throng_report::read_grid(&t))
    {
        let path = a.result.display();
        let g = grid.map_err(|e| {
            usage(format!(
                "{path}:{}:{}: not a throng grid: {e}",
                e.line(),
                e.column()
            ))
        })?;
        let shape = a.shape.shape()?;
        let text = match format {
            Format::Html => throng_report::grid_html(&g, &shape),
            Format::Markdown => throng_report::grid_markdown(&g, &shape),
            Format::Csv => throng_report::grid_csv(&g, &shape),
            Format::Json => serde_json::to_string_pretty(&g).unwrap_or_default() + "\n",
            _ => {
                return Err(usage(format!(
                    "--format {}: a grid's report is html, markdown, csv or json (JUnit is of \
                     one run)",
                    a.format
                )))
            }
        };
        match &a.output {
            Some(p) => std::fs::write(p, text)
                .map_err(|e| RunError::Runtime(format!("cannot write {}: {e}", p.display())))?,
            None => say(out, Stream::Out, text),
        }
        return Ok(EXIT_OK);
    }
    if a.shape.pivot.is_some() || !a.shape.renames.is_empty() {
        return Err(usage(format!(
            "--pivot, --rename: {} is one run, not a grid; they shape a grid's tables \
             (throng run --sweep or --target SIDE=URL twice, with --json)",
            a.result.display()
        )));
    }
    let result = read_result(&a.result)?;
    match &a.output {
        Some(path) => throng_run::write_report(&result, format, path)?,
        None => {
            for (i, (_, text)) in render_report(&result, format).iter().enumerate() {
                if i > 0 {
                    say(out, Stream::Out, "\n".into());
                }
                say(out, Stream::Out, text.clone());
            }
        }
    }
    Ok(EXIT_OK)
}

/// Flags of `throng merge`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  throng merge shard-0.json shard-1.json shard-2.json
  throng merge shard-*.json --json merged.json --threshold 'p99<250ms'

Each shard of the plan must be there once (run with --shard I/N). Exit codes: 0 passed,
2 usage or input error (a missing or repeated shard, shards of different plans), 99 a
threshold failed.")]
pub struct MergeArgs {
    /// The shards' result files (`throng run --shard I/N --json FILE`), or logs holding their
    /// results as lines (`--json -`, then `kubectl logs` or `docker service logs`).
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Write the merged result to this file (`-`: on standard output, as one line).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// A pass/fail condition on the merged result, as for `throng run` (repeatable).
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
}

/// The results in a file: a result file (`--json FILE`), or logs holding results as lines
/// (`--json -` collected by `kubectl logs` or `docker service logs`, whose lines may carry a
/// prefix before the JSON).
fn read_results(path: &std::path::Path) -> Result<Vec<throng_report::RunResult>, RunError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| RunError::Input(format!("{}: cannot read the result: {e}", path.display())))?;
    if let Ok(one) = serde_json::from_str(&text) {
        return Ok(vec![one]);
    }
    let found: Vec<throng_report::RunResult> = text
        .lines()
        .filter_map(|l| l.find('{').and_then(|i| serde_json::from_str(&l[i..]).ok()))
        .collect();
    if found.is_empty() {
        // Say what is wrong with it as one result.
        return read_result(path).map(|r| vec![r]);
    }
    Ok(found)
}

/// Runs `throng merge`.
pub fn run_merge(a: &MergeArgs) -> Result<u8, RunError> {
    merge_with(a, &throng_run::Console)
}

/// [`run_merge`], its text told to `out` rather than printed.
pub fn merge_with(a: &MergeArgs, out: &dyn Observer) -> Result<u8, RunError> {
    if let Some(path) = &a.json {
        writable("--json", path)?;
    }
    let mut results = Vec::new();
    let mut files = Vec::new();
    for p in &a.results {
        let found = read_results(p)?;
        files.extend(std::iter::repeat_n(p.clone(), found.len()));
        results.extend(found);
    }
    let mut merged = merge(&results).map_err(|e| {
        // Positions become the user's file names.
        let mut m = e.to_string();
        for (i, p) in files.iter().enumerate().rev() {
            m = m.replace(&format!("result {}", i + 1), &p.display().to_string());
            m = m.replace(
                &format!("results {} and", i + 1),
                &format!("{} and", p.display()),
            );
            m = m.replace(
                &format!("and {} are", i + 1),
                &format!("and {} are", p.display()),
            );
        }
        RunError::Input(m)
    })?;
    let labels: Vec<String> = merged.labels.iter().map(|l| l.label.clone()).collect();
    let thresholds = throng_run::flags::parse_thresholds(&a.thresholds, "--threshold", &labels)?;
    merged.thresholds = thresholds.iter().map(|t| t.evaluate(&merged)).collect();
    let people = match a.json.as_deref() == Some(std::path::Path::new("-")) {
        true => Stream::Err,
        false => Stream::Out,
    };
    say(out, people, render_summary(&merged));
    if a.json.as_deref() == Some(std::path::Path::new("-")) {
        let text = serde_json::to_string(&merged)
            .map_err(|e| RunError::Runtime(format!("the merged result as JSON: {e}")))?;
        say(out, Stream::Out, text + "\n");
    } else if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&merged)
            .map_err(|e| RunError::Runtime(format!("the merged result as JSON: {e}")))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| RunError::Runtime(format!("cannot write {}: {e}", path.display())))?;
        out.event(&Event::Written {
            what: "merged result".into(),
            path: path.clone(),
        });
    }
    Ok(if merged.passed() {
        EXIT_OK
    } else {
        EXIT_THRESHOLDS
    })
}

/// Tells `out` text for people, as it is.
fn say(out: &dyn Observer, to: Stream, text: String) {
    out.event(&Event::Text { text, to });
}
