//! The per-worker recorder: one per worker thread, touched only by that thread's users.
//!
//! Recording a request is a few histogram increments and counter adds: no lock, no atomic, no
//! allocation (a failure's first message per interval is the one exception). Once per tick the
//! worker [`Recorder::take`]s the interval's data and hands it to the aggregator.

use hdrhistogram::Histogram;
use throng_core::stream::{Goodput, StreamRecord};
use throng_core::{histogram, ErrorClass, LabelStats, Outcome, Sample, Status};
use tokio::time::Instant;

const CLASSES: usize = ErrorClass::ALL.len();

/// One worker's data for one interval.
#[derive(Debug)]
pub struct Interval {
    /// Which worker.
    pub worker: usize,
    /// Interval number: `k` covers seconds `k..k+1` of the run; the final one may be shorter.
    pub index: u64,
    /// Whether this is the worker's last interval.
    pub last: bool,
    /// Per-label data, in step order.
    pub labels: Vec<LabelStats>,
    /// Open-loop lag, µs.
    pub lag: Histogram<u64>,
    /// Late arrivals.
    pub late: u64,
    /// Dropped arrivals.
    pub dropped: u64,
    /// Failures per class, indexed by [`ErrorClass::index`].
    pub errors: [u64; CLASSES],
    /// A sample message per class.
    pub samples: [Option<String>; CLASSES],
    /// Statuses seen, with counts.
    pub statuses: Vec<(Status, u64)>,
    /// Requests aborted at the end of the run (in flight, or still queued).
    pub aborted: u64,
    /// Open-loop arrivals whose time came.
    pub scheduled: u64,
    /// Of the aborted, open-loop arrivals still queued (never sent).
    pub unstarted: u64,
    /// Users or in-flight requests on this worker at the end of the interval.
    pub active: u64,
    /// Each request of the interval, when the run keeps them (`Extras::samples`).
    pub requests: Vec<Sample>,
}

/// One pass through a group of steps, so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupPass {
    /// When its first step was due.
    pub due: Instant,
    /// When its first step started.
    pub started: Instant,
    /// The first failure in it.
    pub failed: Option<ErrorClass>,
    /// Bytes sent and received by its steps.
    pub bytes: (u64, u64),
}

/// Records requests of one worker thread.
#[derive(Debug)]
pub struct Recorder {
    names: Vec<String>,
    labels: Vec<LabelStats>,
    /// Per step, the row its reply's parts go to (none unless the driver declares parts rows).
    parts_row: Vec<Option<usize>>,
    lag: Histogram<u64>,
    late_after_us: u64,
    late: u64,
    dropped: u64,
    errors: [u64; CLASSES],
    samples: [Option<String>; CLASSES],
    statuses: Statuses,
    aborted: u64,
    scheduled: u64,
    unstarted: u64,
    /// Each request, when kept: the run's start (times are offsets from it), the worker, and
    /// the interval's requests so far.
    log: Option<(Instant, u32, Vec<Sample>)>,
    /// The user whose request is recorded next, and its worker's users alive then (see
    /// [`Recorder::user`]).
    user: (u64, u64),
    /// Where the measurement starts (see [`Recorder::measure_from`]).
    from: Option<Instant>,
    /// Goodput's objectives, judged on each request streamed in tokens.
    goodput: throng_core::stream::Goodput,
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// An interval's statuses, whatever their protocol: few (mostly one), so a short list, and the
/// one the last request matched is tried first (a compare and an add per request, as the array
/// of HTTP codes it replaces took).
#[derive(Debug, Default)]
struct Statuses {
    list: Vec<(Status, u64)>,
    /// Where in `list` the last request's status was.
    last: usize,
}

impl Statuses {
    fn count(&mut self, status: Status) {
        if let Some((s, n)) = self.list.get_mut(self.last) {
            if *s == status {
                *n += 1;
                return;
            }
        }
        match self.list.iter().position(|(s, _)| *s == status) {
            Some(i) => {
                self.list[i].1 += 1;
                self.last = i;
            }
            None => {
                self.last = self.list.len();
                self.list.push((status, 1));
            }
        }
    }
}

impl Recorder {
    /// A recorder for the given step labels.
    pub fn new(names: Vec<String>, late_after: std::time::Duration) -> Self {
        Recorder {
            labels: names.iter().map(LabelStats::new).collect(),
            parts_row: Vec::new(),
            names,
            lag: histogram::new(),
            late_after_us: micros(late_after),
            late: 0,
            dropped: 0,
            errors: [0; CLASSES],
            samples: Default::default(),
            statuses: Statuses::default(),
            aborted: 0,
            scheduled: 0,
            unstarted: 0,
            log: None,
            user: (0, 0),
            from: None,
            goodput: throng_core::stream::Goodput::default(),
        }
    }

