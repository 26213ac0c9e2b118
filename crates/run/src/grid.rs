//! A grid of runs as one library call: a plan at several load levels (a sweep), against several
//! sides (A/B), in rounds, with a cooldown between runs, a condition that ends a side's sweep,
//! and one result with the level table and the capacity.
//!
//! The grid says *which* runs happen, in which order, and what becomes of their results; each
//! run is the caller's [`crate::Run`], made for its coordinates by a closure (the command line
//! points it at the side's URL and sets the level's users or rate), so a grid costs no more per
//! request than single runs. For each level the sides alternate round after round (A B A B),
//! so a drift of the machine falls on every side alike.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use throng_core::LoadSpec;
use throng_report::{
    grid_csv, grid_html, grid_markdown, per_round, render_comparison, render_grid, Coordinates,
    Format, GridResult, GridRun, Level, LevelRow, Shape, Threshold,
};

use crate::dashboard::Session;
use crate::observer::{Event, Stream};
use crate::{check_writable, Finished, RunError, EXIT_OK, EXIT_RUNTIME, EXIT_THRESHOLDS};

/// One side of an A/B grid: its name (a column of the comparison, a label of the metrics) and
/// the target its runs are pointed at (a URL, or whatever the caller's runs read as one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The side's name: `go`, `java`.
    pub name: String,
    /// Where its runs go: `http://127.0.0.1:8081`.
    pub target: String,
}

impl Side {
    /// The side `name` at `target`.
    pub fn new(name: impl Into<String>, target: impl Into<String>) -> Self {
        Side {
            name: name.into(),
            target: target.into(),
        }
    }
}

/// One run of a grid, as [`Grid::execute`] and [`Grid::together`] hand it to the closure that
/// makes the run: its coordinates and title, and what the grid's runs share, given to the run
/// with [`crate::Run::cell`] (its dashboard, and whether the grid's document holds standard
/// output). A value, not a task-local: the run may go in a task of its own.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Where the run is in the grid: its level, side and round (a workload's name as its side).
    pub at: Coordinates,
    /// Its title (`2000 users, go, round 2 of 3`; a workload's name).
    pub title: String,
    /// The side it runs against (its name is `at.side`); none without sides, and for a
    /// workload of [`Grid::together`], whose name is `at.side` but which has no target.
    pub side: Option<Side>,
    /// The grid's dashboard session.
    pub(crate) session: Arc<Session>,
    /// The run's name on the dashboard's board: a workload's; empty for a grid's runs, each
    /// replacing the one before.
    pub(crate) name: String,
    /// The grid's document goes to standard output, so its runs' summaries do not.
    pub(crate) stdout_taken: bool,
}

/// The runs of a grid: build it, then [`Grid::execute`] with a closure that runs one cell.
#[derive(Debug, Clone, Default)]
pub struct Grid {
    levels: Vec<Level>,
    sides: Vec<Side>,
    rounds: u32,
    cooldown: Duration,
    idle: Duration,
    thresholds: Vec<Threshold>,
    until: Option<Threshold>,
    json: Option<PathBuf>,
    reports: Vec<(Format, PathBuf)>,
    shape: Shape,
    summary: bool,
    messages: bool,
    #[cfg(feature = "metrics")]
    metrics: Option<throng_metrics::Exporter>,
    observer: crate::observer::Told,
}

/// A finished grid: its result and what became of its outputs.
#[derive(Debug, Clone)]
pub struct GridFinished {
    /// Every run with its coordinates, the level table and the capacity.
    pub result: GridResult,
    /// Outputs that could not be written (exit code 1).
    pub failures: Vec<String>,
}

impl GridFinished {
    /// 1 if an output could not be written, else 99 if a level failed its thresholds, else 0.
    pub fn exit_code(&self) -> u8 {
        if !self.failures.is_empty() {
            EXIT_RUNTIME
        } else if self.result.passed() {
            EXIT_OK
        } else {
            EXIT_THRESHOLDS
        }
    }
}

/// `spec` at a level of a sweep: the level's users (a closed loop, replacing the spec's users,
/// stages or rate), rate (an open loop, whose in-flight bound stays the spec's), or both (an
/// open loop at the rate with the users as its in-flight bound).
pub fn at_level(spec: &LoadSpec, level: Level) -> LoadSpec {
    let mut s = spec.clone();
    s.user_stages = None;
    s.rate_stages = None;
    match level {
        Level::Users(n) => {
            s.users = Some(n);
            s.rate = None;
            s.max_in_flight = None;
            s.queue = None;
            s.arrivals = None;
        }
        Level::Rate(r) => {
            s.rate = Some(r);
            s.think_time = None;
            s.iterations = None;
        }
        // An open loop at the rung's rate, its users the in-flight bound (as `-c` with `-q`).
        Level::Paired { users, rate } => {
            s.users = Some(users);
            s.rate = Some(rate);
            s.max_in_flight = None;
            s.think_time = None;
            s.iterations = None;
        }
    }
    s
}

