//! What a run's snapshot says, as metric families: names, help, units, labels and values, in one
//! neutral form that the exposition ([`crate::expose`]) and remote write ([`crate::push`]) both
//! write out, so the two can never disagree on a name or a number.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use hdrhistogram::Histogram;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use throng_core::{LabelStats, Snapshot};

/// The labels of one series, in the order they were given (remote write sorts them).
pub(crate) use crate::Labels;

/// The bucket bounds of every latency histogram, in seconds: 8 µs × 2^(j/8) for j = 0..=192
/// (8 µs to 134 s), each rounded to 4 significant figures. Consecutive bounds are at most
/// 1.0914 apart (2^(1/8) = 1.0905, and rounding moves a bound by 0.05% at most), so `histogram_quantile`,
/// which interpolates inside the bucket holding the quantile, is within 9.2% of the true value
/// for a quantile between 8 µs and 134 s; HdrHistogram's own 0.1% keeps it within
/// [`QUANTILE_ERROR`].
pub static BOUNDS: LazyLock<Vec<f64>> = LazyLock::new(|| {
    (0..=192)
        .map(|j| {
            let us = 8.0 * 2f64.powf(f64::from(j) / 8.0);
            // 4 significant figures, by exact powers of ten.
            let k = us.log10().floor() as i32 - 3;
            let rounded = match k >= 0 {
                true => (us / 10f64.powi(k)).round() * 10f64.powi(k),
                false => (us * 10f64.powi(-k)).round() / 10f64.powi(-k),
            };
            rounded / 1e6
        })
        .collect()
});

/// How far `histogram_quantile` over these buckets may be from the run's own percentile, as a
/// fraction of it (for percentiles between 8 µs and 134 s): the buckets' ratio (9.14% at most,
/// rounding included) and HdrHistogram's 3 significant figures.
pub const QUANTILE_ERROR: f64 = 0.095;

/// A histogram as Prometheus keeps it: per bucket (not cumulative; the last is `+Inf`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Buckets {
    /// Sum of the samples, seconds.
    pub(crate) sum: f64,
    /// Samples.
    pub(crate) count: u64,
    /// Samples in each bucket of [`BOUNDS`], then above the last bound.
    pub(crate) counts: Vec<u64>,
}

impl Buckets {
    /// An HdrHistogram of microseconds in [`BOUNDS`]: each recorded value (its highest
    /// equivalent, as the run's percentiles read it) goes to the first bucket whose bound is at
    /// least it.
    pub(crate) fn of(h: &Histogram<u64>) -> Buckets {
        let bounds = &*BOUNDS;
        let mut counts = vec![0u64; bounds.len() + 1];
        let mut sum = 0.0;
        for v in h.iter_recorded() {
            let s = v.value_iterated_to() as f64 / 1e6;
            let n = v.count_at_value();
            counts[bounds.partition_point(|b| *b < s)] += n;
            sum += s * n as f64;
        }
        Buckets {
            sum,
            count: h.len(),
            counts,
        }
    }

    /// `(upper bound, samples in the bucket)`, `+Inf` last.
    pub(crate) fn pairs(&self) -> Vec<(f64, u64)> {
        BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts.iter().copied())
            .collect()
    }
}

/// One series' value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// A counter.
    Count(u64),
    /// A gauge.
    Gauge(f64),
    /// A histogram.
    Histogram(Buckets),
}

/// A metric family: its series share a name, a help text, a unit and a type.
#[derive(Debug, Clone)]
pub(crate) struct Family {
    /// The name without its unit and `_total` (OpenMetrics' family name without the unit).
    pub(crate) name: &'static str,
    /// What it counts.
    pub(crate) help: &'static str,
    /// Seconds or bytes, appended to the name.
    pub(crate) unit: Option<Unit>,
    /// Its series.
    pub(crate) series: Vec<(Labels, Value)>,
}

