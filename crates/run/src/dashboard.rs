//! The live dashboard as an observer of the run.
//!
//! The dashboard only reads snapshots and calls the run's controls, so a run with it produces
//! the same final snapshot, summary and JSON as a headless one.

use std::io::IsTerminal as _;
use std::sync::Arc;

use throng_core::Snapshot;
use throng_engine::RunHandle;

/// Shows the dashboard until the run ends (or the user stops it and leaves), then waits for the
/// final snapshot. If standard output is no terminal, or the terminal fails, the run goes on
/// headless to its end.
pub(crate) async fn show(handle: RunHandle) -> Arc<Snapshot> {
    if !std::io::stdout().is_terminal() {
        return handle.wait().await;
    }
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
    handle.wait().await
}
