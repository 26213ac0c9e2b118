//! One worker thread: a single-threaded runtime running its share of the users (closed loop) or
//! of the arrival schedule (open loop), recording into its own [`Recorder`].

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use throng_core::{stages, ClosedLoop, Driver, LoadModel, OpenLoop, RunPlan, Users};
use tokio::sync::{mpsc, Notify};
use tokio::time::{sleep, sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::recorder::{GroupPass, Interval, Recorder};
use crate::schedule::Schedule;

/// What every worker shares, read-only but for the stop flags.
pub(crate) struct Shared<D> {
    pub driver: Arc<D>,
    pub plan: Arc<RunPlan>,
    /// Row labels: the steps, then the groups.
    pub labels: Vec<String>,
    /// How many of the labels are steps.
    pub steps: usize,
    pub groups: Vec<throng_core::GroupInfo>,
    pub shards: usize,
    pub start: Instant,
    pub deadline: Option<Instant>,
    pub stop: CancellationToken,
    pub control: Arc<crate::control::Control>,
    /// Set once the run stops for any reason; users check it between requests.
    pub stopping: AtomicBool,
    pub tx: mpsc::Sender<Interval>,
    pub lost: AtomicU64,
}

impl<D> Shared<D> {
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }
}

/// This worker's share of `total`: shard `i` of `n` gets `total / n`, plus one if `i < total % n`.
fn share(total: u64, shard: usize, shards: usize) -> u64 {
    let (n, i) = (shards as u64, shard as u64);
    total / n + u64::from(i < total % n)
}

/// State local to one worker thread.
struct Local<D: Driver> {
    shared: Arc<Shared<D>>,
    shard: usize,
    rec: RefCell<Recorder>,
    /// Users alive (closed loop) or requests in flight (open loop).
    active: Cell<u64>,
    /// Requests this worker may still start under `-n` (`u64::MAX` when unbounded).
    budget: Cell<u64>,
    tasks: Tasks,
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

    /// Runs one iteration of the scenario; `intended` is when its first step was due.
    /// Runs one iteration; false when the driver ended the user.
    async fn iterate(&self, session: &mut D::Session, intended: Instant, open: bool) -> bool {
        let sh = &self.shared;
        if !sh.driver.begin_iteration(session) {
            return false;
        }
        let mut due = intended;
        // Per group: the pass so far; no allocation without groups.
        let mut spans: Vec<Option<GroupPass>> = if sh.groups.is_empty() {
            Vec::new()
        } else {
            vec![None; sh.groups.len()]
        };
        for step in 0..sh.steps {
            if !self.take_request() {
                return true;
            }
            let started = Instant::now();
            if open && step == 0 {
                self.rec.borrow_mut().record_lag(intended, started);
            }
            for (g, span) in sh.groups.iter().zip(spans.iter_mut()) {
                if g.first == step {
                    *span = Some(GroupPass {
                        due,
                        started,
                        failed: None,
                        bytes: (0, 0),
                    });
                }
            }
            let guard = AbortGuard {
                local: self,
                armed: true,
            };
            self.tasks.in_flight.set(self.tasks.in_flight.get() + 1);
            let outcome = sh.driver.execute(session, step).await;
            guard.disarm();
            let ended = Instant::now();
            let (error, proceed, pause) = (outcome.error, outcome.proceed, outcome.pause);
            let bytes = (outcome.bytes_sent, outcome.bytes_received);
            self.rec
                .borrow_mut()
                .record(step, due, started, ended, outcome);
            let stop = (error.is_some() && !proceed) || sh.stopping();
            for (i, (g, span)) in sh.groups.iter().zip(spans.iter_mut()).enumerate() {
                if let Some(pass) = span {
                    if pass.failed.is_none() {
                        pass.failed = error;
                    }
                    pass.bytes.0 += bytes.0;
                    pass.bytes.1 += bytes.1;
                    // A group cut short by a failure counts as a failed pass; one cut short by
                    // the end of the run does not count at all.
                    if g.last == step || (stop && error.is_some() && !proceed) {
                        let row = sh.steps + i;
                        self.rec.borrow_mut().record_group(row, pass, ended);
                        *span = None;
                    }
                }
            }
            if stop {
                return true;
            }
            if let Some(p) = pause {
                sleep(p).await;
            }
            due = Instant::now();
        }
        true
    }