impl Grid {
    /// A grid of one run until told otherwise.
    pub fn new() -> Self {
        Grid {
            rounds: 1,
            ..Grid::default()
        }
    }

    /// The levels of a sweep, in the order they run.
    pub fn levels(mut self, levels: impl IntoIterator<Item = Level>) -> Self {
        self.levels = levels.into_iter().collect();
        self
    }

    /// The sides, in the order they run at each level (names of their own: the runs are told
    /// theirs in their [`Cell`]).
    pub fn sides(mut self, sides: impl IntoIterator<Item = Side>) -> Self {
        self.sides = sides.into_iter().collect();
        self
    }

    /// Rounds of every level and side (at least 1).
    pub fn rounds(mut self, rounds: u32) -> Self {
        self.rounds = rounds.max(1);
        self
    }

    /// A pause between two runs, so one run's aftermath (connections closing, a collector)
    /// does not fall on the next.
    pub fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// How long the runs' containers are sampled idle after the grid's last load (`--idle`; at
    /// least their first complete reading, about a second). That reading is the grid's one
    /// idle reading after a load: the idle readings before its later runs follow a load too,
    /// so only a side's first run keeps its `idle`.
    pub fn idle(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }

    /// Pass conditions each row of the level table is judged by (its rounds merged); with
    /// levels, the capacity is the highest level that met them before the first that did not.
    pub fn thresholds(mut self, thresholds: impl IntoIterator<Item = Threshold>) -> Self {
        self.thresholds.extend(thresholds);
        self
    }

    /// Replaces the thresholds with `thresholds` (a scenario file's own with the flags').
    pub fn with_thresholds(mut self, thresholds: Vec<Threshold>) -> Self {
        self.thresholds = thresholds;
        self
    }

    /// Ends a side's sweep after the first level at which `condition` holds (`p99>500ms`,
    /// `error_rate>5%`), or at which nothing could be observed; that level is kept and marked.
    pub fn until(mut self, condition: Threshold) -> Self {
        self.until = Some(condition);
        self
    }

    /// Writes the grid's JSON document to `path` (`-`: standard output).
    pub fn json(mut self, path: impl Into<PathBuf>) -> Self {
        self.json = Some(path.into());
        self
    }

    /// Writes the grid in `format` (html, markdown, csv, json) to `path` too.
    pub fn report(mut self, format: Format, path: impl Into<PathBuf>) -> Self {
        self.reports.push((format, path.into()));
        self
    }

    /// The shape of the grid's reports beside the level table: its pivot (`--pivot`). A
    /// CSV report with a pivot writes it beside the level table, as `NAME.pivot.csv`.
    pub fn shape(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// Prints the level table (and the sides' comparison) at the end.
    pub fn summary(mut self, on: bool) -> Self {
        self.summary = on;
        self
    }

    /// Says on standard error which run starts, and each level's row as it is done.
    pub fn messages(mut self, on: bool) -> Self {
        self.messages = on;
        self
    }

    /// The exporter the grid's runs report to (each run is given it too: see
    /// [`crate::Run::metrics`]); its endpoint waits for a last scrape once, after the grid.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, exporter: throng_metrics::Exporter) -> Self {
        self.metrics = Some(exporter);
        self
    }

    /// Tells `observer` what the grid says (see [`crate::Run::observer`]): which run starts
    /// and each level's row (with [`Grid::messages`]), the level table (with
    /// [`Grid::summary`]), the files written. Its runs have observers of their own.
    pub fn observer(mut self, observer: impl crate::Observer + 'static) -> Self {
        self.observer = crate::observer::Told(std::sync::Arc::new(observer));
        self
    }

