//! A group's pass on tokio's paused clock: it ends where the iteration leaves the group or the
//! driver starts it over ([`Driver::starts_over`]), not where the iteration comes back to the
//! group's first step through a loop inside it; each sample is its pass's whole duration; and
//! by default a return to the first step (a retry) ends the pass, failed.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::time::Duration;

use throng_core::{Driver, ErrorClass, GroupInfo, Outcome, Percentiles, Snapshot, StepInfo};
use throng_engine::Extras;

mod common;
use common::{iterations, on_caller, within};

/// How a driver walks its two steps, `a` (10 ms) and `b` (5 ms), both in group `g`.
#[derive(Clone, Copy)]
enum Walk {
    /// `a` three times, then `b`: a repeated first step, one pass of `g`.
    RepeatFirst,
    /// `a`, `b` twice over, each time a new pass (the group repeated), said by `starts_over`.
    RepeatGroup,
    /// `a`, then `b` fails and undoes the pass (a retry): `a`, `b` again. The driver does not
    /// override `starts_over`, so the default (a return to the first step) ends the pass.
    Retry,
}

struct Looper(Walk);

/// A user's place: steps run this iteration, and whether the last `next_step` began a new
/// pass of the group.
#[derive(Default)]
struct Place {
    ran: u32,
    began: bool,
}

impl Driver for Looper {
    type Worker = ();
    type Session = Place;

    fn steps(&self) -> Vec<StepInfo> {
        ["a", "b"].map(|l| StepInfo { label: l.into() }).to_vec()
    }

    fn groups(&self) -> Vec<GroupInfo> {
        vec![GroupInfo {
            label: "g".into(),
            first: 0,
            last: 1,
        }]
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) -> Place {
        Place::default()
    }

    fn next_step(&self, s: &mut Place, after: Option<usize>) -> Option<usize> {
        if after.is_none() {
            s.ran = 0;
        }
        let order: &[usize] = match self.0 {
            Walk::RepeatFirst => &[0, 0, 0, 1],
            Walk::RepeatGroup | Walk::Retry => &[0, 1, 0, 1],
        };
        let next = order.get(s.ran as usize).copied();
        s.began = matches!(self.0, Walk::RepeatGroup) && s.ran == 2;
        s.ran += 1;
        next
    }

    fn starts_over(&self, s: &Place, group: usize, info: &GroupInfo, next: usize) -> bool {
        match self.0 {
            Walk::Retry => next == info.first,
            Walk::RepeatFirst | Walk::RepeatGroup => group == 0 && s.began,
        }
    }

    async fn execute(&self, s: &mut Place, step: usize) -> Outcome {
        let took = [10, 5][step];
        tokio::time::sleep(Duration::from_millis(took)).await;
        if matches!(self.0, Walk::Retry) && step == 1 && s.ran == 2 {
            let mut failed = Outcome::failed(ErrorClass::Other, "undone");
            failed.proceed = true;
            return failed;
        }
        Outcome::default()
    }
}

/// A retry driver that leaves `starts_over` to its default.
struct Retrier;

impl Driver for Retrier {
    type Worker = ();
    type Session = Place;

    fn steps(&self) -> Vec<StepInfo> {
        Looper(Walk::Retry).steps()
    }

    fn groups(&self) -> Vec<GroupInfo> {
        Looper(Walk::Retry).groups()
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) -> Place {
        Place::default()
    }

    fn next_step(&self, s: &mut Place, after: Option<usize>) -> Option<usize> {
        Looper(Walk::Retry).next_step(s, after)
    }

    async fn execute(&self, s: &mut Place, step: usize) -> Outcome {
        Looper(Walk::Retry).execute(s, step).await
    }
}

/// 2 users, 3 iterations each, on the caller's paused clock.
async fn run<D: Driver>(driver: D) -> Arc<Snapshot> {
    let plan = iterations(2, 3);
    on_caller(plan, Arc::new(driver), Extras::default()).await
}

/// Each row's label, samples and errors.
fn rows(s: &Snapshot) -> Vec<(&str, u64, u64)> {
    s.labels
        .iter()
        .map(|l| (l.label.as_str(), l.samples, l.errors))
        .collect()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_repeated_first_step_is_one_pass_of_its_group() {
    let s = run(Looper(Walk::RepeatFirst)).await;
    // 6 iterations: 18 samples of `a`, 6 of `b`, and 6 passes of `g` (not 18).
    assert_eq!(rows(&s), [("a", 18, 0), ("b", 6, 0), ("g", 6, 0)]);
    // Each pass is its three `a` and its `b`: 35 ms.
    let g = Percentiles::of(&s.labels[2].latency);
    assert!(within(g.min as f64, 35_000.0, 0.002), "{g:?}");
    assert!(within(g.max as f64, 35_000.0, 0.002), "{g:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_group_the_driver_starts_over_counts_each_pass() {
    let s = run(Looper(Walk::RepeatGroup)).await;
    assert_eq!(rows(&s), [("a", 12, 0), ("b", 12, 0), ("g", 12, 0)]);
    let g = Percentiles::of(&s.labels[2].latency);
    assert!(within(g.min as f64, 15_000.0, 0.002), "{g:?}");
    assert!(within(g.max as f64, 15_000.0, 0.002), "{g:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn by_default_a_return_to_the_first_step_ends_the_pass_failed() {
    for s in [run(Retrier).await, run(Looper(Walk::Retry)).await] {
        // Each iteration: a failed pass (a, b undone), then a passed one.
        assert_eq!(rows(&s), [("a", 12, 0), ("b", 12, 6), ("g", 12, 6)]);
        let g = Percentiles::of(&s.labels[2].latency);
        assert!(within(g.min as f64, 15_000.0, 0.002), "{g:?}");
        assert!(within(g.max as f64, 15_000.0, 0.002), "{g:?}");
    }
}
