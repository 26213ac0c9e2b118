use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::{ContainerSeries, ErrorClass, RunPlan};

/// Summary percentiles of one histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    /// Samples in the histogram.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest sample.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
}

impl Percentiles {
    /// Reads the percentiles of a histogram (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            mean: h.mean(),
            min: h.min(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// Cumulative statistics of one label (one step of the scenario), or of the whole run.
#[derive(Debug, Clone)]
pub struct LabelStats {
    /// The row label.
    pub label: String,
    /// Whether the row is a group of steps (a flow) rather than one request.
    pub group: bool,
    /// Whether the row times parts of another row's requests (a server stream's messages,
    /// see [`crate::PartsInfo`]): its samples are parts, so TOTAL leaves them out.
    pub parts: bool,
    /// Requests that ended: succeeded, failed, or aborted at the end of the run; and open-loop
    /// arrivals dropped (never sent).
    pub samples: u64,
    /// Requests that failed, aborted ones and dropped arrivals included.
    pub errors: u64,
    /// Requests cut off at the end of the run (also counted in `errors`).
    pub aborted: u64,
    /// Open-loop arrivals dropped, never sent (also counted in `samples` and in `errors`, of
    /// class `dropped`; timed in no histogram).
    pub dropped: u64,
    /// Operations the requests performed (one each, unless a driver says more: the statements
    /// of a SQL transaction).
    pub operations: u64,
    /// Bytes written, headers included.
    pub bytes_sent: u64,
    /// Bytes read, headers included.
    pub bytes_received: u64,
    /// Latency from intended start to end of response, µs, of the requests that succeeded and
    /// of those left waiting (timed out, or aborted at the end: at the time they waited).
    pub latency: Histogram<u64>,
    /// Service time from actual start to end of response, µs, of the same requests.
    pub service: Histogram<u64>,
    /// Latency of the other failures (refused connects, resets, TLS, protocol, HTTP status,
    /// checks), µs: timed apart, because a fast failure must not make a broken target look fast.
    pub failed: Histogram<u64>,
    /// Failures by class, indexed by [`crate::ErrorClass::index`] (they add up to `errors`): a
    /// step's own; for a group, the class of each failed pass's first failure.
    pub classes: [u64; crate::ErrorClass::ALL.len()],
    /// The requests' phases, once a protocol reported any (see [`crate::phase`]); `None` for a
    /// row whose protocol times none, which then costs nothing.
    pub phases: Option<Box<crate::PhaseStats>>,
    /// The requests' streams of tokens (TTFT, ITL, TPOT, end to end, tokens, goodput), once a
    /// protocol reported one (see [`crate::stream`]); `None` otherwise.
    pub stream: Option<Box<crate::stream::StreamStats>>,
}

impl LabelStats {
    /// An empty row.
    pub fn new(label: impl Into<String>) -> Self {
        LabelStats {
            label: label.into(),
            group: false,
            parts: false,
            samples: 0,
            errors: 0,
            aborted: 0,
            dropped: 0,
            operations: 0,
            bytes_sent: 0,
            bytes_received: 0,
            latency: crate::histogram::new(),
            service: crate::histogram::new(),
            failed: crate::histogram::new(),
            classes: [0; crate::ErrorClass::ALL.len()],
            phases: None,
            stream: None,
        }
    }

    /// Adds another row's data into this one (exact: histograms add bucket by bucket).
    pub fn add(&mut self, other: &LabelStats) {
        self.samples += other.samples;
        self.errors += other.errors;
        self.aborted += other.aborted;
        self.dropped += other.dropped;
        self.operations += other.operations;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        // Same bounds everywhere (histogram::new), so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.failed.add(&other.failed);
        for (mine, theirs) in self.classes.iter_mut().zip(other.classes) {
            *mine += theirs;
        }
        if let Some(theirs) = &other.phases {
            self.phases.get_or_insert_default().add(theirs);
        }
        if let Some(theirs) = &other.stream {
            self.stream.get_or_insert_default().add(theirs);
        }
    }

    /// Its failures by class, the classes that failed only, in [`crate::ErrorClass::ALL`]'s
    /// order.
    pub fn errors_by_class(&self) -> impl Iterator<Item = (crate::ErrorClass, u64)> + '_ {
        crate::ErrorClass::ALL
            .iter()
            .map(|c| (*c, self.classes[c.index()]))
            .filter(|(_, n)| *n > 0)
    }

    /// Requests that succeeded.
    pub fn succeeded(&self) -> u64 {
        self.samples - self.errors.min(self.samples)
    }

    /// Requests that ended with an answer or an error of their own: all but the aborted and the
    /// dropped.
    pub fn completed(&self) -> u64 {
        self.samples
            .saturating_sub(self.aborted)
            .saturating_sub(self.dropped)
    }

    /// Errors as a fraction of samples (0 when there are none): dropped arrivals count, so a
    /// run that could not send what was asked cannot look clean.
    pub fn error_rate(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.errors as f64 / self.samples as f64
        }
    }
}

