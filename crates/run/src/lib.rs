//! throng's run as one library call: everything `throng run` does around the engine.
//!
//! The engine runs a plan with a driver and publishes snapshots; a run as people use it is
//! more: the target's containers and databases watched before, through and after the load, the
//! shards' common start, Ctrl-C and SIGTERM, the live dashboard or a progress line, every
//! request in a samples file, and at the end the summary, the JSON result, other reports,
//! thresholds and an exit code. [`Run`] is that, as a builder of plain values: the command line
//! maps its flags onto it and does nothing else, and a library user gets the same run without
//! building an argument list.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use throng_core::{LoadSpec, RunPlan};
//! # struct Mine;
//! # impl throng_core::Driver for Mine {
//! #     type Worker = (); type Session = ();
//! #     fn steps(&self) -> Vec<throng_core::StepInfo> { vec![] }
//! #     fn worker(&self) {}
//! #     fn session(&self, _: &(), _: u64) {}
//! #     async fn execute(&self, _: &mut (), _: usize) -> throng_core::Outcome { Default::default() }
//! # }
//! # fn driver() -> Arc<Mine> { Arc::new(Mine) }
//! let spec = LoadSpec { users: Some(10), requests: Some(1_000), ..LoadSpec::default() };
//! let plan: RunPlan = spec.plan("http://127.0.0.1:8080/", &throng_core::spec::keys)?;
//! let finished = throng_run::Run::new(plan, driver())
//!     .thresholds(["p99<250ms".parse()?, "error_rate<1%".parse()?])
//!     .json("result.json")
//!     .execute()
//!     .await?;
//! assert!(finished.passed());
//! # Ok(()) }
//! ```
//!
//! The design decision: the aggregator stays the one owner of the run's state. The dashboard,
//! the progress line and the Prometheus exporter ([`metrics`]) only read snapshots; container and database readings reach the
//! result through the engine (a database's last reading, taken after the load, too), so the
//! final snapshot is never edited afterwards, and a run shown live produces the same numbers
//! as a headless one.
//!
//! Nothing is hidden: what a run reports to (its exporter, its [`Observer`]) and what a grid's
//! runs share (their [`Cell`]: dashboard, standard output, side) are values it is given, and it
//! prints nothing itself. What it needs of the process it takes itself and says so (the
//! open-file limit, [`raise_open_files`]); the one process-wide setting, tracing's subscriber,
//! is the caller's to make ([`quiet_tracing`]).
#![deny(missing_docs)]

mod check;
#[cfg(feature = "docker")]
mod containers;
mod dashboard;
pub mod flags;
mod grid;
pub mod metrics;
pub mod observer;
mod outputs;
mod process;
mod progress;
mod samples;
mod signals;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use throng_core::{Driver, RunPlan, Shard, Snapshot};
use throng_report::{Format, RunResult, Threshold};
use tokio::sync::oneshot;

pub use check::{Checked, Unreached};
#[cfg(feature = "docker")]
pub use containers::Containers;
pub use grid::{at_level, Cell, Grid, GridFinished, Side, Workload};
pub use observer::{Collect, Console, Event, Observer};
pub use outputs::{beside, check_writable, write_report};
pub use process::{quiet_tracing, raise_open_files, OpenFiles};
pub use progress::progress_line;
pub use signals::wait_for_signal;

/// Exit code: the run passed.
pub const EXIT_OK: u8 = 0;
/// Exit code: a runtime error (an output that could not be written included).
pub const EXIT_RUNTIME: u8 = 1;
/// Exit code: a usage or input error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: a threshold failed.
pub const EXIT_THRESHOLDS: u8 = 99;

/// Why a run did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input, found before any load: a plan that does not validate, a file that cannot be
    /// written, a container that does not exist. Exit code 2.
    #[error("{0}")]
    Input(String),
    /// Something failed: worker threads, the driver's setup, the Docker engine. Exit code 1.
    #[error("{0}")]
    Runtime(String),
}

