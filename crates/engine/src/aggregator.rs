//! The aggregator: the one owner of run state.
//!
//! Workers send it one [`Interval`] per tick over a bounded channel. It adds them into the
//! cumulative rows (exactly: HdrHistograms add bucket by bucket), closes a one-second point of
//! the time series when every worker has reported that second, and publishes an immutable
//! [`Snapshot`] that readers share through a `watch` channel.
//!
//! The run state *is* the channel's snapshot, changed in place (`Arc::make_mut`): it is copied
//! only while a reader still holds the one published before, as the dashboard does. A copy
//! kept here and another published took two of every row's histograms (latency, service,
//! failures, six phases; TOTAL's and the last second's too): 1.3 MB at 1,000 connections, and
//! a third while a new one replaced the old (heaptrack: 2.7 of the 7.6 MB heap peak).

use std::collections::BTreeMap;
use std::sync::Arc;

use throng_core::{
    Change, ContainerEvent, ContainerSeries, DatabaseEvent, DatabaseSeries, ErrorClass, ErrorStat,
    LabelStats, Percentiles, RunState, Sample, SeriesPoint, Snapshot,
};
use tokio::sync::{mpsc, watch};

use crate::recorder::Interval;

struct Pending {
    parts: usize,
    total: LabelStats,
    active: u64,
    end: f64,
}

/// Run state, changed only by [`Aggregator::add`].
pub struct Aggregator {
    /// The run state, published: readers hold it between changes, if at all.
    snapshot: watch::Sender<Arc<Snapshot>>,
    workers: usize,
    finished: usize,
    pending: BTreeMap<u64, Pending>,
    errors: BTreeMap<ErrorClass, (u64, String)>,
    statuses: BTreeMap<throng_core::Status, u64>,
    active: Vec<u64>,
    target_rate: Box<dyn Fn(f64) -> f64 + Send>,
    samples: Option<mpsc::Sender<Vec<Sample>>>,
}

impl Aggregator {
    /// An aggregator expecting `workers` workers.
    pub fn new(
        empty: Snapshot,
        workers: usize,
        target_rate: Box<dyn Fn(f64) -> f64 + Send>,
    ) -> Self {
        Aggregator {
            snapshot: watch::Sender::new(Arc::new(empty)),
            workers,
            finished: 0,
            pending: BTreeMap::new(),
            errors: BTreeMap::new(),
            statuses: BTreeMap::new(),
            active: vec![0; workers],
            target_rate,
            samples: None,
        }
    }

    /// Hands each interval's per-request samples to `sink` (a writer); what it cannot take at
    /// once is counted as lost, so a slow writer never holds up the aggregation.
    pub fn samples_to(&mut self, sink: mpsc::Sender<Vec<Sample>>) {
        self.samples = Some(sink);
    }

