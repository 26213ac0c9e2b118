//! throng's live terminal dashboard.
//!
//! The design decision is the split of state, update and render: the run's numbers live only in
//! the engine's [`Snapshot`](throng_core::Snapshot), published about once a second; what the
//! dashboard itself remembers (the view on screen, scrolling, what its keys changed) is a small
//! [`ViewState`] that only [`ViewState::update`] changes; and [`render`] is a pure function of the
//! two, drawn by widgets that borrow their data. The loop in [`run`] redraws at a fixed rate
//! (about ten frames a second), whatever the request rate, and never touches the hot path: it
//! reads snapshots and calls the engine's [`Control`](throng_engine::Control).
//!
//! The same loop shows a grid's runs one after another and a mix's workloads at once: it draws a
//! [`Live`] value (the runs on the board, each with its snapshot and controls, and a
//! [`GridBoard`]) that the caller keeps up to date. A mix's views are drawn from its workloads
//! [`merge`]d into one snapshot, the same sums as the result's TOTAL, so every view shows every
//! workload. The board is data the caller makes, the grid's
//! level table formatted by the report's own code, so the dashboard formats no table twice.
//!
//! Tests render fixed snapshots into ratatui's `TestBackend` and compare them with `insta`
//! snapshots, so each view is reviewed as text.
#![deny(missing_docs)]

mod board;
pub mod format;
mod merge;
mod render;
pub mod state;
mod terminal;
pub mod widgets;

pub use board::{model, Board, CurveLine, GridBoard, Workload};
pub use merge::merge;
pub use render::{draw, draw_board, render, render_board, MIN_HEIGHT, MIN_WIDTH};
pub use state::{Command, View, ViewState};
pub use terminal::{apply, run, Exit, Live, LiveRun, FRAME};
