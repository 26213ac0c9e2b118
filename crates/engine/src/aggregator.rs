//! The aggregator: the one owner of run state.
//!
//! Workers send it one [`Interval`] per tick over a bounded channel. It adds them into the
//! cumulative rows (exactly: HdrHistograms add bucket by bucket), closes a one-second point of
//! the time series when every worker has reported that second, and publishes an immutable
//! [`Snapshot`] that readers share through a `watch` channel.

use std::collections::BTreeMap;
use std::sync::Arc;

use throng_core::{
    ContainerEvent, ContainerSeries, DatabaseEvent, DatabaseSeries, ErrorClass, ErrorStat,
    LabelStats, Percentiles, RunState, Sample, SeriesPoint, Snapshot,
};
use tokio::sync::mpsc;

use crate::recorder::Interval;

struct Pending {
    parts: usize,
    total: LabelStats,
    active: u64,
    end: f64,
}

/// Run state, changed only by [`Aggregator::add`].
pub struct Aggregator {
    snapshot: Snapshot,
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
            snapshot: empty,
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

    /// Whether every worker has sent its last interval.
    pub fn all_finished(&self) -> bool {
        self.finished >= self.workers
    }

    /// Adds one worker's interval, `elapsed` seconds into the run; returns whether that closed
    /// a point of the time series (every worker has reported it).
    pub fn add(&mut self, mut iv: Interval, elapsed: f64) -> bool {
        if !iv.requests.is_empty() {
            let batch = std::mem::take(&mut iv.requests);
            let n = batch.len() as u64;
            if self
                .samples
                .as_ref()
                .is_none_or(|tx| tx.try_send(batch).is_err())
            {
                self.snapshot.lost_samples += n;
            }
        }
        let s = &mut self.snapshot;
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
        s.aborted += iv.aborted;
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
        // The second this interval covers, in a hold of the stages, adds to its row too.
        let mid = iv.index as f64 + 0.5;
        let hold = self
            .snapshot
            .holds
            .iter()
            .position(|h| h.from <= mid && mid < h.to);
        for (l, row) in iv.labels.iter().zip(&self.snapshot.labels) {
            if !row.group && !row.parts {
                p.total.add(l);
                if let Some(h) = hold {
                    self.snapshot.holds[h].total.add(l);
                }
            }
        }
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
            Arc::make_mut(&mut self.snapshot.series).push(point);
            self.snapshot.last = LabelStats {
                label: "last interval".into(),
                ..p.total
            };
            closed = true;
        }
        closed
    }

    /// The current state as an immutable snapshot.
    pub fn snapshot(&mut self, elapsed: std::time::Duration, state: RunState) -> Arc<Snapshot> {
        if state == RunState::Done {
            self.close_intervals(true);
        }
        let s = &mut self.snapshot;
        s.elapsed = elapsed;
        s.state = state;
        s.errors = self
            .errors
            .iter()
            .map(|(class, (count, sample))| ErrorStat {
                class: *class,
                count: *count,
                sample: sample.clone(),
            })
            .collect();
        s.statuses = self.statuses.iter().map(|(c, n)| (*c, *n)).collect();
        s.active = self.active.iter().sum();
        Arc::new(s.clone())
    }

    /// Adds what the container monitor saw.
    pub fn add_container(&mut self, event: ContainerEvent) {
        let list = &mut self.snapshot.containers;
        match event {
            ContainerEvent::Info(info) => match list.iter_mut().find(|c| c.info.id == info.id) {
                Some(c) => c.info = info,
                None => list.push(ContainerSeries {
                    info,
                    samples: Vec::new(),
                }),
            },
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
    }

    /// Adds what the database monitor read.
    pub fn add_database(&mut self, event: DatabaseEvent) {
        let list = &mut self.snapshot.databases;
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
    }

    /// Marks the run as stopped before its plan ended it.
    pub fn set_interrupted(&mut self, interrupted: bool) {
        self.snapshot.interrupted = interrupted;
    }

    /// Counts intervals that a worker could not send.
    pub fn add_lost(&mut self, n: u64) {
        self.snapshot.lost_intervals += n;
    }
}
