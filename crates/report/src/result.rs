use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use throng_core::histogram;
use throng_core::per_second;
use throng_core::{LabelStats, LoadModel, Percentiles, RunPlan, SeriesPoint, Snapshot};

use crate::{ContainerResult, DatabaseResult, ThresholdResult};

/// The version of the JSON result's shape. Bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 4;

/// Latency statistics in milliseconds. With no samples (`count` 0) every figure is 0 and
/// means nothing: tables print `-`, and a threshold on it fails.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stats {
    /// How many samples the figures are of.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Stats {
    /// Milliseconds from microsecond percentiles.
    pub fn from_micros(p: &Percentiles) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Stats {
            count: p.count,
            mean: p.mean / 1000.0,
            min: ms(p.min),
            p50: ms(p.p50),
            p90: ms(p.p90),
            p95: ms(p.p95),
            p99: ms(p.p99),
            p999: ms(p.p999),
            max: ms(p.max),
        }
    }
}

/// One row of the aggregate table: a label, or TOTAL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LabelResult {
    /// The label.
    pub label: String,
    /// Whether the row is a group of steps (a flow) rather than one request.
    pub group: bool,
    /// Whether the row times the parts of another row's replies (a server stream's messages,
    /// each from the one before): its samples are parts, not requests, and its throughput
    /// parts per second; TOTAL leaves it out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parts: bool,
    /// Requests that ended: succeeded, failed, or aborted at the end of the run, and open-loop
    /// arrivals dropped (for a group: passes through it).
    pub samples: u64,
    /// Failed requests, aborted ones and dropped arrivals included.
    pub errors: u64,
    /// Requests cut off at the end of the run, still unanswered (also counted in `errors`).
    #[serde(default)]
    pub aborted: u64,
    /// Open-loop arrivals dropped, never sent: every slot busy and the queue full (also counted
    /// in `samples` and `errors`, class `dropped`; timed in no histogram).
    #[serde(default)]
    pub dropped: u64,
    /// Its failures by class (`connect`, `timeout`, `status`, ...: the names of the run's
    /// `errors`), adding up to `errors`; absent when none failed, and from results of throng
    /// before it kept them per row.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by_class: BTreeMap<String, u64>,
    /// `errors / samples` (0 to 1).
    pub error_rate: f64,
    /// Completed requests (succeeded or failed; not aborted) per second of the run.
    pub throughput: f64,
    /// Requests that succeeded, per second of the run (what an `rps` threshold tests).
    #[serde(default)]
    pub ok_per_s: f64,
    /// Operations the requests performed: one each, unless the protocol counts more (the
    /// statements of a SQL transaction).
    #[serde(default)]
    pub operations: u64,
    /// Operations per second of the run (for SQL: queries per second beside transactions).
    #[serde(default)]
    pub ops_per_s: f64,
    /// Bytes sent, headers included.
    pub bytes_sent: u64,
    /// Bytes received, headers included.
    pub bytes_received: u64,
    /// Received kilobytes (1024 bytes) per second.
    pub received_kb_per_s: f64,
    /// Sent kilobytes (1024 bytes) per second.
    pub sent_kb_per_s: f64,
    /// Latency from intended start, ms, of the requests that succeeded and of those left
    /// waiting: timed out, or aborted at the end (at the time they had waited, a lower bound).
    /// What the table shows and latency thresholds test.
    pub latency: Stats,
    /// Service time from actual start, ms, of the same requests.
    pub service: Stats,
    /// Latency of the other failures (refused connects, TLS, resets, protocol errors, HTTP
    /// error statuses, failed checks), ms: apart, because a fast failure is not a fast answer.
    #[serde(default)]
    pub failed_latency: Stats,
    /// The latency histogram (µs), HdrHistogram V2+DEFLATE, base64.
    pub latency_hdr: String,
    /// The service-time histogram (µs), HdrHistogram V2+DEFLATE, base64.
    pub service_hdr: String,
    /// The failed-latency histogram (µs), HdrHistogram V2+DEFLATE, base64.
    #[serde(default)]
    pub failed_latency_hdr: String,
    /// Where the requests' time went, when their protocol times it (HTTP): absent otherwise,
    /// and in results of throng before it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhasesResult>,
    /// The replies streamed in tokens (TTFT, ITL, TPOT, end to end, output tokens, goodput),
    /// when the protocol read them so (HTTP's `--llm`): absent otherwise, and in results of
    /// throng before it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::StreamResult>,
}

