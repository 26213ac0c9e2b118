//! The live loop: the terminal, its restoration, and one `select!` over keys, snapshots and the
//! frame tick.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use futures_util::StreamExt;
use ratatui::DefaultTerminal;
use throng_core::Snapshot;
use throng_engine::Control;
use tokio::sync::watch;

use crate::board::{Board, Workload};
use crate::render::draw_board;
use crate::state::{Command, View, ViewState};

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

/// Carries out a command on the runs of the board, the one in focus first: stopping and pausing
/// are every run's, a change of load the focused run's, or each workload's own in a mix.
pub fn apply(cmd: &Command, runs: &[LiveRun]) {
    let on = |cmd: &Command, run: &LiveRun| match cmd {
        Command::Stop => (run.stop)(),
        Command::SetPaused(p) => run.control.set_paused(*p),
        Command::ScaleRate(by) => run.control.scale_rate(*by),
        Command::AddUsers(n) => run.control.add_users(*n),
        Command::Leave | Command::Each(_) => {}
    };
    match cmd {
        Command::Stop | Command::SetPaused(_) => runs.iter().for_each(|r| on(cmd, r)),
        Command::Each(each) => {
            for (cmd, run) in each.iter().zip(runs) {
                if let Some(cmd) = cmd {
                    on(cmd, run);
                }
            }
        }
        _ => {
            if let Some(first) = runs.first() {
                on(cmd, first);
            }
        }
    }
}

/// A run on the live dashboard: its latest snapshot and how to steer it.
#[derive(Clone)]
pub struct LiveRun {
    /// Its name in a mix (the workload's); empty otherwise.
    pub name: String,
    /// Its latest snapshot.
    pub snap: Arc<Snapshot>,
    /// Its controls (pause, rate, users).
    pub control: Arc<Control>,
    /// Asks it to stop (and, in a grid, the grid to end after it).
    pub stop: Arc<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for LiveRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRun")
            .field("name", &self.name)
            .field("state", &self.snap.state)
            .finish_non_exhaustive()
    }
}

/// What the live dashboard shows: the runs going (a workload each in a mix, the cell running
/// in a grid), the grid around them, and whether it is all over.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// The runs, the one in focus first; empty before the first starts.
    pub runs: Vec<LiveRun>,
    /// The grid, during one.
    pub grid: Option<Arc<crate::GridBoard>>,
    /// Nothing more will come: the dashboard leaves once it has drawn this.
    pub done: bool,
}

impl Live {
    /// The board around the run in focus: the grid, and the workloads when there are several.
    pub fn board(&self) -> Board {
        Board {
            grid: self.grid.clone(),
            workloads: match self.runs.len() {
                0 | 1 => Vec::new(),
                _ => self
                    .runs
                    .iter()
                    .map(|r| Workload {
                        name: r.name.clone(),
                        snap: r.snap.clone(),
                    })
                    .collect(),
            },
        }
    }

    /// What the dashboard shows: the run in focus, or every workload of a mix merged into one
    /// snapshot ([`merge`](crate::merge)), so no view shows the first workload alone.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        match self.runs.as_slice() {
            [] => None,
            [one] => Some(one.snap.clone()),
            _ => crate::merge(&self.board().workloads).map(Arc::new),
        }
    }
}

/// Shows the dashboard until [`Live::done`] (or the channel closes), or the user presses `q`
/// twice. Nothing is drawn before the first run arrives: a grid that fails before its first
/// run never touches the terminal. `q` and `p` act on every run on the board; `+` and `-` on
/// the run in focus, or on every workload of a mix.
///
/// Only call this when stdout is a terminal: it switches it to raw mode and the alternate screen,
/// and restores both before it returns.
pub async fn run(mut live: watch::Receiver<Live>) -> io::Result<Exit> {
    loop {
        let (any, done) = {
            let l = live.borrow_and_update();
            (!l.runs.is_empty(), l.done)
        };
        if any {
            break;
        }
        if done || live.changed().await.is_err() {
            return Ok(Exit { stopped: false });
        }
    }
    let mut guard = Guard::new()?;
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(FRAME);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut now = live.borrow_and_update().clone();
    let mut board = now.board();
    let mut shown = now.snapshot();
    let mut state = ViewState {
        view: View::first(&board),
        ..ViewState::default()
    };
    let mut focus: Option<Arc<Control>> = None;
    let mut dirty = true;
    let mut open = true;
    let mut input = true;
    loop {
        // A new run in focus (the next cell of a grid) starts from its own controls.
        if let Some(first) = now.runs.first() {
            if !focus
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &first.control))
            {
                state.paused = first.control.is_paused();
                state.rate_factor = first.control.rate_factor();
                state.user_delta = 0;
                state.deltas.clear();
                focus = Some(first.control.clone());
            }
        }
        tokio::select! {
            _ = tick.tick() => {
                if dirty {
                    if let Some(snap) = &shown {
                        guard.terminal.draw(|f| draw_board(f, snap, &board, &state))?;
                    }
                    dirty = false;
                    injected_panic();
                }
                if now.done || !open {
                    break;
                }
            }
            event = events.next(), if input => match event {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    let Some(snap) = &shown else { continue };
                    if let Some(cmd) = state.update_in(key, snap, &board) {
                        apply(&cmd, &now.runs);
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
            changed = live.changed(), if open => match changed {
                Ok(()) => {
                    let had_grid = now.grid.is_some();
                    now = live.borrow_and_update().clone();
                    board = now.board();
                    shown = now.snapshot();
                    if !had_grid && now.grid.is_some() {
                        state.view = View::Grid;
                    }
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