impl RunError {
    /// The exit code this maps to.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Input(_) => EXIT_USAGE,
            RunError::Runtime(_) => EXIT_RUNTIME,
        }
    }
}

/// What shows the run while it goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Show {
    /// Nothing.
    #[default]
    Nothing,
    /// A progress line on standard error about once a second.
    Progress,
    /// The live dashboard (`dashboard` feature); only when standard output is a terminal. If
    /// the terminal fails, the run goes on headless.
    #[cfg(feature = "dashboard")]
    Dashboard,
}

/// Databases (servers) watched beside the load: core's [`throng_core::watch::Readings`], by
/// the name the run has given them.
pub use throng_core::watch::Readings as DatabaseReadings;
/// Databases (servers) made ready to watch beside a run: core's
/// [`throng_core::watch::Watched`], by the name the run has given them.
pub use throng_core::watch::Watched as Databases;

/// Starts watching databases right before the load (see [`Run::databases`]).
type StartDatabases = Box<dyn FnOnce() -> DatabaseReadings + Send>;

/// One run, as the command line makes it: build it, then [`Run::execute`].
///
/// By default it runs headless and silent: no summary, no messages, no progress line, no
/// signal handling; each is one call away ([`Run::summary`], [`Run::messages`], [`Run::show`],
/// [`Run::stop_on_signals`]).
pub struct Run {
    plan: RunPlan,
    driver: Arc<dyn Load>,
    thresholds: Vec<Threshold>,
    json: Option<PathBuf>,
    reports: Vec<(Format, PathBuf)>,
    samples: Option<PathBuf>,
    title: Option<String>,
    start_at: Option<SystemTime>,
    #[cfg(feature = "docker")]
    containers: Option<Containers>,
    databases: Option<StartDatabases>,
    show: Show,
    summary: bool,
    messages: bool,
    signals: bool,
    #[cfg(feature = "metrics")]
    metrics: Option<throng_metrics::Exporter>,
    on_start: Option<OnStart>,
    observer: Arc<dyn Observer>,
    place: Option<throng_report::Coordinates>,
    cell: Option<Cell>,
    connections: Option<u64>,
}

/// Told the handle on the run once the load has started (see [`Run::on_start`]).
type OnStart = Box<dyn FnOnce(Running) + Send>;

/// A run going, to watch and steer while it goes, as the dashboard's keys do: its latest
/// snapshot, pause and resume, more or fewer users, a faster or slower rate, an early stop.
/// Every change is kept, with its time, in the result ([`RunResult`]'s changes). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Running {
    snapshots: tokio::sync::watch::Receiver<Arc<Snapshot>>,
    control: Arc<throng_engine::Control>,
    stop: tokio_util::sync::CancellationToken,
    abort: tokio_util::sync::CancellationToken,
}

impl Running {
    fn of(handle: &throng_engine::RunHandle) -> Self {
        Running {
            snapshots: handle.snapshots(),
            control: handle.control(),
            stop: handle.stop_token(),
            abort: handle.abort_token(),
        }
    }

    /// The latest snapshot (published about once a second, and at the end).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    /// A receiver of the snapshots as they are published.
    pub fn snapshots(&self) -> tokio::sync::watch::Receiver<Arc<Snapshot>> {
        self.snapshots.clone()
    }

    /// The engine's live settings (pause, users, rate), and the changes made so far.
    pub fn control(&self) -> &throng_engine::Control {
        &self.control
    }

    /// No new iteration starts until [`Running::resume`]; requests in flight finish.
    pub fn pause(&self) {
        self.control.set_paused(true);
    }

    /// Scheduling goes on after [`Running::pause`].
    pub fn resume(&self) {
        self.control.set_paused(false);
    }

    /// Adds `n` users to the closed loop's plan (removes them when negative).
    pub fn add_users(&self, n: i64) {
        self.control.add_users(n);
    }

