//! Every view of the dashboard, rendered from fixed snapshots into ratatui's `TestBackend` and
//! compared with the reviewed `insta` snapshots in `tests/snapshots/`.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use throng_core::Snapshot;
use throng_tui::{draw, draw_board, Board, View, ViewState};

fn screen(snap: &Snapshot, state: &ViewState, width: u16, height: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal
        .draw(|f| draw(f, snap, state))
        .expect("draw into the test backend");
    terminal.backend().clone()
}

fn view(v: View) -> ViewState {
    ViewState {
        view: v,
        ..ViewState::default()
    }
}

#[test]
fn overview_closed_loop() {
    insta::assert_snapshot!(screen(&common::closed(), &view(View::Overview), 120, 36));
}

#[test]
fn overview_open_loop() {
    insta::assert_snapshot!(screen(&common::open(), &view(View::Overview), 120, 36));
}

#[test]
fn overview_80x24() {
    insta::assert_snapshot!(screen(&common::closed(), &view(View::Overview), 80, 24));
}

#[test]
fn overview_with_containers() {
    insta::assert_snapshot!(screen(
        &common::with_containers(),
        &view(View::Overview),
        120,
        40
    ));
}

#[test]
fn labels_view() {
    insta::assert_snapshot!(screen(&common::closed(), &view(View::Labels), 120, 30));
}

#[test]
fn errors_view() {
    insta::assert_snapshot!(screen(&common::closed(), &view(View::Errors), 100, 30));
}

#[test]
fn containers_view() {
    insta::assert_snapshot!(screen(
        &common::with_containers(),
        &view(View::Containers),
        100,
        24
    ));
}

#[test]
fn paused_and_changed_by_keys() {
    let state = ViewState {
        paused: true,
        rate_factor: 1.21,
        ..ViewState::default()
    };
    insta::assert_snapshot!(screen(&common::open(), &state, 100, 24));
}

#[test]
fn too_small() {
    insta::assert_snapshot!(screen(&common::closed(), &ViewState::default(), 50, 10));
}

fn board_screen(snap: &Snapshot, board: &Board, v: View, width: u16, height: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal
        .draw(|f| draw_board(f, snap, board, &view(v)))
        .expect("draw into the test backend");
    terminal.backend().clone()
}

/// The sizes every main view is reviewed at.
const SIZES: [(u16, u16); 4] = [(80, 24), (100, 30), (160, 50), (240, 60)];

#[test]
fn overview_at_every_size() {
    for (w, h) in SIZES {
        insta::assert_snapshot!(
            format!("overview_nine_labels_{w}x{h}"),
            screen(&common::nine_labels(), &view(View::Overview), w, h)
        );
    }
}

#[test]
fn grid_at_every_size() {
    let board = Board {
        grid: Some(Arc::new(common::grid())),
        workloads: Vec::new(),
    };
    for (w, h) in SIZES {
        insta::assert_snapshot!(
            format!("grid_{w}x{h}"),
            board_screen(&common::closed(), &board, View::Grid, w, h)
        );
    }
}

#[test]
fn mix_at_every_size() {
    let workloads = common::mix();
    let board = Board {
        grid: None,
        workloads: workloads.clone(),
    };
    for (w, h) in SIZES {
        insta::assert_snapshot!(
            format!("mix_{w}x{h}"),
            board_screen(&workloads[0].snap, &board, View::Mix, w, h)
        );
    }
}

/// At 160x50, as a new user first sees the demo: every label row, and no panel left blank.
#[test]
fn overview_160x50_shows_every_label_and_no_blank_panel() {
    let snap = common::nine_labels();
    let text = format!("{:?}", screen(&snap, &view(View::Overview), 160, 50));
    for l in &snap.labels {
        assert!(text.contains(&l.label), "{} missing:\n{text}", l.label);
    }
    assert!(!text.contains("to scroll"), "{text}");
    assert!(text.contains("Percentiles ms"), "{text}");
    assert!(text.contains("99.999%"), "{text}");
    // Legends name each line.
    for name in ["━ req/s", "━ errors/s", "━ p50", "━ p99", "━ latency"] {
        assert!(text.contains(name), "{name}:\n{text}");
    }
}

#[test]
fn paused_seconds_are_gaps() {
    insta::assert_snapshot!(screen(&common::paused(), &view(View::Overview), 120, 36));
}
