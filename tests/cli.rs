//! The built binary: exit codes, bad input, signals, and the README's examples.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use throng::testbed::HttpTarget;

use common::throng;

fn target() -> (tokio::runtime::Runtime, throng::testbed::RunningTarget) {
    common::serve(HttpTarget::default())
}

#[test]
fn thresholds_set_the_exit_code() {
    let (_rt, t) = target();
    let url = format!("{}/", t.url());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = throng(&[
        "run",
        &url,
        "-c",
        "2",
        "-n",
        "200",
        "--quiet",
        "--threshold",
        "p99<10s",
        "--threshold",
        "error_rate<1%",
        "--threshold",
        "p50<1us",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL p50<1us"), "{stdout}");
    assert!(stdout.contains("ok   p99<10s"), "{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let th = r["thresholds"].as_array().unwrap();
    assert_eq!(th.len(), 3);
    assert_eq!(th.iter().filter(|t| t["passed"] == false).count(), 1);

    let out = throng(&[
        "run",
        &url,
        "-c",
        "2",
        "-n",
        "50",
        "--quiet",
        "--threshold",
        "p99<10s",
    ]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn the_summary_has_the_aggregate_table() {
    let (_rt, t) = target();
    let out = throng(&[
        "run",
        &format!("{}/", t.url()),
        "-c",
        "3",
        "-n",
        "300",
        "--quiet",
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let header = stdout
        .lines()
        .find(|l| l.starts_with("Label"))
        .expect("a table header");
    for col in [
        "Samples",
        "Average",
        "Median",
        "90%",
        "95%",
        "99%",
        "Min",
        "Max",
        "Error %",
        "Throughput",
        "Received KB/s",
        "Sent KB/s",
    ] {
        assert!(header.contains(col), "missing {col} in {header}");
    }
    let row = stdout
        .lines()
        .find(|l| l.starts_with("GET /"))
        .expect("a label row");
    assert!(row.split_whitespace().nth(2) == Some("300"), "{row}");
    assert!(stdout.lines().any(|l| l.starts_with("TOTAL")), "{stdout}");
    assert!(stdout.contains("Status codes   200: 300"), "{stdout}");
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "not a url", "-n", "1"],
            // The list is the registry's, in its order: a protocol added later extends it.
            "not a URL of the protocols throng speaks (http://, https://, tcp://, tcps://, ws://, wss://",
        ),
        (
            &["run", "ftp://127.0.0.1/", "-n", "1"],
            "ftp://127.0.0.1/: the scheme is `ftp`, not one of the protocols throng speaks",
        ),
        (
            &["run", "http://127.0.0.1:1/", "-z", "ten"],
            "-z/--duration \"ten\"",
        ),
        (
            &["run", "http://127.0.0.1:1/", "--rate-stages", "30s"],
            "--rate-stages \"30s\"",
        ),
        (
            &["run", "http://127.0.0.1:1/", "--user-stages", "5s:x"],
            "--user-stages \"5s:x\"",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:1/",
                "-n",
                "1",
                "--threshold",
                "p99<fast",
            ],
            "--threshold",
        ),
        (
            &["run", "http://127.0.0.1:1/", "-n", "1", "-H", "nocolon"],
            "-H header `nocolon`",
        ),
        (
            &[
                "run",
                "http://127.0.0.1:1/",
                "-n",
                "1",
                "-d",
                "@/no/such/file",
            ],
            "-d @/no/such/file",
        ),
        (&["run", "http://127.0.0.1:1/"], "needs an end"),
        (
            &["run", "http://127.0.0.1:1/", "-q", "0", "-z", "1s"],
            "-q/--rate",
        ),
        (
            &["run", "http://127.0.0.1:1/", "-c", "0", "-n", "1"],
            "'--users <USERS>': must be a whole number of at least 1",
        ),
        (
            &["run", "http://127.0.0.1:1/", "-c", "100000", "-n", "1"],
            "open-file limit",
        ),
        (&["run", "http://127.0.0.1:1/", "--bogus"], "--bogus"),
        (
            &["run", "http://no-such-host.invalid/", "-n", "1"],
            "cannot resolve",
        ),
    ];
    for (args, needle) in cases {
        let out = throng(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Runs `throng ARGS` and returns stderr, asserting exit code 2 and no panic.
fn usage_error(args: &[&str]) -> String {
    let out = throng(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

/// Writes a scenario file in a fresh directory; the directory lives as long as the guard.
fn scenario_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.yaml");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap().to_string();
    (dir, path)
}

#[test]
fn a_port_that_does_not_parse_is_an_error_not_port_80() {
    for (url, port) in [
        ("http://127.0.0.1:99999/", "99999"),
        ("http://127.0.0.1:65536/", "65536"),
        ("http://127.0.0.1:8080x/", "8080x"),
        ("http://127.0.0.1:-1/", "-1"),
    ] {
        let err = usage_error(&["run", url, "-n", "1"]);
        assert!(
            err.contains(&format!(
                "URL `{url}`: the port `{port}` is not a number from 1 to 65535"
            )),
            "{url}: {err}"
        );
        let (_dir, file) = scenario_file(&format!(
            "targets:\n  api: {url}\nsteps:\n  - label: x\n    request:\n      path: /\n"
        ));
        let err = usage_error(&["run", &file, "-n", "1"]);
        assert!(
            err.contains(&format!(
                "x.yaml:2:8: target `api`: URL `{url}`: the port `{port}`"
            )),
            "{url}: {err}"
        );
    }
    for (url, needle) in [
        ("http://:8080/", "the host is empty"),
        ("htp://127.0.0.1/", "the scheme is `htp`"),
        ("http://127.0.0.1:1/a b", "cannot hold spaces"),
        (
            "http://me:pw@127.0.0.1:1/",
            "credentials in a URL are not sent",
        ),
    ] {
        let err = usage_error(&["run", url, "-n", "1"]);
        assert!(err.contains(needle), "{url}: {err}");
        assert!(!err.contains("pw@"), "{url}: {err}");
    }
}

#[test]
fn bad_durations_and_stages_exit_2_and_never_panic() {
    let url = "http://127.0.0.1:1/";
    for (args, needle) in [
        (
            &["-z", "1e20"][..],
            "-z/--duration \"1e20\": not a duration (longer than 100 days",
        ),
        (&["-z", "1e400"], "longer than 100 days"),
        (&["-z", "NaN"], "`NaN` is not a number of seconds"),
        (&["-z=-5"], "a duration cannot be negative"),
        (&["-z", "101d"], "longer than 100 days"),
        (&["-t", "inf"], "-t/--timeout \"inf\""),
        (&["--grace", "1e19"], "--grace \"1e19\""),
        (
            &["--rate-stages", "30s:10,,5s:0"],
            "--rate-stages \"30s:10,,5s:0\": stage 2 is empty",
        ),
        (&["--rate-stages", "30s:10,"], "stage 2 is empty"),
        (
            &["--user-stages", "0s:100"],
            "the stages last no time at all",
        ),
        (
            &["--rate-stages", "5s:NaN"],
            "stage `5s:NaN`: the target must be a number",
        ),
        (&["--user-stages", "1e30:5"], "longer than 100 days"),
        (
            &["--rate-stages", "1s:10", "-q", "NaN"],
            "-q/--rate NaN: the starting rate of --rate-stages must be 0 or more",
        ),
    ] {
        let mut all = vec!["run", url, "-n", "1"];
        all.extend_from_slice(args);
        let err = usage_error(&all);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn bad_thresholds_exit_2_with_the_reason() {
    for (threshold, needle) in [
        (
            "error_rate<200%",
            "`200%`: an error rate is from 0% to 100%",
        ),
        ("p99<250", "`250` has no unit: write 250ms"),
        ("rps>=-5", "a rate is zero or more requests per second"),
        ("p99<-1ms", "`-1ms`: a latency cannot be negative"),
        ("p0<1ms", "`p0` is the minimum: write `min`"),
        ("p100<1ms", "`p100` is the maximum: write `max`"),
        ("p99.99999<1ms", "at most three decimals"),
        ("p99<<1ms", "`<<` is not a comparison"),
        ("p99=<1ms", "`=<` is not a comparison"),
        ("p95{}<1ms", "the label between `{` and `}` is empty"),
    ] {
        let err = usage_error(&[
            "run",
            "http://127.0.0.1:1/",
            "-n",
            "1",
            "--threshold",
            threshold,
        ]);
        assert!(
            err.contains(&format!("--threshold `{threshold}`: ")) && err.contains(needle),
            "{threshold}: {err}"
        );
        assert!(!err.contains("threshold threshold"), "{threshold}: {err}");
    }
    let (_dir, file) = scenario_file(
        "targets:\n  api: http://127.0.0.1:1\nthresholds:\n  - p99<250\nsteps:\n  - label: x\n    request:\n      path: /\n",
    );
    let err = usage_error(&["run", &file, "-n", "1"]);
    assert!(
        err.contains("x.yaml:4:5: threshold `p99<250`: `250` has no unit"),
        "{err}"
    );
}

#[test]
fn a_scenario_that_is_not_text_or_not_there_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("x.yaml");
    std::fs::write(&bin, b"\x7fELF\x02\x01\x01\x00\xff\xfe").unwrap();
    let err = usage_error(&["run", bin.to_str().unwrap()]);
    assert!(
        err.contains("x.yaml:1:9: not a text file: a scenario is YAML text in UTF-8"),
        "{err}"
    );
    let missing = dir.path().join("gone.yaml");
    let err = usage_error(&["run", missing.to_str().unwrap()]);
    assert!(
        err.contains("gone.yaml: cannot read the scenario file"),
        "{err}"
    );
}

#[cfg(unix)]
fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

#[cfg(unix)]
#[test]
fn sigint_and_sigterm_stop_the_run_and_write_the_result() {
    let (_rt, t) = target();
    let url = format!("{}/delay/5", t.url());
    for sig in ["-INT", "-TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let child = Command::new(env!("CARGO_BIN_EXE_throng"))
            .args(["run", &url, "-c", "4", "-z", "60s", "--quiet", "--json"])
            .arg(&json)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Instant::now();
        signal(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "took {:?} to stop",
            sent.elapsed()
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["interrupted"], true);
        assert!(
            r["total"]["samples"].as_u64().unwrap() > 100,
            "{}",
            r["total"]
        );
        assert_eq!(
            r["total"]["errors"], 0,
            "requests in flight at the stop finish within the grace period"
        );
        assert!(r["duration"].as_f64().unwrap() < 10.0);
        assert!(!r["series"].as_array().unwrap().is_empty());
        assert!(String::from_utf8_lossy(&out.stdout).contains("TOTAL"));
    }
}

/// A flag of one protocol given for another protocol's URL, and an open-loop setting without a
/// rate, exit 2 saying so, before any load: they used to be ignored (`--workload` on an http://
/// URL ran plain GETs and exited 0).
#[test]
fn flags_that_do_not_apply_exit_2_naming_why() {
    let (_rt, t) = common::serve(throng::testbed::HttpTarget::default());
    let url = t.url();
    let sql = "postgres://u:p@127.0.0.1:1/db";
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![&url, "--workload", "oltp_read_only"],
            format!("--workload applies to postgres://, postgresql://, mysql://, mariadb:// and sqlite:// targets; {url} is not one"),
        ),
        (vec![&url, "--sql", "SELECT 1"], "--sql applies to".into()),
        (vec![&url, "--param", "1"], "--param applies to".into()),
        (vec![&url, "--transaction"], "--transaction applies to".into()),
        (vec![&url, "--call", "a.B/C"], "--call applies to grpc:// and grpcs:// targets".into()),
        (vec![&url, "--proto", "x.proto"], "--proto applies to grpc:// and grpcs:// targets".into()),
        (vec![&url, "--streams", "5"], "give --http2 too".into()),
        (vec![sql, "-m", "POST"], "-m/--method applies to http:// and https:// targets".into()),
        (vec![sql, "--streams", "5"], "--streams applies to".into()),
        (
            vec![&url, "-c", "2", "--max-in-flight", "5"],
            "belong to the open loop".into(),
        ),
        (vec![&url, "--queue", "5"], "belong to the open loop".into()),
    ];
    common::refused(&cases);
    assert_eq!(t.requests(), 0, "no load was sent");
    // What applies still runs.
    let out = throng(&[
        "run",
        &url,
        "--http2",
        "--streams",
        "5",
        "-n",
        "5",
        "--no-tui",
        "--quiet",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--report FORMAT:-` writes the report on standard output, as `--json -` does the result (it
/// wrote a file named `-`), and the summary goes to standard error.
#[test]
fn a_report_to_dash_goes_to_standard_output() {
    let (_rt, t) = common::serve(throng::testbed::HttpTarget::default());
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", &t.url(), "-n", "20", "--no-tui", "--quiet"])
        .args(["--report", "markdown:-"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("**closed loop"), "{stdout}");
    assert!(stdout.contains("| GET / | 20 |"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Label  Samples"));
    assert!(!dir.path().join("-").exists(), "no file named -");
}

/// The JSON rows of a grid's sides: (side, samples, errors, bytes sent).
fn side_rows(path: &std::path::Path) -> Vec<(String, u64, u64, u64)> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r["total"][k].as_u64().unwrap();
            (
                r["side"].as_str().unwrap().to_string(),
                n("samples"),
                n("errors"),
                n("bytes_sent"),
            )
        })
        .collect()
}

/// Sides of HTTP and gRPC: `-d` with `--call` is the call's message, not the body of the HTTP
/// side's GET (which sent 2 KB a request); with `-m POST` it is the HTTP side's body too.
#[test]
fn a_grpc_sides_message_is_not_the_body_of_the_http_sides_get() {
    let (rt, h) = target();
    let g = rt
        .block_on(throng::testbed::GrpcTarget::default().start())
        .unwrap();
    let body = format!(r#"{{"name":"{}"}}"#, "x".repeat(2000));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ab.json");
    let (side_h, side_g) = (format!("http={}/", h.url()), format!("grpc={}", g.url()));
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "http://127.0.0.1/",
            "--target",
            &side_h,
            "--target",
            &side_g,
            "--call",
            "helloworld.Greeter/SayHello",
            "-d",
            &body,
            "-c",
            "1",
            "-n",
            "20",
            "--no-tui",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = throng(&args);
        assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
        side_rows(&json)
    };
    let rows = run(&[]);
    let (http, grpc) = (&rows[0], &rows[1]);
    assert_eq!(
        (http.0.as_str(), http.1, http.2),
        ("http", 20, 0),
        "{rows:?}"
    );
    assert_eq!(
        (grpc.0.as_str(), grpc.1, grpc.2),
        ("grpc", 20, 0),
        "{rows:?}"
    );
    assert!(http.3 / 20 < 1000, "a GET without the message: {rows:?}");
    assert!(grpc.3 / 20 > 2000, "the message on every call: {rows:?}");
    assert_eq!(g.calls(), 20);

    let rows = run(&["-m", "POST"]);
    assert!(rows[0].3 / 20 > 2000, "the POST's body: {rows:?}");
    assert!(rows[1].3 / 20 > 2000, "the call's message: {rows:?}");
}

/// HTTP/2's users share `--streams` to a connection whatever the cores: a worker thread opens
/// connections of its own, so `throng run --http2` takes no more threads than the connections
/// its users fill (at `-c 4 --streams 4` on two cores it made two connections of two streams).
#[test]
fn http2_users_fill_their_connections_whatever_the_cores() {
    let (_rt, t) = target();
    let url = format!("{}/", t.url());
    for (streams, connections) in [("4", 1), ("2", 3)] {
        let out = throng(&[
            "run",
            &url,
            "--http2",
            "-c",
            "4",
            "--streams",
            streams,
            "-n",
            "40",
            "--no-tui",
            "--quiet",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
        assert_eq!(t.connections(), connections, "--streams {streams}");
    }
    assert_eq!(t.requests(), 80);
}

/// `--http2=SIDE` speaks HTTP/2 to the sides it names and HTTP/1.1 to the others, so the two
/// can be compared; `--http2` alone with two HTTP sides is refused (it ran HTTP/2 twice).
#[test]
fn http2_goes_to_the_sides_it_names() {
    let (rt, one) = target();
    let two = rt.block_on(HttpTarget::default().start()).unwrap();
    let (h1, h2) = (format!("h1={}/", one.url()), format!("h2={}/", two.url()));
    let sides = ["http://127.0.0.1/", "--target", &h1, "--target", &h2];
    let run = |extra: &[&str]| {
        let mut args = vec!["run"];
        args.extend(sides);
        // One worker thread: HTTP/2 connections are a worker's.
        args.extend([
            "-c",
            "4",
            "-n",
            "40",
            "--threads",
            "1",
            "--no-tui",
            "--quiet",
        ]);
        args.extend(extra);
        let out = throng(&args);
        assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    };
    // HTTP/1.1: a connection a user; HTTP/2: the four users share one.
    run(&["--http2=h2"]);
    assert_eq!((one.connections(), two.connections()), (4, 1));
    // --streams is the HTTP/2 side's: two users a connection there, none asked of h1.
    run(&["--http2=h2", "--streams", "2"]);
    assert_eq!((one.connections(), two.connections()), (8, 3));
    assert_eq!((one.requests(), two.requests()), (80, 80));

    let with = |extra: &[&'static str]| -> Vec<&str> {
        sides.iter().copied().chain(extra.iter().copied()).collect()
    };
    common::refused(&[
        (
            with(&["--http2"]),
            "--http2 with the HTTP sides h1, h2: name those that speak HTTP/2 as --http2=h2 \
             (the others speak HTTP/1.1), or --http2=h1,h2 for every one"
                .into(),
        ),
        (
            with(&["--http2=h3"]),
            "--http2=h3: no side is named h3 (the HTTP sides are h1, h2)".into(),
        ),
        (
            vec![sides[0], "--http2=h2"],
            "--http2=h2: names sides of an A/B run".into(),
        ),
    ]);
    assert_eq!((one.requests(), two.requests()), (80, 80), "nothing sent");
}