    /// Multiplies the open loop's rate by `by` (more than 0) from now on.
    pub fn scale_rate(&self, by: f64) {
        self.control.scale_rate(by);
    }

    /// Stops the run early: no new work starts, requests in flight get the grace period; the
    /// result says it was interrupted, and its outputs are written as at a normal end.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Stops the run at once: what is in flight is cut off and counted as aborted.
    pub fn abort(&self) {
        self.stop.cancel();
        self.abort.cancel();
    }
}

/// A run started by [`Run::start`]: the handle on it, and its end.
#[derive(Debug)]
pub struct Started {
    /// The handle on the run while it goes.
    pub running: Running,
    /// The run's end, as [`Run::execute`] returns it (outputs written).
    pub finished: tokio::task::JoinHandle<Result<Finished, RunError>>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("plan", &self.plan)
            .field("thresholds", &self.thresholds.len())
            .field("json", &self.json)
            .field("show", &self.show)
            .finish_non_exhaustive()
    }
}

/// A finished run: its result and what became of its outputs.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The final snapshot (every number of the run, series and readings included).
    pub snapshot: Arc<Snapshot>,
    /// The result as the JSON file holds it, with the thresholds evaluated.
    pub result: RunResult,
    /// Outputs that could not be written (the JSON result, a report, the samples file): the
    /// run's numbers are still in [`Finished::result`], but the exit code is 1.
    pub failures: Vec<String>,
    /// What went wrong beside the load without failing it (dropped container readings, failed
    /// database readings).
    pub warnings: Vec<String>,
}

impl Finished {
    /// Every threshold held.
    pub fn passed(&self) -> bool {
        self.result.passed()
    }

    /// The exit code: 1 if an output could not be written, else 99 if a threshold failed,
    /// else 0.
    pub fn exit_code(&self) -> u8 {
        if !self.failures.is_empty() {
            EXIT_RUNTIME
        } else if self.passed() {
            EXIT_OK
        } else {
            EXIT_THRESHOLDS
        }
    }
}

/// A driver as a [`Run`] holds it, its type erased: what the run asks of it. A run of any
/// protocol is then one type, so a protocol's crate can hand one to the command line.
trait Load: Send + Sync {
    fn step_urls(&self) -> Vec<String>;
    fn labels(&self) -> Vec<String>;
    fn report(&self) -> throng_core::DriverReport;
    fn start(self: Arc<Self>, plan: RunPlan, extras: throng_engine::Extras) -> Starting;
    fn step_labels(&self) -> Vec<String>;
    fn probe(self: Arc<Self>) -> check::Probing;
    fn prepare(self: Arc<Self>) -> check::Preparing;
}

/// The engine starting a run (see [`throng_engine::start_with`]).
type Starting = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<throng_engine::RunHandle, throng_engine::EngineError>,
            > + Send,
    >,
>;

impl<D: Driver> Load for D {
    fn step_urls(&self) -> Vec<String> {
        Driver::step_urls(self)
    }

    fn labels(&self) -> Vec<String> {
        labels(self)
    }

    fn report(&self) -> throng_core::DriverReport {
        Driver::report(self)
    }

    fn start(self: Arc<Self>, plan: RunPlan, extras: throng_engine::Extras) -> Starting {
        Box::pin(throng_engine::start_with(plan, self, extras))
    }

    fn step_labels(&self) -> Vec<String> {
        self.steps().into_iter().map(|s| s.label).collect()
    }

    fn probe(self: Arc<Self>) -> check::Probing {
        check::probe(self)
    }

    fn prepare(self: Arc<Self>) -> check::Preparing {
        check::prepare(self)
    }
}