/// One phase's times: its statistics (ms) and histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhaseResult {
    /// Its statistics, ms, over the requests that had it (`count`).
    pub stats: Stats,
    /// Its histogram (µs), HdrHistogram V2+DEFLATE, base64.
    pub hdr: String,
}

/// A row's phases (the book's Where the time goes: phases): a request's latency is `blocked + connect + tls
/// + send + wait + receive`, where a phase it did not have counts 0. A request on a reused
/// connection has no `connect` or `tls`; a connection opened before a user's first request
/// gives that request its `connect` and `tls`, outside its latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhasesResult {
    /// Opening the TCP connection.
    pub connect: PhaseResult,
    /// The TLS handshake.
    pub tls: PhaseResult,
    /// Writing the request.
    pub send: PhaseResult,
    /// From the request written to the first byte of the answer (time to first byte, less
    /// the rest).
    pub wait: PhaseResult,
    /// From the answer's first byte to its last.
    pub receive: PhaseResult,
    /// Latency less the request's own phases: the open loop's lag and queueing, and the time
    /// around the call; of the requests timed in `latency` whose answer came whole.
    pub blocked: PhaseResult,
    /// Requests that opened a connection.
    pub new_connections: u64,
    /// Requests on a connection an earlier request used.
    pub reused_connections: u64,
    /// `reused_connections / (new_connections + reused_connections)` (0 to 1).
    pub reused_share: f64,
}

impl PhasesResult {
    /// Each phase with its name, in a request's order, then `blocked`.
    pub fn named(&self) -> [(&'static str, &PhaseResult); 6] {
        [
            ("blocked", &self.blocked),
            ("connect", &self.connect),
            ("tls", &self.tls),
            ("send", &self.send),
            ("wait", &self.wait),
            ("receive", &self.receive),
        ]
    }

    fn of(
        p: &throng_core::PhaseStats,
        hdr: &mut impl FnMut(&hdrhistogram::Histogram<u64>, &str) -> String,
    ) -> Self {
        use throng_core::Phase;
        let mut one = |h: &hdrhistogram::Histogram<u64>, what: &str| PhaseResult {
            stats: Stats::from_micros(&Percentiles::of(h)),
            hdr: hdr(h, what),
        };
        PhasesResult {
            connect: one(p.of(Phase::Connect), "phases.connect"),
            tls: one(p.of(Phase::Tls), "phases.tls"),
            send: one(p.of(Phase::Send), "phases.send"),
            wait: one(p.of(Phase::Wait), "phases.wait"),
            receive: one(p.of(Phase::Receive), "phases.receive"),
            blocked: one(&p.blocked, "phases.blocked"),
            new_connections: p.new,
            reused_connections: p.reused,
            reused_share: p.reused_share(),
        }
    }
}

impl LabelResult {
    /// A row from cumulative label statistics over `secs` seconds.
    pub fn from_stats(s: &LabelStats, secs: f64) -> Self {
        Self::noting(s, secs, &mut Vec::new())
    }

