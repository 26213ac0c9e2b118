//! One worker thread: a single-threaded runtime running its share of the users (closed loop,
//! [`crate::closed`]) or of the arrival schedule (open loop, [`crate::open`]), recording into its
//! own [`Recorder`]. This file holds what both models share: running one iteration, counting
//! what a stop cuts off, and the worker's own loop of ticks, stop, grace and end.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use throng_core::{ClosedLoop, Driver, ErrorClass, LoadModel, RunPlan};
use tokio::sync::{mpsc, Notify};
use tokio::time::{sleep, sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::open::Queue;
use crate::recorder::{GroupPass, Interval, Recorder};

/// What every worker shares, read-only but for the stop flags.
pub(crate) struct Shared<D> {
    pub driver: Arc<D>,
    pub plan: Arc<RunPlan>,
    /// Row labels: the steps, then the groups.
    pub labels: Vec<String>,
    /// How many of the labels are steps.
    pub steps: usize,
    /// Per step, the row of its reply's parts, if it has one (see `Driver::parts`).
    pub parts_row: Vec<Option<usize>>,
    pub groups: Vec<throng_core::GroupInfo>,
    /// How many worker threads run the plan.
    pub workers: usize,
    pub start: Instant,
    /// When the measurement starts: `start` plus the plan's warm-up. What was due before it is
    /// the warm-up's, whenever it ends, and the recorder ignores it
    /// ([`Recorder::measure_from`]); connections stay open.
    pub measure: Instant,
    /// When a closed loop stops by the clock. The open loop ends with its schedule instead, so
    /// that every arrival due before the end is started (or dropped, or counted as aborted).
    pub deadline: Option<Instant>,
    /// Stops the run: no new work, in-flight requests get the grace period.
    pub stop: CancellationToken,
    /// Cuts the grace period short: what is still in flight is aborted now.
    pub abort: CancellationToken,
    pub control: Arc<crate::control::Control>,
    /// Set once the run stops for any reason; users check it between requests.
    pub stopping: AtomicBool,
    /// Cancelled with `stopping`: wakes the users waiting out a think time, a pause or a
    /// backoff, so that they end their sessions with a close rather than being cut off.
    pub halt: CancellationToken,
    pub tx: mpsc::Sender<Interval>,
    pub lost: AtomicU64,
    /// The one worker runs on the caller's runtime (see `Extras::on_caller`).
    pub on_caller: bool,
    /// Each request is kept as a sample (see `Extras::samples`).
    pub keep_samples: bool,
}

impl<D> Shared<D> {
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Waits `time` (a think time, a pause, a backoff), or less if the run stops meanwhile:
    /// true if it waited it all.
    pub(crate) async fn wait(&self, time: Duration) -> bool {
        if self.stopping() {
            return false;
        }
        tokio::select! {
            biased;
            _ = self.halt.cancelled() => false,
            _ = sleep(time) => true,
        }
    }
}

/// This worker's share of `total` of the whole plan: the process's shard first, then the worker's
/// share of that.
pub(crate) fn split<D>(sh: &Shared<D>, total: u64, worker: usize) -> u64 {
    share(sh.plan.shard.share(total), worker, sh.workers)
}

/// The plan-wide number of this process's `k`-th user (or slot) on `worker`: shard `i` of `n`
/// owns the numbers `u % n == i`, and its workers take turns among them.
pub(crate) fn global_id<D>(sh: &Shared<D>, k: u64, worker: usize) -> u64 {
    let s = sh.plan.shard;
    u64::from(s.index) + u64::from(s.count.max(1)) * (k * sh.workers as u64 + worker as u64)
}

/// This worker's share of `total`: worker `i` of `n` gets `total / n`, plus one if `i < total % n`.
pub(crate) fn share(total: u64, worker: usize, workers: usize) -> u64 {
    let (n, i) = (workers as u64, worker as u64);
    total / n + u64::from(i < total % n)
}

/// How one iteration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Iteration {
    /// Every step ran and succeeded (or the request budget ran out, or the run is stopping).
    Passed,
    /// A step failed; the class of the first failure.
    Failed(ErrorClass),
    /// The session's connection could not be made (`Driver::connect` failed, whatever its
    /// class).
    Unreached,
    /// The driver ended the user (its data ran out).
    Ended,
}

