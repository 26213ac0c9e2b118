//! Key handling: `ViewState::update` alone, no terminal.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use throng_tui::{merge, Board, Command, View, ViewState};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

#[test]
fn q_stops_then_leaves() {
    let snap = common::closed();
    let mut s = ViewState::default();
    assert_eq!(s.update(ch('q'), &snap), Some(Command::Stop));
    assert!(s.stopping);
    assert_eq!(s.update(ch('q'), &snap), Some(Command::Leave));
}

#[test]
fn ctrl_c_stops() {
    let snap = common::closed();
    let mut s = ViewState::default();
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(s.update(ctrl_c, &snap), Some(Command::Stop));
    // A plain c does nothing.
    let mut s = ViewState::default();
    assert_eq!(s.update(ch('c'), &snap), None);
    assert!(!s.stopping);
}

#[test]
fn tab_cycles_views_and_skips_containers_when_none() {
    let snap = common::closed();
    let mut s = ViewState::default();
    let mut seen = Vec::new();
    for _ in 0..4 {
        s.update(key(KeyCode::Tab), &snap);
        seen.push(s.view);
    }
    // The fixture's run has a flow: its view comes after the errors.
    assert_eq!(
        seen,
        [View::Labels, View::Errors, View::Mix, View::Overview]
    );
    s.update(key(KeyCode::BackTab), &snap);
    assert_eq!(s.view, View::Mix);
    s.update(key(KeyCode::BackTab), &snap);
    assert_eq!(s.view, View::Errors);

    let snap = common::with_containers();
    let mut s = ViewState::default();
    for _ in 0..3 {
        s.update(key(KeyCode::Tab), &snap);
    }
    assert_eq!(s.view, View::Containers);
}

#[test]
fn number_keys_pick_views() {
    let snap = common::with_containers();
    let mut s = ViewState::default();
    s.update(ch('3'), &snap);
    assert_eq!(s.view, View::Errors);
    s.update(ch('4'), &snap);
    assert_eq!(s.view, View::Containers);
    s.update(ch('1'), &snap);
    assert_eq!(s.view, View::Overview);
    // No containers: 4 is the next view (the flows'), 5 is nothing.
    let snap = common::closed();
    s.update(ch('5'), &snap);
    assert_eq!(s.view, View::Overview);
    s.update(ch('4'), &snap);
    assert_eq!(s.view, View::Mix);
}

#[test]
fn scrolling_resets_on_view_change() {
    let snap = common::closed();
    let mut s = ViewState::default();
    s.update(ch('2'), &snap);
    s.update(key(KeyCode::Down), &snap);
    s.update(ch('j'), &snap);
    assert_eq!(s.scroll, 2);
    s.update(key(KeyCode::Up), &snap);
    assert_eq!(s.scroll, 1);
    s.update(ch('3'), &snap);
    assert_eq!(s.scroll, 0);
    s.update(key(KeyCode::Up), &snap);
    assert_eq!(s.scroll, 0);
}

#[test]
fn plus_minus_scale_the_open_loop_rate() {
    let snap = common::open();
    let mut s = ViewState::default();
    assert_eq!(s.update(ch('+'), &snap), Some(Command::ScaleRate(1.1)));
    assert_eq!(s.update(ch('+'), &snap), Some(Command::ScaleRate(1.1)));
    assert!((s.rate_factor - 1.21).abs() < 1e-9);
    assert_eq!(
        s.update(ch('-'), &snap),
        Some(Command::ScaleRate(1.0 / 1.1))
    );
    assert!((s.rate_factor - 1.1).abs() < 1e-9);
}

#[test]
fn plus_minus_change_closed_loop_users_by_a_tenth() {
    // 50 users: steps of 5.
    let snap = common::closed();
    let mut s = ViewState::default();
    assert_eq!(s.update(ch('+'), &snap), Some(Command::AddUsers(5)));
    assert_eq!(s.users(&snap), Some(55));
    // 55 users: 10% is 5 (rounded down).
    assert_eq!(s.update(ch('='), &snap), Some(Command::AddUsers(5)));
    assert_eq!(s.update(ch('-'), &snap), Some(Command::AddUsers(-6)));
    assert_eq!(s.users(&snap), Some(54));
}

#[test]
fn minus_never_goes_below_one_user_and_adds_at_least_one() {
    let snap = common::closed();
    let mut s = ViewState {
        user_delta: -47,
        ..ViewState::default()
    };
    // 3 users: a tenth rounds to 0, so the step is 1.
    assert_eq!(s.update(ch('-'), &snap), Some(Command::AddUsers(-1)));
    assert_eq!(s.update(ch('-'), &snap), Some(Command::AddUsers(-1)));
    assert_eq!(s.users(&snap), Some(1));
    assert_eq!(s.update(ch('-'), &snap), None);
    assert_eq!(s.users(&snap), Some(1));
    assert_eq!(s.update(ch('+'), &snap), Some(Command::AddUsers(1)));
}

#[test]
fn p_pauses_and_resumes() {
    let snap = common::closed();
    let mut s = ViewState::default();
    assert_eq!(s.update(ch('p'), &snap), Some(Command::SetPaused(true)));
    assert!(s.paused);
    assert_eq!(s.update(ch('p'), &snap), Some(Command::SetPaused(false)));
    assert!(!s.paused);
}

#[test]
fn no_changes_while_stopping_and_releases_ignored() {
    let snap = common::open();
    let mut s = ViewState::default();
    let mut release = ch('q');
    release.kind = KeyEventKind::Release;
    assert_eq!(s.update(release, &snap), None);
    assert!(!s.stopping);
    s.update(ch('q'), &snap);
    assert_eq!(s.update(ch('+'), &snap), None);
    assert_eq!(s.update(ch('p'), &snap), None);
    assert!((s.rate_factor - 1.0).abs() < 1e-9);
}

/// In a mix, `+` and `-` change every workload, each by its own tenth (the browsing's 50
/// users by 5, the orders' rate by 10%), and `p` pauses the whole board.
#[test]
fn in_a_mix_plus_minus_change_every_workload_and_p_pauses_them_all() {
    let workloads = common::mix();
    let board = Board {
        grid: None,
        workloads: workloads.clone(),
    };
    let snap = merge(&workloads).unwrap();
    let mut s = ViewState::default();
    assert_eq!(
        s.update_in(ch('+'), &snap, &board),
        Some(Command::Each(vec![
            Some(Command::AddUsers(5)),
            Some(Command::ScaleRate(1.1)),
        ]))
    );
    assert_eq!(s.deltas, [5, 0]);
    assert_eq!(s.user_delta, 5);
    assert!((s.rate_factor - 1.1).abs() < 1e-9);
    // 55 users now: a tenth is 5.
    assert_eq!(
        s.update_in(ch('-'), &snap, &board),
        Some(Command::Each(vec![
            Some(Command::AddUsers(-5)),
            Some(Command::ScaleRate(1.0 / 1.1)),
        ]))
    );
    assert_eq!(s.deltas, [0, 0]);
    assert!((s.rate_factor - 1.0).abs() < 1e-9);
    assert_eq!(
        s.update_in(ch('p'), &snap, &board),
        Some(Command::SetPaused(true))
    );
    // A workload at one user keeps it; the other still changes.
    let mut s = ViewState {
        deltas: vec![-49, 0],
        ..ViewState::default()
    };
    assert_eq!(
        s.update_in(ch('-'), &snap, &board),
        Some(Command::Each(vec![
            None,
            Some(Command::ScaleRate(1.0 / 1.1))
        ]))
    );
    assert_eq!(s.deltas, [-49, 0]);
}