    /// [`LabelResult::from_stats`], adding to `warnings` a histogram that could not be encoded
    /// (its `*_hdr` is then empty: the result says so rather than pass it off as a histogram).
    pub(crate) fn noting(s: &LabelStats, secs: f64, warnings: &mut Vec<String>) -> Self {
        let d = std::time::Duration::from_secs_f64(secs.max(0.0));
        let mut hdr = |h: &hdrhistogram::Histogram<u64>, what: &str| {
            histogram::encode(h).unwrap_or_else(|e| {
                warnings.push(format!("{}: {what}: {e}; it is left empty", s.label));
                String::new()
            })
        };
        LabelResult {
            label: s.label.clone(),
            group: s.group,
            parts: s.parts,
            samples: s.samples,
            errors: s.errors,
            aborted: s.aborted,
            dropped: s.dropped,
            errors_by_class: s
                .errors_by_class()
                .map(|(c, n)| (c.name().to_string(), n))
                .collect(),
            error_rate: s.error_rate(),
            throughput: per_second(s.completed(), d),
            ok_per_s: per_second(s.succeeded(), d),
            operations: s.operations,
            ops_per_s: per_second(s.operations, d),
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            received_kb_per_s: per_second(s.bytes_received, d) / 1024.0,
            sent_kb_per_s: per_second(s.bytes_sent, d) / 1024.0,
            latency: Stats::from_micros(&Percentiles::of(&s.latency)),
            service: Stats::from_micros(&Percentiles::of(&s.service)),
            failed_latency: Stats::from_micros(&Percentiles::of(&s.failed)),
            latency_hdr: hdr(&s.latency, "latency_hdr"),
            service_hdr: hdr(&s.service, "service_hdr"),
            failed_latency_hdr: hdr(&s.failed, "failed_latency_hdr"),
            phases: s.phases.as_deref().map(|p| PhasesResult::of(p, &mut hdr)),
            stream: s
                .stream
                .as_deref()
                .map(|t| crate::StreamResult::of(t, s.samples, secs, &mut hdr)),
        }
    }
}

/// One error class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorResult {
    /// The class (`connect`, `timeout`, `reset`, `tls`, `protocol`, `status`, ...).
    pub class: String,
    /// How many requests failed with it.
    pub count: u64,
    /// The first message seen.
    pub sample: String,
}

/// A change made to the run while it went: from the live dashboard's keys or a library caller's
/// `Control` (pause and resume, rate or users up and down).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeResult {
    /// Seconds since the start of the run.
    pub t: f64,
    /// What changed (`rate x1.10`, `users +5 (now +5 on the plan)`, `paused`, `resumed`).
    pub what: String,
}

/// Open-loop schedule adherence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LagResult {
    /// Actual minus intended start, ms.
    pub lag: Stats,
    /// The lag histogram (µs), base64.
    pub lag_hdr: String,
    /// Arrivals that started later than `plan.late_after`.
    pub late: u64,
    /// Arrivals whose time came: exactly `started + dropped + unstarted`.
    #[serde(default)]
    pub scheduled: u64,
    /// Arrivals that started (their first request was sent).
    #[serde(default)]
    pub started: u64,
    /// Arrivals dropped because every slot was busy and the queue was full (also when the
    /// generator fell further behind its schedule than the queue holds).
    pub dropped: u64,
    /// Arrivals still queued when the run ended: never sent, counted as aborted requests.
    #[serde(default)]
    pub unstarted: u64,
    /// Arrivals per second achieved: arrivals that started, over the time the schedule ran
    /// (the planned duration, or less if the run was stopped; not the drain after it).
    pub achieved_rate: f64,
}

/// One second of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// Seconds since the start at the end of the interval.
    pub t: f64,
    /// Requests completed.
    pub requests: u64,
    /// Requests failed.
    pub errors: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Latency mean, ms (0 in results written before the series carried it).
    #[serde(default)]
    pub mean: f64,
    /// Latency median, ms.
    pub p50: f64,
    /// Latency 90th percentile, ms.
    pub p90: f64,
    /// Latency 95th percentile, ms.
    #[serde(default)]
    pub p95: f64,
    /// Latency 99th percentile, ms.
    pub p99: f64,
    /// Latency 99.9th percentile, ms.
    #[serde(default)]
    pub p999: f64,
    /// Latency maximum, ms.
    pub max: f64,
    /// Users or requests in flight.
    pub active: u64,
    /// Target rate (open loop), else 0.
    pub target_rate: f64,
}

impl From<&SeriesPoint> for Point {
    fn from(p: &SeriesPoint) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Point {
            t: p.t,
            requests: p.requests,
            errors: p.errors,
            bytes_sent: p.bytes_sent,
            bytes_received: p.bytes_received,
            mean: p.mean / 1000.0,
            p50: ms(p.p50),
            p90: ms(p.p90),
            p95: ms(p.p95),
            p99: ms(p.p99),
            p999: ms(p.p999),
            max: ms(p.max),
            active: p.active,
            target_rate: p.target_rate,
        }
    }
}