    /// A reader of the snapshots [`Aggregator::snapshot`] publishes.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshot.subscribe()
    }

    /// Whether every worker has sent its last interval.
    pub fn all_finished(&self) -> bool {
        self.finished >= self.workers
    }

    /// Adds one worker's interval, `elapsed` seconds into the run; returns whether that closed
    /// a point of the time series (every worker has reported it).
    pub fn add(&mut self, mut iv: Interval, elapsed: f64) -> bool {
        let mut lost = 0;
        if !iv.requests.is_empty() {
            let batch = std::mem::take(&mut iv.requests);
            let n = batch.len() as u64;
            if self
                .samples
                .as_ref()
                .is_none_or(|tx| tx.try_send(batch).is_err())
            {
                lost = n;
            }
        }
        for (class, (n, sample)) in ErrorClass::ALL.iter().zip(iv.errors.iter().zip(iv.samples)) {
            if *n > 0 {
                let e = self
                    .errors
                    .entry(*class)
                    .or_insert_with(|| (0, sample.clone().unwrap_or_default()));
                e.0 += n;
            }
        }
        for (code, n) in &iv.statuses {
            *self.statuses.entry(*code).or_default() += n;
        }
        if let Some(a) = self.active.get_mut(iv.worker) {
            *a = iv.active;
        }
        if iv.last {
            self.finished += 1;
        }
        let p = self.pending.entry(iv.index).or_insert_with(|| Pending {
            parts: 0,
            total: LabelStats::new("interval"),
            active: 0,
            end: 0.0,
        });
        p.parts += 1;
        p.active += iv.active;
        p.end = p.end.max(elapsed.min(iv.index as f64 + 1.0));
        change(&self.snapshot, |s| {
            s.lost_samples += lost;
            for (row, add) in s.labels.iter_mut().zip(&iv.labels) {
                row.add(add);
                if !row.group && !row.parts {
                    s.total.add(add);
                }
            }
            if let Some(lag) = &mut s.lag {
                let _ = lag.lag.add(&iv.lag);
                lag.late += iv.late;
                lag.dropped += iv.dropped;
                lag.scheduled += iv.scheduled;
                lag.unstarted += iv.unstarted;
            }
            s.aborted += iv.aborted;
            // The second this interval covers, in a hold of the stages, adds to its row too.
            let mid = iv.index as f64 + 0.5;
            let hold = s.holds.iter().position(|h| h.from <= mid && mid < h.to);
            for (l, row) in iv.labels.iter().zip(&s.labels) {
                if !row.group && !row.parts {
                    p.total.add(l);
                    if let Some(h) = hold {
                        s.holds[h].total.add(l);
                    }
                }
            }
        });
        self.close_intervals(false)
    }

    fn close_intervals(&mut self, all: bool) -> bool {
        let mut closed = false;
        while let Some(entry) = self.pending.first_entry() {
            if !all && entry.get().parts < self.workers {
                break;
            }
            let p = entry.remove();
            let q = Percentiles::of(&p.total.latency);
            let point = SeriesPoint {
                t: p.end,
                // Requests sent: an arrival dropped was not (it is in the totals' samples and
                // errors, and in the open loop's own counts), so a second of 1,000 arrivals of
                // which 900 were dropped reads 100 requests, not 1,000.
                requests: p.total.samples - p.total.dropped,
                errors: p.total.errors - p.total.dropped,
                bytes_sent: p.total.bytes_sent,
                bytes_received: p.total.bytes_received,
                mean: q.mean,
                p50: q.p50,
                p90: q.p90,
                p95: q.p95,
                p99: q.p99,
                p999: q.p999,
                max: q.max,
                active: p.active,
                target_rate: (self.target_rate)(p.end),
            };
            let last = LabelStats {
                label: "last interval".into(),
                ..p.total
            };
            change(&self.snapshot, |s| {
                Arc::make_mut(&mut s.series).push(point);
                s.last = last;
            });
            closed = true;
        }
        closed
    }

    /// Publishes the current state, with the changes made to the run so far, as an immutable
    /// snapshot, and returns it.
    pub fn snapshot(
        &mut self,
        elapsed: std::time::Duration,
        state: RunState,
        changes: Vec<Change>,
    ) -> Arc<Snapshot> {
        if state == RunState::Done {
            self.close_intervals(true);
        }
        let (errors, statuses, active) = (&self.errors, &self.statuses, &self.active);
        self.snapshot.send_modify(|s| {
            let s = Arc::make_mut(s);
            s.elapsed = elapsed;
            s.state = state;
            s.errors = errors
                .iter()
                .map(|(class, (count, sample))| ErrorStat {
                    class: *class,
                    count: *count,
                    sample: sample.clone(),
                })
                .collect();
            s.statuses = statuses.iter().map(|(c, n)| (*c, *n)).collect();
            s.active = active.iter().sum();
            if !changes.is_empty() || state == RunState::Done {
                s.changes = changes;
            }
        });
        self.snapshot.borrow().clone()
    }

    /// Adds what the container monitor saw.
    pub fn add_container(&mut self, event: ContainerEvent) {
        change(&self.snapshot, |s| {
            let list = &mut s.containers;
            match event {
                ContainerEvent::Info(info) => {
                    match list.iter_mut().find(|c| c.info.id == info.id) {
                        Some(c) => c.info = info,
                        None => list.push(ContainerSeries {
                            info,
                            samples: Vec::new(),
                        }),
                    }
                }
                ContainerEvent::Sample(id, sample) => {
                    if let Some(c) = list.iter_mut().find(|c| c.info.id == id) {
                        c.samples.push(sample);
                    }
                }
                ContainerEvent::Gone(id, why) => {
                    if let Some(c) = list.iter_mut().find(|c| c.info.id == id) {
                        c.info.gone = Some(why);
                    }
                }
            }
        });
    }

    /// Adds what the database monitor read.
    pub fn add_database(&mut self, event: DatabaseEvent) {
        change(&self.snapshot, |s| {
            let list = &mut s.databases;
            match event {
                DatabaseEvent::Info(info) => list.push(DatabaseSeries {
                    info,
                    ..DatabaseSeries::default()
                }),
                DatabaseEvent::Sample(i, sample) => {
                    if let Some(d) = list.get_mut(i) {
                        d.samples.push(sample);
                    }
                }
                DatabaseEvent::Failed(i, failures) => {
                    if let Some(d) = list.get_mut(i) {
                        d.failures = Some(failures);
                    }
                }
            }
        });
    }

    /// Marks the run as stopped before its plan ended it.
    pub fn set_interrupted(&mut self, interrupted: bool) {
        change(&self.snapshot, |s| s.interrupted = interrupted);
    }

    /// Counts intervals that a worker could not send.
    pub fn add_lost(&mut self, n: u64) {
        if n > 0 {
            change(&self.snapshot, |s| s.lost_intervals += n);
        }
    }
}

/// Changes the run state in place without telling readers: copied only if a reader still
/// holds the snapshot published last.
fn change(state: &watch::Sender<Arc<Snapshot>>, f: impl FnOnce(&mut Snapshot)) {
    state.send_if_modified(|s| {
        f(Arc::make_mut(s));
        false
    });
}
