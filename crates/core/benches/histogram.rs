//! Recording one latency and merging histograms: the per-request and per-second costs.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use throng_core::histogram;

fn bench(c: &mut Criterion) {
    let mut h = histogram::new();
    let mut v = 1u64;
    c.bench_function("record one sample", |b| {
        b.iter(|| {
            v = v
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            histogram::record(&mut h, black_box(v >> 44));
        })
    });
    let mut full = histogram::new();
    for i in 0..1_000_000u64 {
        histogram::record(&mut full, (i * 7919) % 5_000_000 + 1);
    }
    c.bench_function("merge a 1M-sample histogram", |b| {
        b.iter(|| {
            let mut total = histogram::new();
            total.add(black_box(&full)).ok();
            total
        })
    });
    let text = histogram::encode(&full).expect("encodes");
    c.bench_function("encode + decode a 1M-sample histogram", |b| {
        b.iter(|| histogram::encode(black_box(&full)).map(|t| histogram::decode(&t)))
    });
    black_box(text);
}

criterion_group!(benches, bench);
criterion_main!(benches);
