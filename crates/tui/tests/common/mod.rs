//! A fixed synthetic snapshot: no clock, no randomness, so every screen renders the same.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use throng_core::histogram::record;
use throng_core::{
    Arrivals, ClosedLoop, ContainerInfo, ContainerSample, ContainerSeries, DatabaseInfo,
    DatabaseSample, DatabaseSeries, ErrorClass, ErrorStat, LabelStats, LoadModel, OpenLoop, Rate,
    RunPlan, SeriesPoint, Snapshot, StatusClass, StatusSpace, Users,
};

/// HTTP's status codes, as the HTTP crate declares them (the dashboard knows no protocol).
pub(crate) static HTTP: StatusSpace = StatusSpace {
    name: "http",
    write: |code, f| write!(f, "{code}"),
    class: |code| match code {
        100..=299 => StatusClass::Success,
        300..=399 => StatusClass::Redirect,
        400..=499 => StatusClass::Warning,
        _ => StatusClass::Failure,
    },
};

/// When every fixture's run started: the same instant, so a mix's seconds line up.
const STARTED: std::time::SystemTime = std::time::UNIX_EPOCH;

fn closed_plan() -> RunPlan {
    RunPlan::new(
        "http://127.0.0.1:8080/",
        LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(50),
            requests: None,
            iterations: None,
            duration: Some(Duration::from_secs(30)),
            think_time: None,
        }),
    )
}

fn open_plan() -> RunPlan {
    RunPlan::new(
        "http://127.0.0.1:8080/",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(2000.0),
            arrivals: Arrivals::Even,
            max_in_flight: 1000,
            queue: 1000,
            requests: None,
            duration: Some(Duration::from_secs(30)),
        }),
    )
}

/// Fills a row with `n` samples spread deterministically between `base` and `base + spread` µs,
/// with a slow tail every 97th sample.
fn fill(row: &mut LabelStats, n: u64, base: u64, spread: u64, errors: u64) {
    for i in 0..n {
        let mut v = base + (i * 7919) % spread;
        if i % 97 == 0 {
            v *= 6;
        }
        record(&mut row.latency, v);
        record(&mut row.service, v * 4 / 5);
    }
    row.samples += n;
    row.errors += errors;
    row.bytes_sent += n * 60;
    row.bytes_received += n * 180;
}

fn series(seconds: u64, rate: f64) -> Vec<SeriesPoint> {
    (1..=seconds)
        .map(|t| {
            let requests = 1800 + (t * 37) % 400 - if t == 7 { 900 } else { 0 };
            SeriesPoint {
                t: t as f64,
                requests,
                errors: if t >= 9 { 10 + t % 3 } else { 0 },
                bytes_sent: requests * 60,
                bytes_received: requests * 180,
                mean: 1400.0 + ((t * 53) % 300) as f64,
                p50: 1200 + (t * 53) % 300,
                p90: 2400 + (t * 71) % 500,
                p95: 3000 + (t * 71) % 500,
                p99: 5200 + (t * 97) % 1500 + if t == 7 { 9000 } else { 0 },
                p999: 9000 + (t * 97) % 1500 + if t == 7 { 9000 } else { 0 },
                max: 14_000 + t * 100,
                active: 50,
                target_rate: rate,
            }
        })
        .collect()
}

fn base(plan: RunPlan, rate: f64) -> Snapshot {
    let labels = vec![
        "GET /".to_string(),
        "POST /orders".to_string(),
        "order flow".to_string(),
    ];
    // The last label is a group: one row per flow of the two steps.
    let mut s = Snapshot::empty(Arc::new(plan), &labels, 1);
    s.started_at = STARTED;
    s.elapsed = Duration::from_secs(12);
    fill(&mut s.labels[0], 18_000, 900, 2_000, 12);
    fill(&mut s.labels[1], 6_000, 1_500, 4_000, 30);
    fill(&mut s.labels[2], 6_000, 4_000, 6_000, 30);
    let (a, b) = (s.labels[0].clone(), s.labels[1].clone());
    s.total.add(&a);
    s.total.add(&b);
    fill(&mut s.last, 2_000, 1_000, 2_500, 11);
    s.errors = vec![
        ErrorStat {
            class: ErrorClass::Status,
            count: 30,
            sample: "503 Service Unavailable".into(),
        },
        ErrorStat {
            class: ErrorClass::Timeout,
            count: 12,
            sample: "no response within 30s".into(),
        },
    ];
    s.statuses = vec![(HTTP.status(200), 23_958), (HTTP.status(503), 30)];
    s.series = Arc::new(series(12, rate));
    s.active = 50;
    s
}