    /// Every run's coordinates, in the order they would run if no side's sweep ends early.
    pub fn cells(&self) -> Vec<Coordinates> {
        let levels: Vec<Option<Level>> = match self.levels.is_empty() {
            true => vec![None],
            false => self.levels.iter().copied().map(Some).collect(),
        };
        let sides: Vec<Option<String>> = match self.sides.is_empty() {
            true => vec![None],
            false => self.sides.iter().map(|s| Some(s.name.clone())).collect(),
        };
        let mut out = Vec::new();
        for level in &levels {
            for round in 1..=self.rounds {
                for side in &sides {
                    out.push(Coordinates {
                        level: *level,
                        side: side.clone(),
                        round,
                    });
                }
            }
        }
        out
    }

    /// Checks the outputs before any load: formats a grid writes, files writable.
    pub fn check(&self) -> Result<(), RunError> {
        for (format, path) in &self.reports {
            if matches!(format, Format::Junit) {
                return Err(RunError::Input(
                    "--report: a grid writes html, markdown, csv or json; write JUnit of one run \
                     with throng report on its result"
                        .into(),
                ));
            }
            check_writable(path).map_err(|e| RunError::Input(format!("the report {e}")))?;
        }
        if let Some(path) = &self.json {
            check_writable(path).map_err(|e| RunError::Input(format!("the result file {e}")))?;
        }
        Ok(())
    }

