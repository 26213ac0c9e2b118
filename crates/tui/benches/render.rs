//! One full frame of the dashboard rendered into a buffer, as the live loop draws ten times a
//! second.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use throng_tui::{render, View, ViewState};

#[path = "../tests/common/mod.rs"]
mod common;

fn frames(c: &mut Criterion) {
    let cases = [
        ("overview_closed_120x40", common::closed(), View::Overview),
        ("overview_open_120x40", common::open(), View::Overview),
        (
            "overview_containers_120x40",
            common::with_containers(),
            View::Overview,
        ),
        ("labels_120x40", common::closed(), View::Labels),
        // The demo's nine rows with the percentile spectrum (250 quantiles a frame).
        (
            "overview_nine_labels_160x50",
            common::nine_labels(),
            View::Overview,
        ),
    ];
    for (name, snap, view) in cases {
        let state = ViewState {
            view,
            ..ViewState::default()
        };
        let (w, h) = if name.ends_with("160x50") {
            (160, 50)
        } else {
            (120, 40)
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        c.bench_function(name, |b| {
            b.iter(|| {
                buf.reset();
                render(buf.area, &mut buf, &snap, &state);
            })
        });
    }
}

criterion_group!(benches, frames);
criterion_main!(benches);
