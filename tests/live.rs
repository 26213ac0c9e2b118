//! The live dashboard end to end: the real binary in a pseudo-terminal against an in-process
//! testbed target. It reads the screen as a terminal would show it (vt100), finds live
//! percentiles, presses `q`, and checks that the result was written and the terminal restored.
//! Headless runs are checked never to touch the terminal.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, CommandBuilder, PtySize};
use throng::testbed::{Delay, HttpTarget};

/// Enter and leave the alternate screen (xterm's private mode 1049).
const ENTER_ALT: &[u8] = b"\x1b[?1049h";
const LEAVE_ALT: &[u8] = b"\x1b[?1049l";
/// Hide and show the cursor (DECTCEM).
const HIDE_CURSOR: &[u8] = b"\x1b[?25l";
const SHOW_CURSOR: &[u8] = b"\x1b[?25h";

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A child process in a pseudo-terminal, with everything it printed fed to a vt100 screen.
struct Pty {
    master: Box<dyn portable_pty::MasterPty + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    fn spawn(args: &[&str], dir: &Path) -> Pty {
        Pty::spawn_with(args, dir, &[])
    }

    fn spawn_with(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Pty {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal (is /dev/ptmx available?)");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_throng"));
        cmd.args(args);
        cmd.cwd(dir);
        cmd.env("TERM", "xterm-256color");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).expect("spawn throng");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer = pty.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(40, 120, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (screen.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                s.lock().expect("screen").process(&buf[..n]);
                r.lock().expect("raw").extend_from_slice(&buf[..n]);
            }
        });
        Pty {
            master: pty.master,
            child,
            writer,
            screen,
            raw,
        }
    }

    /// Resizes the terminal, as a window manager would (the child gets SIGWINCH).
    fn resize(&self, rows: u16, cols: u16) {
        self.screen
            .lock()
            .expect("screen")
            .screen_mut()
            .set_size(rows, cols);
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    fn press(&mut self, keys: &[u8]) {
        self.writer.write_all(keys).expect("type");
        self.writer.flush().expect("flush");
    }

    fn contents(&self) -> String {
        self.screen.lock().expect("screen").screen().contents()
    }

    fn alternate(&self) -> bool {
        self.screen
            .lock()
            .expect("screen")
            .screen()
            .alternate_screen()
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().expect("raw").clone()
    }

    /// Everything printed, once it holds `needle` or after 5 s (the reader thread may still be
    /// draining the last bytes when the child has exited).
    fn raw_once(&self, needle: &[u8]) -> Vec<u8> {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let raw = self.raw();
            if contains(&raw, needle) || Instant::now() > until {
                return raw;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `f` holds for the screen, or panics with the screen after `limit`.
    fn wait_for(&self, limit: Duration, what: &str, f: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + limit;
        loop {
            let text = self.contents();
            if f(&text) {
                return text;
            }
            assert!(
                Instant::now() < until,
                "no {what} within {limit:?}; screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_exit(&mut self, limit: Duration) -> portable_pty::ExitStatus {
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!(
                    "throng did not exit within {limit:?}; screen:\n{}",
                    self.contents()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The numbers on the dashboard's p99 row (interval and whole run), in ms.
fn p99_row(screen: &str) -> Option<Vec<f64>> {
    let line = screen.lines().find(|l| l.starts_with("│p99 "))?;
    let cells = line.split('│').nth(1)?;
    let numbers: Vec<f64> = cells
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    (numbers.len() >= 2).then_some(numbers)
}

fn target() -> (
    tokio::runtime::Runtime,
    String,
    throng::testbed::RunningTarget,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let target = rt
        .block_on(
            HttpTarget {
                delay: Delay::Fixed(Duration::from_millis(2)),
                ..HttpTarget::default()
            }
            .start(),
        )
        .expect("testbed target");
    let url = format!("{}/", target.url());
    (rt, url, target)
}

#[test]
fn dashboard_shows_live_percentiles_and_q_writes_the_result() {
    let (_rt, url, _target) = target();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut pty = Pty::spawn(
        &["run", &url, "-c", "4", "-z", "60s", "--json", "result.json"],
        dir.path(),
    );

    let screen = pty.wait_for(Duration::from_secs(30), "live p99", |s| {
        p99_row(s).is_some_and(|n| n.iter().all(|v| *v > 0.0))
    });
    assert!(
        pty.alternate(),
        "the dashboard draws on the alternate screen"
    );
    assert!(screen.contains("RUNNING"), "{screen}");
    assert!(screen.contains(&url), "{screen}");
    assert!(screen.contains("TOTAL"), "{screen}");
    // With a fixed 2 ms delay, every latency is at least 2 ms.
    let p99 = p99_row(&screen).expect("p99 row");
    assert!(p99.iter().all(|v| *v >= 2.0), "{p99:?}\n{screen}");

    // Resizing: too small shows a short message, and the full screen comes back.
    pty.resize(12, 50);
    pty.wait_for(Duration::from_secs(10), "too-small message", |s| {
        s.contains("Terminal too small: 50x12")
    });
    pty.resize(40, 120);
    pty.wait_for(Duration::from_secs(10), "the dashboard again", |s| {
        p99_row(s).is_some()
    });

    // Views and a live change: the per-label view, then one more user (4 users: a step of 1).
    pty.press(b"2");
    pty.wait_for(Duration::from_secs(10), "the per-label view", |s| {
        s.contains("Received KB/s") && p99_row(s).is_none()
    });
    pty.press(b"+");
    pty.wait_for(Duration::from_secs(10), "the added user", |s| {
        s.contains("(+1)")
    });

    pty.press(b"q");
    let status = pty.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "exit status {status:?}");
    let raw = pty.raw_once(b"result written to");

    assert!(
        contains(&raw, ENTER_ALT),
        "never entered the alternate screen"
    );
    assert!(contains(&raw, LEAVE_ALT), "never left the alternate screen");
    assert!(!pty.alternate(), "still on the alternate screen");
    let after = pty.contents();
    assert!(after.contains("(stopped early)"), "{after}");
    assert!(after.contains("TOTAL"), "{after}");

    let text = std::fs::read_to_string(dir.path().join("result.json")).expect("result.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["interrupted"], true);
    let changes = json["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(
        changes[0]["what"]
            .as_str()
            .expect("what")
            .starts_with("users +1"),
        "{changes:?}"
    );
    let samples = json["total"]["samples"].as_u64().expect("samples");
    assert!(samples > 0, "{text}");
    assert!(json["total"]["latency"]["p99"].as_f64().expect("p99") >= 2.0);
}

/// A panic in the dashboard (injected through a debug-build-only variable) still gives the
/// terminal back: the alternate screen is left, the cursor shown, and the panic message is on
/// the normal screen where the user can read it.
#[test]
fn a_panic_in_the_dashboard_restores_the_terminal() {
    let (_rt, url, _target) = target();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut pty = Pty::spawn_with(
        &["run", &url, "-c", "2", "-z", "30s"],
        dir.path(),
        &[
            ("THRONG_TEST_PANIC_IN_DASHBOARD", "1"),
            ("RUST_BACKTRACE", "0"),
        ],
    );
    let status = pty.wait_exit(Duration::from_secs(30));
    assert!(!status.success(), "a panic must not exit 0: {status:?}");
    let raw = pty.raw_once(b"injected panic");
    let entered = raw
        .windows(ENTER_ALT.len())
        .position(|w| w == ENTER_ALT)
        .expect("the dashboard entered the alternate screen");
    let left = raw
        .windows(LEAVE_ALT.len())
        .rposition(|w| w == LEAVE_ALT)
        .expect("the alternate screen was left");
    assert!(left > entered);
    assert!(!pty.alternate(), "still on the alternate screen");
    // The cursor is shown again (the dashboard hides it while drawing).
    let hid = raw
        .windows(HIDE_CURSOR.len())
        .rposition(|w| w == HIDE_CURSOR)
        .expect("the dashboard hid the cursor");
    let shown = raw
        .windows(SHOW_CURSOR.len())
        .rposition(|w| w == SHOW_CURSOR)
        .expect("the cursor was never shown again");
    assert!(shown > hid, "the cursor was left hidden");
    let screen = pty.contents();
    assert!(screen.contains("injected panic"), "{screen}");
}

#[test]
fn no_tui_in_a_terminal_never_touches_the_screen() {
    let (_rt, url, _target) = target();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut pty = Pty::spawn(
        &[
            "run", &url, "-c", "2", "-z", "2s", "--no-tui", "--json", "r.json",
        ],
        dir.path(),
    );
    let status = pty.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "exit status {status:?}");
    std::thread::sleep(Duration::from_millis(300));
    let raw = pty.raw();
    assert!(
        !contains(&raw, ENTER_ALT),
        "--no-tui entered the alternate screen"
    );
    assert!(
        contains(&raw, b"TOTAL"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(dir.path().join("r.json").exists());
}

#[test]
fn piped_stdout_runs_headless() {
    let (_rt, url, _target) = target();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", &url, "-c", "2", "-z", "1s"])
        .env("TERM", "xterm-256color")
        .output()
        .expect("run throng");
    assert!(out.status.success(), "{out:?}");
    assert!(!contains(&out.stdout, b"\x1b["), "escape codes on a pipe");
    assert!(contains(&out.stdout, b"TOTAL"));
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// A sweep on one dashboard: the terminal session outlives each run, the level table fills in
/// with the running level marked, and the grid's summary prints once the dashboard has left,
/// never over it.
#[test]
fn a_sweep_is_one_dashboard_with_its_level_table_filling_in() {
    let (_rt, url, _target) = target();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut pty = Pty::spawn(
        &[
            "run",
            &url,
            "--sweep",
            "users=1,2,4",
            "-z",
            "3s",
            "--threshold",
            "p99<1s",
            "--json",
            "grid.json",
        ],
        dir.path(),
    );
    // The grid view is the first: the second level running, the first done with its row.
    let screen = pty.wait_for(Duration::from_secs(30), "the second level live", |s| {
        s.contains("run 2 of at most 3: 2 users") && s.contains("▶ 2 ")
    });
    assert!(screen.contains("Levels (latency in ms)"), "{screen}");
    assert!(screen.contains("Throughput (/s)"), "{screen}");
    assert!(screen.contains("  1 "), "the first level's row:\n{screen}");
    assert!(
        screen.contains("Latency ms by throughput"),
        "the curve:\n{screen}"
    );
    assert!(screen.contains("2 users: http://"), "the title:\n{screen}");
    // The overview of the run going now is a key away.
    pty.press(b"1");
    pty.wait_for(
        Duration::from_secs(10),
        "the running level's overview",
        |s| p99_row(s).is_some() && s.contains("Percentiles ms"),
    );
    let status = pty.wait_exit(Duration::from_secs(60));
    assert_eq!(status.exit_code(), 0, "{}", pty.contents());
    let raw = pty.raw_once(b"grid: ");
    assert_eq!(
        count(&raw, ENTER_ALT),
        1,
        "one terminal session for the whole grid"
    );
    let left = raw
        .windows(LEAVE_ALT.len())
        .rposition(|w| w == LEAVE_ALT)
        .expect("the alternate screen was left");
    let after = String::from_utf8_lossy(&raw[left..]);
    // Every run's summary and the grid's table print after the dashboard, not over it.
    assert!(after.contains("grid: "), "{after}");
    assert_eq!(
        after.matches("latency in ms (of requests").count(),
        3,
        "{after}"
    );
    assert!(!pty.alternate(), "still on the alternate screen");
    let text = std::fs::read_to_string(dir.path().join("grid.json")).expect("grid.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(3));
    assert_eq!(json["capacity"][0]["level"]["users"], 4);
}

/// The header's `errors N (P%)`, as numbers.
fn header_errors(screen: &str) -> Option<(u64, f64)> {
    let line = screen.lines().find(|l| l.contains(" total "))?;
    let (_, rest) = line.split_once("errors ")?;
    let (count, rest) = rest.split_once(" (")?;
    let (percent, _) = rest.split_once("%)")?;
    Some((count.replace(',', "").parse().ok()?, percent.parse().ok()?))
}

/// A mix of two workloads where the second fails every request (a 503): the header counts its
/// failures, the Errors view and the status codes show them as its own, the Labels table has
/// both workloads' rows; `+` changes both workloads, as the footer says.
#[test]
fn a_mix_shows_every_workload_on_every_view() {
    let (_rt, url, target) = target();
    let dir = tempfile::tempdir().expect("tempdir");
    // The same rate each, so about half of all requests fail.
    let file = |name: &str, label: &str, path: &str| {
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            format!(
                "targets:\n  t: {url}\nload:\n  rate: 40\n  duration: 60s\nsteps:\n  - label: \
                 {label}\n    request:\n      path: {path}\n"
            ),
        )
        .expect("a scenario file");
    };
    file("m1", "page", "/");
    file("m2", "broken", "/status/503");
    let mut pty = Pty::spawn(
        &["run", "m1.yaml", "--with", "m2.yaml", "--json", "w.json"],
        dir.path(),
    );
    let screen = pty.wait_for(Duration::from_secs(30), "the second's failures", |s| {
        header_errors(s).is_some_and(|(n, _)| n >= 40)
    });
    let (_, percent) = header_errors(&screen).expect("the header's errors");
    assert!(
        (30.0..70.0).contains(&percent),
        "half the requests fail: {percent}%\n{screen}"
    );
    assert!(screen.contains("m1 40.0/s · m2 40.0/s"), "{screen}");
    assert!(screen.contains("all workloads ±10%"), "{screen}");

    pty.press(b"3");
    let errors = pty.wait_for(Duration::from_secs(10), "the Errors view", |s| {
        s.contains("Status codes")
    });
    assert!(!errors.contains("No errors."), "{errors}");
    // The failing status's class, on the row whose sample names the second workload.
    assert!(
        errors
            .lines()
            .any(|l| l.contains("status ") && l.contains("m2: HTTP 503")),
        "{errors}"
    );
    assert!(
        errors.contains("m2: HTTP 503"),
        "the sample names its workload:\n{errors}"
    );
    assert!(errors.contains("│503 "), "{errors}");
    assert!(errors.contains("│200 "), "{errors}");

    pty.press(b"2");
    let labels = pty.wait_for(Duration::from_secs(10), "the Labels view", |s| {
        s.contains("Received KB/s")
    });
    let row = |label: &str| {
        labels
            .lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label} row:\n{labels}"))
            .to_string()
    };
    assert!(row("m2: broken").contains("100.00%"), "{labels}");
    assert!(row("m1: page").contains(" 0.00%"), "{labels}");

    pty.press(b"+");
    pty.wait_for(Duration::from_secs(10), "the rate changed", |s| {
        s.contains("(x1.10)")
    });
    pty.press(b"q");
    let status = pty.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "exit status {status:?}");
    let text = std::fs::read_to_string(dir.path().join("w.json")).expect("w.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    // `+` reached both workloads.
    for i in 0..2 {
        let changes = json["runs"][i]["result"]["changes"]
            .as_array()
            .expect("changes");
        assert!(
            changes.iter().any(|c| c["what"] == "rate x1.10"),
            "workload {i}: {changes:?}"
        );
    }
    let total = &json["rows"][2];
    assert_eq!(total["side"], "TOTAL");
    assert!(total["total"]["errors"].as_u64().expect("errors") >= 40);
    assert!(target.requests() > 0);
}

/// A mix of files (`a.yaml@7 b.yaml@3`) is named by every file, on the dashboard's header and
/// in the summary after it, not by its first alone.
#[test]
fn a_mix_of_files_is_named_by_every_file() {
    let (_rt, url, _target) = target();
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, path) in [("a", "/a"), ("b", "/b")] {
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            format!(
                "targets:\n  t: {url}\nload:\n  users: 1\n  duration: 60s\nsteps:\n  - label: \
                 {name}\n    request:\n      path: {path}\n"
            ),
        )
        .expect("a scenario file");
    }
    let mut pty = Pty::spawn(&["run", "a.yaml@7", "b.yaml@3"], dir.path());
    let screen = pty.wait_for(Duration::from_secs(30), "the running mix", |s| {
        s.contains("RUNNING")
    });
    assert!(
        screen
            .lines()
            .next()
            .is_some_and(|l| l.contains("a.yaml@7 b.yaml@3")),
        "{screen}"
    );
    pty.press(b"q");
    let status = pty.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "exit status {status:?}");
    pty.raw_once(b"TOTAL");
    let after = pty.contents();
    assert!(after.contains("-> a.yaml@7 b.yaml@3"), "{after}");
}