impl Iteration {
    /// Whether the target could not be reached or does not speak the protocol (see
    /// [`ErrorClass::backs_off`]): the session connects again before its next iteration, and a
    /// closed-loop user waits first. Without the wait, a target that refuses or answers
    /// garbage at once would be retried in a tight loop, thousands of times a second.
    pub(crate) fn unreached(self) -> bool {
        match self {
            Iteration::Unreached => true,
            Iteration::Failed(c) => c.backs_off(),
            Iteration::Passed | Iteration::Ended => false,
        }
    }
}

/// State local to one worker thread.
pub(crate) struct Local<D: Driver> {
    pub shared: Arc<Shared<D>>,
    /// Which worker this is.
    pub worker: usize,
    pub rec: RefCell<Recorder>,
    /// Users alive (closed loop) or requests in flight (open loop).
    pub active: Cell<u64>,
    /// Requests this worker may still start under `-n` (`u64::MAX` when unbounded).
    pub budget: Cell<u64>,
    pub tasks: Tasks,
    /// The driver's state for this worker, shared by its sessions.
    pub state: D::Worker,
    /// The open loop's queue of arrivals, so that what is left in it at the end is counted.
    pub queue: RefCell<Option<Rc<Queue>>>,
}

impl<D: Driver> Local<D> {
    fn take_request(&self) -> bool {
        let b = self.budget.get();
        if b == 0 {
            return false;
        }
        if b != u64::MAX {
            self.budget.set(b - 1);
        }
        true
    }

    /// Ends a user's session with the driver's close (a WebSocket's close frame), at most
    /// [`CLOSE_BOUND`], and never a request. A stop waits for it as for any task still alive
    /// (up to the grace period): users wake from their waits when the run stops
    /// ([`Shared::wait`]) to close, and so end by themselves.
    pub(crate) async fn close(&self, session: &mut D::Session) {
        let _ = tokio::time::timeout(CLOSE_BOUND, self.shared.driver.close(session)).await;
    }