impl Family {
    /// The name Prometheus stores: with the unit, and `_total` for a counter.
    pub(crate) fn stored_name(&self) -> String {
        let mut n = self.name.to_string();
        if let Some(u) = &self.unit {
            n.push('_');
            n.push_str(u.as_str());
        }
        if matches!(self.series.first(), Some((_, Value::Count(_)))) {
            n.push_str("_total");
        }
        n
    }

    fn metric_type(&self) -> MetricType {
        match self.series.first() {
            Some((_, Value::Count(_))) => MetricType::Counter,
            Some((_, Value::Histogram(_))) => MetricType::Histogram,
            _ => MetricType::Gauge,
        }
    }

    /// Writes the family in the text exposition.
    pub(crate) fn encode(&self, enc: &mut DescriptorEncoder<'_>) -> std::fmt::Result {
        use prometheus_client::encoding::NoLabelSet;
        let mut m =
            enc.encode_descriptor(self.name, self.help, self.unit.as_ref(), self.metric_type())?;
        for (labels, value) in &self.series {
            let mut s = m.encode_family(labels)?;
            match value {
                Value::Count(n) => s.encode_counter::<NoLabelSet, _, u64>(n, None)?,
                Value::Gauge(g) => s.encode_gauge(g)?,
                Value::Histogram(b) => {
                    s.encode_histogram::<NoLabelSet>(b.sum, b.count, &b.pairs(), None)?
                }
            }
        }
        Ok(())
    }
}

/// Families being gathered, in the order first named.
#[derive(Debug, Default)]
pub(crate) struct Families(pub(crate) Vec<Family>);