impl Run {
    /// A run of `plan` with `driver`, headless and silent until told otherwise.
    pub fn new<D: Driver>(plan: RunPlan, driver: Arc<D>) -> Self {
        Run {
            plan,
            driver,
            thresholds: Vec::new(),
            json: None,
            reports: Vec::new(),
            samples: None,
            title: None,
            start_at: None,
            #[cfg(feature = "docker")]
            containers: None,
            databases: None,
            show: Show::Nothing,
            summary: false,
            messages: false,
            signals: false,
            #[cfg(feature = "metrics")]
            metrics: None,
            on_start: None,
            observer: Arc::new(()),
            place: None,
            cell: None,
            connections: None,
        }
    }

    /// Pass/fail conditions, evaluated on the result (exit code 99 when one fails).
    pub fn thresholds(mut self, thresholds: impl IntoIterator<Item = Threshold>) -> Self {
        self.thresholds.extend(thresholds);
        self
    }

    /// Writes the JSON result to `path` (`-`: standard output, and the summary goes to
    /// standard error). The file is checked writable before any load.
    pub fn json(mut self, path: impl Into<PathBuf>) -> Self {
        self.json = Some(path.into());
        self
    }

    /// Writes the result in `format` to `path` too (checked writable before any load).
    pub fn report(mut self, format: Format, path: impl Into<PathBuf>) -> Self {
        self.reports.push((format, path.into()));
        self
    }

    /// Writes every request as a line of JMeter's JTL to `path` while the run goes.
    pub fn samples(mut self, path: impl Into<PathBuf>) -> Self {
        self.samples = Some(path.into());
        self
    }

    /// Said before the target in the dashboard and the result (`go, round 2 of 3`).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Runs this share of the plan (one process of several that together run it exactly).
    pub fn shard(mut self, shard: Shard) -> Self {
        self.plan.shard = shard;
        self
    }

    /// Starts the load at this instant (every shard waits for the same one); one in the past
    /// starts at once, with a warning. The plan's own [`RunPlan::start`] (a scenario's
    /// `load: start`) comes after it; without it, after the run's start.
    pub fn start_at(mut self, at: SystemTime) -> Self {
        self.start_at = Some(at);
        self
    }

    /// The connections the run opens at most, which the open-file limit must hold (see
    /// [`raise_open_files`]); by default one per user or in-flight slot of the plan at its peak.
    /// A protocol that shares connections between users (HTTP/2, gRPC) needs fewer.
    pub fn connections(mut self, connections: u64) -> Self {
        self.connections = Some(connections);
        self
    }

    /// Watches the target's containers through the Docker engine: resolved (an unknown one is
    /// an input error) and sampled idle before the load, then through it.
    #[cfg(feature = "docker")]
    pub fn containers(mut self, containers: Containers) -> Self {
        self.containers = Some(containers);
        self
    }

    /// Watches databases beside the load: `start` is called right before the load starts.
    pub fn databases(mut self, start: impl FnOnce() -> DatabaseReadings + Send + 'static) -> Self {
        self.databases = Some(Box::new(start));
        self
    }

    /// Watches servers beside the load (databases, brokers: core's
    /// [`throng_core::watch::Watched`], read through their idle window already), a block each
    /// in the result; servers another run has taken are not watched again.
    pub fn watched(self, servers: &Databases) -> Self {
        match servers.take() {
            Some(start) => self.databases(start),
            None => self,
        }
    }

    /// What shows the run while it goes.
    pub fn show(mut self, show: Show) -> Self {
        self.show = show;
        self
    }

    /// Tells `observer` what the run says ([`Event`]): with [`Run::messages`], its notes and
    /// the files written; with [`Run::summary`], the summary and the driver's notes; its
    /// warnings always. The run itself never prints: without an observer it says nothing, and
    /// [`Console`] prints what `throng run` prints.
    pub fn observer(mut self, observer: impl Observer + 'static) -> Self {
        self.observer = Arc::new(observer);
        self
    }

    /// Prints the summary (the aggregate table) at the end.
    pub fn summary(mut self, on: bool) -> Self {
        self.summary = on;
        self
    }

