//! The view state and the only function that changes it.
//!
//! [`ViewState::update`] turns a key into a new state and, when the key asks the run to change, a
//! [`Command`] for the caller to carry out. It performs no I/O and reads no clock, so every key
//! binding is a plain unit test.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use throng_core::{LoadModel, Snapshot, Users};

use crate::board::Board;

/// The screens the dashboard can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// Header, latency, charts, the label table and error summary together.
    #[default]
    Overview,
    /// The full per-label table (JMeter's aggregate columns).
    Labels,
    /// Error classes with samples, and status codes.
    Errors,
    /// The target's containers (CPU, memory, network) when they are watched.
    Containers,
    /// A grid's level table filling in and its latency–throughput curve, during a grid.
    Grid,
    /// A row per workload and per flow, in a mix of workloads or a run of several flows.
    Mix,
    /// Where the requests' time goes (connect, TLS, send, wait, receive, blocked), when their
    /// protocol times it.
    Phases,
    /// Replies streamed in tokens: TTFT, ITL, TPOT and end to end beside latency, tokens a
    /// second, goodput.
    Streams,
}

impl View {
    /// Every view, in tab order.
    pub const ALL: [View; 8] = [
        View::Overview,
        View::Labels,
        View::Errors,
        View::Containers,
        View::Grid,
        View::Mix,
        View::Phases,
        View::Streams,
    ];

    /// The tab title.
    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Labels => "Labels",
            View::Errors => "Errors",
            View::Containers => "Containers",
            View::Grid => "Grid",
            View::Mix => "Mix",
            View::Phases => "Phases",
            View::Streams => "Streams",
        }
    }

    /// The views worth showing, in tab order (the number keys reach them in this order): the
    /// containers view only when some are watched, the grid view in a grid, the mix view with
    /// several workloads or flows, the phases view when the requests' protocol times them.
    pub fn available(snap: &Snapshot, board: &Board) -> Vec<View> {
        View::ALL
            .into_iter()
            .filter(|v| match v {
                View::Containers => !snap.containers.is_empty(),
                View::Grid => board.grid.is_some(),
                View::Mix => board.is_mix() || snap.labels.iter().any(|l| l.group),
                View::Phases => snap.total.phases.is_some(),
                View::Streams => snap.total.stream.is_some(),
                _ => true,
            })
            .collect()
    }

    /// The view to start on: the grid's or the mix's when there is one.
    pub fn first(board: &Board) -> View {
        match (&board.grid, board.is_mix()) {
            (Some(_), _) => View::Grid,
            (None, true) => View::Mix,
            (None, false) => View::Overview,
        }
    }
}

/// What the caller should do to the run after a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Stop the run: no new work, in-flight requests finish, then the summary.
    Stop,
    /// Leave the dashboard now, without waiting for the final snapshot (a second `q`).
    Leave,
    /// Pause (`true`) or resume scheduling.
    SetPaused(bool),
    /// Multiply the open-loop rate by this factor.
    ScaleRate(f64),
    /// Add users to the closed loop (remove when negative).
    AddUsers(i64),
    /// In a mix, each workload's own change, in the board's order (`None`: none for it): `+`
    /// and `-` change every workload by its own tenth.
    Each(Vec<Option<Command>>),
}

/// The open-loop rate step of `+` and `-`.
pub const RATE_STEP: f64 = 1.1;

/// Everything the dashboard remembers between frames. The run's numbers are not here: they are in
/// the snapshot, which render reads beside this.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewState {
    /// The view on screen.
    pub view: View,
    /// First row shown in scrolling tables.
    pub scroll: usize,
    /// Whether scheduling is paused (as this UI last set it).
    pub paused: bool,
    /// The open-loop rate multiplier this UI has applied.
    pub rate_factor: f64,
    /// Users this UI has added to (or removed from) the closed loop; in a mix, to all its
    /// workloads together.
    pub user_delta: i64,
    /// In a mix, the users this UI has added to each workload, in the board's order.
    pub deltas: Vec<i64>,
    /// The user asked the run to stop; waiting for requests in flight.
    pub stopping: bool,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            view: View::Overview,
            scroll: 0,
            paused: false,
            rate_factor: 1.0,
            user_delta: 0,
            deltas: Vec::new(),
            stopping: false,
        }
    }
}

impl ViewState {
    /// Applies one key to a single run's dashboard (see [`ViewState::update_in`]).
    pub fn update(&mut self, key: KeyEvent, snap: &Snapshot) -> Option<Command> {
        self.update_in(key, snap, &Board::default())
    }