    /// Judges each request streamed in tokens by these objectives (the plan's `goodput`).
    pub fn goodput(&mut self, goodput: throng_core::stream::Goodput) {
        self.goodput = goodput;
    }

    /// The one place that decides what a run counts: a request (or arrival, or group pass) due
    /// before `from` belongs to the warm-up, whenever it ends, and every record call ignores it;
    /// one due at or after `from` is the measurement's, however early it was handed out. So
    /// the measured run holds exactly what was due after the warm-up ended, and its open-loop
    /// arrivals add up (`scheduled = started + dropped + unstarted`) with or without one.
    pub fn measure_from(&mut self, from: Instant) {
        self.from = Some(from);
    }

    /// Whether what was due at `due` is part of the measurement.
    #[inline]
    pub fn measured(&self, due: Instant) -> bool {
        self.from.is_none_or(|f| due >= f)
    }

    /// Records the parts of step `i`'s replies in row `rows[i]` (see `Driver::parts`).
    pub fn parts_rows(&mut self, rows: Vec<Option<usize>>) {
        self.parts_row = rows;
    }

    /// Says which user the next requests recorded are of, and how many users the worker has
    /// alive (kept in their samples).
    #[inline]
    pub fn user(&mut self, user: u64, active: u64) {
        self.user = (user, active);
    }

    /// Keeps each request as a [`Sample`] too, timed from `start`, as worker `worker`'s.
    pub fn keep_samples(&mut self, start: Instant, worker: usize) {
        self.log = Some((start, worker as u32, Vec::new()));
    }

    #[allow(clippy::too_many_arguments)]
    fn log(
        &mut self,
        step: usize,
        intended: Instant,
        started: Option<Instant>,
        ended: Instant,
        outcome: &Outcome,
        error: Option<ErrorClass>,
        message: Option<String>,
    ) {
        if let Some((start, worker, log)) = &mut self.log {
            let lag = started.map_or(0, |s| micros(s.saturating_duration_since(intended)));
            // Timed but no byte came: 0, as JMeter's Latency of a sample without a response.
            let first_byte_us = match outcome.phases.is_empty() {
                true => None,
                false => Some(
                    outcome
                        .phases
                        .to_first_byte()
                        .map_or(0, |d| lag + micros(d)),
                ),
            };
            log.push(Sample {
                step: step as u32,
                worker: *worker,
                user: self.user.0,
                active: self.user.1,
                due_us: micros(intended.saturating_duration_since(*start)),
                latency_us: micros(ended.saturating_duration_since(intended)),
                service_us: started.map_or(0, |s| micros(ended.saturating_duration_since(s))),
                status: outcome.status,
                error,
                message,
                bytes_sent: outcome.bytes_sent,
                bytes_received: outcome.bytes_received,
                first_byte_us,
                connect_us: micros(outcome.phases.opening()),
            });
        }
    }