    fn flush(&self, index: u64, last: bool) {
        let iv = self
            .rec
            .borrow_mut()
            .take(self.shard, index, last, self.active.get());
        let tx = &self.shared.tx;
        if last {
            // The last interval must arrive: wait for room rather than drop it.
            let _ = tx.blocking_send(iv);
        } else if tx.try_send(iv).is_err() {
            self.shared.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Counts a request as aborted if its future is dropped before it completes.
struct AbortGuard<'a, D: Driver> {
    local: &'a Local<D>,
    armed: bool,
}

impl<D: Driver> AbortGuard<'_, D> {
    fn disarm(mut self) {
        self.armed = false;
        drop(self);
    }
}

impl<D: Driver> Drop for AbortGuard<'_, D> {
    fn drop(&mut self) {
        let tasks = &self.local.tasks;
        tasks.in_flight.set(tasks.in_flight.get().saturating_sub(1));
        if self.local.shared.stopping() {
            tasks.changed.notify_one();
        }
        if self.armed {
            if let Ok(mut rec) = self.local.rec.try_borrow_mut() {
                rec.record_aborted();
            }
        }
    }
}

/// The worker thread's entry point.
pub(crate) fn run<D: Driver>(shard: usize, shared: Arc<Shared<D>>) {
    let budget = match &shared.plan.model {
        LoadModel::Closed(ClosedLoop {
            requests: Some(n), ..
        }) => share(*n, shard, shared.shards),
        _ => u64::MAX,
    };
    let local = Rc::new(Local {
        rec: RefCell::new(Recorder::new(shared.labels.clone(), shared.plan.late_after)),
        shared,
        shard,
        active: Cell::new(0),
        budget: Cell::new(budget),
        tasks: Tasks::default(),
    });
    let index = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let set = tokio::task::LocalSet::new();
            let index = set.block_on(&rt, drive(local.clone()));
            // Dropping the set drops any task still alive, so the guards count them.
            drop(set);
            index
        }
        Err(_) => 0,
    };
    local.flush(index, true);
}

/// The tasks of one worker: counted, abortable, and able to wake the driver when they end.
#[derive(Default)]
struct Tasks {
    handles: RefCell<Vec<tokio::task::AbortHandle>>,
    alive: Cell<u64>,
    in_flight: Cell<u64>,
    changed: Notify,
}

impl Tasks {
    fn spawn<F: std::future::Future<Output = ()> + 'static>(&self, f: F) {
        self.alive.set(self.alive.get() + 1);
        let h = tokio::task::spawn_local(f);
        self.handles.borrow_mut().push(h.abort_handle());
    }

    fn abort_all(&self) {
        for h in self.handles.borrow_mut().drain(..) {
            h.abort();
        }
    }
}

/// Marks a task's end, however it ends (returning or aborted).
struct Alive<'a>(&'a Tasks);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.alive.set(self.0.alive.get().saturating_sub(1));
        self.0.changed.notify_one();
    }
}

/// Runs the model to its end, flushing an interval every second; returns the next index.
async fn drive<D: Driver>(local: Rc<Local<D>>) -> u64 {
    let sh = local.shared.clone();
    sleep_until(sh.start).await;
    let mut model: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = match &sh.plan.model {
        LoadModel::Closed(c) => Box::pin(closed(local.clone(), c.clone())),
        LoadModel::Open(o) => Box::pin(open(local.clone(), o.clone())),
    };
    let mut ticker =
        tokio::time::interval_at(sh.start + Duration::from_secs(1), Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let far = sh.start + Duration::from_secs(86_400 * 365);
    let deadline = sh.deadline.unwrap_or(far);
    let mut index = 0;
    let mut model_done = false;
    let mut grace_end: Option<Instant> = None;
    let tasks = &local.tasks;
    loop {
        if model_done && tasks.alive.get() == 0 {
            break;
        }
        if grace_end.is_some() && tasks.in_flight.get() == 0 {
            // Stopping with nothing in flight: users in think time or idle slots can go now.
            tasks.abort_all();
        }
        tokio::select! {
            biased;
            _ = ticker.tick() => {
                local.flush(index, false);
                index += 1;
            }
            _ = &mut model, if !model_done => model_done = true,
            _ = tasks.changed.notified() => {}
            _ = sh.stop.cancelled(), if grace_end.is_none() => {
                grace_end = Some(begin_stop(&sh));
            }
            _ = sleep_until(deadline), if grace_end.is_none() && sh.deadline.is_some() => {
                grace_end = Some(begin_stop(&sh));
            }
            _ = sleep_until(grace_end.unwrap_or(far)), if grace_end.is_some() => {
                tasks.abort_all();
                // Let the aborted tasks be dropped (their guards count what was cut off).
                tokio::task::yield_now().await;
                if tasks.alive.get() > 0 {
                    sleep(Duration::from_millis(1)).await;
                }
                break;
            }
        }
    }
    index
}

fn begin_stop<D>(sh: &Shared<D>) -> Instant {
    sh.stopping.store(true, Ordering::Relaxed);
    Instant::now() + sh.plan.grace
}

/// What became of a closed-loop user slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Never started, or retired because the user count went down: may start again.
    Free,
    /// Running.
    Alive,
    /// Done for good: its iterations or the request budget ran out.
    Finished,
}