    /// Says what it is doing (to its [`Run::observer`]): containers watched, the wait for the
    /// start, files written.
    pub fn messages(mut self, on: bool) -> Self {
        self.messages = on;
        self
    }

    /// Stops the run on Ctrl-C or SIGTERM (requests in flight get the grace period), and cuts
    /// it short on the second; the result is still written.
    pub fn stop_on_signals(mut self, on: bool) -> Self {
        self.signals = on;
        self
    }

    /// Exports the run's metrics to Prometheus through `exporter`; without one, the run exports
    /// nothing (there is no process-wide exporter). In a [`Grid`], its series carry the run's side, level and
    /// round as labels; a shard's, its shard.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, exporter: throng_metrics::Exporter) -> Self {
        self.metrics = Some(exporter);
        self
    }

    /// Runs this as a grid's run at `at` (the coordinates [`Grid::execute`] gives its closure):
    /// its metrics carry them as labels (side, level, round), and the endpoint's last scrape
    /// is left to the grid, once after all its runs.
    pub fn place(mut self, at: throng_report::Coordinates) -> Self {
        self.place = Some(at);
        self
    }

    /// Runs this as the grid's run `cell` (what [`Grid::execute`] and [`Grid::together`] give
    /// their closure): placed at its coordinates (see [`Run::place`]), titled with its title,
    /// on the grid's dashboard, and with its summary on standard error when the grid's document
    /// takes standard output. Passed, not found in the task it runs in: a run started in a task
    /// of its own ([`Run::start`]) is still the grid's, and two grids at once share nothing.
    pub fn cell(mut self, cell: Cell) -> Self {
        self.place = Some(cell.at.clone());
        self.title = Some(cell.title.clone());
        self.cell = Some(cell);
        self
    }

    /// Calls `f` with the handle on the run ([`Running`]: live snapshots, pause, users, rate,
    /// stop) once the load has started; not at all when the run fails before. For a run that
    /// goes on in a task of its own, see [`Run::start`].
    pub fn on_start(mut self, f: impl FnOnce(Running) + Send + 'static) -> Self {
        self.on_start = Some(Box::new(f));
        self
    }

    /// Starts the run in a task of its own and returns once its load has started, with the
    /// handle on it and its end; an error when it fails before (bad input, a setup that
    /// fails). [`Run::execute`] is the same run, waited for.
    pub async fn start(self) -> Result<Started, RunError> {
        let (tx, rx) = oneshot::channel();
        let finished = tokio::spawn(
            self.on_start(move |running| {
                let _ = tx.send(running);
            })
            .execute(),
        );
        match rx.await {
            Ok(running) => Ok(Started { running, finished }),
            // Told nothing: the run ended before its load started, with its error.
            Err(_) => match finished.await {
                Ok(Err(e)) => Err(e),
                Ok(Ok(_)) => Err(RunError::Runtime(
                    "the run ended without starting its load".into(),
                )),
                Err(e) => Err(RunError::Runtime(format!("the run failed: {e}"))),
            },
        }
    }

    /// The plan as it will run.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// The labels of the driver's rows, as thresholds name them (see [`labels`]).
    pub fn labels(&self) -> Vec<String> {
        self.driver.labels()
    }

    /// Runs to the end: the watchers first, then the load, then the outputs.
    ///
    /// Before any load it prepares the driver's steps against their targets ([`Run::prepare`]),
    /// raises the process's open-file limit for the run's connections
    /// ([`Run::connections`]), and tells its observer a warning when even the hard limit is
    /// too low (connections past it will fail as `connect`); it waits for the load's start
    /// ([`Run::start_at`], then the plan's own [`RunPlan::start`]).
    pub async fn execute(mut self) -> Result<Finished, RunError> {
        // The plan's start counts from the shards' common start, or from now.
        let start_at = match self.plan.start {
            after if after.is_zero() => self.start_at,
            after => Some(self.start_at.unwrap_or_else(SystemTime::now) + after),
        };
        if let Some(title) = &self.title {
            self.plan.target = format!("{title}: {}", self.plan.target);
        }
        let connections = self
            .connections
            .unwrap_or_else(|| self.plan.peak_concurrency());
        if let Err(e) = raise_open_files(connections) {
            self.observer.event(&Event::Warning(format!(
                "{e}: the connections past it will fail; lower the users or the requests in \
                 flight, or raise the hard limit (ulimit -Hn)"
            )));
        }
        // A result that cannot be written is found out now, not after the whole run.
        if let Some(path) = &self.json {
            check_writable(path).map_err(|e| RunError::Input(format!("the result file {e}")))?;
        }
        for (_, path) in &self.reports {
            check_writable(path).map_err(|e| RunError::Input(format!("the report {e}")))?;
        }
        // Steps that can never succeed (a statement with a syntax error) stop here, before any
        // container is watched or start awaited.
        self.prepare().await?;
        let mut warnings = Vec::new();
        let mut extras = throng_engine::Extras::default();
        // Containers are resolved (and sampled idle) before any load; an unknown one stops here.
        #[cfg(feature = "docker")]
        let mut sampling = match &self.containers {
            Some(c) => {
                let (s, events) = c.start(self.messages, self.observer.as_ref()).await?;
                extras.containers = Some(events);
                Some(s)
            }
            None => None,
        };
        let mut samples = None;
        if let Some(path) = &self.samples {
            let file = samples::Samples::create(path)?;
            let (tx, rx) = samples::Samples::channel();
            extras.samples = Some(tx);
            samples = Some((file, rx));
        }
        if let Some(at) = start_at {
            wait_until(at, self.messages, self.observer.as_ref()).await;
        }
        #[cfg(feature = "docker")]
        if let Some(s) = &mut sampling {
            s.load_starts_now();
        }
        let mut database_warnings = None;
        if let Some(start) = self.databases.take() {
            let d = start();
            extras.databases = Some(d.events);
            extras.after_load = Some(d.load_ended);
            database_warnings = Some(d.warnings);
        }
        let urls = self.driver.step_urls();
        #[cfg(feature = "metrics")]
        let metric_labels = metrics::labels(&self.plan, self.place.as_ref());
        let driver = self.driver.clone();
        let handle =
            self.driver
                .start(self.plan, extras)
                .await
                .map_err(|e| match e {
                    throng_engine::EngineError::Setup(_)
                    | throng_engine::EngineError::Thread(_) => RunError::Runtime(e.to_string()),
                    other => RunError::Input(other.to_string()),
                })?;
        if let Some(f) = self.on_start.take() {
            f(Running::of(&handle));
        }
        #[cfg(feature = "metrics")]
        let exported = self
            .metrics
            .as_ref()
            .map(|m| m.watch(metric_labels, handle.snapshots()));
        let writer = samples.map(|(file, rx)| file.spawn(rx, handle.snapshots(), urls));
        let signals = self.signals.then(|| {
            tokio::spawn(signals::stop_on_signal(
                handle.stop_token(),
                handle.abort_token(),
                self.observer.clone(),
            ))
        });
        let mut progress = None;
        // The grid's session and this run's name on its board, and whether the grid's document
        // holds standard output.
        let board = self.cell.as_ref().map(|c| (&c.session, c.name.as_str()));
        let grid_takes_stdout = self.cell.as_ref().is_some_and(|c| c.stdout_taken);
        let snapshot = match self.show {
            #[cfg(feature = "dashboard")]
            Show::Dashboard => dashboard::show(handle, self.observer.clone(), board).await,
            Show::Progress => {
                progress = Some(tokio::spawn(progress::progress(
                    handle.snapshots(),
                    self.observer.clone(),
                )));
                handle.wait().await
            }
            Show::Nothing => dashboard::quietly(handle, board).await,
        };
        if let Some(s) = signals {
            s.abort();
        }
        if let Some(p) = progress {
            p.abort();
        }
        #[cfg(feature = "docker")]
        if let Some(s) = sampling.take() {
            if s.dropped() > 0 {
                warnings.push(format!(
                    "{} container readings were dropped (the run was too busy to take them)",
                    s.dropped()
                ));
            }
        }
        if let Some(w) = database_warnings {
            warnings.extend(w.await.unwrap_or_default());
        }
        #[cfg(feature = "metrics")]
        if let Some(w) = exported {
            warnings.extend(w.finish(snapshot.clone()).await);
        }
        let report = driver.report();
        let notes = report.notes.clone();
        let result = throng_report::finish(&snapshot, &self.thresholds).with_report(report);
        // On a grid's or a mix's dashboard, the summary waits until it has left the screen.
        let drawing = board.map(|(s, _)| s).filter(|s| s.drawing());
        let people = outputs::for_people(self.json.as_deref(), &self.reports, grid_takes_stdout);
        if let (Some(s), true) = (&drawing, self.summary) {
            s.print(throng_report::render_summary(&result), people);
        }
        let mut finished = Finished {
            snapshot,
            result,
            failures: Vec::new(),
            warnings,
        };
        outputs::write(
            &mut finished,
            self.json.as_deref(),
            &self.reports,
            (self.summary && drawing.is_none()).then_some(people),
            self.messages && drawing.is_none(),
            self.observer.as_ref(),
        );
        // The driver's notes are facts of this run (a SQL run's transactions rolled back), said
        // with its summary: `--quiet` loses the progress line and the files' messages, not them.
        if self.summary {
            for note in notes {
                match &drawing {
                    Some(s) => s.print(format!("{note}\n"), outputs::Stream::Err),
                    None => self.observer.event(&Event::Text {
                        text: format!("{note}\n"),
                        to: observer::Stream::Err,
                    }),
                }
            }
        }
        if let Some(w) = writer {
            match w.await {
                Ok(Ok(n)) if self.messages => self
                    .observer
                    .event(&Event::Note(format!("{n} samples written"))),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => finished.failures.push(format!("the samples file {e}")),
                Err(e) => finished
                    .failures
                    .push(format!("the samples writer failed: {e}")),
            }
        }
        // A grid's endpoint waits for its last scrape once, after all its runs.
        #[cfg(feature = "metrics")]
        if let Some(m) = self.metrics.as_ref().filter(|_| self.place.is_none()) {
            metrics::linger(m, self.messages, self.signals, self.observer.as_ref()).await;
        }
        Ok(finished)
    }
}

/// The labels of a driver's rows, as thresholds name them: its steps, groups and parts rows.
pub fn labels<D: Driver>(driver: &D) -> Vec<String> {
    driver
        .steps()
        .into_iter()
        .map(|s| s.label)
        .chain(driver.groups().into_iter().map(|g| g.label))
        .chain(driver.parts().into_iter().map(|p| p.label))
        .collect()
}

/// Waits until `at`; a run that comes after it starts at once and says how late it is.
async fn wait_until(at: SystemTime, messages: bool, observer: &dyn Observer) {
    use std::time::Duration;
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            if messages && wait > Duration::from_millis(500) {
                observer.event(&Event::Note(format!(
                    "waiting {:.1} s for the start",
                    wait.as_secs_f64()
                )));
            }
            tokio::time::sleep(wait).await;
        }
        Err(late) => {
            let late = late.duration();
            if late > Duration::from_millis(100) {
                observer.event(&Event::Warning(format!(
                    "the start was {:.2} s ago: this shard starts late, and its time \
                     series will not line up with the others' by that much",
                    late.as_secs_f64()
                )));
            }
        }
    }
}
