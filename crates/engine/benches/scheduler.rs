//! Producing open-loop tickets and recording outcomes: the engine's own per-request costs.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use throng_core::{Arrivals, Outcome, Rate, Stage};
use throng_engine::recorder::Recorder;
use throng_engine::schedule::Schedule;
use tokio::time::Instant;

/// A protocol's space of codes, as HTTP's is (recording compares a status per request).
static OK: throng_core::StatusSpace = throng_core::StatusSpace {
    name: "http",
    write: |c, f| write!(f, "{c}"),
    class: |_| throng_core::StatusClass::Success,
};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tickets");
    g.throughput(Throughput::Elements(100_000));
    g.bench_function("100k even tickets at 100k/s", |b| {
        b.iter(|| {
            Schedule::new(
                &Rate::Constant(100_000.0),
                Arrivals::Even,
                Some(1.0),
                0,
                1,
                Some(1),
            )
            .count()
        })
    });
    g.bench_function("100k Poisson tickets at 100k/s", |b| {
        b.iter(|| {
            Schedule::new(
                &Rate::Constant(100_000.0),
                Arrivals::Poisson,
                Some(1.0),
                0,
                1,
                Some(1),
            )
            .count()
        })
    });
    // A gamma schedule's shards each draw the whole schedule's steps and take their turn: one
    // worker of 4 draws 400k steps for its 100k tickets.
    for (shape, workers) in [(0.25, 1), (4.0, 1), (0.25, 4)] {
        let name = format!("100k gamma tickets, shape {shape}, 1 worker of {workers}");
        g.bench_function(&name, |b| {
            b.iter(|| {
                Schedule::new(
                    &Rate::Constant(100_000.0 * workers as f64),
                    Arrivals::Gamma { shape },
                    Some(1.0),
                    0,
                    workers,
                    Some(1),
                )
                .count()
            })
        });
    }
    let ramp = Rate::Stages {
        start: 0.0,
        stages: vec![Stage {
            duration: Duration::from_secs(2),
            target: 100_000.0,
        }],
    };
    g.bench_function("100k ramping tickets", |b| {
        b.iter(|| Schedule::new(&ramp, Arrivals::Even, Some(2.0), 0, 1, Some(1)).count())
    });
    g.finish();

    let mut rec = Recorder::new(vec!["GET /".into()], Duration::from_millis(10));
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_micros(120);
    let t2 = t0 + Duration::from_micros(870);
    c.bench_function("record one outcome", |b| {
        b.iter(|| {
            let o = Outcome {
                status: OK.status(200),
                bytes_sent: 38,
                bytes_received: 120,
                ..Outcome::default()
            };
            rec.record(0, black_box(t0), black_box(t1), black_box(t2), o);
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
