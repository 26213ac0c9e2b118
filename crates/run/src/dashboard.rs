//! The live dashboard as an observer of runs: one terminal session for a single run, for every
//! cell of a grid one after another, or for every workload of a mix at once.
//!
//! The dashboard only reads snapshots and calls the runs' controls, so a run with it produces
//! the same final snapshot, summary and JSON as a headless one. A grid or a mix opens a
//! [`Session`] and hands it to each of its runs in their [`crate::Cell`] (passed, not found in
//! a task-local: a run started in a task of its own, or two grids at once, are each on their
//! own grid's board); a [`crate::Run`] that shows the dashboard joins the session its cell
//! names, else opens one of its own. What a run would print while the dashboard is up (its
//! summary) waits until the session ends, so nothing prints over it.

pub(crate) use live::*;

#[cfg(feature = "dashboard")]
mod live {
    use std::io::IsTerminal as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use throng_core::Snapshot;
    use throng_engine::RunHandle;
    use throng_report::{Coordinates, GridResult, LevelRow, RunResult, Threshold};
    use throng_tui::{CurveLine, GridBoard, Live, LiveRun};
    use tokio::sync::watch;
    use tokio::task::JoinHandle;

    use crate::observer::{Event, Observer};
    use crate::outputs::Stream;

    /// One dashboard for several runs. It starts drawing when the first run that asks for the
    /// dashboard joins, if standard output is a terminal.
    pub(crate) struct Session {
        live: watch::Sender<Live>,
        ui: Mutex<Option<JoinHandle<()>>>,
        /// A panic of the dashboard, for a run's own task to go on with (see [`Session::follow`]).
        panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
        panicked: tokio::sync::Notify,
        stopped: Arc<AtomicBool>,
        deferred: Mutex<Vec<(Stream, String)>>,
        /// Told what the runs and the dashboard say (the deferred text once it has left).
        observer: Arc<dyn Observer>,
        order: Mutex<Vec<String>>,
        grid: Mutex<Option<GridState>>,
    }