    /// Runs every cell through `run` (which makes and executes the [`crate::Run`] of that
    /// [`Cell`], given it with [`crate::Run::cell`] so that it is titled and placed, its metrics
    /// labelled with its coordinates, on the grid's dashboard), then writes the grid's outputs.
    /// A run stopped by a signal ends the grid with what ran; so does an error from `run` after
    /// the first run (it is one of [`GridFinished::failures`]; before any run, it is returned).
    pub async fn execute<F, Fut>(self, mut run: F) -> Result<GridFinished, RunError>
    where
        F: FnMut(Cell) -> Fut,
        Fut: Future<Output = Result<Finished, RunError>>,
    {
        self.check()?;
        let cells = self.cells();
        // One dashboard for every run: the runs that show it join this session.
        let session = Session::new(self.observer.0.clone());
        session.grid(&self.thresholds, self.until.as_ref());
        let done = self.cells_on(&session, &cells, &mut run).await;
        session.finish().await;
        let mut done = done?;
        self.write(&mut done);
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            crate::metrics::linger(m, self.messages, true, self.observer.0.as_ref()).await;
        }
        Ok(done)
    }

    /// The runs of [`Grid::execute`] on `session`, and the grid's result.
    async fn cells_on<F, Fut>(
        &self,
        session: &std::sync::Arc<Session>,
        cells: &[Coordinates],
        run: &mut F,
    ) -> Result<GridFinished, RunError>
    where
        F: FnMut(Cell) -> Fut,
        Fut: Future<Output = Result<Finished, RunError>>,
    {
        let total = cells.len();
        // With the grid's document on standard output, its runs' summaries go to standard error.
        let stdout_taken = crate::outputs::takes_stdout(self.json.as_deref(), &self.reports);
        // While the dashboard is up it shows what the messages would say.
        let say = |text: String| {
            if self.messages && !session.drawing() {
                self.observer.0.event(&Event::Note(text));
            }
        };
        let mut runs: Vec<GridRun> = Vec::new();
        let mut rows: Vec<LevelRow> = Vec::new();
        let mut ended: Vec<Option<String>> = Vec::new();
        let mut failures = Vec::new();
        let mut interrupted = false;
        let mut n = 0;
        let mut i = 0;
        while i < cells.len() && !interrupted {
            let level = cells[i].level;
            let this: Vec<&Coordinates> =
                cells[i..].iter().take_while(|c| c.level == level).collect();
            i += this.len();
            for at in this.iter().filter(|c| !ended.contains(&c.side)) {
                if n > 0 && !self.cooldown.is_zero() {
                    say(format!(
                        "cooling down for {}",
                        humantime::format_duration(self.cooldown)
                    ));
                    session.grid_cooling();
                    tokio::time::sleep(self.cooldown).await;
                }
                // `q` on the dashboard between two runs ends the grid as a signal would.
                if session.stopped() {
                    interrupted = true;
                    break;
                }
                n += 1;
                let title = at.title(self.rounds);
                say(format!("run {n} of at most {total}: {title}"));
                session.grid_run(at, &title, n, total);
                let cell = Cell {
                    at: (*at).clone(),
                    title: title.clone(),
                    side: self
                        .sides
                        .iter()
                        .find(|s| at.side.as_ref() == Some(&s.name))
                        .cloned(),
                    session: session.clone(),
                    name: String::new(),
                    stdout_taken,
                };
                let finished = match run(cell).await {
                    Ok(f) => f,
                    Err(e) if runs.is_empty() => return Err(e),
                    Err(e) => {
                        // What ran before is still the grid's: it is written, and the exit
                        // code says a run failed.
                        failures.push(format!("{title}: {e}"));
                        interrupted = true;
                        break;
                    }
                };
                failures.extend(finished.failures.iter().cloned());
                interrupted = finished.result.interrupted;
                let mut result = finished.result;
                // Before a side's later runs its containers are not idle but just out of the
                // previous load: read as idle, level 2's column showed level 1's aftermath.
                if runs.iter().any(|r| r.at.side == at.side) {
                    for c in &mut result.containers {
                        c.idle = None;
                    }
                }
                runs.push(GridRun {
                    at: (*at).clone(),
                    result,
                });
                if interrupted {
                    break;
                }
            }
            let mut sides: Vec<Option<String>> = Vec::new();
            for at in &this {
                if !sides.contains(&at.side) && !ended.contains(&at.side) {
                    sides.push(at.side.clone());
                }
            }
            for side in sides {
                let mine: Vec<&throng_report::RunResult> = runs
                    .iter()
                    .filter(|r| r.at.level == level && r.at.side == side)
                    .map(|r| &r.result)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let at = Coordinates {
                    level,
                    side: side.clone(),
                    round: 1,
                };
                let (mut row, merged) =
                    LevelRow::of(&at, &mine, &self.thresholds).map_err(|e| {
                        RunError::Runtime(format!("the rounds of {}: {e}", at.title(1)))
                    })?;
                // A stop between two rounds leaves the level short of rounds, as cut as a run
                // stopped midway.
                row.cut |= mine.len() < self.rounds as usize;
                if let Some(u) = &self.until {
                    let r = u.evaluate(&merged);
                    if r.passed || r.observed.is_none() {
                        row.crossed = true;
                        row.unmeasured = r.observed.is_none();
                        ended.push(side.clone());
                    }
                }
                say(row_line(&row));
                rows.push(row);
                session.grid_rows(&rows);
            }
        }
        // A grid stopped by a signal ends now, without another reading.
        #[cfg(feature = "docker")]
        if !interrupted {
            self.idle_after(&mut runs, &say).await;
        }
        let result = GridResult::new(
            runs,
            rows,
            &self.thresholds,
            self.until.as_ref(),
            interrupted,
        );
        Ok(GridFinished { result, failures })
    }

    /// The idle reading after the last load: every side's containers at once, kept in each
    /// side's last run (`idle_after`). A container gone since gives a message, not a failure.
    #[cfg(feature = "docker")]
    async fn idle_after(&self, runs: &mut [GridRun], say: &impl Fn(String)) {
        let mut last: Vec<usize> = Vec::new();
        for (i, r) in runs.iter().enumerate() {
            match last.iter_mut().find(|j| runs[**j].at.side == r.at.side) {
                Some(j) => *j = i,
                None => last.push(i),
            }
        }
        let mut ids: Vec<String> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for c in last.iter().flat_map(|&i| &runs[i].result.containers) {
            if c.gone.is_none() && !ids.contains(&c.id) {
                ids.push(c.id.clone());
                names.push(c.name.clone());
            }
        }
        if ids.is_empty() {
            return;
        }
        say(format!(
            "sampling {} for {} after the last load",
            names.join(", "),
            humantime::format_duration(self.idle.max(Duration::from_secs(1)))
        ));
        match crate::containers::idle_reading(&ids, self.idle).await {
            Ok(usage) => {
                for &i in &last {
                    for c in &mut runs[i].result.containers {
                        c.idle_after = usage
                            .iter()
                            .find(|(id, _)| *id == c.id)
                            .map(|(_, u)| u.clone());
                    }
                }
            }
            Err(e) => say(format!("no idle reading after the last load: {e}")),
        }
    }

    /// Runs several workloads at once, as k6's scenarios: each its own [`crate::Run`] (its own
    /// plan and load model, its own driver and thresholds), made by `run` for its [`Cell`]
    /// (its name as the side and the title; give it to the run with [`crate::Run::cell`]), all
    /// started together and polled on this task; then one result with a row per workload and a
    /// TOTAL row (their requests added, over the longest one's time), written as the grid's
    /// outputs.
    pub async fn together<'a, F>(
        mut self,
        names: Vec<String>,
        mut run: F,
    ) -> Result<GridFinished, RunError>
    where
        F: FnMut(Cell) -> Workload<'a>,
    {
        self.check()?;
        // One dashboard for every workload, the first in focus; their summaries wait for it.
        let session = Session::new(self.observer.0.clone());
        session.order(&names);
        let stdout_taken = crate::outputs::takes_stdout(self.json.as_deref(), &self.reports);
        let futures = names
            .iter()
            .map(|name| {
                run(Cell {
                    at: Coordinates {
                        level: None,
                        side: Some(name.clone()),
                        round: 1,
                    },
                    title: name.clone(),
                    side: None,
                    session: session.clone(),
                    name: name.clone(),
                    stdout_taken,
                })
            })
            .collect();
        let ends = join_all(futures).await;
        session.finish().await;
        let mut runs: Vec<GridRun> = Vec::new();
        let mut failures = Vec::new();
        for (name, finished) in names.iter().zip(ends) {
            let finished = finished?;
            failures.extend(finished.failures.iter().cloned());
            runs.push(GridRun {
                at: Coordinates {
                    level: None,
                    side: Some(name.clone()),
                    round: 1,
                },
                result: finished.result,
            });
        }
        let mut rows = Vec::new();
        for r in &runs {
            let (row, _) = LevelRow::of(&r.at, &[&r.result], &[])
                .map_err(|e| RunError::Runtime(format!("{}: {e}", r.at.title(1))))?;
            rows.push(row);
        }
        let all: Vec<&throng_report::RunResult> = runs.iter().map(|r| &r.result).collect();
        let total = throng_report::merge_concurrent(&all)
            .map_err(|e| RunError::Runtime(format!("the workloads' TOTAL: {e}")))?;
        let at = Coordinates {
            level: None,
            side: Some("TOTAL".into()),
            round: 1,
        };
        let (mut row, _) = LevelRow::of(&at, &[&total], &[])
            .map_err(|e| RunError::Runtime(format!("the workloads' TOTAL: {e}")))?;
        // Each workload's thresholds judged its own run: TOTAL passes when they all did, and
        // has no verdict when none had a threshold (as the workloads' rows have none then).
        row.passed = runs
            .iter()
            .any(|r| !r.result.thresholds.is_empty())
            .then(|| runs.iter().all(|r| r.result.passed()));
        for (r, run) in rows.iter_mut().zip(&runs) {
            r.passed = (!run.result.thresholds.is_empty()).then(|| run.result.passed());
        }
        rows.push(row);
        let interrupted = runs.iter().any(|r| r.result.interrupted);
        let mut result = GridResult::new(runs, rows, &[], None, interrupted);
        result.description = format!("workloads {} at once", names.join(", "));
        let mut done = GridFinished { result, failures };
        self.sides.clear();
        self.write(&mut done);
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            crate::metrics::linger(m, self.messages, true, self.observer.0.as_ref()).await;
        }
        Ok(done)
    }

    fn write(&self, done: &mut GridFinished) {
        let g = &done.result;
        let stdout_taken = crate::outputs::takes_stdout(self.json.as_deref(), &self.reports);
        if self.summary {
            let mut text = String::new();
            // The sides' comparison, at the one level or without levels.
            if let Some(c) = g.comparison() {
                text.push_str(&per_round(&c));
                text.push_str(&render_comparison(&c));
                text.push('\n');
            }
            text.push_str(&render_grid(g, &self.shape));
            self.observer.0.event(&Event::Text {
                text: format!("\n{text}"),
                to: match stdout_taken {
                    true => Stream::Err,
                    false => Stream::Out,
                },
            });
        }
        let doc = serde_json::to_string_pretty(g).unwrap_or_default() + "\n";
        let mut put = |path: &std::path::Path, text: &str| {
            if path.as_os_str() == "-" {
                self.observer.0.event(&Event::Text {
                    text: text.to_string(),
                    to: Stream::Out,
                });
                return;
            }
            match std::fs::write(path, text) {
                Ok(()) if self.messages => self.observer.0.event(&Event::Written {
                    what: String::new(),
                    path: path.to_path_buf(),
                }),
                Ok(()) => {}
                Err(e) => done
                    .failures
                    .push(format!("cannot write {}: {e}", path.display())),
            }
        };
        if let Some(path) = &self.json {
            put(path, &doc);
        }
        for (format, path) in &self.reports {
            let text = match format {
                Format::Html => grid_html(g, &self.shape),
                Format::Markdown => grid_markdown(g, &self.shape),
                Format::Csv => {
                    if self.shape.pivot.is_some() {
                        let beside = crate::beside(path, "pivot");
                        put(&beside, &grid_csv(g, &self.shape));
                    }
                    // The level table, its names as asked; the pivot is beside it.
                    let level_table = Shape {
                        pivot: None,
                        renames: self.shape.renames.clone(),
                    };
                    grid_csv(g, &level_table)
                }
                _ => doc.clone(),
            };
            put(path, &text);
        }
    }
}