/// A closed loop of 50 users, 12 s into a 30 s run, two labels, errors.
pub(crate) fn closed() -> Snapshot {
    base(closed_plan(), 0.0)
}

/// An open loop at 2000 req/s, with lag, late and dropped arrivals.
pub(crate) fn open() -> Snapshot {
    let mut s = base(open_plan(), 2000.0);
    if let Some(lag) = s.lag.as_mut() {
        for i in 0..24_000u64 {
            record(
                &mut lag.lag,
                5 + (i * 31) % 200 + if i % 500 == 0 { 20_000 } else { 0 },
            );
        }
        lag.late = 48;
        lag.dropped = 3;
    }
    s.active = 37;
    s
}

/// The closed loop with two watched containers.
pub(crate) fn with_containers() -> Snapshot {
    let mut s = closed();
    let series = |name: &str, image: &str, cpu: f64, mem: u64| ContainerSeries {
        info: ContainerInfo {
            id: format!("{name}-id"),
            name: name.into(),
            image: image.into(),
            image_size: 20 << 20,
            gone: None,
        },
        samples: (0..12u64)
            .map(|t| ContainerSample {
                t: t as f64 + 1.0,
                cpu_percent: cpu * (0.5 + (t % 4) as f64 / 6.0),
                mem_used: mem + t * (1 << 20),
                mem_limit: 512 << 20,
                net_rx: t * 1_500_000,
                net_tx: t * 4_000_000,
                blk_read: 3 << 20,
                blk_write: 1 << 20,
                pids: 12,
            })
            .collect(),
    };
    s.containers = vec![
        series("bank-go", "bank-go:latest", 80.0, 40 << 20),
        series("bank-java", "bank-java:latest", 160.0, 300 << 20),
    ];
    s
}

/// The closed loop with one database read once a second (`--db-stats`): 2 idle readings, then
/// 10 of the load at 400 transactions and 6,400 statements a second.
pub(crate) fn with_database() -> Snapshot {
    let mut s = closed();
    let reading = |t: f64, trx: u64, rollbacks: u64, stmts: u64| DatabaseSample {
        t,
        values: vec![trx, rollbacks, stmts],
    };
    let mut samples = vec![
        reading(-1.0, 1000, 5, 20_000),
        reading(-0.01, 1001, 5, 20_010),
    ];
    samples.extend(
        (1..=10u64).map(|i| reading(i as f64, 1001 + 390 * i, 5 + 10 * i, 20_010 + 6_400 * i)),
    );
    s.databases = vec![DatabaseSeries {
        info: DatabaseInfo {
            name: "mysql://bench:***@127.0.0.1:3306/bench".into(),
            kind: "Database".into(),
            figures: ["Com_commit", "Com_rollback", "Questions"]
                .map(|n| throng_core::Figure::counter(n, n, "statements"))
                .to_vec(),
            transactions: vec![0, 1],
            commits: vec![0],
            statements: Some(2),
            kinds: Vec::new(),
        },
        samples,
        failures: None,
    }];
    s
}

/// The closed loop with nine labels, as the demo's scenario has: seven steps and two flows.
pub(crate) fn nine_labels() -> Snapshot {
    let mut s = closed();
    let names = [
        "create alice",
        "create bob",
        "balance alice",
        "balance bob",
        "transfer",
        "verify alice",
        "verify bob",
        "transfer flow",
        "browse flow",
    ];
    let labels: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut fresh = Snapshot::empty(s.plan.clone(), &labels, 2);
    for (i, l) in fresh.labels.iter_mut().enumerate() {
        let i = i as u64;
        fill(l, 2_000 + i * 300, 800 + i * 150, 1_500 + i * 100, i % 3);
    }
    fresh.total = LabelStats::new("TOTAL");
    for l in fresh
        .labels
        .iter()
        .filter(|l| !l.group)
        .cloned()
        .collect::<Vec<_>>()
    {
        fresh.total.add(&l);
    }
    s.labels = fresh.labels;
    s.total = fresh.total;
    s
}

