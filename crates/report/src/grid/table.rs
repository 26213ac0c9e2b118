//! A grid as people read it: the level table (a row per level and side), the notes under it
//! (capacity, the sweep's end, what the columns mean), what ran in words, and the table as
//! text, Markdown and CSV.

use std::fmt::Write as _;

use super::{GridResult, GridRun, Level, LevelRow};

impl GridResult {
    /// The level table's cells, the header first; `exact` keeps every digit (CSV). The
    /// terminal's columns: [`GridResult::report_rows`] has every column of the aggregate table.
    pub fn table_rows(&self, exact: bool) -> Vec<Vec<String>> {
        level_table(&self.rows, exact, false)
    }

    /// The level table with every column of the aggregate table (Min, Received and Sent KB/s
    /// too), as the Markdown, HTML and CSV reports print it.
    pub fn report_rows(&self, exact: bool) -> Vec<Vec<String>> {
        level_table(&self.rows, exact, true)
    }

    /// The databases' one table (`--db-stats`): a column per level and side (its rounds'
    /// mean), a row per figure, Global-TPS, DB-TPS and OPS among them; `None` when no run read
    /// a database.
    pub fn database_rows(&self) -> Option<Vec<Vec<String>>> {
        let mut rows = Vec::new();
        for r in &self.rows {
            let runs: Vec<crate::RunResult> = self
                .runs
                .iter()
                .filter(|x| x.at.level == r.level && x.at.side == r.side)
                .map(|x| x.result.clone())
                .collect();
            let name: Vec<String> = r
                .side
                .iter()
                .cloned()
                .chain(r.level.map(|l| l.to_string()))
                .collect();
            let name = match name.is_empty() {
                true => "run".to_string(),
                false => name.join(" "),
            };
            rows.extend(crate::databases::database_rows(&name, &runs));
        }
        (!rows.is_empty()).then(|| crate::databases::database_table(&rows))
    }

    /// The lines under the table: capacity, the sweep's end, what the columns mean.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let at = |t: &[String]| t.join(", ");
        for c in &self.capacity {
            let side = c.side.as_ref().map_or(String::new(), |s| format!("{s}: "));
            out.push(match (c.level, c.throughput) {
                (Some(l), Some(t)) => format!(
                    "capacity: {side}{l} at {} ({t:.1} requests/s)",
                    at(&self.thresholds)
                ),
                _ => format!("capacity: {side}no level met {}", at(&self.thresholds)),
            });
        }
        if let Some(u) = &self.until {
            for r in self.rows.iter().filter(|r| r.crossed) {
                let side = r.side.as_ref().map_or(String::new(), |s| format!("{s} "));
                let level = r.level.map_or(String::new(), |l| format!(" at {l}"));
                out.push(match r.unmeasured {
                    true => format!(
                        "{side}nothing could be measured for {u}{level} ({} of {} requests \
                         succeeded): its sweep ended there",
                        r.total.samples.saturating_sub(r.total.errors),
                        r.total.samples
                    ),
                    false => format!("{side}crossed {u}{level}: its sweep ended there"),
                });
            }
        }
        if self.rows.iter().any(|r| !r.containers.is_empty()) {
            let names: Vec<String> = self
                .rows
                .iter()
                .flat_map(|r| r.containers.iter().map(|c| c.name.clone()))
                .fold(Vec::new(), |mut v, n| {
                    if !v.contains(&n) {
                        v.push(n);
                    }
                    v
                });
            out.push(format!(
                "CPU % and memory: the mean under load of each side's containers ({}), summed",
                names.join(", ")
            ));
        }
        if let Some(n) = self.rows.iter().map(|r| r.rounds).max().filter(|&n| n > 1) {
            out.push(format!(
                "all rounds: each row merges its {n} rounds (samples summed, percentiles of every \
                 request in them)"
            ));
        }
        out.push(
            "latencies in ms; Error %: failures other than the requests aborted at the end of a \
             run, which are counted apart"
                .into(),
        );
        for r in self.rows.iter().filter(|r| r.cut) {
            let at: Vec<String> = r
                .level
                .map(|l| l.to_string())
                .into_iter()
                .chain(r.side.clone())
                .collect();
            out.push(format!(
                "{}: cut short (stopped before its end), so never the capacity",
                at.join(", ")
            ));
        }
        if self.interrupted {
            out.push("stopped early: the grid holds what ran".into());
        }
        out
    }
}

