//! The open loop on one worker: arrivals on a schedule, whatever the target's speed.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use throng_core::{Driver, OpenLoop};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::closed::unpaused;
use crate::schedule::Schedule;
use crate::worker::{global_id, split, Local};

/// Arrivals waiting for a free slot, on one worker.
#[derive(Default)]
pub(crate) struct Queue {
    /// The intended starts of the arrivals waiting.
    pub tickets: RefCell<VecDeque<Instant>>,
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

/// How much earlier than its intended start an arrival may start, so that one wake-up starts
/// every arrival due within it. A wake-up per arrival costs three system calls and a cold
/// start: at 20,000 arrivals a second on two workers (100 µs apart on each) a window of 50 µs
/// cost 30.5-30.9 CPU-s per million requests against oha's 21.3-22.3; 250 µs cost 18.9-19.4, the
/// achieved rate still exact and p99 0.18-0.38 ms against oha's 2.5-4.3 ms (three rounds
/// alternating, `benches/e2e.sh`'s open part). An early arrival's latency counts from its start,
/// so no latency is below its service time, and a stalled target shows in full.
const EARLY: Duration = Duration::from_micros(250);

/// How many arrivals that were already due the loop handles before it yields to the slots.
/// Behind schedule, the pacer does not wait, and without a yield the slots that would send the
/// requests (and the worker's stop signal) would never run.
const BATCH: u32 = 64;

/// The open loop on this worker: arrivals on schedule, slots spawned as they are needed.
///
/// The schedule is followed in its own time; a rate factor set through [`crate::Control`]
/// stretches or shrinks the gaps from then on, and a pause moves the schedule past the pause.
///
/// Every arrival whose time comes is counted as scheduled, and ends as exactly one of started,
/// dropped (the in-flight bound and the queue were full) or aborted (still queued when the run
/// ended). When the generator falls further behind than the queue holds, as at a rate past what
/// this machine can start, every arrival due by now would meet the same full queue: they are
/// dropped all at once, so the slots keep the best throughput the worker can give.
pub(crate) async fn open<D: Driver>(local: Rc<Local<D>>, o: OpenLoop) {
    let sh = local.shared.clone();
    let (worker, workers) = (local.worker, sh.workers);
    let max_slots = split(&sh, u64::from(o.max_in_flight), worker).max(1) as usize;
    let queue_cap = split(&sh, u64::from(o.queue), worker) as usize;
    let mut arrivals_left = o.requests.map_or(u64::MAX, |n| split(&sh, n, worker));
    // Shard `i` of `n` follows positions `i, i + n, ...` of the whole schedule, and its workers
    // take turns among those: worker `w` of `k` follows `i + n·w + n·k·j`.
    let (sid, scount) = (
        sh.plan.shard.index as usize,
        sh.plan.shard.count.max(1) as usize,
    );
    // The warm-up runs the same schedule before the measured part.
    let end = sh
        .plan
        .planned_duration()
        .map(|d| (d + sh.plan.warmup).as_secs_f64());
    let queue = Rc::new(Queue::default());
    *local.queue.borrow_mut() = Some(queue.clone());
    let mut slots = 0usize;
    let pacer = match sh.on_caller {
        // The caller's clock may be tokio's paused one, which a timerfd does not follow.
        true => crate::pace::Pacer::yielding(),
        false => crate::pace::Pacer::precise(),
    };
    // A warm pool: slots for 5 ms of arrivals at the peak rate exist from the start, their
    // connections opened at once (`Driver::prepare`). Without it, slots are only added when an
    // arrival finds none free, which happens mostly when the worker was held up; opening a
    // burst of connections then prolongs the hold-up it answers.
    let warm = ((o.rate.peak() / (workers * scount) as f64) * WARM_SECONDS).ceil();
    for _ in 0..(warm.max(1.0) as usize).min(max_slots) {
        add_slot(&local, &queue, &mut slots, true);
    }
    // The schedule runs in its own time, which a rate factor stretches: it ends by the real clock.
    let mut schedule = Schedule::new(
        &o.rate,
        o.arrivals,
        Some(f64::INFINITY),
        sid + scount * worker,
        scount * workers,
        sh.plan.seed,
    );
    let (mut base_prev, mut real) = (0.0f64, 0.0f64);
    // Real time is measured from the last change of rate factor or pause, not summed gap by gap,
    // so that at an unchanged rate it is the schedule's own time to the last bit (a sum of 20,000
    // gaps of 1/20,000 s falls short of 1 s and would let one more arrival in).
    let (mut anchor_base, mut anchor_real, mut anchor_factor) = (0.0f64, 0.0f64, 1.0f64);
    let mut unpaced = 0u32;
    while arrivals_left > 0 && !sh.stopping() {
        let Some(base) = schedule.next() else { break };
        let factor = sh.control.rate_factor();
        if factor != anchor_factor {
            (anchor_base, anchor_real, anchor_factor) = (base_prev, real, factor);
        }
        real = anchor_real + (base - anchor_base) / factor;
        base_prev = base;
        if sh.control.is_paused() {
            if !unpaused(&sh).await {
                break;
            }
            real = real.max(sh.start.elapsed().as_secs_f64());
            (anchor_base, anchor_real) = (base, real);
        }
        if end.is_some_and(|e| real >= e) {
            break;
        }
        let at = sh.start + Duration::from_secs_f64(real);
        // An arrival due within `EARLY` starts in this wake-up rather than in one of its own.
        // Its latency counts from when it was handed to a slot, which is then before `at` by
        // less than `EARLY`: never from later than its start, so no latency is less than its
        // service time.
        let now = Instant::now();
        // The first arrivals after a warm-up wait for their own time: handed out early, they
        // would count from before the measurement they belong to.
        let ticket = if at > now + EARLY || (at >= sh.measure && now < sh.measure) {
            unpaced = 0;
            tokio::select! {
                biased;
                // Stopped before this arrival was due: it is not part of the run.
                _ = sh.stop.cancelled() => break,
                _ = pacer.until(at) => {}
            }
            at
        } else {
            unpaced += 1;
            if unpaced.is_multiple_of(BATCH) {
                tokio::task::yield_now().await;
            }
            at.min(now)
        };
        arrivals_left -= 1;
        local.rec.borrow_mut().record_scheduled(1, at);
        if sh.stopping() {
            // Due, but the run stopped meanwhile: never sent.
            local
                .rec
                .borrow_mut()
                .record_aborted(0, at, None, Instant::now());
            break;
        }
        let waiting = queue.tickets.borrow().len();
        let free = queue.free.get();
        if waiting >= free && slots < max_slots {
            add_slot(&local, &queue, &mut slots, false);
        }
        let free = queue.free.get();
        if waiting >= free && waiting - free >= queue_cap {
            // Every slot is busy and the queue is full. So it stays until the slots run: every
            // other arrival due by now would be dropped too. Count them at once and yield.
            let now = sh.start.elapsed().as_secs_f64();
            let until = match end {
                Some(e) => now.min(e),
                None => now,
            };
            // Those due in the warm-up are skipped apart: the measurement counts none of them.
            let warm_end = sh.plan.warmup.as_secs_f64();
            let warming = match real < warm_end {
                true => schedule.skip_until(
                    base_prev + (until.min(warm_end) - real) * factor,
                    arrivals_left,
                ),
                false => 0,
            };
            arrivals_left -= warming;
            let skipped = schedule.skip_until(base_prev + (until - real) * factor, arrivals_left);
            arrivals_left -= skipped;
            {
                // This arrival and those skipped before the warm-up's end are on its side of
                // the boundary (the recorder ignores them in a warm-up); the rest are due after.
                let mut rec = local.rec.borrow_mut();
                rec.record_scheduled(warming, at);
                rec.record_dropped(1 + warming, at);
                let last = sh.start + Duration::from_secs_f64(until);
                rec.record_scheduled(skipped, last);
                rec.record_dropped(skipped, last);
            }
            unpaced = 0;
            tokio::task::yield_now().await;
            continue;
        }
        queue.tickets.borrow_mut().push_back(ticket);
        // The slot that waited least: its connection and buffers are the warmest.
        queue.ready.notify_last();
    }
    // A schedule that ends by the clock lasts until that end even when its last arrival comes
    // sooner (`-q 0.5 -z 3s`: arrivals at 0 s and 2 s, and a run of 3 s, not 2), so that the
    // run's duration, throughput and achieved rate are over the time the plan asked for.
    if let Some(e) = end.filter(|_| arrivals_left > 0 && !sh.stopping()) {
        let at = sh.start + Duration::from_secs_f64(e);
        tokio::select! {
            _ = sh.stop.cancelled() => {}
            _ = tokio::time::sleep_until(at) => {}
        }
    }
    queue.closed.set(true);
    queue.ready.notify_waiters();
}

/// Spawns the worker's next open-loop slot, counted free until it takes an arrival.
fn add_slot<D: Driver>(local: &Rc<Local<D>>, queue: &Rc<Queue>, slots: &mut usize, warm: bool) {
    let id = global_id(&local.shared, *slots as u64, local.worker);
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
    let mut session = local.shared.driver.session(&local.state, id);
    if warm {
        // A failure here is met again, and counted, by the first arrival.
        let _ = local.shared.driver.connect(&mut session, 0).await;
    }
    // A warm slot connected already; another connects on its first arrival, or after a failure.
    let mut connect = !warm;
    while let Some(intended) = queue.pop().await {
        if local.shared.stopping() {
            // Queued when the run stopped: never sent.
            local
                .rec
                .borrow_mut()
                .record_aborted(0, intended, None, Instant::now());
            continue;
        }
        queue.free.set(queue.free.get().saturating_sub(1));
        local.active.set(local.active.get() + 1);
        let pass = local
            .iterate(&mut session, id, intended, true, connect)
            .await;
        connect = pass.unreached();
        local.active.set(local.active.get() - 1);
        queue.free.set(queue.free.get() + 1);
    }
    local.close(&mut session).await;
}
