//! throng as a library: `throng_run::Run` used without the command line, against the in-process
//! testbed, for what only a library user sees: which exporter a run reports to, the handle on
//! a running run, an observer in place of printing.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

use throng::run::observer::Stream;
use throng::run::{Collect, Event};
use throng::testbed::{Delay, HttpTarget};
use throng::Run;

/// A run reports its metrics to the exporter it is given and to no other: the command line's
/// flags start one, and a second run of the process that was not given it exports nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_run_given_the_exporter_exports_to_it() {
    let target = HttpTarget::default().start().await.unwrap();
    let exported = format!("{}/exported", target.url());
    let silent = format!("{}/silent", target.url());
    let flags = common::args(&[
        &exported,
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "10ms",
        "--quiet",
    ]);
    let outputs = flags.run.outputs().unwrap();
    let exporter = outputs
        .metrics
        .clone()
        .expect("--metrics-listen starts an exporter");

    let (plan, driver) = common::setup(&[&exported, "-c", "1", "-n", "5"]);
    let a = Run::new(plan, Arc::new(driver))
        .metrics(exporter.clone())
        .execute()
        .await
        .unwrap();
    let (plan, driver) = common::setup(&[&silent, "-c", "1", "-n", "7"]);
    let b = Run::new(plan, Arc::new(driver)).execute().await.unwrap();
    assert_eq!(a.snapshot.total.samples, 5);
    assert_eq!(b.snapshot.total.samples, 7);
    assert_eq!(target.requests(), 12);

    let text = exporter.scrape();
    assert!(
        text.contains("/exported"),
        "the run given the exporter: {text}"
    );
    assert!(
        !text.contains("/silent"),
        "the run not given the exporter was exported: {text}"
    );
}

/// Waits (10 s at most) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "waited 10 s for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A library user has the dashboard's handle on a run: a live snapshot, pause (no request
/// reaches the server while paused), resume, and an early stop, all in the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_run_is_watched_paused_resumed_and_stopped_early() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(5)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let (plan, driver) = common::setup(&[&url, "-c", "2", "-d", "30s", "-n", "100000"]);
    let started = Run::new(plan, Arc::new(driver)).start().await.unwrap();
    let running = started.running.clone();

    until("a live snapshot with samples", || {
        running.snapshot().total.samples > 0
    })
    .await;

    running.pause();
    // Requests in flight when paused finish (5 ms each).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let paused_at = target.requests();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        target.requests(),
        paused_at,
        "requests reached the server while paused"
    );

    running.resume();
    until("requests after resuming", || target.requests() > paused_at).await;
    running.stop();

    let finished = started.finished.await.unwrap().unwrap();
    assert!(
        finished.result.interrupted,
        "the result says it was stopped early"
    );
    assert_eq!(finished.snapshot.total.samples, target.requests());
    assert!(finished.snapshot.total.samples < 100_000);
    let changes: Vec<&str> = finished
        .result
        .changes
        .iter()
        .map(|c| c.what.as_str())
        .collect();
    assert_eq!(changes, ["paused", "resumed"]);
}

/// A run that fails before its load (a plan that does not validate) is an error from
/// `start`, not a handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_cannot_start_says_why() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let (plan, driver) = common::setup(&[&url, "-c", "1", "-n", "3"]);
    let dir = tempfile::tempdir().unwrap();
    // A result file in a directory that does not exist: refused before any load.
    let e = Run::new(plan, Arc::new(driver))
        .json(dir.path().join("missing/result.json"))
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.exit_code(), throng::run::EXIT_USAGE, "{e}");
    assert_eq!(target.requests(), 0);
}

/// Runs the test `name` of this binary again in a child process with `env` set, and returns its
/// standard output and error once it has passed.
fn in_child(name: &str, env: (&str, &str)) -> (String, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(env.0, env.1)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "the child failed: {stdout}{stderr}");
    assert!(stdout.contains("1 passed"), "the child ran: {stdout}");
    (stdout, stderr)
}