/// The level table's cells for `rows`, the header first; `exact` keeps every digit (CSV). The
/// columns a row set has no figure for (sides, containers, databases, verdicts) are left out.
/// `full` adds the aggregate table's other columns (Min, Received and Sent KB/s), as the
/// reports print it; the terminal keeps to the narrower table.
pub(crate) fn level_table(rows: &[LevelRow], exact: bool, full: bool) -> Vec<Vec<String>> {
    let levels = rows.iter().find_map(|r| r.level);
    let sides = rows.iter().any(|r| r.side.is_some());
    let containers = rows.iter().any(|r| !r.containers.is_empty());
    let db = rows.iter().any(|r| r.db_tps.is_some());
    let streams = stream_columns(rows, full);
    let judged = rows
        .iter()
        .any(|r| r.passed.is_some() || r.crossed || r.cut);
    let mut header: Vec<String> = Vec::new();
    if let Some(l) = levels {
        header.extend(l.headers());
    }
    if sides {
        header.push("Side".into());
    }
    // The aggregate table's columns the terminal's narrower table leaves out.
    let wide = ["Min", "Received KB/s", "Sent KB/s"];
    let figures = [
        "Throughput (/s)",
        "Samples",
        "Mean",
        "Min",
        "p50",
        "p90",
        "p95",
        "p99",
        "Max",
        "Error %",
        "Aborted",
        "Received KB/s",
        "Sent KB/s",
    ]
    .into_iter()
    .filter(|c| full || !wide.contains(c));
    header.extend(figures.map(String::from));
    header.extend(
        streams
            .iter()
            .map(|f| f.name().trim_end_matches(" ms").to_string()),
    );
    if containers {
        header.extend(["CPU %".to_string(), "Memory (MiB)".to_string()]);
    }
    if db {
        header.push("DB TPS".into());
    }
    if judged {
        header.push("Thresholds".into());
    }
    let f = |v: f64, digits: usize| {
        if exact {
            v.to_string()
        } else {
            format!("{v:.digits$}")
        }
    };
    let mut out = vec![header];
    for r in rows {
        let mut row: Vec<String> = Vec::new();
        if let Some(first) = levels {
            match r.level {
                Some(l) => row.extend(l.cells()),
                None => row.extend(first.cells().iter().map(|_| "-".to_string())),
            }
        }
        if sides {
            row.push(r.side.clone().unwrap_or_default());
        }
        let l = &r.total.latency;
        let ms = |v: f64| if l.count == 0 { "-".into() } else { f(v, 2) };
        row.extend([
            f(r.total.throughput, 1),
            r.total.samples.to_string(),
            ms(l.mean),
        ]);
        if full {
            row.push(ms(l.min));
        }
        row.extend([
            ms(l.p50),
            ms(l.p90),
            ms(l.p95),
            ms(l.p99),
            ms(l.max),
            f(r.failed_percent, 2),
            r.aborted.to_string(),
        ]);
        if full {
            row.extend([f(r.total.received_kb_per_s, 2), f(r.total.sent_kb_per_s, 2)]);
        }
        for s in &streams {
            let digits = if s.is_latency() { 2 } else { 1 };
            row.push(s.of(&r.total).map_or("-".into(), |v| f(v, digits)));
        }
        if containers {
            let cpu: f64 = r.containers.iter().map(|c| c.cpu_percent).sum();
            let mem: u64 = r.containers.iter().map(|c| c.memory).sum();
            if r.containers.is_empty() {
                row.extend(["-".to_string(), "-".to_string()]);
            } else {
                row.extend([f(cpu, 1), f(mem as f64 / 1_048_576.0, 1)]);
            }
        }
        if db {
            row.push(r.db_tps.map_or("-".into(), |v| f(v, 1)));
        }
        if judged {
            let mut s = match r.passed {
                Some(true) => "pass".to_string(),
                Some(false) => "FAIL".to_string(),
                None => String::new(),
            };
            if r.crossed {
                let why = match r.unmeasured {
                    true => "(until: nothing measured)",
                    false => "(until)",
                };
                s = format!("{s} {why}").trim().to_string();
            }
            if r.cut {
                s = format!("{s} (cut short)").trim().to_string();
            }
            row.push(s);
        }
        out.push(row);
    }
    out
}

/// The figures of replies streamed in tokens the level table shows when a row has them: TTFT
/// and ITL at p50 and p99, tokens a second, and goodput when a row was judged; `full` adds
/// TPOT and end to end.
fn stream_columns(rows: &[LevelRow], full: bool) -> Vec<crate::Figure> {
    use crate::Figure;
    let streams = rows.iter().filter_map(|r| r.total.stream.as_ref());
    let (mut any, mut judged) = (false, false);
    for s in streams {
        any = true;
        judged |= s.goodput.is_some();
    }
    Figure::STREAM
        .into_iter()
        .filter(|f| {
            any && (full || !matches!(f, Figure::TpotP50 | Figure::TpotP99 | Figure::E2eP99))
        })
        .filter(|f| judged || *f != Figure::Goodput)
        .collect()
}

/// A table's cells, the header first.
type Rows = Vec<Vec<String>>;