/// One workload of [`Grid::together`]: its run, to its [`Finished`].
pub type Workload<'a> = std::pin::Pin<Box<dyn Future<Output = Result<Finished, RunError>> + 'a>>;

/// Polls every future on this task until all are ready; their outputs in order. The few
/// workloads of a run need no more than this (and no dependency for it).
async fn join_all<T>(mut futures: Vec<std::pin::Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        match pending {
            true => std::task::Poll::Pending,
            false => std::task::Poll::Ready(()),
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// A level's row as one line, for the messages as the grid goes.
fn row_line(r: &LevelRow) -> String {
    let mut at = Vec::new();
    if let Some(l) = r.level {
        at.push(l.to_string());
    }
    if let Some(s) = &r.side {
        at.push(s.clone());
    }
    let l = &r.total.latency;
    let p = |v: f64| match l.count {
        0 => "-".to_string(),
        _ => format!("{v:.2} ms"),
    };
    let mut s = format!(
        "level done: {}: {:.1} requests/s, p50 {}, p99 {}, errors {:.2}%",
        at.join(", "),
        r.total.throughput,
        p(l.p50),
        p(l.p99),
        r.failed_percent
    );
    if r.aborted > 0 {
        s.push_str(&format!(", {} aborted at the end", r.aborted));
    }
    match (r.crossed, r.unmeasured) {
        (true, true) => s.push_str(
            " (nothing could be measured for the until condition: this side's sweep ends here)",
        ),
        (true, false) => s.push_str(" (crossed the until condition: this side's sweep ends here)"),
        _ => {}
    }
    if r.cut {
        s.push_str(" (cut short: never the capacity)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::{ClosedLoop, LoadModel, RunPlan, Snapshot, Users};

    fn finished() -> Finished {
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
        let snapshot = Arc::new(Snapshot::empty(Arc::new(plan), &["GET /".to_string()], 0));
        let result = throng_report::RunResult::from_snapshot(&snapshot);
        Finished {
            snapshot,
            result,
            failures: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Each run is handed its typed side in its cell: the side's name in its coordinates and
    /// its target with it, A B A B at each level.
    #[tokio::test]
    async fn each_run_is_handed_its_side() {
        let seen = std::sync::Mutex::new(Vec::new());
        let done = Grid::new()
            .levels([Level::Users(1), Level::Users(2)])
            .sides([Side::new("a", "http://a/"), Side::new("b", "http://b/")])
            .execute(|cell| {
                let side = cell.side.map(|s| (s.name, s.target));
                if let Ok(mut s) = seen.lock() {
                    s.push((cell.at.level, cell.at.side, side));
                }
                async { Ok(finished()) }
            })
            .await
            .expect("the grid");
        assert_eq!(done.result.runs.len(), 4);
        let cell = |users, side: &str| {
            let named = (side.to_string(), format!("http://{side}/"));
            (
                Some(Level::Users(users)),
                Some(side.to_string()),
                Some(named),
            )
        };
        assert_eq!(
            seen.into_inner().expect("the cells"),
            [cell(1, "a"), cell(1, "b"), cell(2, "a"), cell(2, "b")]
        );
    }

    #[tokio::test]
    async fn a_run_that_fails_after_the_first_leaves_the_grid_what_ran() {
        let done = Grid::new()
            .levels([Level::Users(1), Level::Users(2), Level::Users(4)])
            .execute(|cell| async move {
                match cell.at.level {
                    Some(Level::Users(1)) => Ok(finished()),
                    _ => Err(RunError::Runtime("the server went away".into())),
                }
            })
            .await
            .expect("the grid of what ran");
        assert_eq!(done.result.runs.len(), 1);
        assert_eq!(done.result.rows.len(), 1);
        assert!(done.result.interrupted);
        assert_eq!(done.failures, ["2 users: the server went away"]);
        assert_eq!(done.exit_code(), EXIT_RUNTIME);
        // Before any run, the error is the grid's.
        let first = Grid::new()
            .levels([Level::Users(1)])
            .execute(|_| async { Err(RunError::Input("bad".into())) })
            .await;
        assert!(matches!(first, Err(RunError::Input(_))));
    }
}