/// The result of one run: what `--json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunResult {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The throng version that wrote it.
    pub throng_version: String,
    /// The plan that was run.
    pub plan: RunPlan,
    /// The plan in words.
    pub description: String,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// Seconds from start to end.
    pub duration: f64,
    /// Whether the run was stopped early (signal or key) rather than ending by its plan.
    pub interrupted: bool,
    /// One row per label, in step order.
    pub labels: Vec<LabelResult>,
    /// All labels together.
    pub total: LabelResult,
    /// Errors by class.
    pub errors: Vec<ErrorResult>,
    /// Response statuses and their counts: HTTP codes as themselves (`"200"`), gRPC codes with
    /// their names (`"grpc 14 UNAVAILABLE"`), SQLSTATEs (`"sqlstate 40001"`).
    pub status_codes: BTreeMap<String, u64>,
    /// Requests cut off at the end of the run, still unanswered or still queued: counted as
    /// failures of class `aborted`, at the age they reached.
    pub aborted: u64,
    /// Open-loop schedule adherence; absent in the closed loop.
    pub open_loop: Option<LagResult>,
    /// One point per second.
    pub series: Vec<Point>,
    /// Threshold outcomes.
    pub thresholds: Vec<ThresholdResult>,
    /// Warnings about the numbers (no request succeeded, requests cut off, a generator that fell
    /// behind its schedule, coordinated omission, lost data).
    pub warnings: Vec<String>,
    /// The target's containers, when watched (`--container`): resource use and readings.
    #[serde(default)]
    pub containers: Vec<ContainerResult>,
    /// Changes made while the run went, in time order (a run changed live is not the plan alone).
    #[serde(default)]
    pub changes: Vec<ChangeResult>,
    /// Watched servers' own figures, when read (`--db-stats`, `--nats-monitor`,
    /// `--amqp-monitor`): idle and under the load, a block each.
    #[serde(default)]
    pub databases: Vec<crate::DatabaseResult>,
    /// The holds of a staged run (each stage that keeps its users or rate) with the requests of
    /// their seconds: a row per level, as a sweep's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holds: Vec<HoldResult>,
    /// How the connections reached the target, as its protocol tells it (SQL:
    /// `postgres-protocol, TLSv1.3, SCRAM-SHA-256-PLUS`); absent when it tells nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// Counts the protocol keeps beside the rows, by name; absent when it keeps none. SQL:
    /// `transactions_rolled_back` (after a failed statement), `transactions_open_at_end` (rolled
    /// back by the database as the run ended), `transactions_retried` (`--retry-on`),
    /// `reconnects` (connections reopened after one was lost).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocol_counts: BTreeMap<String, u64>,
}

/// A hold of the stages: the level it keeps, when, and its requests (TOTAL of its seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HoldResult {
    /// The users or rate it holds.
    pub level: crate::Level,
    /// Seconds from the start when it begins.
    pub from: f64,
    /// Seconds from the start when it ends (the run's end, if that came first).
    pub to: f64,
    /// Its requests, rates over its own seconds.
    pub total: LabelResult,
}

/// How long the open-loop schedule ran: the planned duration, unless the run stopped sooner.
/// The in-flight requests' drain after the schedule's end is not part of it.
fn schedule_span(s: &Snapshot) -> std::time::Duration {
    match s.plan.planned_duration() {
        Some(d) if !d.is_zero() => s.elapsed.min(d),
        _ => s.elapsed,
    }
}

impl RunResult {
    /// Adds what the driver told of the run ([`throng_core::Driver::report`]).
    pub fn with_report(mut self, report: throng_core::DriverReport) -> Self {
        self.connection = report.connection;
        self.protocol_counts = report
            .counts
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        self
    }

    /// Whether every threshold passed (a run without thresholds passes).
    pub fn passed(&self) -> bool {
        self.thresholds.iter().all(|t| t.passed)
    }
}

