//! The live loop: the terminal, its restoration, and one `select!` over keys, snapshots and the
//! frame tick.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use futures_util::StreamExt;
use ratatui::DefaultTerminal;
use throng_core::{RunState, Snapshot};
use throng_engine::Control;
use tokio::sync::watch;

use crate::render::draw;
use crate::state::{Command, ViewState};

/// Frames per second at most, however fast snapshots or keys arrive.
pub const FRAME: Duration = Duration::from_millis(100);

/// How the dashboard ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The user stopped the run (`q` or Ctrl-C) before it ended by its plan.
    pub stopped: bool,
}

/// Owns the terminal in raw mode on the alternate screen, and gives it back when dropped, on
/// every path out of [`run`], errors included. Panics are covered by the hook that
/// [`ratatui::try_init`] installs, which restores the terminal before the panic message prints.
struct Guard {
    terminal: DefaultTerminal,
}

impl Guard {
    fn new() -> io::Result<Self> {
        match ratatui::try_init() {
            Ok(terminal) => Ok(Guard { terminal }),
            Err(e) => {
                // Raw mode may be on even though entering the alternate screen failed.
                ratatui::restore();
                Err(e)
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.terminal.show_cursor();
        ratatui::restore();
    }
}

/// Fault injection for the end-to-end test that a panic restores the terminal: in debug builds
/// only (the tests' builds), `THRONG_TEST_PANIC_IN_DASHBOARD` makes the dashboard panic once it
/// has drawn a frame. Release builds have no such path.
fn injected_panic() {
    #[cfg(debug_assertions)]
    if std::env::var_os("THRONG_TEST_PANIC_IN_DASHBOARD").is_some() {
        panic!("injected panic (THRONG_TEST_PANIC_IN_DASHBOARD)");
    }
}

/// Carries out a command on the run.
pub fn apply(cmd: Command, control: &Control, stop: &dyn Fn()) {
    match cmd {
        Command::Stop => stop(),
        Command::Leave => {}
        Command::SetPaused(p) => control.set_paused(p),
        Command::ScaleRate(by) => control.scale_rate(by),
        Command::AddUsers(n) => control.add_users(n),
    }
}

/// Shows the dashboard until the run is over (its final snapshot arrives or the channel closes)
/// or the user presses `q` twice. `stop` asks the run to stop.
///
/// Only call this when stdout is a terminal: it switches it to raw mode and the alternate screen,
/// and restores both before it returns.
pub async fn run(
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    control: Arc<Control>,
    stop: &dyn Fn(),
) -> io::Result<Exit> {
    let mut guard = Guard::new()?;
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(FRAME);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut snap = snapshots.borrow_and_update().clone();
    let mut state = ViewState {
        paused: control.is_paused(),
        rate_factor: control.rate_factor(),
        ..ViewState::default()
    };
    let mut dirty = true;
    let mut open = true;
    let mut input = true;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if dirty {
                    guard.terminal.draw(|f| draw(f, &snap, &state))?;
                    dirty = false;
                    injected_panic();
                }
                if snap.state == RunState::Done || !open {
                    break;
                }
            }
            event = events.next(), if input => match event {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    if let Some(cmd) = state.update(key, &snap) {
                        apply(cmd, &control, stop);
                        if cmd == Command::Leave {
                            break;
                        }
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => {
                    guard.terminal.autoresize()?;
                    dirty = true;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                // Input closed: nothing can stop the run from here, so let it end by its plan.
                None => input = false,
            },
            changed = snapshots.changed(), if open => match changed {
                Ok(()) => {
                    snap = snapshots.borrow_and_update().clone();
                    dirty = true;
                }
                Err(_) => open = false,
            },
        }
    }
    drop(guard);
    Ok(Exit {
        stopped: state.stopping,
    })
}