    /// Runs one iteration of the scenario; `intended` is when its first step was due. With
    /// `connect` (a user's first iteration, or one after its connection could not be made),
    /// each step first opens what it needs (`Driver::connect`); later reconnects are the
    /// driver's own, inside `execute`, as for a connection per request.
    pub(crate) async fn iterate(
        &self,
        session: &mut D::Session,
        user: u64,
        intended: Instant,
        open: bool,
        connect: bool,
    ) -> Iteration {
        let sh = &self.shared;
        if !sh.driver.begin_iteration(session) {
            return Iteration::Ended;
        }
        let mut due = intended;
        let mut first_failure = None;
        let mut unreached = false;
        // Per group: the pass so far; no allocation without groups.
        let mut spans: Vec<Option<GroupPass>> = if sh.groups.is_empty() {
            Vec::new()
        } else {
            vec![None; sh.groups.len()]
        };
        // The driver says which step comes next: in order by default, or a flow picked by
        // weight, a step skipped or repeated on a condition.
        let mut next = sh.driver.next_step(session, None);
        let mut first = true;
        while let Some(step) = next.filter(|s| *s < sh.steps) {
            next = None;
            let arrival = open && std::mem::take(&mut first);
            if !self.take_request() {
                break;
            }
            // The clock was read just now (the closed loop's intended start, the previous
            // step's end or its pause's): only an open-loop arrival starts later than it is due.
            let mut started = match arrival {
                true => Instant::now(),
                false => due,
            };
            let mut guard = AbortGuard {
                local: self,
                user,
                step,
                due,
                started,
                armed: true,
                lag: arrival,
            };
            // The connection comes first and is not the request's: the request starts after it
            // (in the closed loop, its latency too; in the open loop, latency still runs from
            // the intended start, so a slow connect shows there and in the lag). A failed
            // connect is the outcome of the step that needed it, timed from its start.
            let connected = if connect {
                let c = sh.driver.connect(session, step).await;
                if c.is_ok() {
                    started = Instant::now();
                    if !open {
                        due = started;
                    }
                    (guard.due, guard.started) = (due, started);
                }
                unreached |= c.is_err();
                c
            } else {
                Ok(())
            };
            if guard.lag {
                guard.lag = false;
                self.rec.borrow_mut().record_lag(intended, started);
            }
            for (g, span) in sh.groups.iter().zip(spans.iter_mut()) {
                if span.is_none() && (g.first..=g.last).contains(&step) {
                    *span = Some(GroupPass {
                        due,
                        started,
                        failed: None,
                        bytes: (0, 0),
                    });
                }
            }
            let outcome = match connected {
                Ok(()) => {
                    // Dropped (a no-op for `Ok`) before the request: left to the end of the
                    // match, it was kept across the request, an `Outcome` (128 bytes) in
                    // every user's task.
                    drop(connected);
                    sh.driver.execute(session, step).await
                }
                Err(failed) => failed,
            };
            guard.disarm();
            let ended = Instant::now();
            let (error, proceed, pause) = (outcome.error, outcome.proceed, outcome.pause);
            let bytes = (outcome.bytes_sent, outcome.bytes_received);
            {
                let mut rec = self.rec.borrow_mut();
                rec.user(user, self.active.get());
                rec.record(step, due, started, ended, outcome);
            }
            if first_failure.is_none() {
                first_failure = error;
            }
            let failed = error.is_some() && !proceed;
            let stop = failed || sh.stopping();
            if !failed {
                next = sh.driver.next_step(session, Some(step));
            }
            for (i, (g, span)) in sh.groups.iter().zip(spans.iter_mut()).enumerate() {
                if let Some(pass) = span {
                    if pass.failed.is_none() {
                        pass.failed = error;
                    }
                    pass.bytes.0 += bytes.0;
                    pass.bytes.1 += bytes.1;
                    // A pass ends where the iteration leaves the group, or where the driver
                    // starts it over (a repeated group, a retry), not where it merely comes
                    // back to the group's first step (a repeated first step); one cut short by
                    // a failure counts as a failed pass, one cut short by the end of the run
                    // does not count at all.
                    let leaves = next.is_none_or(|n| {
                        !(g.first..=g.last).contains(&n) || sh.driver.starts_over(session, i, g, n)
                    });
                    if leaves || failed {
                        let row = sh.labels.len() - sh.groups.len() + i;
                        self.rec.borrow_mut().record_group(row, pass, ended);
                        *span = None;
                    }
                }
            }
            if stop {
                break;
            }
            due = match pause {
                // The run stopped in the pause: the iteration ends here, like one cut off
                // between steps.
                Some(p) if !sh.wait(p).await => break,
                Some(_) => Instant::now(),
                None => ended,
            };
        }
        sh.driver.end_iteration(session, first_failure).await;
        // A driver whose futures end without ever waiting (a send on a connection that already
        // failed) would otherwise keep this thread to itself: the worker's ticks, deadline,
        // stop and abort could never run. Cheap: it yields once in 128 iterations, and only
        // when nothing else in the task waited.
        tokio::task::consume_budget().await;
        match first_failure {
            Some(_) if unreached => Iteration::Unreached,
            Some(class) => Iteration::Failed(class),
            None => Iteration::Passed,
        }
    }

    /// Sends this second's interval; when the aggregator is behind, it is counted as lost.
    pub(crate) fn flush(&self, index: u64) {
        let iv = self
            .rec
            .borrow_mut()
            .take(self.worker, index, false, self.active.get());
        if self.shared.tx.try_send(iv).is_err() {
            self.shared.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Counts a request as aborted, at the age it reached, if its future is dropped before it
/// completes (the grace period ran out, or the run was cut short).
struct AbortGuard<'a, D: Driver> {
    local: &'a Local<D>,
    user: u64,
    step: usize,
    due: Instant,
    started: Instant,
    armed: bool,
    /// An open-loop arrival whose start is not recorded yet (its connect was still going):
    /// cut off now, it started now, so that every arrival is started, dropped or unstarted.
    lag: bool,
}

impl<D: Driver> AbortGuard<'_, D> {
    fn disarm(mut self) {
        self.armed = false;
        drop(self);
    }
}

impl<D: Driver> Drop for AbortGuard<'_, D> {
    fn drop(&mut self) {
        if self.armed {
            if let Ok(mut rec) = self.local.rec.try_borrow_mut() {
                let now = Instant::now();
                rec.user(self.user, self.local.active.get());
                if self.lag {
                    rec.record_lag(self.due, now);
                }
                rec.record_aborted(self.step, self.due, Some(self.started), now);
            }
        }
    }
}

