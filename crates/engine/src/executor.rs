//! Starting a run, stopping it, and collecting its snapshots.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use throng_core::{
    ContainerEvent, DatabaseEvent, Driver, GroupInfo, LoadModel, RunPlan, RunState, Snapshot,
};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::aggregator::Aggregator;
use crate::control::Control;
use crate::recorder::Interval;
use crate::worker::{self, Shared};

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The plan did not validate.
    #[error(transparent)]
    Plan(#[from] throng_core::PlanError),
    /// A worker thread, or its runtime, could not be started.
    #[error("cannot start a worker thread: {0}")]
    Thread(#[from] std::io::Error),
    /// The driver's run-level setup failed.
    #[error("setting up the run: {0}")]
    Setup(#[from] throng_core::SetupError),
}

/// A run in progress.
pub struct RunHandle {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    stop: CancellationToken,
    abort: CancellationToken,
    control: Arc<Control>,
    done: tokio::task::JoinHandle<Arc<Snapshot>>,
}

/// Optional inputs of a run beside the plan and the driver.
#[derive(Debug, Default)]
pub struct Extras {
    /// Container readings to keep in the snapshots (from the `docker` crate's monitor).
    pub containers: Option<mpsc::Receiver<ContainerEvent>>,
    /// Database counter readings to keep in the snapshots (`--db-stats`, from the `sql`
    /// crate's monitor).
    pub databases: Option<mpsc::Receiver<DatabaseEvent>>,
    /// Told once the load has ended (every worker has finished; the run's elapsed time is
    /// taken then). The engine then goes on taking [`Extras::databases`] readings until their
    /// channel closes, and only then publishes the final snapshot: a database monitor takes
    /// its last readings after the load (once the database has published what the load did)
    /// and they reach the result through the aggregator, its only owner. A second stop
    /// ([`RunHandle::abort`]) cuts that wait short.
    pub after_load: Option<tokio::sync::oneshot::Sender<()>>,
    /// Run on the caller's runtime instead of worker threads: one worker, spawned as a local
    /// task, so the caller must be inside a [`tokio::task::LocalSet`] on a current-thread
    /// runtime. Its use is determinism: on tokio's paused clock (`start_paused`) a whole run,
    /// ramps, think times and grace included, takes no wall time and its timing is exact.
    /// Pacing then waits on tokio's timer (millisecond ticks), not on a `timerfd`.
    pub on_caller: bool,
    /// Keep each request as a [`throng_core::Sample`] and send them here, a batch per worker
    /// and second (a per-request log such as JMeter's JTL). A batch the receiver cannot take
    /// at once is counted in `Snapshot::lost_samples`, never waited for.
    pub samples: Option<mpsc::Sender<Vec<throng_core::Sample>>>,
}

impl RunHandle {
    /// A receiver of snapshots, published about once a second and at the end.
    pub fn snapshots(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshots.clone()
    }

    /// Asks the run to stop: no new work starts, in-flight requests get the plan's grace period.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Stops the run at once: what is in flight or queued is cut off now and counted as
    /// aborted, without waiting for the grace period (a second Ctrl-C).
    pub fn abort(&self) {
        self.stop.cancel();
        self.abort.cancel();
    }

    /// The token that cuts the run short when cancelled (see [`RunHandle::abort`]); cancel the
    /// [`RunHandle::stop_token`] too.
    pub fn abort_token(&self) -> CancellationToken {
        self.abort.clone()
    }

    /// Live controls: pause, rate and users.
    pub fn control(&self) -> Arc<Control> {
        self.control.clone()
    }

    /// The token that stops the run when cancelled (share it with signal handlers).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Waits for the end of the run and returns its final snapshot.
    pub async fn wait(self) -> Arc<Snapshot> {
        match self.done.await {
            Ok(s) => s,
            Err(_) => self.snapshots.borrow().clone(),
        }
    }
}

/// Runs a plan to its end and returns the final snapshot.
pub async fn run<D: Driver>(plan: RunPlan, driver: Arc<D>) -> Result<Arc<Snapshot>, EngineError> {
    Ok(start(plan, driver).await?.wait().await)
}

/// Starts a plan on worker threads. Call from within a tokio runtime, which runs the aggregator.
pub async fn start<D: Driver>(plan: RunPlan, driver: Arc<D>) -> Result<RunHandle, EngineError> {
    start_with(plan, driver, Extras::default()).await
}

/// [`start`], with extra inputs.
///
/// The driver's [`Driver::setup`] runs first (an error stops here, before any load); its
/// [`Driver::teardown`] runs after the last worker has reported, before the final snapshot.
pub async fn start_with<D: Driver>(
    plan: RunPlan,
    driver: Arc<D>,
    extras: Extras,
) -> Result<RunHandle, EngineError> {
    plan.validate()?;
    driver.setup().await?;
    let steps = driver.steps().len();
    let groups: Vec<GroupInfo> = driver
        .groups()
        .into_iter()
        .filter(|g| g.first <= g.last && g.last < steps)
        .collect();
    let parts: Vec<throng_core::PartsInfo> = driver
        .parts()
        .into_iter()
        .filter(|p| p.step < steps)
        .collect();
    // Rows: the steps, their parts rows, the groups (a step's index is its row's).
    let labels: Vec<String> = driver
        .steps()
        .into_iter()
        .map(|s| s.label)
        .chain(parts.iter().map(|p| p.label.clone()))
        .chain(groups.iter().map(|g| g.label.clone()))
        .collect();
    let mut parts_row = vec![None; steps];
    for (i, p) in parts.iter().enumerate() {
        parts_row[p.step] = Some(steps + i);
    }
    let plan = Arc::new(plan);
    let threads = if plan.threads == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        plan.threads
    };
    let workers = match extras.on_caller {
        true => 1,
        // No more workers than this shard's users or slots: a worker with none of them but a
        // share of `-n` would never end.
        false => threads.clamp(1, plan.shard.share(plan.peak_concurrency()).max(1) as usize),
    };
    let stop = CancellationToken::new();
    let abort = CancellationToken::new();
    let (tx, rx) = mpsc::channel::<Interval>(workers * 8);
    let start = Instant::now() + Duration::from_millis(20);
    // The measurement starts after the warm-up: its seconds, throughput and series count from
    // here, and the workers discard what they recorded before.
    let measure = start + plan.warmup;
    // The open loop ends with its schedule, not by a clock of its own (see `worker::Shared`).
    let deadline = match plan.model {
        LoadModel::Closed(_) => plan.planned_duration().map(|d| measure + d),
        LoadModel::Open(_) => None,
    };
    let control = Arc::new(Control::new(start));
    let shared = Arc::new(Shared {
        driver,
        plan: plan.clone(),
        labels: labels.clone(),
        steps,
        parts_row,
        groups: groups.clone(),
        workers,
        start,
        measure,
        deadline,
        stop: stop.clone(),
        abort: abort.clone(),
        control: control.clone(),
        stopping: AtomicBool::new(false),
        halt: CancellationToken::new(),
        tx,
        lost: std::sync::atomic::AtomicU64::new(0),
        on_caller: extras.on_caller,
        keep_samples: extras.samples.is_some(),
    });
    // Every runtime is built before any worker starts: a worker that could not have one would
    // silently leave its share of the load unsent.
    let threads = if extras.on_caller { 0 } else { workers };
    if extras.on_caller {
        tokio::task::spawn_local(worker::run_on_caller(shared.clone()));
    }
    let runtimes = (0..threads)
        .map(|_| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (worker, rt) in runtimes.into_iter().enumerate() {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("throng-worker-{worker}"))
            .spawn(move || worker::run(worker, shared, rt))?;
    }
    let mut empty = Snapshot::empty(plan.clone(), &labels, groups.len());
    for row in &mut empty.labels[steps..steps + parts.len()] {
        row.parts = true;
    }
    empty.started_at = std::time::SystemTime::now() + Duration::from_millis(20) + plan.warmup;
    let empty = Arc::new(empty);
    let (snap_tx, snap_rx) = watch::channel(empty.clone());
    let base = target_rate(&plan);
    let c2 = control.clone();
    let target: Box<dyn Fn(f64) -> f64 + Send> = Box::new(move |t| base(t) * c2.rate_factor());
    let mut agg = Aggregator::new((*empty).clone(), workers, target);
    if let Some(sink) = extras.samples {
        agg.samples_to(sink);
    }
    let stop2 = stop.clone();
    let abort2 = abort.clone();
    let after_load = extras.after_load;
    let done = tokio::spawn(async move {
        let mut watched = Watched {
            containers: extras.containers,
            databases: extras.databases,
        };
        aggregate(
            &mut agg,
            rx,
            &mut watched,
            &snap_tx,
            measure,
            &stop2,
            &shared,
        )
        .await;
        let elapsed = measure.elapsed();
        shared.driver.teardown().await;
        if let Some(ended) = after_load {
            let _ = ended.send(());
            last_readings(&mut agg, &mut watched, &abort2).await;
        }
        agg.set_interrupted(stop2.is_cancelled());
        let mut last = agg.snapshot(elapsed, RunState::Done);
        // Every change made while the run went, for the result.
        Arc::make_mut(&mut last).changes = shared.control.changes();
        snap_tx.send_replace(last.clone());
        last
    });
    Ok(RunHandle {
        snapshots: snap_rx,
        stop,
        abort,
        control,
        done,
    })
}

/// The monitors' readings for the aggregator; each `None` once its sender is gone.
struct Watched {
    containers: Option<mpsc::Receiver<ContainerEvent>>,
    databases: Option<mpsc::Receiver<DatabaseEvent>>,
}

/// A snapshot with the changes made so far, so a live view can tell the paused seconds (there
/// are a handful of changes in a run: the copy costs nothing a second).
fn with_changes<D: Driver>(mut snap: Arc<Snapshot>, shared: &Shared<D>) -> Arc<Snapshot> {
    let changes = shared.control.changes();
    if !changes.is_empty() {
        Arc::make_mut(&mut snap).changes = changes;
    }
    snap
}

async fn aggregate<D: Driver>(
    agg: &mut Aggregator,
    mut rx: mpsc::Receiver<Interval>,
    watched: &mut Watched,
    snap_tx: &watch::Sender<Arc<Snapshot>>,
    start: Instant,
    stop: &CancellationToken,
    shared: &Shared<D>,
) {
    let mut stopping = false;
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(iv) = msg else { break };
                let closed = agg.add(iv, start.elapsed().as_secs_f64());
                let lost = shared.lost.swap(0, Ordering::Relaxed);
                agg.add_lost(lost);
                if agg.all_finished() {
                    break;
                }
                // Publish once per second, when every worker has reported it.
                if closed {
                    let state = if stopping { RunState::Stopping } else { RunState::Running };
                    snap_tx.send_replace(with_changes(agg.snapshot(start.elapsed(), state), shared));
                }
            }
            event = recv(&mut watched.containers) => {
                match event {
                    Some(e) => agg.add_container(e),
                    None => watched.containers = None,
                }
            }
            event = recv(&mut watched.databases) => {
                match event {
                    Some(e) => agg.add_database(e),
                    None => watched.databases = None,
                }
            }
            _ = stop.cancelled(), if !stopping => {
                stopping = true;
                let snap = agg.snapshot(start.elapsed(), RunState::Stopping);
                snap_tx.send_replace(with_changes(snap, shared));
            }
        }
    }
}

/// Takes the database readings that come after the load, until their channel closes (or the
/// run is aborted).
async fn last_readings(agg: &mut Aggregator, watched: &mut Watched, abort: &CancellationToken) {
    while watched.databases.is_some() {
        tokio::select! {
            event = recv(&mut watched.databases) => match event {
                Some(e) => agg.add_database(e),
                None => watched.databases = None,
            },
            _ = abort.cancelled() => return,
        }
    }
}

async fn recv<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The open-loop target rate at `t` seconds, for the time series (0 for the closed loop).
fn target_rate(plan: &RunPlan) -> Box<dyn Fn(f64) -> f64 + Send> {
    match &plan.model {
        LoadModel::Open(o) => {
            let rate = o.rate.clone();
            Box::new(move |t| rate.at(t))
        }
        LoadModel::Closed(_) => Box::new(|_| 0.0),
    }
}