/// What the child process of [`a_library_run_tells_its_observer_and_prints_nothing`] runs:
/// a run with messages, the summary and a late start, told to a collecting observer.
async fn observed_run() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let (plan, driver) = common::setup(&[&url, "-c", "1", "-n", "5"]);
    let seen = Arc::new(Collect::default());
    let finished = Run::new(plan, Arc::new(driver))
        .messages(true)
        .summary(true)
        .json(&json)
        .samples(dir.path().join("samples.jtl"))
        .start_at(std::time::SystemTime::now() - Duration::from_secs(2))
        .observer(seen.clone())
        .execute()
        .await
        .unwrap();
    assert_eq!(finished.snapshot.total.samples, 5);
    let events = seen.events();
    let has = |f: &dyn Fn(&Event) -> bool| events.iter().any(f);
    assert!(
        has(&|e| matches!(e, Event::Warning(w) if w.starts_with("the start was"))),
        "the late start: {events:?}"
    );
    assert!(
        has(&|e| matches!(e, Event::Text { text, to: Stream::Out } if text.contains("p99"))),
        "the summary: {events:?}"
    );
    assert!(
        has(&|e| matches!(e, Event::Written { what, path } if what == "result" && *path == json)),
        "the result written: {events:?}"
    );
    assert!(
        has(&|e| *e == Event::Note("5 samples written".into())),
        "the samples written: {events:?}"
    );
}

/// A library run says what `throng run` prints (a late start, the summary, the files written)
/// to its observer, and nothing reaches standard output or standard error: the run goes in a
/// child process (this test binary again), whose output is read here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_run_tells_its_observer_and_prints_nothing() {
    if std::env::var_os("THRONG_LIBRARY_CHILD").is_some() {
        return observed_run().await;
    }
    let (stdout, stderr) = in_child(
        "library::a_library_run_tells_its_observer_and_prints_nothing",
        ("THRONG_LIBRARY_CHILD", "1"),
    );
    assert_eq!(stderr, "", "the run printed to standard error");
    for said in ["p99", "written", "start was", "samples"] {
        assert!(!stdout.contains(said), "the run printed {said:?}: {stdout}");
    }
}

/// A run told its place in a grid labels its series with it: two runs on one exporter, at
/// two sides, are two series apart, with no task-local scope around them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_place_is_passed_and_labels_its_series() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let flags = common::args(&[&url, "--metrics-listen", "127.0.0.1:0", "--quiet"]);
    let exporter = flags.run.outputs().unwrap().metrics.unwrap();
    for side in ["left", "right"] {
        let (plan, driver) = common::setup(&[&url, "-c", "1", "-n", "3"]);
        let at = throng::report::Coordinates {
            level: None,
            side: Some(side.into()),
            round: 2,
        };
        Run::new(plan, Arc::new(driver))
            .metrics(exporter.clone())
            .place(at)
            .execute()
            .await
            .unwrap();
    }
    let text = exporter.scrape();
    let requests = |side: &str| {
        text.lines()
            .find(|l| {
                l.starts_with(&format!(
                    "throng_requests_total{{side=\"{side}\",round=\"2\",label=\"GET /\",outcome=\"succeeded\"}}"
                ))
            })
            .map(|l| l.rsplit(' ').next().unwrap_or_default().to_string())
    };
    assert_eq!(requests("left").as_deref(), Some("3"), "{text}");
    assert_eq!(requests("right").as_deref(), Some("3"), "{text}");
}

/// Where the summaries of a grid's runs went: one `Text` with a p99 column a run (the grid's
/// JSON document, which names p99 too, left out).
fn summaries(seen: &Collect) -> Vec<Stream> {
    seen.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Text { text, to } if text.contains("p99") && !text.starts_with('{') => Some(to),
            _ => None,
        })
        .collect()
}

