//! Every view of the dashboard, rendered from fixed snapshots into ratatui's `TestBackend` and
//! compared with the reviewed `insta` snapshots in `tests/snapshots/`.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use throng_core::Snapshot;
use throng_tui::{draw, draw_board, merge, Board, View, ViewState};

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
fn phases_view() {
    insta::assert_snapshot!(screen(&common::with_phases(), &view(View::Phases), 120, 30));
}

#[test]
fn phases_view_80x24() {
    insta::assert_snapshot!(screen(&common::with_phases(), &view(View::Phases), 80, 24));
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
    let merged = merge(&workloads).unwrap();
    for (w, h) in SIZES {
        insta::assert_snapshot!(
            format!("mix_{w}x{h}"),
            board_screen(&merged, &board, View::Mix, w, h)
        );
    }
}

/// A mix whose second workload fails every request: the header, the Errors view, the status
/// codes and the Labels table count its failures (the first workload alone had none), each row
/// and sample under its workload's name; the footer says the keys act on every workload.
#[test]
fn every_view_of_a_mix_shows_every_workload() {
    let workloads = common::mix_failing();
    let board = Board {
        grid: None,
        workloads: workloads.clone(),
    };
    let merged = merge(&workloads).unwrap();
    let text = |v| format!("{:?}", board_screen(&merged, &board, v, 120, 40));
    // 4,000 failures of 28,000 requests: 24,000 browsing, 4,000 to the one that is down.
    let overview = text(View::Overview);
    assert!(overview.contains("total 28,000"), "{overview}");
    assert!(overview.contains("errors 4,000 (14.29%)"), "{overview}");
    assert!(overview.contains("down: GET /health"), "{overview}");
    assert!(overview.contains("p99 ms by workload"), "{overview}");
    for keys in ["stop all", "all workloads ±10%", "pause all"] {
        assert!(overview.contains(keys), "{keys}:\n{overview}");
    }
    let errors = text(View::Errors);
    assert!(errors.contains("Errors: 4,000"), "{errors}");
    assert!(!errors.contains("No errors."), "{errors}");
    assert!(errors.contains("down: 503 Service Unavailable"), "{errors}");
    // A status row's count and share.
    let status = |code: &str| -> Vec<String> {
        let row = errors
            .lines()
            .find(|l| l.contains(&format!("│{code} ")))
            .unwrap_or_else(|| panic!("no {code} row:\n{errors}"));
        row.split_whitespace()
            .skip(1)
            .take(2)
            .map(String::from)
            .collect()
    };
    assert_eq!(status("200"), ["24,000", "85.71%"], "{errors}");
    assert_eq!(status("503"), ["4,000", "14.29%"], "{errors}");
    let labels = text(View::Labels);
    for row in [
        "browse: GET /",
        "browse: POST /orders",
        "> browse: order flow",
        "down: GET /health",
    ] {
        assert!(labels.contains(row), "{row}:\n{labels}");
    }
    let total = labels
        .lines()
        .find(|l| l.contains("│TOTAL "))
        .unwrap_or_else(|| panic!("no TOTAL row:\n{labels}"));
    assert!(
        total.contains(" 28000 ") && total.contains("14.29%"),
        "{total}"
    );
}

/// The views of a mix as the user sees them: every workload's rows, errors and status codes.
#[test]
fn mix_views() {
    let workloads = common::mix_failing();
    let board = Board {
        grid: None,
        workloads: workloads.clone(),
    };
    let merged = merge(&workloads).unwrap();
    for v in [View::Overview, View::Labels, View::Errors] {
        insta::assert_snapshot!(
            format!("mix_{}", v.title().to_lowercase()),
            board_screen(&merged, &board, v, 120, 40)
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

#[test]
fn streams_view() {
    insta::assert_snapshot!(screen(
        &common::with_streams(),
        &view(View::Streams),
        120,
        30
    ));
}

#[test]
fn streams_view_80x24() {
    insta::assert_snapshot!(screen(
        &common::with_streams(),
        &view(View::Streams),
        80,
        24
    ));
}