/// One error class's count, with the first message seen as a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorStat {
    /// The class.
    pub class: ErrorClass,
    /// How many requests failed with it.
    pub count: u64,
    /// A sample message.
    pub sample: String,
}

/// Open-loop schedule statistics.
#[derive(Debug, Clone)]
pub struct LagStats {
    /// Actual start minus intended start, µs.
    pub lag: Histogram<u64>,
    /// Arrivals that started later than the plan's `late_after`.
    pub late: u64,
    /// Arrivals never started because the in-flight bound was reached and the queue was full,
    /// or because the generator fell further behind its schedule than the queue holds.
    pub dropped: u64,
    /// Arrivals whose time came: `started + dropped + unstarted`, exactly.
    pub scheduled: u64,
    /// Arrivals still queued when the run ended: never started, counted as aborted requests.
    pub unstarted: u64,
}

impl LagStats {
    /// Arrivals that started (their first request was sent).
    pub fn started(&self) -> u64 {
        self.lag.len()
    }
}

/// One second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesPoint {
    /// Seconds since the start of the run at the end of this interval.
    pub t: f64,
    /// Requests completed in the interval (an open-loop arrival dropped was never sent: it is
    /// not among them, nor among the errors, though the totals count it in both).
    pub requests: u64,
    /// Of which failed.
    pub errors: u64,
    /// Bytes sent in the interval.
    pub bytes_sent: u64,
    /// Bytes received in the interval.
    pub bytes_received: u64,
    /// Interval latency mean, µs.
    pub mean: f64,
    /// Interval latency median, µs.
    pub p50: u64,
    /// Interval latency 90th percentile, µs.
    pub p90: u64,
    /// Interval latency 95th percentile, µs.
    pub p95: u64,
    /// Interval latency 99th percentile, µs.
    pub p99: u64,
    /// Interval latency 99.9th percentile, µs.
    pub p999: u64,
    /// Interval latency maximum, µs.
    pub max: u64,
    /// Users (closed loop) or requests in flight (open loop) at the end of the interval.
    pub active: u64,
    /// The target rate at the end of the interval (open loop), else 0.
    pub target_rate: f64,
}

/// Whether the run is still going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Load is being generated.
    Running,
    /// The run was asked to stop (signal or key) and is finishing in-flight requests.
    Stopping,
    /// The run ended; this is the final snapshot.
    Done,
}

/// Everything known about a run at one moment. Published by the aggregator (its only writer)
/// and read by the live UI, the headless progress line, the final report and library callers.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The plan being run.
    pub plan: Arc<RunPlan>,
    /// When the run started, by the wall clock.
    pub started_at: std::time::SystemTime,
    /// Whether the run was stopped (by the caller, a signal or a key) before its plan ended it.
    pub interrupted: bool,
    /// Wall time since the start.
    pub elapsed: Duration,
    /// Running, stopping or done.
    pub state: RunState,
    /// Per-label cumulative rows: the steps in order, then the parts rows, then the groups.
    pub labels: Vec<LabelStats>,
    /// The request rows added together (group rows are not: their requests are already counted;
    /// nor are parts rows: their samples are not requests).
    pub total: LabelStats,
    /// Statistics of the last complete interval (about one second), for live views.
    pub last: LabelStats,
    /// Errors by class.
    pub errors: Vec<ErrorStat>,
    /// Response statuses and their counts, in order (by status space's name, then code).
    pub statuses: Vec<(crate::Status, u64)>,
    /// Requests cut off by the end of the run (counted as errors of class `aborted` too).
    pub aborted: u64,
    /// Open-loop schedule statistics; `None` in the closed loop.
    pub lag: Option<LagStats>,
    /// One point per second.
    pub series: Arc<Vec<SeriesPoint>>,
    /// Users or requests in flight now.
    pub active: u64,
    /// Interval data that workers could not hand to the aggregator (should be 0).
    pub lost_intervals: u64,
    /// The target's containers, when watched.
    pub containers: Vec<ContainerSeries>,
    /// The databases whose own counters are read (`--db-stats`).
    pub databases: Vec<crate::DatabaseSeries>,
    /// Per-request samples (`Extras::samples`) the writer could not take in time: missing from
    /// the log, though counted in every number here.
    pub lost_samples: u64,
    /// Changes made to the run while it went (pause, rate, users), from the dashboard's keys
    /// or a library caller's control; complete in the final snapshot.
    pub changes: Vec<Change>,
    /// The holds of a staged run (each stage that keeps its users or rate), with the requests
    /// of their seconds: a row per level, as a sweep has.
    pub holds: Vec<Hold>,
}