    impl std::fmt::Debug for Session {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Session")
                .field("stopped", &self.stopped())
                .finish_non_exhaustive()
        }
    }

    /// A grid as the session keeps it, to draw its board as snapshots come.
    struct GridState {
        /// The run going now, its title, and which of how many it is.
        at: Coordinates,
        title: String,
        n: usize,
        total: usize,
        /// The finished rows of the level table.
        rows: Vec<LevelRow>,
        thresholds: Vec<Threshold>,
        until: Option<Threshold>,
        cooling: bool,
    }

    impl Session {
        /// A session with nothing on it yet.
        pub(crate) fn new(observer: Arc<dyn Observer>) -> Arc<Session> {
            Arc::new(Session {
                observer,
                live: watch::Sender::new(Live::default()),
                ui: Mutex::new(None),
                panic: Mutex::new(None),
                panicked: tokio::sync::Notify::new(),
                stopped: Arc::new(AtomicBool::new(false)),
                deferred: Mutex::new(Vec::new()),
                order: Mutex::new(Vec::new()),
                grid: Mutex::new(None),
            })
        }

        /// The workloads' names in the order they are shown (the first is in focus).
        pub(crate) fn order(&self, names: &[String]) {
            if let Ok(mut o) = self.order.lock() {
                *o = names.to_vec();
            }
        }

        /// Whether the user asked the runs to stop (`q`): a grid starts no more runs.
        pub(crate) fn stopped(&self) -> bool {
            self.stopped.load(Ordering::Relaxed)
        }

        /// Whether the dashboard is on the screen now (what prints would land on it).
        pub(crate) fn drawing(&self) -> bool {
            self.ui
                .lock()
                .map(|u| u.as_ref().is_some_and(|h| !h.is_finished()))
                .unwrap_or(false)
        }

        /// Keeps `text` to print to `to` once the dashboard has left the screen (printed now if
        /// it is not on it).
        pub(crate) fn print(&self, text: String, to: Stream) {
            match self.drawing() {
                true => {
                    if let Ok(mut d) = self.deferred.lock() {
                        d.push((to, text));
                    }
                }
                false => self.observer.event(&Event::Text { text, to }),
            }
        }

        /// Puts `handle`'s run on the board as workload `name` and follows it to its end; starts
        /// the dashboard if `draw` and it is not on the screen yet. Returns the final snapshot.
        pub(crate) async fn follow(
            self: &Arc<Self>,
            handle: RunHandle,
            name: &str,
            draw: bool,
        ) -> Arc<Snapshot> {
            let token = handle.stop_token();
            let stopped = self.stopped.clone();
            let run = LiveRun {
                name: name.to_string(),
                snap: handle.snapshots().borrow().clone(),
                control: handle.control(),
                stop: Arc::new(move || {
                    stopped.store(true, Ordering::Relaxed);
                    token.cancel();
                }),
            };
            self.put(run);
            if draw {
                self.start_drawing();
            }
            let me = self.clone();
            let key = name.to_string();
            let mut snapshots = handle.snapshots();
            let forward = tokio::spawn(async move {
                while snapshots.changed().await.is_ok() {
                    let snap = snapshots.borrow_and_update().clone();
                    me.update(&key, snap);
                }
            });
            // A panic of the dashboard (in its task) goes on in the run's task, as it would had
            // the dashboard been drawn there; the panic hook has already restored the terminal.
            let last = tokio::select! {
                last = handle.wait() => last,
                () = self.panicked.notified() => self.resume_panic(),
            };
            forward.abort();
            self.update(name, last.clone());
            last
        }

        /// Adds a run to the board, or replaces the one of the same name.
        fn put(&self, run: LiveRun) {
            let order = self.order.lock().map(|o| o.clone()).unwrap_or_default();
            self.live.send_modify(|l| {
                match l.runs.iter_mut().find(|r| r.name == run.name) {
                    Some(r) => *r = run,
                    None => l.runs.push(run),
                }
                let at = |n: &str| order.iter().position(|o| o == n).unwrap_or(usize::MAX);
                l.runs.sort_by_key(|r| at(&r.name));
            });
        }

        /// A run's new snapshot, and the grid's live row from it.
        fn update(&self, name: &str, snap: Arc<Snapshot>) {
            let board = match self.drawing() {
                true => self.grid_board(Some(&snap)),
                false => None,
            };
            self.live.send_modify(|l| {
                if let Some(r) = l.runs.iter_mut().find(|r| r.name == name) {
                    r.snap = snap;
                }
                if let Some(b) = board {
                    l.grid = Some(Arc::new(b));
                }
            });
        }

        fn start_drawing(self: &Arc<Self>) {
            let Ok(mut ui) = self.ui.lock() else { return };
            if ui.is_some() || !std::io::stdout().is_terminal() {
                return;
            }
            let rx = self.live.subscribe();
            let live = self.live.clone();
            let observer = self.observer.clone();
            let drawing = tokio::spawn(async move {
                match throng_tui::run(rx).await {
                    Ok(exit) if exit.stopped && !live.borrow().done => {
                        observer.event(&Event::Note(
                            "stopping: finishing requests in flight, then writing results".into(),
                        ));
                    }
                    Ok(_) => {}
                    Err(e) => observer.event(&Event::Note(format!(
                        "throng: the live dashboard failed ({e}); the run goes on without it"
                    ))),
                }
            });
            let me = self.clone();
            *ui = Some(tokio::spawn(async move {
                if let Err(e) = drawing.await {
                    if e.is_panic() {
                        if let Ok(mut p) = me.panic.lock() {
                            *p = Some(e.into_panic());
                        }
                        me.panicked.notify_one();
                    }
                }
            }));
        }

        /// Goes on with the dashboard's panic in this task.
        fn resume_panic(&self) -> ! {
            let payload = self.panic.lock().ok().and_then(|mut p| p.take());
            std::panic::resume_unwind(payload.unwrap_or_else(|| Box::new("the dashboard panicked")))
        }

        /// Ends the session: the dashboard draws the last of it and leaves the screen; then what
        /// the runs would have printed meanwhile is printed.
        pub(crate) async fn finish(&self) {
            self.live.send_modify(|l| l.done = true);
            let ui = self.ui.lock().ok().and_then(|mut u| u.take());
            if let Some(ui) = ui {
                let _ = ui.await;
            }
            if self.panic.lock().is_ok_and(|p| p.is_some()) {
                self.resume_panic();
            }
            let deferred = self
                .deferred
                .lock()
                .map(|mut d| std::mem::take(&mut *d))
                .unwrap_or_default();
            for (to, text) in deferred {
                self.observer.event(&Event::Text { text, to });
            }
        }

        /// The grid starts the run at `at` (`title`, the `n`th of at most `total`).
        pub(crate) fn grid_run(&self, at: &Coordinates, title: &str, n: usize, total: usize) {
            if let Ok(mut g) = self.grid.lock() {
                if let Some(g) = g.as_mut() {
                    g.at = at.clone();
                    g.title = title.to_string();
                    g.n = n;
                    g.total = total;
                    g.cooling = false;
                }
            }
            self.refresh();
        }

        /// The grid is cooling down between runs.
        pub(crate) fn grid_cooling(&self) {
            if let Ok(mut g) = self.grid.lock() {
                if let Some(g) = g.as_mut() {
                    g.cooling = true;
                }
            }
            self.refresh();
        }

        /// The grid's finished rows so far.
        pub(crate) fn grid_rows(&self, rows: &[LevelRow]) {
            if let Ok(mut g) = self.grid.lock() {
                if let Some(g) = g.as_mut() {
                    g.rows = rows.to_vec();
                }
            }
            self.refresh();
        }

        /// The session shows a grid judged by `thresholds`, ending a side's sweep on `until`.
        pub(crate) fn grid(&self, thresholds: &[Threshold], until: Option<&Threshold>) {
            if let Ok(mut g) = self.grid.lock() {
                *g = Some(GridState {
                    at: Coordinates {
                        level: None,
                        side: None,
                        round: 1,
                    },
                    title: String::new(),
                    n: 0,
                    total: 0,
                    rows: Vec::new(),
                    thresholds: thresholds.to_vec(),
                    until: until.cloned(),
                    cooling: false,
                });
            }
        }

        /// Redraws the grid's board from its rows and the focused run's snapshot.
        fn refresh(&self) {
            let snap = self.live.borrow().runs.first().map(|r| r.snap.clone());
            let running = snap.filter(|s| s.state != throng_core::RunState::Done);
            if let Some(b) = self.grid_board(running.as_ref()) {
                self.live.send_modify(|l| l.grid = Some(Arc::new(b)));
            }
        }

        /// The grid's board: the level table as the report makes it, with the run going now as a
        /// live row (its figures so far, judged by the thresholds as they stand).
        fn grid_board(&self, running: Option<&Arc<Snapshot>>) -> Option<GridBoard> {
            let g = self.grid.lock().ok()?;
            let g = g.as_ref()?;
            let live = running
                .filter(|s| s.total.samples > 0 && s.state != throng_core::RunState::Done)
                .and_then(|s| {
                    let result = RunResult::from_snapshot(s);
                    LevelRow::of(&g.at, &[&result], &g.thresholds).ok()
                })
                .map(|(row, _)| row);
            let mut rows = g.rows.clone();
            let running = live.is_some().then_some(rows.len());
            rows.extend(live);
            let table = GridResult::new(Vec::new(), rows.clone(), &g.thresholds, None, false)
                .table_rows(false);
            // The summary's notes under its table (capacity, the sweep's end, a level cut
            // short), from the finished rows only: a live row is no capacity yet.
            let notes = GridResult::new(
                Vec::new(),
                g.rows.clone(),
                &g.thresholds,
                g.until.as_ref(),
                false,
            )
            .notes();
            let at = match g.total {
                0 => String::new(),
                t => format!("run {} of at most {t}: {}", g.n, g.title),
            };
            Some(GridBoard {
                at,
                table,
                running,
                notes,
                curve: curve(&rows),
                cooling: g.cooling,
            })
        }
    }

    /// Latency against throughput from the level rows: per side, p99 (and p50 for a single side).
    fn curve(rows: &[LevelRow]) -> Vec<CurveLine> {
        let mut sides: Vec<Option<String>> = Vec::new();
        for r in rows {
            if !sides.contains(&r.side) {
                sides.push(r.side.clone());
            }
        }
        let one = sides.len() <= 1;
        let mut out = Vec::new();
        for side in &sides {
            let mine: Vec<&LevelRow> = rows
                .iter()
                .filter(|r| &r.side == side && r.total.latency.count > 0)
                .collect();
            let name = |p: &str| match side {
                Some(s) => format!("{p} {s}"),
                None => p.to_string(),
            };
            let line = |p: &str, f: fn(&LevelRow) -> f64| CurveLine {
                name: name(p),
                points: mine.iter().map(|r| (r.total.throughput, f(r))).collect(),
            };
            out.push(line("p99", |r| r.total.latency.p99));
            if one {
                out.push(line("p50", |r| r.total.latency.p50));
            }
        }
        out
    }

    /// Shows the dashboard for a run until it ends, on the session it was given (a grid's, a
    /// mix's, with the workload's name on it) or on one of its own; the final snapshot. If
    /// standard output is no terminal, or the terminal fails, the run goes on headless to its end.
    pub(crate) async fn show(
        handle: RunHandle,
        observer: Arc<dyn Observer>,
        on: Option<(&Arc<Session>, &str)>,
    ) -> Arc<Snapshot> {
        if let Some((session, name)) = on {
            return session.follow(handle, name, true).await;
        }
        if !std::io::stdout().is_terminal() {
            return handle.wait().await;
        }
        let session = Session::new(observer);
        let last = session.follow(handle, "", true).await;
        session.finish().await;
        last
    }

    /// Waits for a run that shows nothing itself; on a session (a workload of a mix beside the one
    /// that shows the dashboard), it is on the board all the same.
    pub(crate) async fn quietly(
        handle: RunHandle,
        on: Option<(&Arc<Session>, &str)>,
    ) -> Arc<Snapshot> {
        match on {
            Some((session, name)) => session.follow(handle, name, false).await,
            None => handle.wait().await,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use throng_core::{ClosedLoop, LoadModel, RunPlan, Users};
        use throng_report::Level;

        fn snapshot(users: u32, samples: u64, us: u64) -> Arc<Snapshot> {
            let plan = RunPlan::new(
                "t",
                LoadModel::Closed(ClosedLoop {
                    users: Users::Fixed(users),
                    requests: None,
                    iterations: None,
                    duration: Some(std::time::Duration::from_secs(10)),
                    think_time: None,
                }),
            );
            let mut s = Snapshot::empty(Arc::new(plan), &["GET /".to_string()], 0);
            s.elapsed = std::time::Duration::from_secs(2);
            for _ in 0..samples {
                throng_core::histogram::record(&mut s.labels[0].latency, us);
                throng_core::histogram::record(&mut s.total.latency, us);
            }
            s.labels[0].samples = samples;
            s.total.samples = samples;
            Arc::new(s)
        }

        /// The board of a sweep: the finished level's row, the running one's live from its
        /// snapshot and marked, the capacity from the finished rows only, and the curve.
        #[test]
        fn a_grid_board_is_the_report_level_table_with_the_running_row_live() {
            let session = Session::new(Arc::new(()));
            let threshold: Threshold = "p99<10ms".parse().expect("a threshold");
            session.grid(std::slice::from_ref(&threshold), None);
            let first = Coordinates {
                level: Some(Level::Users(1)),
                side: None,
                round: 1,
            };
            let done = RunResult::from_snapshot(&snapshot(1, 1000, 2_000));
            let (row, _) =
                LevelRow::of(&first, &[&done], std::slice::from_ref(&threshold)).expect("a row");
            session.grid_rows(&[row]);
            let second = Coordinates {
                level: Some(Level::Users(2)),
                ..first
            };
            session.grid_run(&second, "2 users", 2, 3);
            let board = session
                .grid_board(Some(&snapshot(2, 500, 20_000)))
                .expect("a board");
            assert_eq!(board.at, "run 2 of at most 3: 2 users");
            assert_eq!(board.table.len(), 3, "{:?}", board.table);
            assert_eq!(board.table[0][0], "Users");
            assert_eq!(board.table[1][0], "1");
            assert_eq!(board.table[2][0], "2");
            assert_eq!(board.running, Some(1));
            // 20 ms fails p99<10ms live; the capacity is the finished level's.
            assert_eq!(board.table[2].last().map(String::as_str), Some("FAIL"));
            assert_eq!(board.table[1].last().map(String::as_str), Some("pass"));
            assert!(
                board.notes.iter().any(|n| n.starts_with("capacity: 1 ")),
                "{:?}",
                board.notes
            );
            let p99 = &board.curve[0];
            assert_eq!(p99.name, "p99");
            assert_eq!(p99.points.len(), 2);
            assert!((p99.points[1].1 - 20.0).abs() < 0.1, "{:?}", p99.points);
            // Without a running run (between two), no live row.
            let between = session.grid_board(None).expect("a board");
            assert_eq!(between.running, None);
            assert_eq!(between.table.len(), 2);
        }

        /// The board's notes are the summary's: a sweep ended where nothing could be measured
        /// (a refused port) and a level cut short are said there as in the text under the table.
        #[test]
        fn a_grid_board_has_every_note_the_summary_has() {
            let session = Session::new(Arc::new(()));
            let until: Threshold = "p99>500ms".parse().expect("a threshold");
            session.grid(&[], Some(&until));
            let at = |users| Coordinates {
                level: Some(Level::Users(users)),
                side: None,
                round: 1,
            };
            let ran = RunResult::from_snapshot(&snapshot(1, 4, 2_000));
            let (mut cut, _) = LevelRow::of(&at(1), &[&ran], &[]).expect("a row");
            cut.cut = true;
            let (mut refused, _) = LevelRow::of(&at(2), &[&ran], &[]).expect("a row");
            refused.crossed = true;
            refused.unmeasured = true;
            refused.total.errors = refused.total.samples;
            let rows = vec![cut, refused];
            session.grid_rows(&rows);
            let board = session.grid_board(None).expect("a board");
            let summary = GridResult::new(Vec::new(), rows, &[], Some(&until), false).notes();
            assert_eq!(board.notes, summary);
            for says in [
                "nothing could be measured for p99>500ms at 2 users (0 of 4 requests succeeded)",
                "1 user: cut short",
            ] {
                assert!(
                    board.notes.iter().any(|n| n.starts_with(says)),
                    "{says}: {:?}",
                    board.notes
                );
            }
        }

        /// What a mix's dashboard shows is what its JSON says: the workloads' live merge has the
        /// TOTAL that `merge_concurrent` makes of their results, failures by class included.
        #[test]
        fn a_mix_on_the_dashboard_has_the_total_of_its_result() {
            let fine = snapshot(4, 3_000, 2_000);
            let mut down = (*snapshot(2, 0, 1)).clone();
            down.elapsed = std::time::Duration::from_secs(3);
            let mut label = down.labels[0].clone();
            for _ in 0..500 {
                throng_core::histogram::record(&mut label.failed, 300);
            }
            label.samples = 500;
            label.errors = 500;
            label.classes[throng_core::ErrorClass::Connect.index()] = 500;
            down.labels[0] = label.clone();
            down.total = throng_core::LabelStats {
                label: "TOTAL".into(),
                ..label
            };
            down.errors = vec![throng_core::ErrorStat {
                class: throng_core::ErrorClass::Connect,
                count: 500,
                sample: "connection refused".into(),
            }];
            let down = Arc::new(down);
            let workloads =
                [("fine", &fine), ("down", &down)].map(|(name, snap)| throng_tui::Workload {
                    name: name.into(),
                    snap: (*snap).clone(),
                });
            let shown = throng_tui::merge(&workloads).expect("a merge");
            let live = RunResult::from_snapshot(&shown);
            let results = [&fine, &down].map(|s| RunResult::from_snapshot(s));
            let json =
                throng_report::merge_concurrent(&[&results[0], &results[1]]).expect("a TOTAL");
            assert_eq!(live.total, json.total);
            assert_eq!(live.total.samples, 3_500);
            assert_eq!(live.total.errors, 500);
            let classes = |r: &RunResult| -> Vec<(String, u64)> {
                r.errors
                    .iter()
                    .map(|e| (format!("{:?}", e.class), e.count))
                    .collect()
            };
            assert_eq!(classes(&live), classes(&json));
            assert_eq!(classes(&live).len(), 1);
        }
    }
}

