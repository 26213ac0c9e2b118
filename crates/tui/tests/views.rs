//! Every view of the dashboard, rendered from fixed snapshots into ratatui's `TestBackend` and
//! compared with the reviewed `insta` snapshots in `tests/snapshots/`.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use throng_core::Snapshot;
use throng_tui::{draw, View, ViewState};

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
