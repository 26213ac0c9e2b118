//! Grids through the binary: a sweep finds the capacity of a target whose capacity is known,
//! ends where its condition says, and writes one result that every format reads back; a
//! warm-up reaches the target and no result; a scenario of several targets takes sides for one;
//! a bad side is refused before any load.

use crate::common;

use std::time::Duration;

use common::{delayed, json, ok, throng};
use throng::testbed::{Delay, HttpTarget};

use crate::compare::ONE_AT_A_TIME;

/// A grid document's level table as (side, samples, errors), row by row.
pub(crate) fn side_totals(g: &serde_json::Value) -> Vec<(&str, u64, u64)> {
    g["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["side"].as_str().expect("side"),
                r["total"]["samples"].as_u64().expect("samples"),
                r["total"]["errors"].as_u64().expect("errors"),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_finds_the_capacity_of_a_target_that_serves_four_at_a_time() {
    let _one = ONE_AT_A_TIME.lock().await;
    // Four requests at a time, 50 ms each: 80 requests a second at most. Up to 4 users a
    // request takes 50 ms; at 8 it waits for a turn (100 ms); at 16, for three (200 ms).
    let t = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(50)),
        capacity: Some(4),
        ..HttpTarget::default()
    }
    .start()
    .await
    .expect("the target starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = |name: &str| dir.path().join(name).display().to_string();
    let out = throng(&[
        "run",
        &format!("http://{}/", t.addr),
        "--sweep",
        "users=2,4,8,16,32",
        "-z",
        "1500ms",
        "--threshold",
        "p50<75ms",
        "--until",
        "p50>150ms",
        "--no-tui",
        "--json",
        &path("g.json"),
        "--report",
        &format!("html:{}", path("g.html")),
        "--report",
        &format!("markdown:{}", path("g.md")),
        "--report",
        &format!("csv:{}", path("g.csv")),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // 8 and 16 users failed the threshold: the grid says so with 99.
    assert_eq!(out.status.code(), Some(99), "{err}");
    let g = json(&dir.path().join("g.json"));
    assert_eq!(g["kind"], "grid");
    let rows = g["rows"].as_array().expect("rows");
    let levels: Vec<u64> = rows
        .iter()
        .map(|r| r["level"]["users"].as_u64().expect("users"))
        .collect();
    assert_eq!(
        levels,
        [2, 4, 8, 16],
        "16 crossed the until condition: 32 never ran"
    );
    let passed: Vec<bool> = rows.iter().map(|r| r["passed"] == true).collect();
    assert_eq!(passed, [true, true, false, false], "{stdout}");
    assert_eq!(rows[3]["crossed"], true);
    assert!(
        rows[3].get("unmeasured").is_none(),
        "p50 was measured there"
    );
    assert_eq!(
        g["capacity"][0]["level"]["users"], 4,
        "the highest level that met p50<75ms"
    );
    for r in &rows[2..] {
        let tp = r["total"]["throughput"].as_f64().expect("throughput");
        assert!(
            (45.0..90.0).contains(&tp),
            "at most 80/s past capacity: {tp}"
        );
    }
    // Every request the target served is a sample of one level, and no level lost any.
    let samples: u64 = g["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["result"]["total"]["samples"].as_u64().expect("samples"))
        .sum();
    assert_eq!(samples, t.requests());
    assert!(stdout.contains("capacity: 4 users at p50<75ms"), "{stdout}");
    // The document is the checked-in contract.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema-grid.json"))
            .expect("schema-grid.json"),
    )
    .expect("a schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let problems: Vec<String> = validator.iter_errors(&g).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:?}");
    assert!(stdout.contains("crossed p50>150ms at 16 users"), "{stdout}");

    // Every format, written by the run and read back from its JSON.
    let md = std::fs::read_to_string(dir.path().join("g.md")).expect("markdown");
    assert!(md.contains("| Users | Throughput (/s) | Samples |"), "{md}");
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| 16 |")).count(),
        1,
        "{md}"
    );
    let csv = std::fs::read_to_string(dir.path().join("g.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 5, "a header and four levels: {csv}");
    let html = std::fs::read_to_string(dir.path().join("g.html")).expect("html");
    assert!(
        html.contains("id=\"chart-curve\"") && html.contains("<svg"),
        "the curve"
    );
    for (format, says) in [
        ("markdown", "| Users |"),
        ("csv", "Users,Throughput (/s)"),
        ("html", "Latency against throughput"),
        ("json", "\"kind\": \"grid\""),
    ] {
        let out = throng(&["report", &path("g.json"), "--format", format]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{format}");
        assert!(text.contains(says), "{format}: {text}");
    }
    let out = throng(&["report", &path("g.json"), "--format", "junit"]);
    assert_eq!(out.status.code(), Some(2));
    let out = throng(&["compare", &path("g.json")]);
    let text = ok(&out);
    assert!(
        text.contains("2 users (baseline)") && text.contains("16 users"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_reaches_the_target_and_no_result() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(10).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("r.json");
    let out = throng(&[
        "run",
        &t.url(),
        "-c",
        "2",
        "-z",
        "1s",
        "--warmup",
        "1s",
        "--no-tui",
        "--quiet",
        "--json",
        &file.display().to_string(),
    ]);
    ok(&out);
    let r = json(&file);
    let samples = r["total"]["samples"].as_u64().expect("samples");
    let served = t.requests();
    // Two users at 10 ms a request: about 200 requests in each second, the warm-up's sent and
    // answered but not in the result.
    assert!(
        samples > 50,
        "the measured second has its requests: {samples}"
    );
    assert!(
        served >= samples + 50 && samples * 4 < served * 3,
        "the warm-up reached the target: {served} served, {samples} in the result"
    );
    let duration = r["duration"].as_f64().expect("duration");
    assert!(
        (0.9..1.6).contains(&duration),
        "the measurement's own time: {duration}"
    );
    assert_eq!(r["plan"]["warmup"], 1.0);
    // Connections stayed open into the measurement: one per user in all.
    assert_eq!(t.connections(), 2);

    common::refused(&[
        (
            vec![&t.url(), "--warmup", "1s"],
            "--warmup runs the load for a while before it is measured".into(),
        ),
        (
            vec![&t.url(), "--warmup", "soon", "-z", "1s"],
            "--warmup".into(),
        ),
        (
            vec![&t.url(), "--sweep", "users=1,0", "-z", "1s"],
            "--sweep".into(),
        ),
        (
            vec![&t.url(), "--sweep", "conns=1,2", "-z", "1s"],
            "a sweep is of `users` or `rate`".into(),
        ),
        (
            vec![
                &t.url(),
                "--sweep",
                "users=1,2",
                "-z",
                "1s",
                "--shard",
                "0/2",
            ],
            "not with a sweep, rounds or A/B sides".into(),
        ),
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_of_two_targets_takes_sides_for_one_and_a_bad_side_sends_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (aux, a, b) = (delayed(1).await, delayed(1).await, delayed(1).await);
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("two.yaml");
    std::fs::write(
        &file,
        "targets:\n  api: http://127.0.0.1:1\n  aux: http://127.0.0.1:1\nsteps:\n  - label: page\n    request:\n      target: api\n      path: /\n  - label: side\n    request:\n      target: aux\n      path: /\n",
    )
    .expect("writes");
    let (side_a, side_b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let aux_at = format!("aux={}", aux.url());
    let out = throng(&[
        "run",
        &file.display().to_string(),
        "--target",
        &aux_at,
        "--target",
        &side_a,
        "--target",
        &side_b,
        "--sweep",
        "users=1,2",
        "-i",
        "20",
        "--no-tui",
        "--quiet",
        "--json",
        &dir.path().join("g.json").display().to_string(),
    ]);
    ok(&out);
    // Each side had its own api (20 iterations of 1 user, then of 2); aux served both sides'.
    assert_eq!((a.requests(), b.requests(), aux.requests()), (60, 60, 120));
    let g = json(&dir.path().join("g.json"));
    let cells: Vec<(u64, &str)> = g["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["level"]["users"].as_u64().expect("users"),
                r["side"].as_str().expect("side"),
            )
        })
        .collect();
    assert_eq!(cells, [(1, "a"), (1, "b"), (2, "a"), (2, "b")]);

    // A gRPC side without --call is found before the HTTP side runs anything.
    let before = a.requests();
    let out = throng(&[
        "run",
        "http://127.0.0.1/",
        "--target",
        &side_a,
        "--target",
        "g=grpc://127.0.0.1:1",
        "-c",
        "1",
        "-n",
        "100",
        "--no-tui",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("side g:") && err.contains("--call"), "{err}");
    assert_eq!(a.requests(), before, "nothing was sent to side a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hold_of_the_stages_is_a_row_of_its_own() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(10).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("r.json");
    // Up to 2 users, hold 2 s; up to 4, hold 2 s: two holds, the second twice as busy.
    let out = throng(&[
        "run",
        &t.url(),
        "--user-stages",
        "1s:2,2s:2,1s:4,2s:4",
        "--no-tui",
        "--json",
        &file.display().to_string(),
    ]);
    let stdout = ok(&out);
    let r = json(&file);
    let holds = r["holds"].as_array().expect("holds");
    let levels: Vec<(u64, f64, f64)> = holds
        .iter()
        .map(|h| {
            (
                h["level"]["users"].as_u64().expect("users"),
                h["from"].as_f64().expect("from"),
                h["to"].as_f64().expect("to"),
            )
        })
        .collect();
    assert_eq!(levels, [(2, 1.0, 3.0), (4, 4.0, 6.0)]);
    let rate = |h: &serde_json::Value| h["total"]["throughput"].as_f64().expect("throughput");
    let ratio = rate(&holds[1]) / rate(&holds[0]);
    assert!(
        (1.5..2.5).contains(&ratio),
        "4 users against 2 at 10 ms: {ratio}"
    );
    let in_holds: u64 = holds
        .iter()
        .map(|h| h["total"]["samples"].as_u64().expect("samples"))
        .sum();
    assert!(in_holds < r["total"]["samples"].as_u64().expect("samples"));
    assert!(stdout.contains("Each hold of the stages"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transports_side_by_side_each_take_their_own_flags() {
    let _one = ONE_AT_A_TIME.lock().await;
    let h = delayed(1).await;
    let g = throng::testbed::GrpcTarget::default()
        .start()
        .await
        .expect("the gRPC target starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("t.json");
    let (side_h, side_g) = (format!("http={}", h.url()), format!("grpc={}", g.url()));
    let out = throng(&[
        "run",
        "http://127.0.0.1/",
        "--target",
        &side_h,
        "--target",
        &side_g,
        "--call",
        "helloworld.Greeter/SayHello",
        "-d",
        r#"{"name":"throng"}"#,
        "-c",
        "2",
        "-n",
        "50",
        "--no-tui",
        "--quiet",
        "--json",
        &file.display().to_string(),
    ]);
    ok(&out);
    // --call went to the gRPC side only; -d to both.
    assert_eq!((h.requests(), g.calls()), (50, 50));
    let r = json(&file);
    assert_eq!(side_totals(&r), [("http", 50, 0), ("grpc", 50, 0)]);

    // A flag of a protocol no side speaks is refused, before any load.
    common::refused(&[(
        vec![
            "http://127.0.0.1/",
            "--target",
            &side_h,
            "--target",
            &side_g,
            "--call",
            "helloworld.Greeter/SayHello",
            "--sql",
            "SELECT 1",
        ],
        "--sql applies to postgres://, postgresql://, mysql://, mariadb:// and sqlite:// targets; no side is one".into(),
    )]);
    assert_eq!((h.requests(), g.calls()), (50, 50), "nothing sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workloads_with_their_own_load_models_run_at_once_and_add_up_in_total() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (shop, api) = (delayed(2).await, delayed(5).await);
    let dir = tempfile::tempdir().expect("a temp dir");
    let browse = dir.path().join("browse.yaml");
    let orders = dir.path().join("orders.yaml");
    std::fs::write(
        &browse,
        format!(
            "targets:\n  shop: {}\nload:\n  users: 2\n  duration: 2s\nsteps:\n  - label: page\n    request:\n      path: /\n",
            shop.url()
        ),
    )
    .expect("writes");
    // An open loop of 20 orders a second, starting 1 s after the browsing, whose threshold a
    // 5 ms target cannot meet.
    std::fs::write(
        &orders,
        format!(
            "targets:\n  api: {}\nload:\n  rate: 20\n  duration: 1s\n  start: 1s\nthresholds:\n  - \"p99<1ms\"\nsteps:\n  - label: order\n    request:\n      method: POST\n      path: /\n",
            api.url()
        ),
    )
    .expect("writes");
    let file = dir.path().join("w.json");
    let out = throng(&[
        "run",
        &browse.display().to_string(),
        "--with",
        &orders.display().to_string(),
        "--no-tui",
        "--quiet",
        "--json",
        &file.display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(99),
        "the orders' threshold failed: {stdout}"
    );
    let g = json(&file);
    let rows = g["rows"].as_array().expect("rows");
    let row = |i: usize| {
        (
            rows[i]["side"].as_str().expect("side").to_string(),
            rows[i]["total"]["samples"].as_u64().expect("samples"),
        )
    };
    let (b, o, t) = (row(0), row(1), row(2));
    assert_eq!(
        (b.0.as_str(), o.0.as_str(), t.0.as_str()),
        ("browse", "orders", "TOTAL")
    );
    // Each workload ran its own model against its own target, at the same time.
    assert_eq!(b.1, shop.requests());
    assert_eq!(o.1, api.requests());
    assert_eq!(o.1, 20, "20 arrivals a second for 1 s");
    assert!(b.1 > 100, "two users looping on a 2 ms target: {}", b.1);
    assert_eq!(t.1, b.1 + o.1);
    let kind = |i: usize| g["runs"][i]["result"]["plan"]["model"]["kind"].clone();
    assert_eq!((kind(0), kind(1)), ("closed".into(), "open".into()));
    // The orders started 1 s after the browsing (`load: start`).
    let started = |i: usize| {
        let at = g["runs"][i]["result"]["started_at"]
            .as_str()
            .expect("started_at");
        let clock = at.split('T').nth(1).expect("a time").trim_end_matches('Z');
        let parts: Vec<f64> = clock
            .split(':')
            .map(|p| p.parse().expect("a number"))
            .collect();
        parts[0] * 3600.0 + parts[1] * 60.0 + parts[2]
    };
    let later = started(1) - started(0);
    assert!(
        (0.8..1.5).contains(&later),
        "the orders began {later} s after"
    );
    assert_eq!(rows[1]["passed"], false);
    assert_eq!(rows[2]["passed"], false);

    common::refused(&[
        (
            vec![&browse.display().to_string(), "--with", "missing.json"],
            "--with missing.json: a workload of --with is a scenario file".into(),
        ),
        (
            vec![
                &browse.display().to_string(),
                "--with",
                &browse.display().to_string(),
            ],
            "a name of its own".into(),
        ),
        (
            vec![&api.url(), "--with", &orders.display().to_string()],
            format!("{}: a workload of --with is a scenario file", api.url()),
        ),
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_the_grid_after_its_run_and_writes_what_ran() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(5).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("g.json");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run",
            &t.url(),
            "--sweep",
            "users=2,4,8",
            "-z",
            "20s",
            "--quiet",
        ])
        .arg("--json")
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("throng starts");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let sent = std::time::Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joins")
        .expect("throng ends");
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "{:?}",
        sent.elapsed()
    );
    ok(&out);
    // The first level, stopped, is the grid; the others never ran.
    let g = json(&file);
    assert_eq!(g["interrupted"], true);
    let runs = g["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{g}");
    assert_eq!(runs[0]["result"]["interrupted"], true);
    assert_eq!(
        runs[0]["result"]["total"]["samples"].as_u64(),
        Some(t.requests())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooldown_without_a_grid_a_level_given_twice_and_a_negative_duration_are_refused() {
    let t = delayed(0).await;
    common::refused(&[
        (
            vec![&t.url(), "--cooldown", "2s"],
            "--cooldown 2s: a pause between the runs of a sweep, rounds or A/B sides".into(),
        ),
        (
            vec![&t.url(), "--sweep", "users=2,2"],
            "the level 2 is given twice".into(),
        ),
    ]);
    // clap took `-1s` for a flag of its own (and told to write `-- -1`).
    for (flag, end, value) in [
        ("-z", "-n", "1"),
        ("--warmup", "-z", "1s"),
        ("--cooldown", "-n", "1"),
    ] {
        let out = throng(&[
            "run",
            &t.url(),
            "--sweep",
            "users=1",
            end,
            value,
            flag,
            "-1s",
            "--no-tui",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains("cannot be negative"), "{flag}: {err}");
        assert!(err.contains(flag), "{flag}: {err}");
    }
    assert_eq!(t.requests(), 0, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_cut_short_by_a_signal_is_marked_and_never_the_capacity() {
    use std::io::BufRead as _;
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = |name: &str| dir.path().join(name);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run",
            &t.url(),
            "--sweep",
            "users=1,2,4",
            "-z",
            "2s",
            "--threshold",
            "p99<1s",
            "--no-tui",
        ])
        .arg("--json")
        .arg(file("g.json"))
        .arg("--report")
        .arg(format!("markdown:{}", file("g.md").display()))
        .arg("--report")
        .arg(format!("html:{}", file("g.html").display()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("throng starts");
    // The second level has started (the first ran its whole 2 s): stop it 300 ms in.
    let stderr = child.stderr.take().expect("stderr");
    let said = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stderr).lines();
        let mut seen = String::new();
        for line in lines.by_ref() {
            let line = line.expect("a line");
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("run 2 of at most 3") {
                return (true, seen, lines);
            }
        }
        (false, seen, lines)
    });
    let (started, seen, rest) = tokio::time::timeout(Duration::from_secs(20), said)
        .await
        .expect("the second level starts within 20 s")
        .expect("joins");
    assert!(started, "{seen}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let drain = tokio::task::spawn_blocking(move || rest.map_while(Result::ok).count());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("joins")
        .expect("throng ends");
    drain.await.expect("joins");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let g = json(&file("g.json"));
    let rows = g["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{g}");
    assert_eq!(rows[0]["passed"], true);
    assert_eq!(rows[1]["passed"], true, "its part met the threshold");
    assert!(rows[0].get("cut").is_none(), "the first level ran whole");
    assert_eq!(rows[1]["cut"], true);
    assert_eq!(
        g["capacity"][0]["level"]["users"], 1,
        "a level cut short is never the capacity: {g}"
    );
    assert!(stdout.contains("capacity: 1 user at p99<1s"), "{stdout}");
    let cut = |text: &str, row: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?}: {text}"));
        assert!(line.contains("pass (cut short)"), "{line}");
    };
    cut(&stdout, "2 ");
    let md = std::fs::read_to_string(file("g.md")).expect("markdown");
    cut(&md, "| 2 |");
    assert!(
        !md.lines()
            .any(|l| l.starts_with("| 1 |") && l.contains("cut")),
        "{md}"
    );
    let html = std::fs::read_to_string(file("g.html")).expect("html");
    assert_eq!(html.matches("cut short").count(), 2, "the row and its note");
    assert!(
        md.contains("2 users: cut short (stopped before its end), so never the capacity"),
        "{md}"
    );
}

#[test]
fn until_on_a_target_with_nothing_to_measure_says_so() {
    let port = common::closed_port();
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("g.json");
    let out = throng(&[
        "run",
        &format!("http://127.0.0.1:{port}/"),
        "--sweep",
        "users=1,2",
        "-n",
        "4",
        "--until",
        "p99>500ms",
        "--no-tui",
        "--json",
        &file.display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let g = json(&file);
    let rows = g["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "the sweep ended at its first level: {g}");
    assert_eq!(rows[0]["crossed"], true);
    assert_eq!(rows[0]["unmeasured"], true);
    assert!(
        stdout.contains(
            "nothing could be measured for p99>500ms at 1 user (0 of 4 requests succeeded): its \
             sweep ended there"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("crossed p99>500ms"),
        "p99 was never measured: {stdout}"
    );
    assert!(stdout.contains("(until: nothing measured)"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sides_in_rounds_say_which_figures_are_per_round_and_which_all_rounds() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (a, b) = (delayed(1).await, delayed(1).await);
    let out = throng(&[
        "run",
        "http://127.0.0.1/",
        "--target",
        &format!("a={}", a.url()),
        "--target",
        &format!("b={}", b.url()),
        "-c",
        "1",
        "-n",
        "20",
        "--rounds",
        "2",
        "--no-tui",
        "--quiet",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    assert_eq!((a.requests(), b.requests()), (40, 40));
    // The comparison's Samples are a round's (20), the table's every round's (40): each says so.
    let compared = stdout
        .find("Per round: each figure is the mean of a side's rounds (2 and 2)")
        .unwrap_or_else(|| panic!("no label over the comparison: {stdout}"));
    let samples = stdout[compared..]
        .lines()
        .find(|l| l.starts_with("Samples"))
        .expect("the comparison's Samples");
    assert_eq!(
        samples.split_whitespace().nth(1),
        Some("20"),
        "a round's: {samples}"
    );
    let table = stdout.find("grid: ").expect("the level table");
    assert!(table > compared, "{stdout}");
    for side in ["a ", "b "] {
        let row = stdout[table..]
            .lines()
            .find(|l| l.starts_with(side))
            .expect("the side's row");
        assert_eq!(row.split_whitespace().nth(2), Some("40"), "{row}");
    }
    assert!(
        stdout[table..].contains(
            "all rounds: each row merges its 2 rounds (samples summed, percentiles of every \
             request in them)"
        ),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_without_thresholds_have_no_verdict_in_total() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (shop, api) = (delayed(1).await, delayed(1).await);
    let dir = tempfile::tempdir().expect("a temp dir");
    let write = |name: &str, url: String| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "targets:\n  t: {url}\nload:\n  users: 1\n  requests: 5\nsteps:\n  - label: get\n    request:\n      path: /\n"
            ),
        )
        .expect("writes");
        path.display().to_string()
    };
    let (browse, orders) = (
        write("browse.yaml", shop.url()),
        write("orders.yaml", api.url()),
    );
    let file = dir.path().join("w.json");
    let out = throng(&[
        "run",
        &browse,
        "--with",
        &orders,
        "--no-tui",
        "--quiet",
        "--json",
        &file.display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let g = json(&file);
    let rows = g["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3, "{g}");
    assert_eq!(rows[2]["side"], "TOTAL");
    assert_eq!(rows[2]["total"]["samples"], 10);
    for r in rows {
        assert!(r.get("passed").is_none(), "no threshold anywhere: {r}");
    }
    let table = stdout.find("grid: ").expect("the table of workloads");
    let total = stdout[table..]
        .lines()
        .find(|l| l.starts_with("TOTAL"))
        .unwrap_or_else(|| panic!("no TOTAL row: {stdout}"));
    assert!(!total.contains("pass"), "{total}");
}

/// `--json -` on a grid makes standard output the grid's document alone, as on a single run:
/// each run's summary and the level table go to standard error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grid_with_json_to_standard_output_prints_only_the_json_there() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let out = throng(&[
        "run",
        &t.url(),
        "--sweep",
        "users=1,2",
        "-n",
        "10",
        "--no-tui",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let g: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("standard output is not one JSON document ({e}): {stdout}"));
    assert_eq!(g["kind"], "grid");
    assert_eq!(g["rows"].as_array().map(Vec::len), Some(2), "{g}");
    assert_eq!(t.requests(), 20);
    // The summaries are not lost: standard error has each run's and the level table.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("TOTAL").count(), 2, "{err}");
    assert!(err.contains("grid: "), "{err}");

    // Workloads at once, the same.
    let dir = tempfile::tempdir().expect("a temp dir");
    let files: Vec<String> = ["browse", "orders"]
        .iter()
        .map(|name| {
            let path = dir.path().join(format!("{name}.yaml"));
            std::fs::write(
                &path,
                format!(
                    "targets:\n  t: {}\nload:\n  users: 1\n  requests: 5\nsteps:\n  - label: {name}\n    request:\n      path: /\n",
                    t.url()
                ),
            )
            .expect("writes");
            path.display().to_string()
        })
        .collect();
    let out = throng(&[
        "run", &files[0], "--with", &files[1], "--no-tui", "--json", "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let g: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("standard output is not one JSON document ({e}): {stdout}"));
    assert_eq!(g["rows"].as_array().map(Vec::len), Some(3), "{g}");
    assert_eq!(t.requests(), 30);
}

/// A mix as the plan (`a.yaml@7 b.yaml@3`) beside a `--with` workload: the workload runs its
/// own file only, where it was once a mix of its file and the plan's other files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_with_workload_beside_a_mix_runs_only_its_own_file() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (ta, tb, tc) = (delayed(1).await, delayed(1).await, delayed(1).await);
    let dir = tempfile::tempdir().expect("a temp dir");
    let write = |name: &str, url: String, requests: u32| {
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &path,
            format!(
                "targets:\n  {name}: {url}\nload:\n  users: 1\n  requests: {requests}\nsteps:\n  - label: {name}\n    request:\n      target: {name}\n      path: /\n"
            ),
        )
        .expect("writes");
        path.display().to_string()
    };
    let (a, b, c) = (
        write("a", ta.url(), 40),
        write("b", tb.url(), 40),
        write("c", tc.url(), 8),
    );
    let file = dir.path().join("w.json");
    let out = throng(&[
        "run",
        &format!("{a}@7"),
        &format!("{b}@3"),
        "--with",
        &c,
        "--no-tui",
        "--quiet",
        "--json",
        &file.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let g = json(&file);
    let samples = |i: usize| g["rows"][i]["total"]["samples"].as_u64().expect("samples");
    assert_eq!(g["rows"][1]["side"], "c");
    let c_ran = &g["runs"][1]["result"]["plan"]["target"];
    // c's 8 requests all went to c's target; the mix's 40 to a's and b's (picked 7 to 3: one
    // of them had none 0.7^40 of the time).
    assert_eq!((samples(1), tc.requests()), (8, 8), "c ran {c_ran}");
    assert_eq!(samples(0), 40);
    assert_eq!(ta.requests() + tb.requests(), 40);
    assert!(
        ta.requests() > 0 && tb.requests() > 0,
        "the plan is still a mix"
    );
}
