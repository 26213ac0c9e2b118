//! The aggregator's memory over a run: a second adds one point of percentiles to the run
//! state and nothing else, and the state is not copied when no reader holds a snapshot.
//!
//! Live bytes are counted by a global allocator per thread (the aggregator runs on the test's
//! own thread here), so tests running beside each other do not disturb the count.
#![allow(unsafe_code)] // A counting GlobalAlloc is unsafe by definition; it only forwards.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use throng_core::{histogram, ClosedLoop, ErrorClass, LabelStats, LoadModel, PhaseStats};
use throng_core::{RunPlan, RunState, SeriesPoint, Snapshot, Users};
use throng_engine::aggregator::Aggregator;
use throng_engine::recorder::Interval;

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn count(n: isize) {
    // During a thread's teardown the counter may be gone; nothing is measured then.
    let _ = LIVE.try_with(|l| l.set(l.get() + n));
}

// SAFETY: every call is forwarded to `System` unchanged; the counter allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.with(Cell::get)
}

/// Worker 0's interval `index`: 100 requests of 200 µs to 80 ms, with phases.
fn interval(index: u64) -> Interval {
    let mut row = LabelStats::new("GET /");
    let mut phases = PhaseStats::default();
    for i in 0..100u64 {
        let us = 200 + (i * 7_919 + index * 13) % 80_000;
        histogram::record(&mut row.latency, us);
        histogram::record(&mut row.service, us);
        for h in phases.times.iter_mut().chain([&mut phases.blocked]) {
            histogram::record(h, us / 2);
        }
    }
    row.samples = 100;
    row.phases = Some(Box::new(phases));
    Interval {
        worker: 0,
        index,
        last: false,
        labels: vec![row],
        lag: histogram::new(),
        late: 0,
        dropped: 0,
        errors: [0; ErrorClass::ALL.len()],
        samples: Default::default(),
        statuses: Vec::new(),
        aborted: 0,
        scheduled: 0,
        unstarted: 0,
        active: 1_000,
        requests: Vec::new(),
    }
}

/// An aggregator of one worker's seconds of a one-step run.
fn aggregator() -> Aggregator {
    let model = LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(1_000),
        requests: None,
        iterations: None,
        duration: None,
        think_time: None,
    });
    let empty = Snapshot::empty(Arc::new(RunPlan::new("t", model)), &["GET /".into()], 0);
    Aggregator::new(empty, 1, Box::new(|_| 0.0))
}

/// Adds and publishes seconds `from..to`, each closing its point, as a run does.
fn seconds(agg: &mut Aggregator, from: u64, to: u64) {
    for i in from..to {
        assert!(agg.add(interval(i), i as f64 + 1.0), "second {i} closes");
        agg.snapshot(Duration::from_secs(i + 1), RunState::Running, Vec::new());
    }
}

/// Nine minutes more of a run keep 540 more points of the time series (the vector at most
/// twice its length) and not a byte more: no histogram, no interval, no snapshot per second.
#[test]
fn a_second_keeps_one_point_of_percentiles() {
    let mut agg = aggregator();
    let rx = agg.subscribe();
    seconds(&mut agg, 0, 60);
    let minute = live();
    seconds(&mut agg, 60, 600);
    let grown = live() - minute;
    let s = rx.borrow().clone();
    assert_eq!((s.series.len(), s.total.samples), (600, 60_000));
    let point = size_of::<SeriesPoint>() as isize;
    assert!(point <= 14 * 8, "a point is 14 numbers, {point} bytes");
    assert!(
        grown <= 2 * 540 * point,
        "nine minutes added {grown} bytes; 540 points are {}",
        540 * point
    );
    // The state itself is its rows' histograms (the step's, TOTAL's, the last second's: nine
    // each with the phases, about 55 KB each up to 80 ms): 1.5 MB, once.
    assert!(minute < 2 << 20, "a minute's state takes {minute} bytes");
}

/// The state is the snapshot published: with no reader holding the last one, the seconds
/// after it change it in place (one copy of the histograms, not two); a reader that holds one
/// keeps it unchanged, and the state is copied once for it.
#[test]
fn the_state_is_copied_only_for_a_reader_that_holds_a_snapshot() {
    let mut agg = aggregator();
    let rx = agg.subscribe();
    seconds(&mut agg, 0, 1);
    let first = Arc::as_ptr(&rx.borrow());
    let before = live();
    seconds(&mut agg, 1, 5);
    assert_eq!(Arc::as_ptr(&rx.borrow()), first, "changed in place");
    assert!(
        live() - before < 64 << 10,
        "four seconds took {} bytes",
        live() - before
    );
    let held = rx.borrow().clone();
    assert_eq!(held.series.len(), 5);
    seconds(&mut agg, 5, 6);
    let now = rx.borrow().clone();
    assert_ne!(
        Arc::as_ptr(&now),
        Arc::as_ptr(&held),
        "copied for the reader"
    );
    assert_eq!(held.series.len(), 5, "what a reader holds does not change");
    assert_eq!(now.series.len(), 6);
    assert_eq!(now.total.samples, held.total.samples + 100);
}