    /// Applies one key, `snap` being what the dashboard shows on `board` (the run in focus, or
    /// a mix's workloads merged). Returns what the run should do, if anything: `q` and `p` are
    /// for every run on the board, `+` and `-` for the run in focus or, in a mix, for every
    /// workload ([`Command::Each`]).
    pub fn update_in(&mut self, key: KeyEvent, snap: &Snapshot, board: &Board) -> Option<Command> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => self.stop(),
            KeyCode::Char('q') | KeyCode::Char('Q') => self.stop(),
            KeyCode::Tab => {
                self.cycle(snap, board, 1);
                None
            }
            KeyCode::BackTab => {
                self.cycle(snap, board, -1);
                None
            }
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if let Some(v) = View::available(snap, board).get(i) {
                    self.show(*v);
                }
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.scroll = self.scroll.saturating_add(1);
                None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.scroll = self.scroll.saturating_sub(1);
                None
            }
            KeyCode::Char('+') | KeyCode::Char('=') => self.more(snap, board, true),
            KeyCode::Char('-') | KeyCode::Char('_') => self.more(snap, board, false),
            KeyCode::Char('p') | KeyCode::Char(' ') if !self.stopping => {
                self.paused = !self.paused;
                Some(Command::SetPaused(self.paused))
            }
            _ => None,
        }
    }

    fn stop(&mut self) -> Option<Command> {
        if self.stopping {
            Some(Command::Leave)
        } else {
            self.stopping = true;
            Some(Command::Stop)
        }
    }

    fn show(&mut self, view: View) {
        if self.view != view {
            self.view = view;
            self.scroll = 0;
        }
    }

    fn cycle(&mut self, snap: &Snapshot, board: &Board, step: isize) {
        let views = View::available(snap, board);
        let at = views.iter().position(|v| *v == self.view).unwrap_or(0) as isize;
        let n = views.len() as isize;
        self.show(views[(at + step).rem_euclid(n) as usize]);
    }

    /// `+` (more) or `-` (less): the rate by 10% in the open loop, users by 10% (at least one)
    /// in the closed loop, never below one user; in a mix, each workload by its own tenth.
    fn more(&mut self, snap: &Snapshot, board: &Board, up: bool) -> Option<Command> {
        if self.stopping {
            return None;
        }
        if !board.is_mix() {
            let cmd = step(snap, self.user_delta, up)?;
            match cmd {
                Command::ScaleRate(by) => self.rate_factor *= by,
                Command::AddUsers(n) => self.user_delta += n,
                _ => {}
            }
            return Some(cmd);
        }
        self.deltas.resize(board.workloads.len(), 0);
        let mut deltas = std::mem::take(&mut self.deltas);
        let mut scaled = false;
        let each: Vec<Option<Command>> = board
            .workloads
            .iter()
            .zip(deltas.iter_mut())
            .map(|(w, delta)| {
                let cmd = step(&w.snap, *delta, up)?;
                scaled |= matches!(cmd, Command::ScaleRate(_));
                if let Command::AddUsers(n) = cmd {
                    *delta += n;
                }
                Some(cmd)
            })
            .collect();
        self.deltas = deltas;
        self.user_delta = self.deltas.iter().sum();
        // One factor for every open loop of the mix, so the one figure says what it is.
        if scaled {
            self.rate_factor *= if up { RATE_STEP } else { 1.0 / RATE_STEP };
        }
        each.iter()
            .any(Option::is_some)
            .then_some(Command::Each(each))
    }

    /// Users now in the closed loop with fixed users, counting this UI's changes.
    pub fn users(&self, snap: &Snapshot) -> Option<i64> {
        match &snap.plan.model {
            LoadModel::Closed(c) => match c.users {
                Users::Fixed(n) => Some(i64::from(n) + self.user_delta),
                Users::Stages(_) => None,
            },
            LoadModel::Open(_) => None,
        }
    }
}

/// One run's change for `+` (`up`) or `-`, `delta` being the users this UI has added to it:
/// the rate by 10% in the open loop; in the closed loop, users by a tenth of those running (at
/// least one), never below one; `None` when there is nothing to change.
fn step(snap: &Snapshot, delta: i64, up: bool) -> Option<Command> {
    match &snap.plan.model {
        LoadModel::Open(_) => Some(Command::ScaleRate(if up {
            RATE_STEP
        } else {
            1.0 / RATE_STEP
        })),
        LoadModel::Closed(c) => {
            let users = match c.users {
                Users::Fixed(n) => (i64::from(n) + delta).max(0),
                Users::Stages(_) => snap.active as i64,
            };
            let step = (users / 10).max(1);
            let n = if up { step } else { -step.min(users - 1) };
            (n != 0).then_some(Command::AddUsers(n))
        }
    }
}