    /// Records one completed request of step `step`.
    #[inline]
    pub fn record(
        &mut self,
        step: usize,
        intended: Instant,
        started: Instant,
        ended: Instant,
        outcome: Outcome,
    ) {
        if !self.measured(intended) {
            return;
        }
        if self.log.is_some() {
            // A failure's message is copied (failures only: a success allocates nothing).
            let message = outcome.error.and(outcome.message.clone());
            self.log(
                step,
                intended,
                Some(started),
                ended,
                &outcome,
                outcome.error,
                message,
            );
        }
        if !outcome.parts.is_empty() {
            // The driver times the first part from its call's start: from the intended start,
            // it is later by the lag (DESIGN: a stalled schedule shows in time to first part).
            let lag = started.saturating_duration_since(intended);
            self.record_parts(step, &outcome.parts, lag);
        }
        let Some(row) = self.labels.get_mut(step) else {
            return;
        };
        row.samples += 1;
        row.operations += u64::from(outcome.operations.max(1));
        row.bytes_sent += outcome.bytes_sent;
        row.bytes_received += outcome.bytes_received;
        let latency = micros(ended.saturating_duration_since(intended));
        let waited = outcome.error.is_none_or(ErrorClass::waited);
        if waited {
            histogram::record(&mut row.latency, latency);
            histogram::record(
                &mut row.service,
                micros(ended.saturating_duration_since(started)),
            );
        } else {
            histogram::record(&mut row.failed, latency);
        }
        if !outcome.phases.is_empty() {
            // Blocked time is of the requests timed in `latency` only, as the phases' sum is
            // compared with it.
            let latency = waited.then_some(latency);
            row.phases
                .get_or_insert_default()
                .record(&outcome.phases, latency);
        }
        if let Some(stream) = &outcome.stream {
            let lag = started.saturating_duration_since(intended);
            record_stream(row, stream, &outcome, &self.goodput, lag, latency);
        }
        if !outcome.status.is_none() {
            self.statuses.count(outcome.status);
        }
        if let Some(class) = outcome.error {
            row.errors += 1;
            let i = class.index();
            row.classes[i] += 1;
            self.errors[i] += 1;
            if self.samples[i].is_none() {
                self.samples[i] = Some(outcome.message.unwrap_or_else(|| class.name().to_string()));
            }
        }
    }

    /// Records the parts of one reply of step `step` in its parts row: each a sample, its
    /// latency the time since the part before, the first's since the intended start (`lag`
    /// added to the driver's, timed from the call). Bytes and errors stay with the request's
    /// row.
    #[cold]
    fn record_parts(
        &mut self,
        step: usize,
        parts: &[std::time::Duration],
        lag: std::time::Duration,
    ) {
        let Some(row) = self
            .parts_row
            .get(step)
            .copied()
            .flatten()
            .and_then(|r| self.labels.get_mut(r))
        else {
            return;
        };
        row.samples += parts.len() as u64;
        row.operations += parts.len() as u64;
        for (i, d) in parts.iter().enumerate() {
            // Service time runs from the actual start: the lag is latency's only.
            let latency = if i == 0 { *d + lag } else { *d };
            histogram::record(&mut row.latency, micros(latency));
            histogram::record(&mut row.service, micros(*d));
        }
    }

    /// Records a request of step `step` cut off by the end of the run: due at `intended`, sent at
    /// `started` (`None`: an open-loop arrival still queued, never sent). It had waited until
    /// `now` without an answer, so it counts in latency at that age, and as a failure.
    pub fn record_aborted(
        &mut self,
        step: usize,
        intended: Instant,
        started: Option<Instant>,
        now: Instant,
    ) {
        if !self.measured(intended) {
            return;
        }
        self.aborted += 1;
        if started.is_none() {
            self.unstarted += 1;
        }
        if self.log.is_some() {
            let none = Outcome::default();
            self.log(
                step,
                intended,
                started,
                now,
                &none,
                Some(ErrorClass::Aborted),
                None,
            );
        }
        let Some(row) = self.labels.get_mut(step) else {
            return;
        };
        row.samples += 1;
        row.errors += 1;
        row.aborted += 1;
        histogram::record(
            &mut row.latency,
            micros(now.saturating_duration_since(intended)),
        );
        if let Some(started) = started {
            histogram::record(
                &mut row.service,
                micros(now.saturating_duration_since(started)),
            );
        }
        let i = ErrorClass::Aborted.index();
        row.classes[i] += 1;
        self.errors[i] += 1;
        if self.samples[i].is_none() {
            self.samples[i] = Some(
                "no answer when the run ended and its grace period ran out (or still queued)"
                    .to_string(),
            );
        }
    }