/// What a grid ran: the levels or sides, what each run was, and the target.
pub(super) fn describe(runs: &[GridRun], rows: &[LevelRow]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let rounds = runs.iter().map(|r| r.at.round).max().unwrap_or(1);
    let title = format!("{}: ", first.at.title(rounds));
    let target = first
        .result
        .plan
        .target
        .strip_prefix(&title)
        .unwrap_or(&first.result.plan.target);
    let mut levels: Vec<Level> = Vec::new();
    for r in rows {
        if let Some(l) = r.level {
            if !levels.contains(&l) {
                levels.push(l);
            }
        }
    }
    let mut sides: Vec<&str> = Vec::new();
    for r in rows {
        if let Some(s) = r.side.as_deref() {
            if !sides.contains(&s) {
                sides.push(s);
            }
        }
    }
    let mut what = Vec::new();
    if let Some(l) = levels.first() {
        let values: Vec<String> = levels.iter().map(|l| l.cells().join(":")).collect();
        what.push(format!("{} {}", l.kind(), values.join(", ")));
    }
    if !sides.is_empty() {
        what.push(format!("sides {}", sides.join(", ")));
    }
    if rounds > 1 {
        what.push(format!("{rounds} rounds"));
    }
    // Sides of URLs each have their own target: then no one target is named.
    let same = runs.iter().all(|r| {
        let t = format!("{}: ", r.at.title(rounds));
        r.result
            .plan
            .target
            .strip_prefix(&t)
            .unwrap_or(&r.result.plan.target)
            == target
    });
    let plan = &first.result.plan;
    let each = match (plan.planned_duration(), plan.warmup.is_zero()) {
        (Some(d), true) => format!("; each run {}", humantime::format_duration(d)),
        (Some(d), false) => format!(
            "; each run {} after a warm-up of {}",
            humantime::format_duration(d),
            humantime::format_duration(plan.warmup)
        ),
        (None, _) => String::new(),
    };
    match same {
        true => format!("{}{each} -> {target}", what.join("; ")),
        false => format!("{}{each}", what.join("; ")),
    }
}

/// How many runs a grid holds, in words (`1 run`, `10 runs`).
pub(crate) fn runs_text(g: &GridResult) -> String {
    throng_core::plural(g.runs.len() as u64, "run")
}

/// What a grid's report holds beside its level table (a pivot, `--pivot`), and the names its
/// tables give their columns and rows (`--rename`).
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// The pivot asked for; without one, a grid of levels and sides gets the default pivot
    /// (sides across, throughput, mean, p99 and error %) in its Markdown, HTML and text.
    pub pivot: Option<super::Pivot>,
    /// Names in place of a table's own, `(from, to)`: a column's header (`Mean (s)` to
    /// `平均响应时间(s)`) or a row's name in the first column (`TOTAL` to `合计`), as a report
    /// in another language has them.
    pub renames: Vec<(String, String)>,
}

impl Shape {
    /// `rows` (the header first) with the headers and the first column's names renamed.
    pub fn named(&self, mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
        if self.renames.is_empty() {
            return rows;
        }
        for (i, row) in rows.iter_mut().enumerate() {
            for (j, cell) in row.iter_mut().enumerate() {
                if i > 0 && j > 0 {
                    continue;
                }
                if let Some((_, to)) = self.renames.iter().find(|(from, _)| from == cell) {
                    *cell = to.clone();
                }
            }
        }
        rows
    }

    /// Renames as `--rename FROM=TO` gives them, each bad one named.
    pub fn parse_renames(given: &[String]) -> Result<Vec<(String, String)>, String> {
        given
            .iter()
            .map(|r| match r.split_once('=') {
                Some((from, to)) if !from.is_empty() => Ok((from.to_string(), to.to_string())),
                _ => Err(format!(
                    "--rename {r:?}: write FROM=TO, a column's header or a row's name and its \
                     new name, e.g. --rename TOTAL=合计 or --rename 'Mean (s)=平均响应时间(s)'"
                )),
            })
            .collect()
    }

    /// The pivot the report shows: the one asked for, or for a grid of several sides at
    /// several levels the default one (the shape the published comparisons take).
    pub fn pivot_of(&self, g: &GridResult) -> Option<super::Pivot> {
        if let Some(p) = &self.pivot {
            return Some(p.clone());
        }
        let levels = g.levels().len();
        (levels > 1 && g.sides().len() > 1)
            .then(|| super::Pivot::parse("side", None, None).ok())
            .flatten()
    }
}

impl GridResult {
    /// The levels, in the order they ran.
    pub fn levels(&self) -> Vec<Level> {
        let mut out: Vec<Level> = Vec::new();
        for r in &self.rows {
            if let Some(l) = r.level {
                if !out.contains(&l) {
                    out.push(l);
                }
            }
        }
        out
    }