/// The worker thread's entry point.
pub(crate) fn run<D: Driver>(worker: usize, shared: Arc<Shared<D>>, rt: tokio::runtime::Runtime) {
    let local = new_local(worker, shared);
    let set = tokio::task::LocalSet::new();
    // The worker's loop is a task of its own. As the set's main future it was polled, every
    // branch of its `select!`, each time any user's task woke: about 950 of the 9,700
    // instructions of a PostgreSQL point select at one user (callgrind).
    let task = set.spawn_local(drive(local.clone()));
    let joined = set.block_on(&rt, task);
    let index = match joined.map_err(tokio::task::JoinError::try_into_panic) {
        Ok(index) => index,
        Err(Ok(panic)) => std::panic::resume_unwind(panic),
        // Cancelled: nothing aborts it, and the set outlives it.
        Err(Err(_)) => 0,
    };
    // Dropping the set drops any task still alive, so the guards count them.
    drop(set);
    // The last interval must arrive: wait for room rather than drop it.
    let _ = local.shared.tx.blocking_send(last_interval(&local, index));
}

/// The one worker on the caller's runtime (a local task of the caller's `LocalSet`).
pub(crate) async fn run_on_caller<D: Driver>(shared: Arc<Shared<D>>) {
    let local = new_local(0, shared);
    let index = drive(local.clone()).await;
    // The tasks aborted at the end are dropped when the caller's set next runs them: wait for
    // their guards, which count what they cut off.
    while local.tasks.alive.get() > 0 {
        local.tasks.changed.notified().await;
    }
    let _ = local.shared.tx.send(last_interval(&local, index)).await;
}

fn new_local<D: Driver>(worker: usize, shared: Arc<Shared<D>>) -> Rc<Local<D>> {
    let budget = match &shared.plan.model {
        LoadModel::Closed(ClosedLoop {
            requests: Some(n), ..
        }) => {
            let users = shared.plan.peak_concurrency();
            let mine = shared.plan.shard.requests(*n, users);
            share(mine, worker, shared.workers)
        }
        _ => u64::MAX,
    };
    let state = shared.driver.worker_of(worker, shared.workers);
    let mut rec = Recorder::new(shared.labels.clone(), shared.plan.late_after);
    rec.parts_rows(shared.parts_row.clone());
    rec.goodput(shared.plan.goodput.clone());
    if shared.measure > shared.start {
        rec.measure_from(shared.measure);
    }
    if shared.keep_samples {
        rec.keep_samples(shared.measure, worker);
    }
    Rc::new(Local {
        rec: RefCell::new(rec),
        shared,
        worker,
        active: Cell::new(0),
        budget: Cell::new(budget),
        tasks: Tasks::default(),
        state,
        queue: RefCell::new(None),
    })
}

/// Counts what is left at the end; the last interval.
fn last_interval<D: Driver>(local: &Rc<Local<D>>, index: u64) -> Interval {
    // Arrivals still queued were due and never sent: aborted, at the age they reached.
    if let Some(queue) = local.queue.borrow_mut().take() {
        let now = Instant::now();
        let mut rec = local.rec.borrow_mut();
        for due in queue.tickets.borrow_mut().drain(..) {
            rec.record_aborted(0, due, None, now);
        }
    }
    let active = local.active.get();
    local
        .rec
        .borrow_mut()
        .take(local.worker, index, true, active)
}

/// The tasks of one worker: counted, abortable, and able to wake the driver when they end.
#[derive(Default)]
pub(crate) struct Tasks {
    handles: RefCell<Vec<tokio::task::AbortHandle>>,
    pub alive: Rc<Cell<u64>>,
    pub changed: Rc<Notify>,
}

impl Tasks {
    /// Spawns a task, counted alive until its future is dropped: when it returns, or when it is
    /// aborted, even before it first ran.
    pub(crate) fn spawn<F: std::future::Future<Output = ()> + 'static>(&self, f: F) {
        self.alive.set(self.alive.get() + 1);
        let alive = Alive {
            alive: self.alive.clone(),
            changed: self.changed.clone(),
        };
        // Boxed: an `async` block that captures a future and awaits it stores it twice (the
        // capture and the awaited value), and the task would be twice the user's size.
        let f = Box::pin(f);
        let h = tokio::task::spawn_local(async move {
            let _alive = alive;
            f.await
        });
        self.handles.borrow_mut().push(h.abort_handle());
    }

    fn abort_all(&self) {
        for h in self.handles.borrow_mut().drain(..) {
            h.abort();
        }
    }
}