impl Families {
    /// Adds a series to the family `name` (made on first use).
    pub(crate) fn add(
        &mut self,
        name: &'static str,
        help: &'static str,
        unit: Option<Unit>,
        labels: Labels,
        value: Value,
    ) {
        let i = match self.0.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.0.push(Family {
                    name,
                    help,
                    unit,
                    series: Vec::new(),
                });
                self.0.len() - 1
            }
        };
        self.0[i].series.push((labels, value));
    }

    /// Adds a histogram of microseconds to the family `name`, in seconds.
    fn seconds(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: Labels,
        h: &Histogram<u64>,
    ) {
        let b = Buckets::of(h);
        self.add(name, help, Some(Unit::Seconds), labels, Value::Histogram(b));
    }

    /// Adds every metric of one run's snapshot, each series labelled with `run` (its side,
    /// level, round and shard) besides its own labels.
    pub(crate) fn run(&mut self, run: &Labels, s: &Snapshot) {
        let with = |extra: &[(&'static str, String)]| -> Labels {
            let mut l = run.clone();
            l.extend(extra.iter().map(|(k, v)| (Cow::Borrowed(*k), v.clone())));
            l
        };
        let judged = !s.plan.goodput.is_empty();
        for row in &s.labels {
            self.row(&with(&[("label", row.label.clone())]), row, judged);
        }
        // Every class, at 0 until one fails: a counter that appears only with its first error
        // would hide that error from rate() and increase().
        for class in throng_core::ErrorClass::ALL {
            let n = s
                .errors
                .iter()
                .filter(|e| e.class == class)
                .map(|e| e.count)
                .sum();
            self.add(
                "throng_errors",
                "Failed requests by error class (aborted at the end and dropped arrivals included).",
                None,
                with(&[("class", class.name().to_string())]),
                Value::Count(n),
            );
        }
        self.add(
            "throng_active",
            "Users (closed loop) or requests in flight (open loop) now.",
            None,
            run.clone(),
            Value::Gauge(s.active as f64),
        );
        self.add(
            "throng_elapsed",
            "Time since the load started.",
            Some(Unit::Seconds),
            run.clone(),
            Value::Gauge(s.elapsed.as_secs_f64()),
        );
        self.add(
            "throng_lost_intervals",
            "Interval data the workers could not hand to the aggregator (should stay 0).",
            None,
            run.clone(),
            Value::Count(s.lost_intervals),
        );
        if let Some(lag) = &s.lag {
            let arrivals: [(&'static str, &'static str, u64); 4] = [
                (
                    "throng_arrivals_scheduled",
                    "Open loop: arrivals whose time came (started, dropped or still queued).",
                    lag.scheduled,
                ),
                (
                    "throng_arrivals_started",
                    "Open loop: arrivals started (the achieved arrival rate is its rate()).",
                    lag.started(),
                ),
                (
                    "throng_arrivals_dropped",
                    "Open loop: arrivals dropped, never sent (no free slot and the queue full).",
                    lag.dropped,
                ),
                (
                    "throng_arrivals_late",
                    "Open loop: arrivals started later than --late-after after their time.",
                    lag.late,
                ),
            ];
            for (name, help, n) in arrivals {
                self.add(name, help, None, run.clone(), Value::Count(n));
            }
            let target = s.series.last().map_or(0.0, |p| p.target_rate);
            self.add(
                "throng_arrival_rate_target",
                "Open loop: the arrival rate asked for now, per second.",
                None,
                run.clone(),
                Value::Gauge(target),
            );
        }
        for c in &s.containers {
            let Some(last) = c.samples.last() else {
                continue;
            };
            let l = with(&[("container", c.info.name.clone())]);
            self.add(
                "throng_container_cpu_cores",
                "A watched container's CPU use, in cores (docker stats' CPU % / 100).",
                None,
                l.clone(),
                Value::Gauge(last.cpu_percent / 100.0),
            );
            let gauges: [(&'static str, &'static str, u64); 3] = [
                (
                    "throng_container_memory_used",
                    "A watched container's memory in use (usage minus inactive file cache).",
                    last.mem_used,
                ),
                (
                    "throng_container_memory_limit",
                    "A watched container's memory limit.",
                    last.mem_limit,
                ),
                ("throng_container_pids", "", last.pids),
            ];
            for (name, help, v) in gauges {
                let (help, unit) = match help.is_empty() {
                    true => ("Processes and threads in a watched container.", None),
                    false => (help, Some(Unit::Bytes)),
                };
                self.add(name, help, unit, l.clone(), Value::Gauge(v as f64));
            }
            let counters: [(&'static str, &'static str, u64); 4] = [
                (
                    "throng_container_network_received",
                    "A watched container's network bytes received since it started.",
                    last.net_rx,
                ),
                (
                    "throng_container_network_sent",
                    "A watched container's network bytes sent since it started.",
                    last.net_tx,
                ),
                (
                    "throng_container_block_read",
                    "A watched container's block device bytes read since it started.",
                    last.blk_read,
                ),
                (
                    "throng_container_block_written",
                    "A watched container's block device bytes written since it started.",
                    last.blk_write,
                ),
            ];
            for (name, help, v) in counters {
                self.add(name, help, Some(Unit::Bytes), l.clone(), Value::Count(v));
            }
        }
        for d in &s.databases {
            let Some(last) = d.samples.last() else {
                continue;
            };
            let l = with(&[("database", d.info.name.clone())]);
            // A server that counts no transactions (a broker) has none to export, not 0.
            if d.info.transactions.is_empty() {
                continue;
            }
            let transactions = throng_core::DatabaseSeries::sum(last, &d.info.transactions);
            self.add(
                "throng_database_transactions",
                "A watched database's transactions, committed and rolled back, by its own counters (--db-stats).",
                None,
                l.clone(),
                Value::Count(transactions),
            );
            if let Some(i) = d.info.statements {
                let n = last.values.get(i).copied().unwrap_or(0);
                self.add(
                    "throng_database_statements",
                    "A watched database's statements, by its own counter (--db-stats).",
                    None,
                    l,
                    Value::Count(n),
                );
            }
        }
    }

    /// One row of the run's table: a step's requests, a flow's, or a stream's parts.
    /// `judged`: the plan has goodput's objectives.
    fn row(&mut self, labels: &Labels, r: &LabelStats, judged: bool) {
        // Steps' rows add up to the run's TOTAL; flows and parts have families of their own, so
        // that `sum(throng_requests_total)` is the run's requests.
        let (count, latency, service) = match (r.group, r.parts) {
            (true, _) => (
                ("throng_flows", "Flows (groups of steps) by outcome."),
                ("throng_flow_latency", "Latency of flows that succeeded or waited."),
                ("throng_flow_service_time", "Service time of flows that succeeded or waited."),
            ),
            (false, true) => (
                ("throng_parts", "Parts of streams (messages) by outcome."),
                ("throng_part_latency", "Latency of parts of streams."),
                ("throng_part_service_time", "Service time of parts of streams."),
            ),
            (false, false) => (
                (
                    "throng_requests",
                    "Requests by outcome: succeeded, failed, aborted at the end, dropped (open-loop arrivals never sent).",
                ),
                (
                    "throng_latency",
                    "Latency from intended start to end of response, of the requests that succeeded and of those left waiting (timed out, aborted).",
                ),
                (
                    "throng_service_time",
                    "Service time from actual start to end of response, of the same requests as throng_latency_seconds.",
                ),
            ),
        };
        let failed = r.errors.saturating_sub(r.aborted).saturating_sub(r.dropped);
        for (outcome, n) in [
            ("succeeded", r.succeeded()),
            ("failed", failed),
            ("aborted", r.aborted),
            ("dropped", r.dropped),
        ] {
            let mut l = labels.clone();
            l.push(("outcome".into(), outcome.to_string()));
            self.add(count.0, count.1, None, l, Value::Count(n));
        }
        for ((name, help), h) in [(latency, &r.latency), (service, &r.service)] {
            self.seconds(name, help, labels.clone(), h);
        }
        if r.group || r.parts {
            return;
        }
        // Each class at 0 until one fails, as throng_errors; summed over the labels, by class,
        // they are throng_errors.
        for class in throng_core::ErrorClass::ALL {
            let mut l = labels.clone();
            l.push(("class".into(), class.name().to_string()));
            self.add(
                "throng_label_errors",
                "Failed requests of each label by error class (by class over the labels: throng_errors).",
                None,
                l,
                Value::Count(r.classes[class.index()]),
            );
        }
        let bytes: [(&'static str, &'static str, u64); 2] = [
            (
                "throng_sent",
                "Bytes written, headers included.",
                r.bytes_sent,
            ),
            (
                "throng_received",
                "Bytes read, headers included.",
                r.bytes_received,
            ),
        ];
        for (name, help, n) in bytes {
            self.add(
                name,
                help,
                Some(Unit::Bytes),
                labels.clone(),
                Value::Count(n),
            );
        }
        self.add(
            "throng_operations",
            "Operations the requests performed (one each, or each statement of a transaction).",
            None,
            labels.clone(),
            Value::Count(r.operations),
        );
        if let Some(p) = &r.phases {
            self.phases(labels, p);
        }
        if let Some(s) = &r.stream {
            self.streams(labels, s, judged);
        }
    }

    /// A row's replies streamed in tokens: TTFT, ITL, TPOT and end to end as histograms (vLLM
    /// exports the same four), and counters whose rate() is the rest: streams, output tokens
    /// (tokens a second) and, when `judged` by goodput's objectives, the good ones (goodput).
    fn streams(&mut self, labels: &Labels, s: &throng_core::stream::StreamStats, judged: bool) {
        let times: [(&'static str, &'static str, &Histogram<u64>); 4] = [
            (
                "throng_ttft",
                "Time to first token, from the intended start, of the streams that succeeded and of those left waiting (their age if no token came).",
                &s.ttft,
            ),
            (
                "throng_itl",
                "Inter-token latency: each gap between two tokens of a stream that succeeded.",
                &s.itl,
            ),
            (
                "throng_tpot",
                "Time per output token after the first, of the streams that succeeded with two tokens or more.",
                &s.tpot,
            ),
            (
                "throng_e2e",
                "End to end, from the intended start to the last token, of the streams that succeeded with a token.",
                &s.e2e,
            ),
        ];
        for (name, help, h) in times {
            self.seconds(name, help, labels.clone(), h);
        }
        let mut counts: Vec<(&'static str, &'static str, u64)> = vec![
            (
                "throng_streams",
                "Requests that succeeded with a stream of tokens.",
                s.requests,
            ),
            (
                "throng_output_tokens",
                "Output tokens of the streams that succeeded (their rate() is tokens a second).",
                s.output_tokens,
            ),
        ];
        if judged {
            counts.push((
                "throng_good_streams",
                "Streams that met every goodput objective (their rate() is goodput).",
                s.good,
            ));
        }
        for (name, help, n) in counts {
            self.add(name, help, None, labels.clone(), Value::Count(n));
        }
    }

    /// A row's phases, for a protocol that times them: a histogram per phase (and blocked), and
    /// its requests on new and reused connections.
    fn phases(&mut self, labels: &Labels, p: &throng_core::PhaseStats) {
        let all = throng_core::Phase::ALL
            .iter()
            .map(|ph| (ph.name(), p.of(*ph)))
            .chain([("blocked", &p.blocked)]);
        for (name, h) in all {
            let mut l = labels.clone();
            l.push(("phase".into(), name.to_string()));
            self.seconds(
                "throng_phase",
                "Where requests' time went: connect, tls, send, wait (to the first byte), receive, each of the requests that had it, and blocked (latency less the rest).",
                l,
                h,
            );
        }
        for (how, n) in [("new", p.new), ("reused", p.reused)] {
            let mut l = labels.clone();
            l.push(("connection".into(), how.to_string()));
            self.add(
                "throng_connection_uses",
                "Requests on a connection they opened (new) or an earlier request's (reused).",
                None,
                l,
                Value::Count(n),
            );
        }
    }
}