/// Without the dashboard, a session shows nothing and holds nothing back.
#[cfg(not(feature = "dashboard"))]
mod live {
    use std::sync::Arc;

    use throng_core::Snapshot;
    use throng_engine::RunHandle;
    use throng_report::{Coordinates, LevelRow, Threshold};

    use crate::observer::{Event, Observer};

    /// A session that draws nothing.
    pub(crate) struct Session(Arc<dyn Observer>);

    impl std::fmt::Debug for Session {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Session")
        }
    }

    impl Session {
        pub(crate) fn new(observer: Arc<dyn Observer>) -> Arc<Session> {
            Arc::new(Session(observer))
        }
        pub(crate) fn order(&self, _: &[String]) {}
        pub(crate) fn stopped(&self) -> bool {
            false
        }
        pub(crate) fn drawing(&self) -> bool {
            false
        }
        pub(crate) fn print(&self, text: String, to: crate::outputs::Stream) {
            self.0.event(&Event::Text { text, to });
        }
        pub(crate) async fn finish(&self) {}
        pub(crate) fn grid_run(&self, _: &Coordinates, _: &str, _: usize, _: usize) {}
        pub(crate) fn grid_cooling(&self) {}
        pub(crate) fn grid_rows(&self, _: &[LevelRow]) {}
        pub(crate) fn grid(&self, _: &[Threshold], _: Option<&Threshold>) {}
    }

    pub(crate) async fn quietly(
        handle: RunHandle,
        _: Option<(&Arc<Session>, &str)>,
    ) -> Arc<Snapshot> {
        handle.wait().await
    }
}