    /// Records one pass through a group of steps (row `row`), failed or not: its bytes are those
    /// of its steps.
    pub(crate) fn record_group(&mut self, row: usize, pass: &GroupPass, ended: Instant) {
        if !self.measured(pass.due) {
            return;
        }
        let Some(r) = self.labels.get_mut(row) else {
            return;
        };
        r.samples += 1;
        if let Some(class) = pass.failed {
            r.errors += 1;
            r.classes[class.index()] += 1;
        }
        r.bytes_sent += pass.bytes.0;
        r.bytes_received += pass.bytes.1;
        let latency = micros(ended.saturating_duration_since(pass.due));
        if pass.failed.is_none_or(ErrorClass::waited) {
            histogram::record(&mut r.latency, latency);
            histogram::record(
                &mut r.service,
                micros(ended.saturating_duration_since(pass.started)),
            );
        } else {
            histogram::record(&mut r.failed, latency);
        }
    }

    /// Records when an open-loop arrival actually started.
    #[inline]
    pub fn record_lag(&mut self, intended: Instant, started: Instant) {
        if !self.measured(intended) {
            return;
        }
        let lag = micros(started.saturating_duration_since(intended));
        histogram::record(&mut self.lag, lag);
        if lag > self.late_after_us {
            self.late += 1;
        }
    }

    /// Counts `n` arrivals dropped because the queue was full, the last of them due at `due`:
    /// failures of class `dropped` of the first step, never sent and so timed in no histogram
    /// (and not kept as samples). The caller splits a batch at the warm-up's end.
    pub fn record_dropped(&mut self, n: u64, due: Instant) {
        if n == 0 || !self.measured(due) {
            return;
        }
        self.dropped = self.dropped.saturating_add(n);
        let Some(row) = self.labels.first_mut() else {
            return;
        };
        row.samples += n;
        row.errors += n;
        row.dropped += n;
        let i = ErrorClass::Dropped.index();
        row.classes[i] += n;
        self.errors[i] += n;
        if self.samples[i].is_none() {
            self.samples[i] = Some(
                "arrivals never sent: every slot was busy and the queue full (--max-in-flight, \
                 --queue), or past what this machine can start"
                    .to_string(),
            );
        }
    }

    /// Counts `n` arrivals whose time came (started, dropped or left queued, later), the last
    /// of them due at `due`.
    pub fn record_scheduled(&mut self, n: u64, due: Instant) {
        if !self.measured(due) {
            return;
        }
        self.scheduled = self.scheduled.saturating_add(n);
    }

