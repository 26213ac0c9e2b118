//! The closed loop on one worker: virtual users, each looping iterations of the scenario.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use throng_core::{stages, ClosedLoop, Driver, Users};
use tokio::time::Instant;

use crate::worker::{global_id, split, Iteration, Local, Shared};

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
///
/// Stages say when users start and, without `iterations`, when they are retired. With
/// `iterations`, a user that started runs all of its iterations (JMeter's ramp-up with a loop
/// count): a ramp down retires nobody, and the end of the stages only stops new users.
pub(crate) async fn closed<D: Driver>(local: Rc<Local<D>>, c: ClosedLoop) {
    // Shared by this worker's users: a copy in each was 80 bytes of every user's task.
    let c = Rc::new(c);
    let sh = local.shared.clone();
    let worker = local.worker;
    let target = Rc::new(Cell::new(0u64));
    let slots: Rc<RefCell<Vec<Slot>>> = Rc::default();
    let mut last_t = 0.0;
    while !sh.stopping() {
        let t = sh.start.elapsed().as_secs_f64();
        let staged_end = match &c.users {
            Users::Stages(s) => t >= stages::total(s).as_secs_f64(),
            Users::Fixed(_) => false,
        };
        let base = match &c.users {
            Users::Fixed(n) => f64::from(*n),
            // Users who owe iterations are never retired, so every user the curve reached since
            // the last look starts, even if it has turned down since (a peak between two looks).
            Users::Stages(s) if c.iterations.is_some() => peak(s, last_t, t).floor(),
            // Past the end, the last stage's target: users that were due by then start.
            Users::Stages(s) => stages::value_at(0.0, s, t).floor(),
        };
        last_t = t;
        let global = (base as i64 + sh.control.user_delta()).max(0) as u64;
        let mine = split(&sh, global, worker);
        target.set(mine);
        for j in 0..mine as usize {
            let mut list = slots.borrow_mut();
            if list.len() <= j {
                list.push(Slot::Free);
            }
            if list[j] == Slot::Free {
                list[j] = Slot::Alive;
                let id = global_id(&sh, j as u64, worker);
                // Boxed, as in `Tasks::spawn`: the block below would hold it twice.
                let u = Box::pin(user(local.clone(), j as u64, id, c.clone(), target.clone()));
                let slots = slots.clone();
                local.tasks.spawn(async move {
                    let end = u.await;
                    slots.borrow_mut()[j] = end;
                });
            }
        }
        // Staged users may still come while the stages last, even when every user so far has
        // finished its iterations (users 100 ms apart each finishing in less: the README's
        // `--user-stages 10s:100 -i 10` sent 20 of its 1,000). A fixed number is done when
        // this worker's all are; with none (a shard or worker without users), at once unless
        // the clock ends the run.
        let done = match &c.users {
            Users::Stages(_) => staged_end,
            Users::Fixed(_) => {
                let list = slots.borrow();
                match list.is_empty() {
                    true => sh.deadline.is_none(),
                    false => list.iter().all(|s| *s == Slot::Finished),
                }
            }
        };
        if done || local.budget.get() == 0 || !sh.wait(Duration::from_millis(100)).await {
            break;
        }
    }
}

/// The highest value the stages reach from `a` to `b` seconds: the curve is piecewise linear,
/// so at `b` or at a stage boundary in between.
fn peak(s: &[throng_core::Stage], a: f64, b: f64) -> f64 {
    let mut at = 0.0;
    let mut best = stages::value_at(0.0, s, b);
    for st in s {
        at += st.duration.as_secs_f64();
        if at > a && at <= b {
            best = best.max(st.target);
        }
    }
    best
}

/// Waits while the run is paused; false if it stopped meanwhile.
pub(crate) async fn unpaused<D>(sh: &Shared<D>) -> bool {
    while sh.control.is_paused() {
        if !sh.wait(Duration::from_millis(20)).await {
            return false;
        }
    }
    !sh.stopping()
}