/// A stage of `--user-stages` or `--rate-stages` that holds its users or rate, and the requests
/// of its seconds (the request rows added together, as TOTAL).
#[derive(Debug, Clone)]
pub struct Hold {
    /// The users, or the arrivals per second, it holds.
    pub level: f64,
    /// Whether the level is a rate (the open loop).
    pub rate: bool,
    /// Seconds from the start when it begins.
    pub from: f64,
    /// Seconds from the start when it ends.
    pub to: f64,
    /// Its requests.
    pub total: LabelStats,
}

impl Hold {
    /// The holds of a plan's stages (none without stages): each stage whose target is the
    /// value it starts from, and that lasts.
    pub fn of(plan: &crate::RunPlan) -> Vec<Hold> {
        let (start, stages, rate) = match &plan.model {
            crate::LoadModel::Closed(c) => match &c.users {
                crate::Users::Stages(s) => (0.0, s, false),
                crate::Users::Fixed(_) => return Vec::new(),
            },
            crate::LoadModel::Open(o) => match &o.rate {
                crate::Rate::Stages { start, stages } => (*start, stages, true),
                crate::Rate::Constant(_) => return Vec::new(),
            },
        };
        let (mut t, mut v) = (0.0, start);
        let mut out = Vec::new();
        for s in stages {
            let d = s.duration.as_secs_f64();
            if s.target == v && d > 0.0 && v > 0.0 {
                out.push(Hold {
                    level: v,
                    rate,
                    from: t,
                    to: t + d,
                    total: LabelStats::new(format!("hold at {v}")),
                });
            }
            t += d;
            v = s.target;
        }
        out
    }
}

/// One change made to a run while it went.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Seconds since the start of the run.
    pub t: f64,
    /// What changed, in words (`rate x1.10`, `users +5`, `paused`, `resumed`).
    pub what: String,
}

impl Snapshot {
    /// An empty snapshot for a plan with the given step labels, followed by `groups` group labels.
    pub fn empty(plan: Arc<RunPlan>, labels: &[String], groups: usize) -> Self {
        let first_group = labels.len().saturating_sub(groups);
        let open = matches!(plan.model, crate::LoadModel::Open(_));
        let plan_for_holds = plan.clone();
        Snapshot {
            plan,
            started_at: std::time::SystemTime::now(),
            interrupted: false,
            elapsed: Duration::ZERO,
            state: RunState::Running,
            labels: labels
                .iter()
                .enumerate()
                .map(|(i, l)| LabelStats {
                    group: i >= first_group,
                    ..LabelStats::new(l)
                })
                .collect(),
            total: LabelStats::new("TOTAL"),
            last: LabelStats::new("last interval"),
            errors: Vec::new(),
            statuses: Vec::new(),
            aborted: 0,
            lag: open.then(|| LagStats {
                lag: crate::histogram::new(),
                late: 0,
                dropped: 0,
                scheduled: 0,
                unstarted: 0,
            }),
            series: Arc::new(Vec::new()),
            active: 0,
            lost_intervals: 0,
            containers: Vec::new(),
            databases: Vec::new(),
            lost_samples: 0,
            changes: Vec::new(),
            holds: Hold::of(&plan_for_holds),
        }
    }

    /// Completed requests (succeeded or failed, not aborted) per second over the elapsed time.
    pub fn throughput(&self) -> f64 {
        per_second(self.total.completed(), self.elapsed)
    }
}

/// `n` per second over `d` (0 for an empty duration).
pub fn per_second(n: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}