    /// Takes the data recorded since the last take, leaving the recorder empty.
    pub fn take(&mut self, worker: usize, index: u64, last: bool, active: u64) -> Interval {
        let labels = std::mem::replace(
            &mut self.labels,
            self.names.iter().map(LabelStats::new).collect(),
        );
        let statuses = std::mem::take(&mut self.statuses).list;
        Interval {
            worker,
            index,
            last,
            labels,
            lag: std::mem::replace(&mut self.lag, histogram::new()),
            late: std::mem::take(&mut self.late),
            dropped: std::mem::take(&mut self.dropped),
            errors: std::mem::take(&mut self.errors),
            samples: std::mem::take(&mut self.samples),
            statuses,
            aborted: std::mem::take(&mut self.aborted),
            scheduled: std::mem::take(&mut self.scheduled),
            unstarted: std::mem::take(&mut self.unstarted),
            active,
            requests: self
                .log
                .as_mut()
                .map(|(_, _, log)| std::mem::take(log))
                .unwrap_or_default(),
        }
    }
}

/// Adds a request's stream of tokens to its row: whole if it succeeded, its TTFT only if it
/// was left waiting (`latency`, µs, its age then), nothing if it failed otherwise (failures are
/// timed apart).
#[cold]
fn record_stream(
    row: &mut LabelStats,
    stream: &StreamRecord,
    outcome: &Outcome,
    goodput: &Goodput,
    lag: std::time::Duration,
    latency: u64,
) {
    match outcome.error {
        None => row
            .stream
            .get_or_insert_default()
            .record(stream, &outcome.parts, lag, goodput),
        Some(class) if class.waited() => row.stream.get_or_insert_default().record_waited(
            Some(stream),
            lag,
            std::time::Duration::from_micros(latency),
        ),
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two spaces of codes, as two protocols would declare them.
    static WEB: throng_core::StatusSpace = throng_core::StatusSpace {
        name: "web",
        write: |c, f| write!(f, "{c}"),
        class: |_| throng_core::StatusClass::Success,
    };
    static RPC: throng_core::StatusSpace = throng_core::StatusSpace {
        name: "rpc",
        write: |c, f| write!(f, "rpc {c}"),
        class: |_| throng_core::StatusClass::Success,
    };

    #[test]
    fn statuses_of_every_protocol_are_counted_each_as_it_is() {
        let mut r = Recorder::new(vec!["a".into()], std::time::Duration::from_millis(10));
        let t = Instant::now();
        let statuses = [
            WEB.status(200),
            WEB.status(200),
            RPC.status(0),
            WEB.status(200),
            WEB.status(503),
            Status::NONE,
            RPC.status(0),
            RPC.status(200),
            WEB.status(200),
        ];
        for status in statuses {
            let outcome = Outcome {
                status,
                ..Outcome::default()
            };
            r.record(0, t, t, t, outcome);
        }
        let mut got = r.take(0, 0, true, 0).statuses;
        got.sort();
        assert_eq!(
            got,
            vec![
                (RPC.status(0), 2),
                (RPC.status(200), 1),
                (WEB.status(200), 4),
                (WEB.status(503), 1),
            ]
        );
        // The next interval starts from none.
        assert!(r.take(0, 1, true, 0).statuses.is_empty());
    }

    #[test]
    fn phases_make_a_rows_phase_histograms_only_when_a_protocol_reports_them() {
        use std::time::Duration;
        use throng_core::{Connection, Phase, Phases};
        let mut r = Recorder::new(vec!["a".into(), "b".into()], Duration::from_millis(10));
        let t = Instant::now();
        let mut phases = Phases::on(Connection::New);
        phases.set(Phase::Connect, Duration::from_millis(2));
        phases.set(Phase::Wait, Duration::from_millis(3));
        phases.set(Phase::Receive, Duration::from_millis(4));
        let ok = Outcome {
            phases,
            ..Outcome::default()
        };
        // Due 1 ms before it started, 10 ms before it ended: blocked is 10 - 9 = 1 ms.
        let (due, started, ended) = (
            t,
            t + Duration::from_millis(1),
            t + Duration::from_millis(10),
        );
        r.record(0, due, started, ended, ok.clone());
        r.record(1, due, started, ended, Outcome::default());
        let mut failed = ok;
        failed.error = Some(ErrorClass::Status);
        r.record(0, due, started, ended, failed);
        let got = r.take(0, 0, true, 0).labels;
        let p = got[0].phases.as_ref().expect("phases of row a");
        assert_eq!(p.of(Phase::Connect).len(), 2);
        assert_eq!(p.of(Phase::Send).len(), 0);
        assert_eq!(p.new, 2);
        // The failure is timed apart, and so is not in blocked.
        assert_eq!(p.blocked.len(), 1);
        assert_eq!(p.blocked.max(), p.blocked.highest_equivalent(1_000));
        assert!(got[1].phases.is_none());
    }

    #[test]
    fn a_kept_samples_first_byte_counts_from_its_due_time_and_its_connect_is_the_opening() {
        use std::time::Duration;
        use throng_core::{Connection, Phase, Phases};
        let mut r = Recorder::new(vec!["a".into()], Duration::from_millis(10));
        let t = Instant::now();
        r.keep_samples(t, 0);
        let ms = Duration::from_millis;
        let mut phases = Phases::on(Connection::New);
        phases.set(Phase::Connect, ms(2));
        phases.set(Phase::Send, ms(1));
        phases.set(Phase::Wait, ms(3));
        phases.set(Phase::Receive, ms(4));
        let ok = Outcome {
            phases,
            ..Outcome::default()
        };
        // Started 1 ms late: its first byte came 1 + 2 + 1 + 3 ms after it was due.
        r.record(0, t, t + ms(1), t + ms(11), ok);
        let mut reset = Phases::on(Connection::Reused);
        reset.set(Phase::Send, ms(1));
        let cut = Outcome {
            phases: reset,
            ..Outcome::failed(ErrorClass::Reset, "reset")
        };
        r.record(0, t, t, t + ms(2), cut);
        r.record(0, t, t, t + ms(2), Outcome::default());
        let got: Vec<_> = r
            .take(0, 0, true, 0)
            .requests
            .iter()
            .map(|s| (s.first_byte_us, s.connect_us))
            .collect();
        assert_eq!(got, vec![(Some(7_000), 2_000), (Some(0), 0), (None, 0)]);
    }

    /// A reply's first part runs from the intended start: the lag before the request started
    /// is added to its latency (not its service time, nor the later parts'), also when the
    /// request failed after its parts (a stream cut off).
    #[test]
    fn a_first_part_counts_from_the_intended_start() {
        use std::time::Duration;
        let ms = Duration::from_millis;
        let mut r = Recorder::new(vec!["a".into(), "a (events)".into()], ms(10));
        r.parts_rows(vec![Some(1)]);
        let t = Instant::now();
        let parts = |error| Outcome {
            parts: vec![ms(20), ms(5)],
            error,
            ..Outcome::default()
        };
        // Started 7 ms after it was due.
        r.record(0, t, t + ms(7), t + ms(40), parts(None));
        r.record(0, t, t + ms(7), t + ms(40), parts(Some(ErrorClass::Cut)));
        let got = r.take(0, 0, true, 0).labels;
        let row = &got[1];
        assert_eq!(row.samples, 4);
        let at = |h: &throng_core::histogram::Histogram<u64>, q: f64| h.value_at_quantile(q);
        assert_eq!(
            at(&row.latency, 1.0),
            row.latency.highest_equivalent(27_000)
        );
        assert_eq!(at(&row.latency, 0.0), row.latency.lowest_equivalent(5_000));
        assert_eq!(
            at(&row.service, 1.0),
            row.service.highest_equivalent(20_000)
        );
        assert_eq!(got[0].errors, 1);
    }

    /// A stream of tokens adds to its row: whole when the request succeeded (TTFT and end to
    /// end from the intended start, the gaps as ITL, goodput judged there), TTFT alone when it
    /// timed out (its age when no token came), nothing when it failed otherwise.
    #[test]
    fn a_stream_of_tokens_counts_from_the_intended_start_and_a_stall_at_its_age() {
        use std::time::Duration;
        let ms = Duration::from_millis;
        let mut r = Recorder::new(vec!["chat".into()], ms(10));
        r.goodput("ttft<30ms".parse().unwrap());
        let t = Instant::now();
        let answer = |error, first: Option<u64>| Outcome {
            parts: first.map_or(Vec::new(), |f| vec![ms(f), ms(10), ms(10)]),
            stream: Some(Box::new(StreamRecord {
                first: first.map(ms),
                last: ms(first.unwrap_or(0) + 20),
                tokens: if first.is_some() { 3 } else { 0 },
                counted: true,
            })),
            error,
            ..Outcome::default()
        };
        // Started 5 and 15 ms late: TTFT 25 ms (good) and 35 ms.
        r.record(0, t, t + ms(5), t + ms(50), answer(None, Some(20)));
        r.record(0, t, t + ms(15), t + ms(60), answer(None, Some(20)));
        // Stalled with no token, timed out 900 ms after it was due.
        r.record(
            0,
            t,
            t,
            t + ms(900),
            answer(Some(ErrorClass::Timeout), None),
        );
        // Cut: failures are timed apart.
        r.record(0, t, t, t + ms(40), answer(Some(ErrorClass::Cut), Some(20)));
        let got = r.take(0, 0, true, 0).labels;
        let s = got[0].stream.as_deref().expect("a stream row");
        assert_eq!(
            (s.requests, s.output_tokens, s.good, s.counted),
            (2, 6, 1, 2)
        );
        assert_eq!(s.ttft.len(), 3);
        assert_eq!(s.ttft.min(), s.ttft.lowest_equivalent(25_000));
        assert_eq!(s.ttft.max(), s.ttft.highest_equivalent(900_000));
        assert_eq!((s.itl.len(), s.tpot.len(), s.e2e.len()), (4, 2, 2));
        assert_eq!(s.e2e.max(), s.e2e.highest_equivalent(55_000));
    }
}
