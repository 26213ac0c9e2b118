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
//! Tests render fixed snapshots into ratatui's `TestBackend` and compare them with `insta`
//! snapshots, so each view is reviewed as text.
#![deny(missing_docs)]

pub mod format;
mod render;
pub mod state;
mod terminal;
pub mod widgets;

pub use render::{draw, render, MIN_HEIGHT, MIN_WIDTH};
pub use state::{Command, View, ViewState};
pub use terminal::{apply, run, Exit, FRAME};