/// A grid hands each run its cell as a value: a run started in a task of its own
/// (`Run::start`) is still its grid's, and two grids going at once share nothing. The runs of
/// the grid whose document takes standard output say their summaries on standard error (a
/// task-local was lost in the run's own task, and they went to standard output, into the
/// document); the other grid's runs on standard output; each run is titled with its own cell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_grids_at_once_each_hand_their_runs_their_own_cells() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let dir = tempfile::tempdir().unwrap();
    let grid = |json: std::path::PathBuf, seen: Arc<Collect>| {
        let url = url.clone();
        throng::run::Grid::new()
            .rounds(2)
            .json(json)
            .observer(seen.clone())
            .execute(move |cell| {
                let (url, seen) = (url.clone(), seen.clone());
                async move {
                    let (plan, driver) = common::setup(&[&url, "-c", "1", "-n", "3"]);
                    let started = Run::new(plan, Arc::new(driver))
                        .summary(true)
                        .observer(seen)
                        .cell(cell)
                        .start()
                        .await?;
                    started.finished.await.unwrap()
                }
            })
    };
    let (on_stdout, in_file) = (Arc::new(Collect::default()), Arc::new(Collect::default()));
    let file = dir.path().join("grid.json");
    let (a, b) = tokio::join!(
        grid("-".into(), on_stdout.clone()),
        grid(file.clone(), in_file.clone())
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(target.requests(), 12);
    assert_eq!(summaries(&on_stdout), [Stream::Err, Stream::Err]);
    assert_eq!(summaries(&in_file), [Stream::Out, Stream::Out]);
    // The grid's own document, on standard output for the first only.
    let documents = |seen: &Collect| {
        seen.events()
            .into_iter()
            .filter(|e| matches!(e, Event::Text { text, to: Stream::Out } if text.starts_with('{')))
            .count()
    };
    assert_eq!(documents(&on_stdout), 1);
    assert_eq!(documents(&in_file), 0);
    assert!(file.exists());
    for g in [&a, &b] {
        let targets: Vec<&str> = g
            .result
            .runs
            .iter()
            .map(|r| r.result.plan.target.as_str())
            .collect();
        assert!(targets[0].starts_with("round 1 of 2: "), "{targets:?}");
        assert!(targets[1].starts_with("round 2 of 2: "), "{targets:?}");
    }
}

/// The library run of a scenario file's text `yaml`, named `file`: its plan from its `load:`
/// section, its driver with no options of the command line's.
fn scenario_run(yaml: &str, file: &str) -> Run {
    let scenario =
        throng::scenario::compile_str(yaml, file, std::path::Path::new("."), &throng::protocols())
            .unwrap();
    let plan = scenario.load.plan(file, &throng::core::spec::keys).unwrap();
    let options = throng::core::step::ClientOptions::default();
    let driver = throng::scenario::ScenarioDriver::new(scenario, &options).unwrap();
    Run::new(plan, Arc::new(driver))
}

/// A library run of a scenario file whose `load: start` is 1 s starts its load 1 s after the
/// run, as `throng run` does (only the command line used to wait: a library run of the same
/// file began at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_load_start_delays_a_library_run() {
    let target = HttpTarget::default().start().await.unwrap();
    let yaml = format!(
        "targets:\n  api: {}\nload:\n  users: 1\n  requests: 3\n  start: 1s\nsteps:\n  - label: \
         get\n    request:\n      path: /\n",
        target.url()
    );
    let run = scenario_run(&yaml, "start.yaml");
    assert_eq!(run.plan().start, Duration::from_secs(1));
    let began = Instant::now();
    let run = tokio::spawn(run.execute());
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(target.requests(), 0, "the load started before its start");
    let finished = run.await.unwrap().unwrap();
    assert!(began.elapsed() >= Duration::from_secs(1));
    assert_eq!(finished.snapshot.total.samples, 3);
    assert_eq!(target.requests(), 3);
}

/// What the child process of [`a_run_raises_the_open_file_limit_or_warns`] runs, under a hard
/// limit of 512 open files.
async fn open_files_run(url: &str) {
    let hard = 512;
    rlimit::setrlimit(rlimit::Resource::NOFILE, 256, hard).unwrap();
    let run = |connections: u64| {
        let (plan, driver) = common::setup(&[url, "-c", "1", "-n", "2"]);
        let seen = Arc::new(Collect::default());
        let run = Run::new(plan, Arc::new(driver))
            .connections(connections)
            .observer(seen.clone());
        (run, seen)
    };
    // 100 connections fit once the soft limit is raised to the hard one; no word of it.
    let (fits, seen) = run(100);
    assert_eq!(fits.execute().await.unwrap().snapshot.total.samples, 2);
    assert_eq!(rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap().0, hard);
    assert_eq!(seen.events(), []);
    // 1,000 do not: the run says so to its observer, and goes on.
    let (over, seen) = run(1000);
    assert_eq!(over.execute().await.unwrap().snapshot.total.samples, 2);
    let warnings: Vec<Event> = seen.events();
    assert!(
        matches!(&warnings[..], [Event::Warning(w)]
            if w.starts_with("1000 connections need about 1064 open files, but the open-file \
                              limit is 512 (already raised to the hard limit)")),
        "{warnings:?}"
    );
}