/// The families of several runs' snapshots, each with its labels.
pub(crate) fn families(runs: &[(Labels, Arc<Snapshot>)]) -> Families {
    let mut f = Families::default();
    for (labels, s) in runs {
        f.run(labels, s);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_phases_are_a_histogram_each_and_its_connection_uses() {
        use throng_core::{Connection, Phase, Phases};
        let mut row = LabelStats::new("GET /");
        let mut f = Families::default();
        f.row(&Labels::new(), &row, false);
        assert!(
            f.0.iter().all(|f| f.name != "throng_phase"),
            "no phases, no family"
        );
        let mut p = Phases::on(Connection::New);
        p.set(Phase::Connect, std::time::Duration::from_micros(300));
        p.set(Phase::Wait, std::time::Duration::from_millis(20));
        let mut stats = throng_core::PhaseStats::default();
        stats.record(&p, None);
        stats.record(&Phases::on(Connection::Reused), None);
        row.phases = Some(Box::new(stats));
        let mut f = Families::default();
        f.row(&Labels::new(), &row, false);
        let phase =
            f.0.iter()
                .find(|f| f.name == "throng_phase")
                .expect("phases");
        assert_eq!(phase.stored_name(), "throng_phase_seconds");
        assert_eq!(phase.series.len(), 6);
        let count = |name: &str| {
            phase
                .series
                .iter()
                .find(|(l, _)| l.iter().any(|(k, v)| k == "phase" && v == name))
                .map(|(_, v)| match v {
                    Value::Histogram(b) => b.count,
                    _ => u64::MAX,
                })
        };
        assert_eq!(
            (count("connect"), count("wait"), count("tls")),
            (Some(1), Some(1), Some(0))
        );
        let uses =
            f.0.iter()
                .find(|f| f.name == "throng_connection_uses")
                .expect("uses");
        assert_eq!(uses.stored_name(), "throng_connection_uses_total");
        let values: Vec<_> = uses.series.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(values, vec![Value::Count(1), Value::Count(1)]);
    }

    #[test]
    fn a_rows_streams_are_four_histograms_and_their_counts() {
        use std::time::Duration;
        use throng_core::stream::{Goodput, StreamRecord, StreamStats};
        let ms = Duration::from_millis;
        let mut stats = StreamStats::default();
        let goodput: Goodput = "ttft<100ms".parse().expect("objectives");
        let r = StreamRecord {
            first: Some(ms(40)),
            last: ms(90),
            tokens: 6,
            counted: false,
        };
        stats.record(
            &r,
            &[ms(40), ms(10), ms(10), ms(10), ms(10), ms(10)],
            ms(0),
            &goodput,
        );
        let mut row = LabelStats::new("POST /v1/chat/completions");
        row.stream = Some(Box::new(stats));
        let find = |f: &Families, name: &str| {
            f.0.iter()
                .find(|x| x.name == name)
                .map(|x| (x.stored_name(), x.series[0].1.clone()))
        };
        let mut f = Families::default();
        f.row(&Labels::new(), &row, true);
        for (name, count, seconds) in [
            ("throng_ttft", 1, 0.040),
            ("throng_itl", 5, 0.050),
            ("throng_tpot", 1, 0.010),
            ("throng_e2e", 1, 0.090),
        ] {
            let (stored, v) = find(&f, name).expect(name);
            assert_eq!(stored, format!("{name}_seconds"));
            let Value::Histogram(b) = v else {
                panic!("{name} is a histogram")
            };
            assert_eq!(b.count, count, "{name}");
            assert!(
                (b.sum - seconds).abs() < seconds * 0.002,
                "{name} {}",
                b.sum
            );
        }
        for (name, n) in [
            ("throng_streams", 1),
            ("throng_output_tokens", 6),
            ("throng_good_streams", 1),
        ] {
            let (stored, v) = find(&f, name).expect(name);
            assert_eq!((stored, v), (format!("{name}_total"), Value::Count(n)));
        }
        let mut f = Families::default();
        f.row(&Labels::new(), &row, false);
        assert!(
            find(&f, "throng_good_streams").is_none(),
            "no objectives, no goodput"
        );
    }

    #[test]
    fn bounds_are_at_most_the_stated_ratio_apart() {
        let b = &*BOUNDS;
        assert_eq!(b.len(), 193);
        assert_eq!(b[0], 8e-6);
        assert!((b[8] - 16e-6).abs() < 1e-12, "{}", b[8]);
        assert!(b[192] > 134.0 && b[192] < 134.3, "{}", b[192]);
        for w in b.windows(2) {
            let r = w[1] / w[0];
            assert!(r > 1.08 && r < 1.0915, "{} / {} = {r}", w[1], w[0]);
        }
    }

    #[test]
    fn buckets_hold_every_sample_once_and_quantiles_stay_within_the_error() {
        let mut h = throng_core::histogram::new();
        for us in [5u64, 100, 1_000, 1_001, 25_000, 300_000_000] {
            throng_core::histogram::record(&mut h, us);
        }
        let b = Buckets::of(&h);
        assert_eq!(b.count, 6);
        assert_eq!(b.counts.iter().sum::<u64>(), 6);
        assert_eq!(b.counts[0], 1, "5 µs is in the first bucket (up to 8 µs)");
        assert_eq!(
            *b.counts.last().expect("+Inf"),
            1,
            "300 s is above the last bound"
        );
        // 1 000 µs and 1 001 µs: both in (939 µs, 1.024 ms].
        let i = BOUNDS.partition_point(|x| *x < 1e-3);
        assert_eq!((BOUNDS[i - 1], BOUNDS[i]), (939e-6, 1.024e-3));
        assert_eq!(b.counts[i], 2);
    }
}
