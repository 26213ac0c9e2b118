//! Grids in the reader's shape, through the binary against real targets: HTTP/1.1 and HTTP/2
//! as two sides of one URL on a paired users:rate ladder, two scenario files as two sides, the
//! pivot's cells equal to each run's own figures in the JSON, each run's aggregate table in the
//! reports (the HTML one opened by a real browser), and bad sides, ladders and shapes refused
//! before any load.

use crate::common;

use common::{csv_cells, delayed, json, ok, same, throng};
use throng::testbed::HttpTarget;

use crate::compare::ONE_AT_A_TIME;

/// The pivot of the ladder's test: levels down, a group per side, six figures, seconds.
const PIVOT: [&str; 6] = [
    "--pivot",
    "side",
    "--columns",
    "mean,p99,min,rps,error_rate,received_kb",
    "--unit",
    "s",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_and_http2_are_two_sides_of_one_url_on_a_paired_ladder_and_pivot_to_their_figures() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(2).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (h1, h2) = (format!("h1={}", t.url()), format!("h2={} --http2", t.url()));
    let out = throng(
        &[
            &[
                "run",
                &t.url(),
                "--target",
                &h1,
                "--target",
                &h2,
                "--sweep",
                "users:rate=2:40,4:80",
                "-z",
                "1s",
                "--no-tui",
                "--quiet",
                "--json",
                &path("g.json"),
                "--report",
                &format!("markdown:{}", path("g.md")),
                "--report",
                &format!("html:{}", path("g.html")),
                "--report",
                &format!("csv:{}", path("g.csv")),
            ][..],
            &PIVOT,
        ]
        .concat(),
    );
    let stdout = ok(&out);
    let g = json(&dir.path().join("g.json"));
    let runs = g["runs"].as_array().expect("runs");
    // Each rung an open loop at its rate for 1 s, with its users as the in-flight bound: 40
    // then 80 arrivals a side, every one of them served.
    let cells: Vec<(u64, f64, &str, u64, u64, f64)> = runs
        .iter()
        .map(|r| {
            let l = &r["level"]["paired"];
            let model = &r["result"]["plan"]["model"];
            assert_eq!(model["kind"], "open");
            (
                l["users"].as_u64().expect("users"),
                l["rate"].as_f64().expect("rate"),
                r["side"].as_str().expect("side"),
                r["result"]["total"]["samples"].as_u64().expect("samples"),
                model["max_in_flight"].as_u64().expect("in flight"),
                model["rate"]["constant"].as_f64().expect("rate"),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            (2, 40.0, "h1", 40, 2, 40.0),
            (2, 40.0, "h2", 40, 2, 40.0),
            (4, 80.0, "h1", 80, 4, 80.0),
            (4, 80.0, "h2", 80, 4, 80.0),
        ],
        "{stdout}"
    );
    assert_eq!(t.requests(), 240);
    for r in runs {
        assert_eq!(r["result"]["total"]["errors"], 0);
    }

    // The pivot: levels down, a column group per side, each cell the run's own figure in the
    // unit asked for (one round: the level table's row is the run).
    let pivot = csv_cells(&std::fs::read_to_string(path("g.pivot.csv")).expect("pivot.csv"));
    assert_eq!(
        pivot[0],
        [
            "Users",
            "Rate (/s)",
            "h1 Mean (s)",
            "h1 p99 (s)",
            "h1 Min (s)",
            "h1 Throughput (/s)",
            "h1 Error %",
            "h1 Received KB/s",
            "h2 Mean (s)",
            "h2 p99 (s)",
            "h2 Min (s)",
            "h2 Throughput (/s)",
            "h2 Error %",
            "h2 Received KB/s",
        ]
    );
    assert_eq!(pivot.len(), 3, "a row per rung");
    for (row, users) in pivot[1..].iter().zip(["2", "4"]) {
        assert_eq!(row[0], users);
        for (s, side) in ["h1", "h2"].iter().enumerate() {
            let run = runs
                .iter()
                .find(|r| {
                    r["side"] == *side
                        && r["level"]["paired"]["users"].as_u64() == users.parse().ok()
                })
                .expect("the run");
            let total = &run["result"]["total"];
            let f = |v: &serde_json::Value| v.as_f64().expect("a figure");
            let cell = |i: usize| -> f64 { row[2 + s * 6 + i].parse().expect("a number") };
            for (i, want) in [
                f(&total["latency"]["mean"]) / 1000.0,
                f(&total["latency"]["p99"]) / 1000.0,
                f(&total["latency"]["min"]) / 1000.0,
                f(&total["throughput"]),
                0.0,
                f(&total["received_kb_per_s"]),
            ]
            .into_iter()
            .enumerate()
            {
                assert!(
                    same(cell(i), want),
                    "{side} {users} column {i}: {} against {want}",
                    cell(i)
                );
            }
            assert!(
                cell(1) > 0.001,
                "p99 of a 2 ms target in seconds: {}",
                cell(1)
            );
        }
    }
    // `throng report` makes the same pivot from the JSON.
    let again = ok(&throng(
        &[&["report", &path("g.json"), "--format", "csv"][..], &PIVOT].concat(),
    ));
    let again = csv_cells(&again);
    assert_eq!(again[0], pivot[0]);
    for (a, b) in again[1..].iter().flatten().zip(pivot[1..].iter().flatten()) {
        let (x, y): (f64, f64) = (a.parse().expect("a number"), b.parse().expect("a number"));
        assert!(same(x, y), "{a} against {b}");
    }
    // A report in another language names its own columns and its TOTAL row.
    let named = ok(&throng(&[
        "report",
        &path("g.json"),
        "--format",
        "markdown",
        "--pivot",
        "side",
        "--columns",
        "mean",
        "--unit",
        "s",
        "--rename",
        "Users=并发数",
        "--rename",
        "h2 Mean (s)=HTTP/2 平均响应时间(s)",
        "--rename",
        "TOTAL=合计",
    ]));
    assert!(
        named.contains("| 并发数 | Rate (/s) | h1 Mean (s) | HTTP/2 平均响应时间(s) |"),
        "{named}"
    );
    assert_eq!(named.matches("| 合计 |").count(), 4, "{named}");
    assert_eq!(named.matches("| TOTAL |").count(), 0, "{named}");
    let bad = throng(&[
        "report",
        &path("g.json"),
        "--format",
        "csv",
        "--rename",
        "TOTAL",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--rename \"TOTAL\": write FROM=TO"));
    // The other way round: sides down, a column group per rung.
    let across = csv_cells(&ok(&throng(&[
        "report",
        &path("g.json"),
        "--format",
        "csv",
        "--pivot",
        "level",
        "--columns",
        "p99",
    ])));
    assert_eq!(
        across[0],
        [
            "Side",
            "2 users at 40/s p99 (ms)",
            "4 users at 80/s p99 (ms)"
        ]
    );
    assert_eq!(across[2][0], "h2");
    let h2_top: f64 = across[2][2].parse().expect("a number");
    let p99 = runs[3]["result"]["total"]["latency"]["p99"].as_f64();
    assert!(same(h2_top, p99.expect("p99")), "{h2_top} against {p99:?}");

    // The level table has every column of the aggregate table.
    let csv = csv_cells(&std::fs::read_to_string(path("g.csv")).expect("csv"));
    for column in [
        "Users",
        "Rate (/s)",
        "Side",
        "Min",
        "Received KB/s",
        "Sent KB/s",
    ] {
        assert!(csv[0].iter().any(|c| c == column), "{column}: {:?}", csv[0]);
    }
    let min = csv[0].iter().position(|c| c == "Min").expect("Min");
    let sent = csv[0].iter().position(|c| c == "Sent KB/s").expect("Sent");
    for (row, run) in csv[1..].iter().zip(runs) {
        let total = &run["result"]["total"];
        let cell = |i: usize| row[i].parse::<f64>().expect("a number");
        let figure = |v: &serde_json::Value| v.as_f64().expect("a figure");
        assert!(same(cell(min), figure(&total["latency"]["min"])));
        assert!(same(cell(sent), figure(&total["sent_kb_per_s"])));
        assert!(cell(sent) > 0.0);
    }

    // Markdown: the pivot, and each run's own aggregate table (its label and TOTAL).
    let md = std::fs::read_to_string(path("g.md")).expect("markdown");
    assert!(
        md.contains("| Users | Rate (/s) | h1 Mean (s) | h1 p99 (s) |"),
        "{md}"
    );
    assert!(md.contains("| Min |") && md.contains("| Received KB/s | Sent KB/s |"));
    for title in [
        "**2 users at 40/s, h1**",
        "**2 users at 40/s, h2**",
        "**4 users at 80/s, h1**",
        "**4 users at 80/s, h2**",
    ] {
        let at = md.find(title).unwrap_or_else(|| panic!("{title}: {md}"));
        let table = &md[at..];
        let total = table.find("| TOTAL |").expect("a TOTAL row");
        assert!(
            table[..total].contains("| Label | Samples | Average |"),
            "{table}"
        );
    }
    assert_eq!(md.matches("| TOTAL |").count(), 4, "{md}");

    // HTML, opened by a real browser: the pivot and a table per run are in the page it built.
    let dom = crate::compare::dump_dom(&dir.path().join("g.html"));
    let section = |id: &str| {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id}"));
        dom[at..at + dom[at..].find("</section>").expect("closed")].to_string()
    };
    let pivot_html = section("pivot");
    assert!(pivot_html.contains("<th>h2 p99 (s)</th>"), "{pivot_html}");
    assert_eq!(pivot_html.matches("<tr>").count(), 3, "{pivot_html}");
    let runs_html = section("runs");
    assert_eq!(runs_html.matches("<table>").count(), 4, "{runs_html}");
    assert_eq!(runs_html.matches("<td>TOTAL</td>").count(), 4);
    assert!(section("levels").contains("<th>Received KB/s</th>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_of_http2_against_a_target_of_http1_only_fails_alone() {
    let _one = ONE_AT_A_TIME.lock().await;
    // A target that speaks HTTP/1.1 only (as nginx without `http2`): the side given --http2 of
    // its own fails every request, the other side none; the flag reached its side only.
    let t = HttpTarget {
        http1_only: true,
        ..HttpTarget::default()
    }
    .start()
    .await
    .expect("the target starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("g.json");
    let out = throng(&[
        "run",
        &t.url(),
        "--target",
        &format!("plain={}", t.url()),
        "--target",
        &format!("two={} --http2 -c 1", t.url()),
        "-c",
        "2",
        "-n",
        "30",
        "--no-tui",
        "--quiet",
        "--json",
        &file.display().to_string(),
    ]);
    ok(&out);
    let g = json(&file);
    let rows = crate::grid::side_totals(&g);
    assert_eq!(rows[0], ("plain", 30, 0));
    assert_eq!(rows[1].0, "two");
    assert!(rows[1].1 > 0 && rows[1].2 == rows[1].1, "{rows:?}");
    assert_eq!(t.requests(), 30, "only the HTTP/1.1 side was served");
    // The side's own -c 1: one user, where the command's -c 2 gave the other side two.
    let users = |i: usize| g["runs"][i]["result"]["plan"]["model"]["users"]["fixed"].clone();
    assert_eq!(
        (users(0), users(1)),
        (2.into(), 1.into()),
        "{}",
        g["runs"][1]["result"]["plan"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_scenario_files_are_two_sides_with_their_own_steps() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("writes");
        p.display().to_string()
    };
    let one = write(
        "one.yaml",
        "targets:\n  api: http://127.0.0.1:1\nsteps:\n  - label: single\n    request:\n      target: api\n      path: /one\n",
    );
    let two = write(
        "two.yaml",
        "targets:\n  api: http://127.0.0.1:1\nsteps:\n  - label: first\n    request:\n      target: api\n      path: /a\n  - label: second\n    request:\n      target: api\n      path: /b\n",
    );
    let json_path = dir.path().join("g.json");
    let md_path = dir.path().join("g.md");
    let out = throng(&[
        "run",
        &one,
        "--target",
        &format!("saga={one}"),
        "--target",
        &format!("tcc={two}"),
        "--target",
        &format!("api={}", t.url()),
        "--sweep",
        "users=1,2",
        "-i",
        "10",
        "--no-tui",
        "--quiet",
        "--json",
        &json_path.display().to_string(),
        "--report",
        &format!("markdown:{}", md_path.display()),
    ]);
    ok(&out);
    // saga: 1 request an iteration, tcc: 2; 10 iterations a user, at 1 then 2 users.
    assert_eq!(t.requests(), (10 + 20) + (20 + 40));
    let g = json(&json_path);
    let labels: Vec<(String, Vec<String>)> = g["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            (
                r["side"].as_str().expect("side").to_string(),
                r["result"]["labels"]
                    .as_array()
                    .expect("labels")
                    .iter()
                    .map(|l| l["label"].as_str().expect("label").to_string())
                    .collect(),
            )
        })
        .collect();
    let saga = ("saga".to_string(), vec!["single".to_string()]);
    let tcc = (
        "tcc".to_string(),
        vec!["first".to_string(), "second".to_string()],
    );
    assert_eq!(labels, [saga.clone(), tcc.clone(), saga, tcc]);
    // Each run's aggregate table carries its own flow's rows.
    let md = std::fs::read_to_string(&md_path).expect("markdown");
    let at = md.find("**2 users, tcc**").expect("the run's table");
    assert!(
        md[at..].contains("| first |") && md[at..].contains("| second |"),
        "{md}"
    );
    // The default pivot of a grid of levels and sides: users down, a group per side.
    assert!(
        md.contains("| Users | saga Throughput (/s) | saga Mean (ms) |"),
        "{md}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ladders_sides_and_shapes_are_refused_before_any_load() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let flow = dir.path().join("flow.yaml");
    std::fs::write(
        &flow,
        "targets:\n  api: http://127.0.0.1:1\nsteps:\n  - label: x\n    request:\n      target: api\n      path: /\n",
    )
    .expect("writes");
    let flow = flow.display().to_string();
    let u = t.url();
    let a = format!("a={u}");
    let side = |flags: &str| format!("b={u} {flags}");
    let (flag_b, grid_b, quote_b, extra_b) = (
        side("--http3"),
        side("--rounds 3"),
        side("-H 'x: y"),
        side("more.yaml"),
    );
    let file_a = format!("a={flow}");
    let common = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            common(&[&u, "--sweep", "users:rate=10:100,50"]),
            "the rung `50` gives 1 of the 2 values of users:rate",
        ),
        (
            common(&[&u, "--sweep", "users:conns=1:2"]),
            "a paired ladder pairs `users` and `rate`",
        ),
        (
            common(&[&u, "--sweep", "users:rate=10..20:5:100"]),
            "gives 3 of the 2 values",
        ),
        (
            common(&[&u, "--target", &a, "--target", &flag_b]),
            "--target b: unexpected argument '--http3'",
        ),
        (
            common(&[&u, "--target", &a, "--target", &grid_b]),
            "--target b: --rounds shapes the grid, not one side",
        ),
        (
            common(&[&u, "--target", &a, "--target", &quote_b]),
            "the quote ' is not closed",
        ),
        (
            common(&[&u, "--target", &a, "--target", &extra_b]),
            "a side is one URL or scenario file and its flags",
        ),
        (
            common(&[&flow, "--target", &file_a, "--target", "b=missing.yaml"]),
            "--target b=missing.yaml: no such scenario file",
        ),
        (
            common(&[&u, "--pivot", "side"]),
            "--pivot and --rename shape a grid's reports: this is one run",
        ),
        (
            common(&[&u, "--sweep", "users=1,2", "--pivot", "diagonal"]),
            "--pivot \"diagonal\": say what runs across",
        ),
        (
            common(&[
                &u,
                "--sweep",
                "users=1,2",
                "--pivot",
                "side",
                "--columns",
                "p99,p42",
            ]),
            "`p42` is not a figure",
        ),
        (
            common(&[
                &u,
                "--sweep",
                "users=1,2",
                "--pivot",
                "side",
                "--unit",
                "min",
            ]),
            "--unit \"min\": the latencies' unit is us, ms or s",
        ),
    ];
    let cases: Vec<(Vec<&str>, String)> = cases
        .iter()
        .map(|(args, says)| (args.iter().map(String::as_str).collect(), says.to_string()))
        .collect();
    common::refused(&cases);
    assert_eq!(t.requests(), 0, "nothing was sent");

    // `throng report --pivot` on a result of one run says it is no grid.
    let one = dir.path().join("one.json");
    ok(&throng(&[
        "run",
        &u,
        "-n",
        "3",
        "--no-tui",
        "--quiet",
        "--json",
        &one.display().to_string(),
    ]));
    let out = throng(&[
        "report",
        &one.display().to_string(),
        "--format",
        "csv",
        "--pivot",
        "side",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is one run, not a grid"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_files_sweep_is_a_paired_ladder_and_a_bad_one_is_refused_at_its_place() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = |name: &str, sweep: &str| {
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            format!(
                "targets:\n  api: {}\nload:\n  duration: 1s\n  sweep:\n{sweep}steps:\n  - label: page\n    request:\n      target: api\n      path: /\n",
                t.url()
            ),
        )
        .expect("writes");
        p.display().to_string()
    };
    // 2 users at 20/s, then 4 at 40/s and 4 at 60/s: the users may stay while the rate moves.
    let good = file(
        "good.yaml",
        "    users: [2, 4, 4]\n    rate: [20, 40, 60]\n",
    );
    let json_path = dir.path().join("g.json");
    ok(&throng(&[
        "run",
        &good,
        "--no-tui",
        "--quiet",
        "--json",
        &json_path.display().to_string(),
    ]));
    let g = json(&json_path);
    let rungs: Vec<(u64, f64, u64)> = g["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let l = &r["level"]["paired"];
            (
                l["users"].as_u64().expect("users"),
                l["rate"].as_f64().expect("rate"),
                r["total"]["samples"].as_u64().expect("samples"),
            )
        })
        .collect();
    assert_eq!(rungs, [(2, 20.0, 20), (4, 40.0, 40), (4, 60.0, 60)]);
    assert_eq!(t.requests(), 120);
    // The flag wins over the file's sweep, as over the rest of its load.
    ok(&throng(&[
        "run",
        &good,
        "--sweep",
        "rate=10",
        "--no-tui",
        "--quiet",
        "--json",
        &json_path.display().to_string(),
    ]));
    assert_eq!(json(&json_path)["rows"][0]["level"]["rate"], 10.0);
    assert_eq!(t.requests(), 130);

    let cases = [
        (
            file("short.yaml", "    users: [1, 2, 3]\n    rate: [10, 20]\n"),
            "short.yaml:7:11: sweep: users has 3 levels and rate 2",
        ),
        (
            file("key.yaml", "    users: [1, 2]\n    conns: [1, 2]\n"),
            "key.yaml:7:5: unknown key `conns`",
        ),
        (
            file("twice.yaml", "    users: [1, 1]\n    rate: [10, 10]\n"),
            "twice.yaml:7:16: sweep: the rung of 1 users at 10/s is given twice",
        ),
        (
            file("zero.yaml", "    rate: [10, 0]\n"),
            "zero.yaml:6:16: sweep: a rate is a number of arrivals per second above 0",
        ),
        (
            file("none.yaml", "    {}\n"),
            "none.yaml:6:5: sweep: give its levels",
        ),
    ];
    let cases: Vec<(Vec<&str>, String)> = cases
        .iter()
        .map(|(f, says)| (vec![f.as_str()], says.to_string()))
        .collect();
    common::refused(&cases);
    assert_eq!(t.requests(), 130, "nothing was sent");
}