    /// The sides' comparison, when the grid is sides at one level (or without levels).
    pub fn comparison(&self) -> Option<crate::Comparison> {
        let levels = self.levels();
        (self.sides().len() > 1 && levels.len() <= 1)
            .then(|| crate::compare(&self.comparison_sides(levels.first().copied()), true).ok())
            .flatten()
    }

    /// Each run's aggregate table (every label and TOTAL, JMeter's columns) and its streams'
    /// table (TTFT, ITL, TPOT, end to end, tokens, goodput; empty without streams), under its
    /// title (`300 users at 2000/s, go, round 2 of 3`), in the order they ran.
    pub fn run_tables(&self) -> Vec<(String, Rows, Rows)> {
        let rounds = self.runs.iter().map(|r| r.at.round).max().unwrap_or(1);
        self.runs
            .iter()
            .map(|r| {
                let title = r.at.title(rounds);
                let title = if title.is_empty() {
                    "run".into()
                } else {
                    title
                };
                (
                    title,
                    crate::table::table_rows(&r.result),
                    crate::stream::stream_rows(&r.result),
                )
            })
            .collect()
    }
}

/// Over a comparison of sides in rounds, what its figures are: a round's, the mean over the
/// rounds (the t-test's samples), where the level table merges every round (samples summed,
/// percentiles of every request). Unlabelled, 2,869 samples above and 5,738 below read as a
/// contradiction. Nothing when each side ran once: then the two agree.
pub fn per_round(c: &crate::Comparison) -> String {
    if c.rounds.iter().all(|&n| n <= 1) {
        return String::new();
    }
    let rounds: Vec<String> = c.rounds.iter().map(usize::to_string).collect();
    format!(
        "Per round: each figure is the mean of a side's rounds ({}); the table of all rounds \
         merged follows.\n\n",
        rounds.join(" and ")
    )
}

/// A grid's summary as text: what ran, the level table and its notes, the databases' table,
/// and the pivot when one is asked for or the grid has levels and sides.
pub fn render_grid(g: &GridResult, shape: &Shape) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "grid: {} ({})", g.description, runs_text(g));
    out.push_str(&crate::table::aligned(&shape.named(g.table_rows(false))));
    for n in g.notes() {
        let _ = writeln!(out, "{n}");
    }
    if let Some(db) = g.database_rows() {
        out.push('\n');
        out.push_str(&crate::table::aligned(&db));
    }
    if let Some(p) = shape.pivot_of(g) {
        out.push('\n');
        out.push_str(&crate::table::aligned(&shape.named(p.rows(g, false))));
        let _ = writeln!(out, "{}", p.note(g));
    }
    out
}

/// A grid as Markdown, ready to paste: what ran, the level table with every column of the
/// aggregate table and its notes, the databases' table, the pivot, the sides' comparison (sides
/// at one level), and each run's aggregate table.
pub fn grid_markdown(g: &GridResult, shape: &Shape) -> String {
    let md = crate::markdown::table;
    let mut out = String::new();
    let _ = writeln!(out, "**grid**: {} ({})\n", g.description, runs_text(g));
    out.push_str(&md(&shape.named(g.report_rows(false))));
    out.push('\n');
    for n in g.notes() {
        let _ = writeln!(out, "- {n}");
    }
    if let Some(db) = g.database_rows() {
        out.push('\n');
        out.push_str(&md(&db));
    }
    if let Some(p) = shape.pivot_of(g) {
        out.push('\n');
        out.push_str(&md(&shape.named(p.rows(g, false))));
        let _ = writeln!(out, "\n- {}", p.note(g));
    }
    if let Some(c) = g.comparison() {
        out.push('\n');
        out.push_str(&per_round(&c));
        out.push_str(&crate::comparison_markdown(&c));
        // Each side's rounds merged into one aggregate table; of one round, that is the run's.
        let sides = g.comparison_sides(g.levels().first().copied());
        if sides.iter().any(|s| s.runs.len() > 1) {
            out.push_str(&crate::sides_markdown(&sides));
        }
    }
    out.push_str("\n### Each run (latencies in ms)\n");
    for (title, rows, streams) in g.run_tables() {
        let _ = writeln!(out, "\n**{}**\n", title.replace('*', "\\*"));
        out.push_str(&md(&shape.named(rows)));
        if !streams.is_empty() {
            out.push('\n');
            out.push_str(&md(&streams));
        }
    }
    out
}

/// A grid as CSV, every digit kept: the pivot asked for, or else the level table with every
/// column of the aggregate table.
pub fn grid_csv(g: &GridResult, shape: &Shape) -> String {
    let rows = shape.named(match &shape.pivot {
        Some(p) => p.rows(g, true),
        None => g.report_rows(true),
    });
    let mut out = crate::csv::Csv::report();
    for row in rows {
        out.row(&row);
    }
    out.finish()
}