impl RunResult {
    /// The result of a final snapshot.
    pub fn from_snapshot(s: &Snapshot) -> Self {
        let secs = s.elapsed.as_secs_f64();
        let mut unencoded = Vec::new();
        let labels = s
            .labels
            .iter()
            .map(|l| LabelResult::noting(l, secs, &mut unencoded))
            .collect();
        let total = LabelResult::noting(&s.total, secs, &mut unencoded);
        let open_loop = s.lag.as_ref().map(|l| LagResult {
            lag: Stats::from_micros(&Percentiles::of(&l.lag)),
            lag_hdr: histogram::encode(&l.lag).unwrap_or_else(|e| {
                unencoded.push(format!("open loop: lag_hdr: {e}; it is left empty"));
                String::new()
            }),
            late: l.late,
            scheduled: l.scheduled,
            started: l.started(),
            dropped: l.dropped,
            unstarted: l.unstarted,
            achieved_rate: per_second(l.lag.len(), schedule_span(s)),
        });
        let holds = s
            .holds
            .iter()
            .filter(|h| h.from < secs)
            .map(|h| {
                let to = h.to.min(secs);
                HoldResult {
                    level: match h.rate {
                        true => crate::Level::Rate(h.level),
                        false => crate::Level::Users(h.level as u32),
                    },
                    from: h.from,
                    to,
                    total: LabelResult::noting(&h.total, to - h.from, &mut unencoded),
                }
            })
            .collect();
        let flows: Vec<(String, u64)> = s
            .labels
            .iter()
            .filter(|l| l.group)
            .map(|l| (l.label.clone(), l.completed()))
            .collect();
        let mut result = RunResult {
            schema_version: SCHEMA_VERSION,
            throng_version: env!("CARGO_PKG_VERSION").to_string(),
            plan: (*s.plan).clone(),
            description: s.plan.describe(),
            started_at: humantime::format_rfc3339_millis(s.started_at).to_string(),
            duration: secs,
            interrupted: s.interrupted,
            labels,
            total,
            errors: s
                .errors
                .iter()
                .map(|e| ErrorResult {
                    class: e.class.name().to_string(),
                    count: e.count,
                    sample: e.sample.clone(),
                })
                .collect(),
            status_codes: s
                .statuses
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            aborted: s.aborted,
            open_loop,
            series: s.series.iter().map(Point::from).collect(),
            thresholds: Vec::new(),
            warnings: warnings(s).into_iter().chain(unencoded).collect(),
            containers: s
                .containers
                .iter()
                .map(ContainerResult::from_series)
                .collect(),
            changes: s
                .changes
                .iter()
                .map(|c| ChangeResult {
                    t: c.t,
                    what: c.what.clone(),
                })
                .collect(),
            databases: s
                .databases
                .iter()
                .map(|d| {
                    let requests = s.total.samples - s.total.dropped;
                    DatabaseResult::from_series(d, secs, requests, &flows)
                })
                .collect(),
            holds,
            connection: None,
            protocol_counts: BTreeMap::new(),
        };
        crate::stream::without_unjudged_goodput(&mut result);
        result
    }
}