/// A sweep of 10, 20, 40 and 80 users, two levels done and the third running, judged by
/// `p99<10ms`: the level table as the run crate makes it from the report's.
pub(crate) fn grid() -> throng_tui::GridBoard {
    let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    throng_tui::GridBoard {
        at: "run 3 of at most 4: 40 users".into(),
        table: vec![
            row(&[
                "Users",
                "Throughput (/s)",
                "Samples",
                "Mean",
                "p50",
                "p90",
                "p95",
                "p99",
                "Max",
                "Error %",
                "Aborted",
                "Thresholds",
            ]),
            row(&[
                "10", "4862.0", "48620", "2.05", "1.98", "2.40", "2.61", "3.90", "12.10", "0.00",
                "0", "pass",
            ]),
            row(&[
                "20", "9410.3", "94103", "2.12", "2.01", "2.80", "3.30", "5.20", "19.50", "0.00",
                "0", "pass",
            ]),
            row(&[
                "40", "11980.4", "59902", "3.34", "2.90", "5.10", "7.70", "11.80", "40.20", "0.02",
                "0", "FAIL",
            ]),
        ],
        running: Some(2),
        notes: vec!["capacity: 20 users at p99<10ms (9410.3 requests/s)".into()],
        curve: vec![
            throng_tui::CurveLine {
                name: "p99".into(),
                points: vec![(4862.0, 3.9), (9410.3, 5.2), (11980.4, 11.8)],
            },
            throng_tui::CurveLine {
                name: "p50".into(),
                points: vec![(4862.0, 1.98), (9410.3, 2.01), (11980.4, 2.9)],
            },
        ],
        cooling: false,
    }
}

/// Two workloads at once: browsing by 50 users, orders at 2,000 a second.
pub(crate) fn mix() -> Vec<throng_tui::Workload> {
    vec![
        throng_tui::Workload {
            name: "browse".into(),
            snap: Arc::new(closed()),
        },
        throng_tui::Workload {
            name: "orders".into(),
            snap: Arc::new(open()),
        },
    ]
}

/// The open loop paused from 4 s to 7 s: its seconds are gaps, not zeros.
pub(crate) fn paused() -> Snapshot {
    let mut s = open();
    let mut series = (*s.series).clone();
    for p in series.iter_mut().filter(|p| p.t > 4.0 && p.t <= 7.0) {
        p.requests = 0;
        p.errors = 0;
        (p.p50, p.p99) = (0, 0);
    }
    s.series = Arc::new(series);
    s.changes = vec![
        throng_core::Change {
            t: 4.0,
            what: "paused".into(),
        },
        throng_core::Change {
            t: 7.0,
            what: "resumed".into(),
        },
    ];
    s
}

/// A workload whose every request fails: 4,000 requests answered 503, 12 s into a 30 s run at
/// 500 a second (an open loop), one step.
pub(crate) fn down() -> Snapshot {
    let plan = RunPlan::new(
        "down.yaml",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(500.0),
            arrivals: Arrivals::Even,
            max_in_flight: 100,
            queue: 100,
            requests: None,
            duration: Some(Duration::from_secs(30)),
        }),
    );
    let mut s = Snapshot::empty(Arc::new(plan), &["GET /health".to_string()], 0);
    s.started_at = STARTED;
    s.elapsed = Duration::from_secs(12);
    let row = &mut s.labels[0];
    for i in 0..4_000u64 {
        record(&mut row.failed, 200 + i % 50);
    }
    row.samples = 4_000;
    row.errors = 4_000;
    row.classes[ErrorClass::Status.index()] = 4_000;
    let row = row.clone();
    if let Some(lag) = s.lag.as_mut() {
        for i in 0..4_000u64 {
            record(&mut lag.lag, 10 + i % 90);
        }
        lag.scheduled = 4_000;
    }
    s.total.add(&row);
    s.last.samples = 500;
    s.last.errors = 500;
    s.errors = vec![ErrorStat {
        class: ErrorClass::Status,
        count: 4_000,
        sample: "503 Service Unavailable".into(),
    }];
    s.statuses = vec![(HTTP.status(503), 4_000)];
    s.series = Arc::new(
        (1..=12)
            .map(|t| SeriesPoint {
                t: t as f64,
                requests: 500,
                errors: 500,
                target_rate: 500.0,
                ..SeriesPoint::default()
            })
            .collect(),
    );
    s
}