/// The longest a session's close may take ([`Local::close`]): the end of a run is never later
/// by more than this for it.
const CLOSE_BOUND: Duration = Duration::from_millis(100);

/// Marks a task's end, however it ends (returning or aborted).
struct Alive {
    alive: Rc<Cell<u64>>,
    changed: Rc<Notify>,
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.alive.set(self.alive.get().saturating_sub(1));
        self.changed.notify_one();
    }
}

/// Runs the model to its end, flushing an interval every second; returns the next index.
///
/// The run ends when the model is done and every task has ended. A stop (the caller, a signal,
/// or the closed loop's deadline) wakes the users that wait to close their sessions, and lets
/// requests in flight finish for the grace period; so does the end of the open loop's schedule,
/// with what is still queued. When the grace runs out, or the caller aborts, whatever is left is
/// cut off and counted as aborted.
async fn drive<D: Driver>(local: Rc<Local<D>>) -> u64 {
    let sh = local.shared.clone();
    sleep_until(sh.start).await;
    let open = matches!(sh.plan.model, LoadModel::Open(_));
    let mut model: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = match &sh.plan.model {
        LoadModel::Closed(c) => Box::pin(crate::closed::closed(local.clone(), c.clone())),
        LoadModel::Open(o) => Box::pin(crate::open::open(local.clone(), o.clone())),
    };
    let mut ticker =
        tokio::time::interval_at(sh.measure + Duration::from_secs(1), Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let far = sh.start + Duration::from_secs(86_400 * 365);
    let deadline = sh.deadline.unwrap_or(far);
    let mut index = 0;
    let mut model_done = false;
    let mut grace_end: Option<Instant> = None;
    // Whether this worker has begun to stop (the flag in `Shared` may have been set by another).
    let mut stopped = false;
    let tasks = &local.tasks;
    loop {
        if model_done && tasks.alive.get() == 0 {
            break;
        }
        tokio::select! {
            biased;
            _ = sh.abort.cancelled() => break,
            _ = ticker.tick() => {
                local.flush(index);
                if local.worker == 0 {
                    trim_heap();
                }
                index += 1;
            }
            _ = &mut model, if !model_done => {
                model_done = true;
                if open && grace_end.is_none() {
                    // The schedule has ended: what is queued or in flight gets the grace period.
                    grace_end = Some(Instant::now() + sh.plan.grace);
                }
            }
            _ = tasks.changed.notified() => {}
            _ = sh.stop.cancelled(), if !stopped => {
                stopped = true;
                begin_stop(&sh, &mut grace_end);
            }
            _ = sleep_until(deadline), if !stopped && sh.deadline.is_some() => {
                stopped = true;
                begin_stop(&sh, &mut grace_end);
            }
            _ = sleep_until(grace_end.unwrap_or(far)), if grace_end.is_some() => break,
        }
    }
    if !(model_done && tasks.alive.get() == 0) {
        tasks.abort_all();
        // Let the aborted tasks be dropped (their guards count what was cut off).
        tokio::task::yield_now().await;
        if tasks.alive.get() > 0 {
            sleep(Duration::from_millis(1)).await;
        }
    }
    index
}

/// The run stops: no new work; the grace period starts now (or stays, if it started sooner).
fn begin_stop<D>(sh: &Shared<D>, grace_end: &mut Option<Instant>) {
    sh.stopping.store(true, Ordering::Relaxed);
    sh.halt.cancel();
    let end = Instant::now() + sh.plan.grace;
    *grace_end = Some(grace_end.map_or(end, |g| g.min(end)));
}

/// Gives the free pages of every thread's heap back to the system (glibc's `malloc_trim`),
/// once a second from one worker. glibc gives back only the top of a heap by itself, and a
/// connect burst frees its futures between the users' tasks: at 1,000 connections trimming
/// took 0.3-1.3 MB off the anonymous RSS (three runs alternating). A pass over the free
/// chunks, without allocating; what is freed and used again faults back in.
#[allow(unsafe_code)]
fn trim_heap() {
    // SAFETY: `malloc_trim` takes no pointer and locks each arena itself; it only returns free
    // memory to the kernel.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}
