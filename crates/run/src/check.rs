//! Checking a run before any load, as a call with its own result: [`Run::check`] says what
//! the run would be judged on and whether the process can hold it; [`Run::check_connecting`]
//! also opens each step's connection once, so a target that cannot be reached is found before
//! the load rather than as the failures of every request. A grid checks every side this way
//! before its first run.

use std::sync::Arc;

use throng_core::{Driver, ErrorClass, Outcome};
use throng_report::Threshold;

use crate::process::{raise_open_files, OpenFiles};
use crate::{check_writable, Run, RunError};

/// What checking a run found, before any load.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The labels of the run's rows (its steps, groups and parts rows), as thresholds name them.
    pub labels: Vec<String>,
    /// The thresholds the run is judged by.
    pub thresholds: Vec<Threshold>,
    /// The connections the run opens at most ([`Run::connections`]).
    pub connections: u64,
    /// The open-file limit, raised for them; or why it is too low even raised.
    pub open_files: Result<u64, OpenFiles>,
    /// The steps whose connection could not be opened ([`Run::check_connecting`]; always
    /// empty from [`Run::check`]), in step order.
    pub unreached: Vec<Unreached>,
}

impl Checked {
    /// Nothing stands in the run's way: its connections fit and every target answered.
    pub fn passed(&self) -> bool {
        self.open_files.is_ok() && self.unreached.is_empty()
    }
}

/// A step whose connection could not be opened when the run was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreached {
    /// The step's label.
    pub step: String,
    /// How it failed (`connect`, `tls`, `timeout`, ...).
    pub class: ErrorClass,
    /// What the protocol said.
    pub message: String,
}

impl std::fmt::Display for Unreached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.step, self.class, self.message)
    }
}

impl Run {
    /// Checks the run without any load and without a connection: the plan validates, the
    /// outputs can be written, every threshold names a row the run has, and the open-file limit
    /// (raised for it) holds its connections. Bad input is the error it would be from
    /// [`Run::execute`]; what the process or the targets lack is in the [`Checked`].
    pub async fn check(&self) -> Result<Checked, RunError> {
        self.plan
            .validate()
            .map_err(|e| RunError::Input(e.to_string()))?;
        if let Some(path) = &self.json {
            check_writable(path).map_err(|e| RunError::Input(format!("the result file {e}")))?;
        }
        for (_, path) in &self.reports {
            check_writable(path).map_err(|e| RunError::Input(format!("the report {e}")))?;
        }
        let labels = self.driver.labels();
        for t in &self.thresholds {
            if let Some(l) = t.label.as_ref().filter(|l| !labels.contains(l)) {
                return Err(RunError::Input(format!(
                    "threshold `{}`: no step or group is labelled {l:?} (the labels are \
                     {labels:?})",
                    t.text
                )));
            }
        }
        let connections = self
            .connections
            .unwrap_or_else(|| self.plan.peak_concurrency());
        Ok(Checked {
            labels,
            thresholds: self.thresholds.clone(),
            connections,
            open_files: raise_open_files(connections),
            unreached: Vec::new(),
        })
    }

    /// Checks the driver's steps against their targets themselves ([`Driver::prepare`]: a
    /// scenario's SQL statements each prepared once), on a thread of its own: a step that can
    /// never succeed is bad input, naming its place. [`Run::execute`] and
    /// [`Run::check_connecting`] do it first; a target that cannot be reached is no error here.
    /// The future holds the driver, not the run (it is `Send`).
    pub fn prepare(&self) -> impl std::future::Future<Output = Result<(), RunError>> + Send {
        self.driver.clone().prepare()
    }

    /// [`Run::check`] and [`Run::prepare`], then each step's connection opened once, as a user's first iteration
    /// opens it (a scenario's step: its own target), and closed: a target that refuses, does not
    /// answer or does not speak the protocol is one of [`Checked::unreached`]. No request is
    /// sent.
    pub async fn check_connecting(&self) -> Result<Checked, RunError> {
        let mut checked = self.check().await?;
        self.prepare().await?;
        let labels: Vec<String> = self.driver.step_labels();
        checked.unreached = self
            .driver
            .clone()
            .probe()
            .await?
            .into_iter()
            .map(|(step, outcome)| Unreached {
                step: labels.get(step).cloned().unwrap_or_default(),
                class: outcome.error.unwrap_or(ErrorClass::Connect),
                message: outcome.message.unwrap_or_default(),
            })
            .collect();
        Ok(checked)
    }
}

/// The connections of [`Run::check_connecting`] being opened: the steps that failed, with
/// their outcomes.
pub(crate) type Probing = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<(usize, Outcome)>, RunError>> + Send>,
>;

/// The steps of [`Run::prepare`] being checked against their targets.
pub(crate) type Preparing =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), RunError>> + Send>>;

/// Opens each of `driver`'s steps' connections once on a session of its own, on a thread of its
/// own (a session lives on one thread, as on the engine's workers), and drops them.
pub(crate) fn probe<D: Driver>(driver: Arc<D>) -> Probing {
    on_a_thread(move || async move {
        let worker = driver.worker_of(0, 1);
        let mut session = driver.session(&worker, 0);
        let mut failed = Vec::new();
        for step in 0..driver.steps().len() {
            if let Err(outcome) = driver.connect(&mut session, step).await {
                failed.push((step, outcome));
            }
        }
        Ok(failed)
    })
}

/// Runs `driver`'s [`Driver::prepare`] on a thread of its own, as [`probe`] opens connections
/// (its future need not be `Send`); its failure is bad input.
pub(crate) fn prepare<D: Driver>(driver: Arc<D>) -> Preparing {
    on_a_thread(move || async move {
        driver
            .prepare()
            .await
            .map_err(|e| RunError::Input(e.to_string()))
    })
}

/// Runs the future `work` makes to its end on a thread of its own, in a single-threaded
/// runtime's `LocalSet` (as a worker runs a driver's sessions: the future need not be `Send`),
/// and hands back its result.
fn on_a_thread<T, F, W>(
    work: W,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, RunError>> + Send>>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, RunError>> + 'static,
    W: FnOnce() -> F + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("throng-check".into())
        .spawn(move || {
            let done = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| RunError::Runtime(format!("cannot start the check's runtime: {e}")))
                .and_then(|rt| tokio::task::LocalSet::new().block_on(&rt, work()));
            let _ = tx.send(done);
        });
    Box::pin(async move {
        spawned.map_err(|e| RunError::Runtime(format!("cannot start the check's thread: {e}")))?;
        rx.await
            .map_err(|_| RunError::Runtime("the check's thread failed".into()))?
    })
}