/// How long a user waits after its connection could not be established, before it tries again:
/// 10 ms, doubling with each failure in a row up to 1 s, each wait drawn uniformly from its upper
/// half so that users do not retry in step. Without it a user would retry a refused connect at
/// once, thousands of times a second, and the run would report those instant failures as its
/// load.
#[derive(Debug, Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);

    fn next(&mut self) -> Duration {
        let ceiling = Self::FIRST
            .saturating_mul(1 << self.failures.min(10))
            .min(Self::MAX);
        self.failures += 1;
        ceiling.mul_f64(0.5 + 0.5 * rand::random::<f64>())
    }
}

/// One virtual user: loops iterations until the run, its iterations, or its slot ends.
async fn user<D: Driver>(
    local: Rc<Local<D>>,
    j: u64,
    id: u64,
    c: Rc<ClosedLoop>,
    target: Rc<Cell<u64>>,
) -> Slot {
    local.active.set(local.active.get() + 1);
    let mut session = local.shared.driver.session(&local.state, id);
    let mut backoff = Backoff::default();
    let mut iteration = 0u64;
    // The user connects before its first iteration, and again after a connection failed.
    let mut connect = true;
    let end = loop {
        if c.iterations.is_some_and(|n| iteration >= n) || local.budget.get() == 0 {
            break Slot::Finished;
        }
        if c.iterations.is_none() && j >= target.get() {
            break Slot::Free;
        }
        if !unpaused(&local.shared).await {
            break Slot::Finished;
        }
        let pass = local
            .iterate(&mut session, id, Instant::now(), false, connect)
            .await;
        iteration += 1;
        connect = pass.unreached();
        match pass {
            Iteration::Ended => break Slot::Finished,
            // A stop wakes the user from its wait, to close its session (`unpaused` sees it).
            p if p.unreached() => {
                local.shared.wait(backoff.next()).await;
                continue;
            }
            _ => backoff = Backoff::default(),
        }
        if let Some(think) = c.think_time {
            local.shared.wait(think).await;
        }
    };
    local.close(&mut session).await;
    local.active.set(local.active.get() - 1);
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::{Outcome, StepInfo};

    /// A driver whose request holds a kilobyte across its wait.
    struct Heavy;

    impl Driver for Heavy {
        type Worker = ();
        type Session = ();

        fn steps(&self) -> Vec<StepInfo> {
            Vec::new()
        }

        fn worker(&self) {}

        fn session(&self, _: &(), _: u64) {}

        async fn execute(&self, _: &mut (), _: usize) -> Outcome {
            let held = [1u8; 1024];
            tokio::task::yield_now().await;
            std::hint::black_box(&held);
            Outcome::default()
        }
    }

    /// The size of what `f` returns, without calling it.
    fn returned<F: FnOnce(A, B, C, D, E) -> R, A, B, C, D, E, R>(_: F) -> usize {
        std::mem::size_of::<R>()
    }

    /// A user's task is allocated at the size of its largest state, for the whole run: what
    /// the engine holds around the driver's request is in every task, once a connection.
    #[test]
    fn a_user_adds_little_to_its_request() {
        let request = std::mem::size_of_val(&Heavy.execute(&mut (), 0));
        let user = returned(user::<Heavy>);
        let engine = user - request;
        eprintln!("request {request} B, user {user} B: the engine's {engine} B");
        assert!(
            engine <= 400,
            "the engine holds {engine} bytes around a request"
        );
    }

    #[test]
    fn backoff_doubles_up_to_a_second() {
        let mut b = Backoff::default();
        let waits: Vec<Duration> = (0..12).map(|_| b.next()).collect();
        assert!(waits[0] >= Duration::from_millis(5) && waits[0] <= Duration::from_millis(10));
        assert!(waits[3] >= Duration::from_millis(40) && waits[3] <= Duration::from_millis(80));
        for w in &waits[7..] {
            assert!(*w >= Duration::from_millis(500) && *w <= Duration::from_secs(1));
        }
    }
}
