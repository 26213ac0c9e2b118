//! The live dashboard in a run: whether to show it, and showing it until the run ends.
//!
//! The dashboard only reads snapshots and calls the run's controls, so a run with it produces the
//! same final snapshot, summary and JSON as a headless one. The terminal is touched only when
//! [`wanted`] says so.

use std::io::IsTerminal as _;
use std::sync::Arc;

use throng_core::Snapshot;
use throng_engine::RunHandle;

/// Whether to show the dashboard: stdout is a terminal that can draw, and `--no-tui` was not
/// given. Anything else runs headless and never initialises the terminal.
pub fn wanted(no_tui: bool) -> bool {
    !no_tui
        && std::io::stdout().is_terminal()
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// How a run shown live ended.
#[derive(Debug)]
pub struct Shown {
    /// The final snapshot.
    pub snapshot: Arc<Snapshot>,
    /// The user stopped the run from the dashboard.
    pub stopped: bool,
}

/// Shows the dashboard until the run ends (or the user stops it and leaves), then waits for the
/// final snapshot. If the terminal fails, the run goes on headless to its end.
pub async fn show(handle: RunHandle) -> Shown {
    let control = handle.control();
    let token = handle.stop_token();
    let stop = move || token.cancel();
    let stopped = match throng_tui::run(handle.snapshots(), control.clone(), &stop).await {
        Ok(exit) => exit.stopped,
        Err(e) => {
            eprintln!("throng: the live dashboard failed ({e}); the run goes on without it");
            false
        }
    };
    if stopped {
        eprintln!("stopping: finishing requests in flight, then writing results");
    }
    let snapshot = handle.wait().await;
    Shown { snapshot, stopped }
}