fn warnings(s: &Snapshot) -> Vec<String> {
    let mut w = Vec::new();
    let t = &s.total;
    if t.samples > 0 && t.succeeded() == 0 {
        w.push(format!(
            "no request succeeded: all {} failed (see the errors)",
            t.samples
        ));
    } else if t.samples == 0 {
        w.push("no request ended: there are no figures to report".to_string());
    }
    if s.aborted > 0 {
        let oldest = t.latency.max() as f64 / 1e6;
        w.push(format!(
            "{} requests were still unanswered (or queued) when the run ended: they count as failures \
             (class aborted) and in latency at the age they reached, a lower bound of their true latency \
             (the longest wait recorded: {oldest:.1} s)",
            s.aborted
        ));
    }
    if let Some(l) = &s.lag {
        let started = l.started();
        if l.scheduled > 0 && (started as f64) < 0.95 * l.scheduled as f64 {
            let pct = 100.0 * started as f64 / l.scheduled as f64;
            let pct = if pct < 0.01 {
                "under 0.01%".to_string()
            } else {
                format!("{pct:.2}%")
            };
            w.push(format!(
                "the generator started only {started} of the {} arrivals due ({pct}): {} were dropped \
                 (every slot busy and the queue full, or past what this machine can start) and {} never \
                 left the queue; the target rate was not achieved",
                l.scheduled,
                l.dropped,
                l.unstarted
            ));
        }
    }
    if let Some(msg) = coordinated_omission(s) {
        w.push(msg);
    }
    if s.lost_intervals > 0 {
        w.push(format!(
            "{} interval reports were lost on the way to the aggregator",
            s.lost_intervals
        ));
    }
    if s.lost_samples > 0 {
        w.push(format!(
            "{} requests are missing from the samples file: its writer fell behind (every \
             number here counts them)",
            s.lost_samples
        ));
    }
    w
}

/// In the closed loop, a user stuck on a slow response sends nothing meanwhile. Correcting the
/// histogram as wrk does (adding the requests a user would have sent every mean interval while it
/// waited) shows how much that hides; warn when it moves p99 by more than 10%.
fn coordinated_omission(s: &Snapshot) -> Option<String> {
    let LoadModel::Closed(c) = &s.plan.model else {
        return None;
    };
    let h = &s.total.latency;
    if h.len() < 100 {
        return None;
    }
    let think = c.think_time.map_or(0, |t| t.as_micros() as u64);
    let interval = (h.mean() as u64 + think).max(1);
    let mut corrected = histogram::new();
    corrected.add_correct(h, interval).ok()?;
    let (p99, cp99) = (h.value_at_quantile(0.99), corrected.value_at_quantile(0.99));
    if cp99 as f64 <= 1.1 * p99 as f64 {
        return None;
    }
    let (would, was) = apart(cp99, p99)?;
    Some(format!(
        "coordinated omission: this closed-loop run stalled its users (max {:.1} ms against a mean of {:.2} ms); \
         a steady stream of requests would have seen p99 of about {would} ms, not {was} ms (use -q for an open-loop run)",
        h.max() as f64 / 1000.0,
        h.mean() / 1000.0,
    ))
}

/// Two latencies (microseconds) in milliseconds with as many decimals as it takes to tell them
/// apart ("about 0.33 ms, not 0.30 ms", never "about 0.3 ms, not 0.3 ms"); `None` when three
/// decimals do not.
fn apart(a: u64, b: u64) -> Option<(String, String)> {
    (1..=3)
        .map(|d| {
            let f = |us: u64| format!("{:.*}", d, us as f64 / 1000.0);
            (f(a), f(b))
        })
        .find(|(x, y)| x != y)
}

/// The JSON Schema of [`RunResult`], as checked into the repository as `schema.json`.
pub fn schema() -> Result<String, serde_json::Error> {
    let schema = schemars::schema_for!(RunResult);
    Ok(serde_json::to_string_pretty(&schema)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_latencies_are_shown_with_the_decimals_that_tell_them_apart() {
        assert_eq!(apart(4_600, 3_800), Some(("4.6".into(), "3.8".into())));
        assert_eq!(apart(330, 300), Some(("0.33".into(), "0.30".into())));
        assert_eq!(apart(3_301, 3_300), Some(("3.301".into(), "3.300".into())));
        assert_eq!(apart(300, 300), None);
    }

    #[test]
    fn a_histogram_that_cannot_be_encoded_is_a_warning_not_a_silent_blank() {
        let mut s = LabelStats::new("get");
        // A count past what the V2 format holds (it writes counts as signed 64-bit).
        s.latency.record_n(1_000, u64::MAX).unwrap();
        s.samples = 1;
        let mut warnings = Vec::new();
        let r = LabelResult::noting(&s, 1.0, &mut warnings);
        assert_eq!(r.latency_hdr, "");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("get: latency_hdr: "),
            "{warnings:?}"
        );
        // The others encode as usual.
        assert!(!r.service_hdr.is_empty());
    }
}