/// The closed loop on this worker: users following the plan (fixed or staged) plus any users
/// added or removed through [`crate::Control`], checked every 100 ms.
async fn closed<D: Driver>(local: Rc<Local<D>>, c: ClosedLoop) {
    let sh = local.shared.clone();
    let (shard, shards) = (local.shard, sh.shards);
    let target = Rc::new(Cell::new(0u64));
    let slots: Rc<RefCell<Vec<Slot>>> = Rc::default();
    loop {
        let t = sh.start.elapsed().as_secs_f64();
        let base = match &c.users {
            Users::Fixed(n) => f64::from(*n),
            Users::Stages(s) => stages::value_at(0.0, s, t).floor(),
        };
        let global = (base as i64 + sh.control.user_delta()).max(0) as u64;
        let mine = share(global, shard, shards);
        target.set(mine);
        for j in 0..mine as usize {
            let mut list = slots.borrow_mut();
            if list.len() <= j {
                list.push(Slot::Free);
            }
            if list[j] == Slot::Free {
                list[j] = Slot::Alive;
                let id = j as u64 * shards as u64 + shard as u64;
                let u = user(local.clone(), j as u64, id, c.clone(), target.clone());
                let slots = slots.clone();
                local.tasks.spawn(async move {
                    let end = u.await;
                    slots.borrow_mut()[j] = end;
                });
            }
        }
        let staged_end = match &c.users {
            Users::Stages(s) => t >= stages::total(s).as_secs_f64(),
            Users::Fixed(_) => false,
        };
        let all_finished = {
            let list = slots.borrow();
            !list.is_empty() && list.iter().all(|s| *s == Slot::Finished)
        };
        if staged_end || all_finished || local.budget.get() == 0 || sh.stopping() {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
}

/// Waits while the run is paused; false if it stopped meanwhile.
async fn unpaused<D>(sh: &Shared<D>) -> bool {
    while sh.control.is_paused() {
        if sh.stopping() {
            return false;
        }
        sleep(Duration::from_millis(20)).await;
    }
    !sh.stopping()
}

/// One virtual user: loops iterations until the run, its iterations, or its slot ends.
async fn user<D: Driver>(
    local: Rc<Local<D>>,
    j: u64,
    id: u64,
    c: ClosedLoop,
    target: Rc<Cell<u64>>,
) -> Slot {
    let _alive = Alive(&local.tasks);
    local.active.set(local.active.get() + 1);
    let mut session = local.shared.driver.session(id);
    let mut iteration = 0u64;
    let end = loop {
        if c.iterations.is_some_and(|n| iteration >= n) || local.budget.get() == 0 {
            break Slot::Finished;
        }
        if j >= target.get() {
            break Slot::Free;
        }
        if !unpaused(&local.shared).await {
            break Slot::Finished;
        }
        if !local.iterate(&mut session, Instant::now(), false).await {
            break Slot::Finished;
        }
        iteration += 1;
        if let Some(think) = c.think_time {
            sleep(think).await;
        }
    };
    local.active.set(local.active.get() - 1);
    end
}

/// Arrivals waiting for a free slot, on one worker.
#[derive(Default)]
struct Queue {
    tickets: RefCell<VecDeque<Instant>>,
    ready: Notify,
    closed: Cell<bool>,
    /// Slots not executing an arrival.
    free: Cell<usize>,
}

impl Queue {
    async fn pop(&self) -> Option<Instant> {
        loop {
            if let Some(t) = self.tickets.borrow_mut().pop_front() {
                return Some(t);
            }
            if self.closed.get() {
                return None;
            }
            self.ready.notified().await;
        }
    }
}

/// The open loop on this worker: arrivals on schedule, slots spawned as they are needed.
///
/// The schedule is followed in its own time; a rate factor set through [`crate::Control`]
/// stretches or shrinks the gaps from then on, and a pause moves the schedule past the pause.
async fn open<D: Driver>(local: Rc<Local<D>>, o: OpenLoop) {
    let sh = local.shared.clone();
    let (shard, shards) = (local.shard, sh.shards);
    let max_slots = share(u64::from(o.max_in_flight), shard, shards) as usize;
    let queue_cap = share(u64::from(o.queue), shard, shards) as usize;
    let mut arrivals_left = o.requests.map_or(u64::MAX, |n| share(n, shard, shards));
    let end = sh.plan.planned_duration().map(|d| d.as_secs_f64());
    let queue = Rc::new(Queue::default());
    let mut slots = 0usize;
    let pacer = crate::pace::Pacer::precise();
    // A warm pool: slots for 5 ms of arrivals at the peak rate exist from the start, their
    // connections opened at once (`Driver::prepare`). Without it, slots are only added when an
    // arrival finds none free, which happens mostly when the worker was held up; opening a
    // burst of connections then prolongs the hold-up it answers.
    let warm = ((o.rate.peak() / shards as f64) * WARM_SECONDS).ceil() as usize;
    for _ in 0..warm.max(1).min(max_slots) {
        add_slot(&local, &queue, &mut slots, true);
    }
    // The schedule runs in its own time, which a rate factor stretches: it ends by the real clock.
    let mut schedule = Schedule::new(
        &o.rate,
        o.arrivals,
        Some(f64::INFINITY),
        shard,
        shards,
        rand::random(),
    );
    let (mut base_prev, mut real) = (0.0f64, 0.0f64);
    while arrivals_left > 0 {
        let Some(base) = schedule.next() else { break };
        real += (base - base_prev) / sh.control.rate_factor();
        base_prev = base;
        if sh.control.is_paused() {
            if !unpaused(&sh).await {
                break;
            }
            real = real.max(sh.start.elapsed().as_secs_f64());
        }
        if end.is_some_and(|e| real >= e) {
            break;
        }
        arrivals_left -= 1;
        let at = sh.start + Duration::from_secs_f64(real);
        pacer.until(at).await;
        if sh.stopping() {
            break;
        }
        let waiting = queue.tickets.borrow().len();
        let free = queue.free.get();
        if waiting >= free && slots < max_slots {
            add_slot(&local, &queue, &mut slots, false);
        }
        let free = queue.free.get();
        if waiting >= free && waiting - free >= queue_cap {
            local.rec.borrow_mut().record_dropped();
            continue;
        }
        queue.tickets.borrow_mut().push_back(at);
        // The slot that waited least: its connection and buffers are the warmest.
        queue.ready.notify_last();
    }
    queue.closed.set(true);
    queue.ready.notify_waiters();
}

/// Spawns the worker's next open-loop slot, counted free until it takes an arrival.
fn add_slot<D: Driver>(local: &Rc<Local<D>>, queue: &Rc<Queue>, slots: &mut usize, warm: bool) {
    let shards = local.shared.shards as u64;
    let id = *slots as u64 * shards + local.shard as u64;
    *slots += 1;
    queue.free.set(queue.free.get() + 1);
    local
        .tasks
        .spawn(slot(local.clone(), queue.clone(), id, warm));
}

/// How many seconds of arrivals at the peak rate the open loop's warm pool of slots covers.
const WARM_SECONDS: f64 = 0.005;

/// One in-flight slot of the open loop: takes arrivals from the queue and runs them.
///
/// A slot of the warm pool opens its connection first, so that it is ready when a burst needs
/// it (arrivals go to the slot that waited least, so pool slots may wait long).
async fn slot<D: Driver>(local: Rc<Local<D>>, queue: Rc<Queue>, id: u64, warm: bool) {
    let _alive = Alive(&local.tasks);
    let mut session = local.shared.driver.session(id);
    if warm {
        local.shared.driver.prepare(&mut session).await;
    }
    while let Some(intended) = queue.pop().await {
        if local.shared.stopping() {
            local.rec.borrow_mut().record_aborted();
            continue;
        }
        queue.free.set(queue.free.get().saturating_sub(1));
        local.active.set(local.active.get() + 1);
        let _ = local.iterate(&mut session, intended, true).await;
        local.active.set(local.active.get() - 1);
        queue.free.set(queue.free.get() + 1);
    }
}
