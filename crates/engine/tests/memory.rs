//! The aggregator's memory over a run: a second adds one point of percentiles to the run
//! state and nothing else.
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

/// Adds and publishes seconds `from..to`, each closing its point, as a run does; returns the
/// last snapshot.
fn seconds(agg: &mut Aggregator, from: u64, to: u64) -> Option<Arc<Snapshot>> {
    let mut last = None;
    for i in from..to {
        assert!(agg.add(interval(i), i as f64 + 1.0), "second {i} closes");
        last = Some(agg.snapshot(Duration::from_secs(i + 1), RunState::Running));
    }
    last
}

/// Nine minutes more of a run keep 540 more points of the time series (the vector at most
/// twice its length) and not a byte more: no histogram, no interval, no snapshot per second.
#[test]
fn a_second_keeps_one_point_of_percentiles() {
    let mut agg = aggregator();
    let first = seconds(&mut agg, 0, 60);
    let minute = live();
    let s = seconds(&mut agg, 60, 600).expect("540 seconds");
    // One snapshot held at each count, as the channel holds the last one published.
    drop(first);
    let grown = live() - minute;
    assert_eq!((s.series.len(), s.total.samples), (600, 60_000));
    let point = size_of::<SeriesPoint>() as isize;
    assert!(point <= 14 * 8, "a point is 14 numbers, {point} bytes");
    assert!(
        grown <= 2 * 540 * point,
        "nine minutes added {grown} bytes; 540 points are {}",
        540 * point
    );
    // The state itself is its rows' histograms (the step's, TOTAL's, the last second's: nine
    // each with the phases, about 55 KB each up to 80 ms), in the aggregator and in the
    // snapshot it published last (held here): 3 MB, once.
    assert!(minute < 4 << 20, "a minute's state takes {minute} bytes");
}