/// A library run raises the process's open-file limit for its connections, as `throng run`
/// does, and warns its observer when even the hard limit is too low: in a child process (this
/// test binary again), whose limit the test lowers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_raises_the_open_file_limit_or_warns() {
    if let Some(url) = std::env::var_os("THRONG_OPEN_FILES_CHILD") {
        return open_files_run(&url.to_string_lossy()).await;
    }
    let target = HttpTarget::default().start().await.unwrap();
    in_child(
        "library::a_run_raises_the_open_file_limit_or_warns",
        ("THRONG_OPEN_FILES_CHILD", &format!("{}/", target.url())),
    );
    assert_eq!(target.requests(), 4);
}

/// Checking is a library call with a result of its own: a run is checked with no load, and
/// with its steps' connections opened once a target that refuses is in the result (its step,
/// class and message), where the load would have found it request after request. A working
/// target passes, and receives no request; a threshold on a row the run does not have is bad
/// input, as it would be from `execute`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checking_a_run_finds_a_bad_target_without_a_load() {
    let target = HttpTarget::default().start().await.unwrap();
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };
    let run = |url: &str| {
        let (plan, driver) = common::setup(&[url, "-c", "3", "-n", "100"]);
        Run::new(plan, Arc::new(driver)).thresholds(["p99<1s".parse().unwrap()])
    };

    let bad = run(&refused).check_connecting().await.unwrap();
    assert!(!bad.passed());
    assert_eq!(bad.labels, ["GET /"]);
    assert_eq!(bad.connections, 3);
    let [unreached] = &bad.unreached[..] else {
        panic!("one step unreached: {:?}", bad.unreached)
    };
    assert_eq!(unreached.step, "GET /");
    assert_eq!(unreached.class, throng::core::ErrorClass::Connect);
    assert!(!unreached.message.is_empty());

    let url = format!("{}/", target.url());
    let good = run(&url).check_connecting().await.unwrap();
    assert!(good.passed(), "{good:?}");
    assert_eq!(good.thresholds.len(), 1);
    // Without connecting, a refused target is not looked at.
    assert!(run(&refused).check().await.unwrap().passed());
    assert_eq!(target.requests(), 0, "a check sent a request");

    let e = run(&url)
        .thresholds(["p99{nope}<10ms".parse().unwrap()])
        .check()
        .await
        .unwrap_err();
    assert_eq!(e.exit_code(), throng::run::EXIT_USAGE);
    assert!(e.to_string().contains("\"nope\""), "{e}");
}

/// A library run of a scenario prepares its steps against their targets before any load, as
/// `throng run` does: a SQL statement with a syntax error stops `execute` and
/// `check_connecting` as bad input naming its place, and the HTTP step before it sends nothing
/// (the statement used to be prepared by the command line only, and a library run failed every
/// call). The same file with the statement right runs its load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_run_refuses_a_statement_that_cannot_run_before_its_load() {
    let pg = throng::testbed::Postgres::shared().expect("PostgreSQL");
    let target = HttpTarget::default().start().await.unwrap();
    let run = |query: &str| {
        let yaml = format!(
            "targets:\n  api: {}\n  db: {}\nload: {{ users: 1, iterations: 2 }}\nsteps:\n  - \
             label: page\n    request: {{ target: api, path: / }}\n  - label: read\n    sql: {{ \
             target: db, query: \"{query}\" }}\n",
            target.url(),
            pg.url()
        );
        scenario_run(&yaml, "prepared.yaml")
    };

    let bad = "SELEC 1";
    for e in [
        run(bad).check_connecting().await.unwrap_err(),
        run(bad).execute().await.unwrap_err(),
    ] {
        assert_eq!(e.exit_code(), throng::run::EXIT_USAGE, "{e}");
        let e = e.to_string();
        assert!(e.starts_with("prepared.yaml:9:31: "), "{e}");
        assert!(e.contains("target `db`") && e.contains("`SELEC 1`"), "{e}");
    }
    assert_eq!(
        target.requests(),
        0,
        "a step ran before the statement was refused"
    );

    let finished = run("SELECT 1").execute().await.unwrap();
    assert_eq!(finished.snapshot.total.samples, 4);
    assert_eq!(target.requests(), 2);
}