/// A mix whose second workload fails every request: browsing by 50 users, then `down`.
pub(crate) fn mix_failing() -> Vec<throng_tui::Workload> {
    let mut browse = closed();
    // The browsing itself is clean, so every failure on screen is the second workload's.
    for l in browse
        .labels
        .iter_mut()
        .chain([&mut browse.total, &mut browse.last])
    {
        l.errors = 0;
    }
    browse.errors.clear();
    browse.statuses = vec![(HTTP.status(200), 24_000)];
    vec![
        throng_tui::Workload {
            name: "browse".into(),
            snap: Arc::new(browse),
        },
        throng_tui::Workload {
            name: "down".into(),
            snap: Arc::new(down()),
        },
    ]
}

/// The closed loop's two request rows with their phases: `GET /` on kept-alive connections
/// (50 opened, the rest reused), `POST /orders` over TLS, a connection each.
pub(crate) fn with_phases() -> Snapshot {
    use throng_core::{Connection, Phase, PhaseStats, Phases};
    let mut s = closed();
    let phases = |n: u64, fresh: u64, tls: bool, wait: u64| {
        let mut p = PhaseStats::default();
        for i in 0..n {
            let mut one = Phases::on(match i < fresh {
                true => Connection::New,
                false => Connection::Reused,
            });
            let us = Duration::from_micros;
            if i < fresh {
                one.set(Phase::Connect, us(150 + i % 40));
                if tls {
                    one.set(Phase::Tls, us(900 + (i * 31) % 400));
                }
            }
            one.set(Phase::Send, us(12 + i % 9));
            one.set(Phase::Wait, us(wait + (i * 7919) % wait));
            one.set(Phase::Receive, us(40 + (i * 13) % 200));
            let inside = one.inside().as_micros() as u64;
            p.record(&one, Some(inside + 20 + i % 50));
        }
        p
    };
    s.labels[0].phases = Some(Box::new(phases(18_000, 50, false, 800)));
    s.labels[1].phases = Some(Box::new(phases(6_000, 6_000, true, 1_400)));
    let mut total = PhaseStats::default();
    for l in &s.labels[..2] {
        total.add(l.phases.as_deref().expect("just set"));
    }
    s.total.phases = Some(Box::new(total));
    s
}

/// The closed loop's first row answering in streams of tokens: TTFT 40 to 60 ms, 64 tokens
/// 10 ms apart (a few gaps of 30 ms), a third of the requests past `ttft<55ms`, with goodput
/// judged.
pub(crate) fn with_streams() -> Snapshot {
    use throng_core::stream::{Goodput, StreamRecord, StreamStats};
    let mut s = closed();
    let mut plan = (*s.plan).clone();
    plan.goodput = "ttft<55ms".parse().expect("objectives");
    s.plan = Arc::new(plan);
    let goodput: Goodput = s.plan.goodput.clone();
    let mut st = StreamStats::default();
    let ms = Duration::from_millis;
    for i in 0..3_000u64 {
        let first = ms(40 + i % 21);
        let mut parts = vec![first];
        parts.extend((1..64).map(|k| ms(if (i + k) % 97 == 0 { 30 } else { 10 })));
        let r = StreamRecord {
            first: Some(first),
            last: parts.iter().sum(),
            tokens: 64,
            counted: false,
        };
        st.record(&r, &parts, Duration::from_micros(300), &goodput);
    }
    s.labels[0].stream = Some(Box::new(st.clone()));
    s.total.stream = Some(Box::new(st));
    s
}
