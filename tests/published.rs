//! The published comparisons' tables, each from one command of `scenarios/published/README.md`
//! against stand-in targets: a distributed transaction's JMeter aggregate tables (one per
//! level, TOTAL and columns named as the report names them), Go against Java at rising users
//! (users down, each side's mean in seconds and error % across), RPC transports as rows, and a
//! web framework's paired users:rate ladder. Each checks the table's shape and a figure that
//! would be wrong if the code were. The saga report's database table is `published_sql.rs`.

use crate::common;

use common::{csv_cells, delayed, json, ok, same, serve_bin, throng, written};
use throng::testbed::{
    brokers::NatsServer, BankService, Delay, FaultProxy, GrpcTarget, HttpTarget, ProxyFault,
};

use crate::compare::ONE_AT_A_TIME;

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");

/// The cells of each row of the Markdown table that starts at `from`, its header first.
fn md_table(md: &str, from: usize) -> Vec<Vec<String>> {
    md[from..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("| :"))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn num(cell: &str) -> f64 {
    cell.trim_end_matches(['%', 's', '/'])
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {cell}"))
}

/// A distributed transaction's JMeter aggregate tables: one per level, JMeter's thirteen
/// columns under the report's own names, a row per step, the global transaction's row and a
/// TOTAL named 总体 that adds the steps up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_distributed_transactions_jmeter_aggregate_tables() {
    let _one = ONE_AT_A_TIME.lock().await;
    let bank = BankService::default().start().await.expect("the bank");
    let dir = tempfile::tempdir().expect("a temp dir");
    let md = dir.path().join("dtx.md");
    ok(&throng(&[
        "run",
        &format!("{SCENARIOS}/published/dtx-order.yaml"),
        "--target",
        &format!("shop={}", bank.url()),
        "--sweep",
        "users=2,4",
        "-i",
        "10",
        "--rename",
        "TOTAL=总体",
        "--rename",
        "Samples=# Samples",
        "--rename",
        "90%=90% Line",
        "--no-tui",
        "--quiet",
        "--report",
        &format!("markdown:{}", md.display()),
    ]));
    assert_eq!(
        bank.requests(),
        3 * (2 + 4) * 10,
        "every step reached the bank"
    );
    let md = std::fs::read_to_string(md).expect("markdown");
    for (title, users) in [("**2 users**", 2.0), ("**4 users**", 4.0)] {
        let at = md.find(title).unwrap_or_else(|| panic!("{title}: {md}"));
        let t = md_table(&md, at);
        assert_eq!(
            t[0],
            [
                "Label",
                "# Samples",
                "Average",
                "Median",
                "90% Line",
                "95%",
                "99%",
                "Min",
                "Max",
                "Error %",
                "Throughput",
                "Received KB/s",
                "Sent KB/s"
            ],
            "{md}"
        );
        let labels: Vec<&str> = t[1..].iter().map(|r| r[0].as_str()).collect();
        assert_eq!(
            labels,
            [
                "create order",
                "allocate inventory",
                "order status",
                "global transaction",
                "总体"
            ]
        );
        let samples: Vec<f64> = t[1..].iter().map(|r| num(&r[1])).collect();
        let each = users * 10.0;
        assert_eq!(samples, [each, each, each, each, 3.0 * each], "{md}");
        for r in &t[1..] {
            assert_eq!(r[9], "0.00%", "{r:?}");
            // Min, Median, 90%, 95%, 99% and Max in order.
            let l: Vec<f64> = [7, 3, 4, 5, 6, 8].iter().map(|&i| num(&r[i])).collect();
            assert!(l.windows(2).all(|w| w[0] <= w[1]), "{r:?}");
        }
        // TOTAL adds the steps' bytes, and the global transaction carries them all.
        let steps: f64 = t[1..4].iter().map(|r| num(&r[11])).sum();
        let (global, total) = (num(&t[4][11]), num(&t[5][11]));
        assert!((steps - total).abs() < 0.03, "{steps} against {total}");
        assert!((global - total).abs() < 0.015, "{global} against {total}");
        assert!(total > 0.0);
    }
}

/// Go against Java: users down, each side's mean response time in seconds and its error %
/// across. The Java stand-in answers through a proxy that holds each answer 10 ms and resets
/// a connection after 3,000 bytes of answers, so it is slower by 10 ms and fails some requests
/// where Go fails none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_against_java_users_down_mean_in_seconds_and_error_rate_across() {
    let _one = ONE_AT_A_TIME.lock().await;
    let go = BankService::default().start().await.expect("the bank");
    let java = BankService::default().start().await.expect("the bank");
    let resets = FaultProxy {
        upstream: java.addr,
        fault: ProxyFault::ResetAfter(3000),
    }
    .start()
    .await
    .expect("a proxy");
    let slow = FaultProxy {
        upstream: resets.addr,
        fault: ProxyFault::Latency {
            base: std::time::Duration::from_millis(10),
            jitter: std::time::Duration::ZERO,
        },
    }
    .start()
    .await
    .expect("a proxy");
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = |name: &str| dir.path().join(name);
    let out = throng(&[
        "run",
        &format!("{SCENARIOS}/bank-transfer.yaml"),
        "--target",
        &format!("go={}", go.url()),
        "--target",
        &format!("java={}", slow.url()),
        "--sweep",
        "users=1,2,4",
        "-i",
        "4",
        "--pivot",
        "side",
        "--columns",
        "mean,error_rate",
        "--unit",
        "s",
        "--no-tui",
        "--quiet",
        "--json",
        &path("g.json").display().to_string(),
        "--report",
        &format!("csv:{}", path("g.csv").display()),
    ]);
    // The file's `error_rate<1%` fails on Java's levels: exit 99, the tables written all the same.
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let g = json(&path("g.json"));
    let pivot = csv_cells(&written(&path("g.pivot.csv")));
    assert_eq!(
        pivot[0],
        [
            "Users",
            "go Mean (s)",
            "go Error %",
            "java Mean (s)",
            "java Error %"
        ]
    );
    let users: Vec<&str> = pivot[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(users, ["1", "2", "4"]);
    let rows = g["rows"].as_array().expect("rows");
    for row in &pivot[1..] {
        let cell = |i: usize| -> f64 { row[i].parse().expect("a number") };
        for (s, side) in ["go", "java"].iter().enumerate() {
            let r = rows
                .iter()
                .find(|r| {
                    r["side"] == *side && r["level"]["users"].as_u64() == row[0].parse::<u64>().ok()
                })
                .expect("the level table's row");
            let mean = r["total"]["latency"]["mean"].as_f64().expect("a mean");
            let failed = r["failed_percent"].as_f64().expect("error %");
            assert!(same(cell(1 + 2 * s), mean / 1000.0), "{side}: {row:?}");
            assert!(same(cell(2 + 2 * s), failed), "{side}: {row:?}");
        }
        // Seconds: Java's 10 ms a request is 0.010 or more, and Go is faster.
        assert!(cell(3) >= 0.010 && cell(3) < 1.0, "{row:?}");
        assert!(cell(1) < cell(3), "{row:?}");
        assert_eq!(cell(2), 0.0, "Go fails nothing: {row:?}");
        assert!(cell(4) > 0.0, "Java's resets are errors: {row:?}");
    }
    // Go's bank answered every request of its flows: 7 a pass, 4 passes a user.
    assert_eq!(go.requests(), 7 * 4 * (1 + 2 + 4));
}

/// RPC transports as rows (HTTP, gRPC, raw TCP, NATS), mean, median, max, min, p90, p99 and
/// TPS across, from one run of the same load against each; the HTTP stand-in answers after
/// 2 ms, so its row alone has a minimum of 2 ms or more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_transports_as_rows_with_their_latencies_and_tps() {
    let _one = ONE_AT_A_TIME.lock().await;
    let http = delayed(2).await;
    let grpc = GrpcTarget::default()
        .start()
        .await
        .expect("the gRPC target");
    let nats = NatsServer::start().expect("nats-server");
    let (mut tcp, tcp_url) = serve_bin(&["tcp"]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = |name: &str| dir.path().join(name);
    let out = throng(&[
        "run",
        &http.url(),
        "--target",
        &format!("http={}", http.url()),
        "--target",
        &format!(
            "grpc={} --call helloworld.Greeter/SayHello -d {{}}",
            grpc.url()
        ),
        "--target",
        &format!("tcp={tcp_url} -d ping"),
        "--target",
        &format!(
            "nats={} --subject-mode publish -d ping",
            nats.url("transports")
        ),
        "-c",
        "4",
        "-n",
        "200",
        "--pivot",
        "level",
        "--columns",
        "mean,p50,max,min,p90,p99,rps",
        "--rename",
        "Side=Transport",
        "--rename",
        "Throughput (/s)=TPS",
        "--no-tui",
        "--quiet",
        "--json",
        &path("t.json").display().to_string(),
        "--report",
        &format!("csv:{}", path("t.csv").display()),
    ]);
    let _ = tcp.kill();
    let _ = tcp.wait();
    let stdout = ok(&out);
    let g = json(&path("t.json"));
    let pivot = csv_cells(&written(&path("t.pivot.csv")));
    assert_eq!(
        pivot[0],
        [
            "Transport",
            "Mean (ms)",
            "p50 (ms)",
            "Max (ms)",
            "Min (ms)",
            "p90 (ms)",
            "p99 (ms)",
            "TPS"
        ],
        "{stdout}"
    );
    let sides: Vec<&str> = pivot[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(sides, ["http", "grpc", "tcp", "nats"]);
    assert!(stdout.contains("Transport  Mean (ms)"), "{stdout}");
    for (row, run) in pivot[1..].iter().zip(g["rows"].as_array().expect("rows")) {
        let cell = |i: usize| -> f64 { row[i].parse().expect("a number") };
        let total = &run["total"];
        assert_eq!(total["samples"], 200, "{row:?}");
        assert_eq!(total["errors"], 0, "{row:?}");
        let latency = |k: &str| total["latency"][k].as_f64().expect("a latency");
        for (i, k) in [(1, "mean"), (2, "p50"), (3, "max"), (4, "min"), (5, "p90")] {
            assert!(same(cell(i), latency(k)), "{k}: {row:?}");
        }
        assert!(same(cell(7), total["throughput"].as_f64().expect("TPS")));
        // Min, p50, p90, p99, Max in order.
        let l: Vec<f64> = [4, 2, 5, 6, 3].iter().map(|&i| cell(i)).collect();
        assert!(l.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
        assert_eq!(
            cell(4) >= 2.0,
            row[0] == "http",
            "only HTTP waits 2 ms: {row:?}"
        );
    }
    assert_eq!((http.requests(), grpc.calls()), (200, 200));
}

/// A web framework's ladder of paired users and rates (300 users at 2,000/s ... 1,000 at
/// 10,000/s; here a hundredth of the users and a tenth of the rates), two frameworks side by
/// side: each rung an open loop at its rate with its users in flight. The slow stand-in serves
/// two requests at a time, 5 ms each (400/s at most), so it fails most of the top rung's
/// arrivals, and the fast one fewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_frameworks_ladder_of_paired_users_and_rates() {
    let _one = ONE_AT_A_TIME.lock().await;
    let fast = delayed(1).await;
    let slow = HttpTarget {
        delay: Delay::Fixed(std::time::Duration::from_millis(5)),
        capacity: Some(2),
        ..HttpTarget::default()
    }
    .start()
    .await
    .expect("a target");
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = |name: &str| dir.path().join(name);
    ok(&throng(&[
        "run",
        &fast.url(),
        "--target",
        &format!("fast={}", fast.url()),
        "--target",
        &format!("slow={}", slow.url()),
        "--sweep",
        "users:rate=3:200,5:300,5:500,10:1000",
        "-z",
        "400ms",
        "--pivot",
        "side",
        "--columns",
        "rps,mean,p99,error_rate",
        "--no-tui",
        "--quiet",
        "--json",
        &path("l.json").display().to_string(),
        "--report",
        &format!("csv:{}", path("l.csv").display()),
    ]));
    let g = json(&path("l.json"));
    let pivot = csv_cells(&written(&path("l.pivot.csv")));
    assert_eq!(
        pivot[0],
        [
            "Users",
            "Rate (/s)",
            "fast Throughput (/s)",
            "fast Mean (ms)",
            "fast p99 (ms)",
            "fast Error %",
            "slow Throughput (/s)",
            "slow Mean (ms)",
            "slow p99 (ms)",
            "slow Error %"
        ]
    );
    let rungs: Vec<(&str, &str)> = pivot[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        rungs,
        [("3", "200"), ("5", "300"), ("5", "500"), ("10", "1000")]
    );
    // Each rung an open loop at its rate for 0.4 s with its users as the bound in flight.
    for run in g["runs"].as_array().expect("runs") {
        let rung = &run["level"]["paired"];
        let model = &run["result"]["plan"]["model"];
        let rate = rung["rate"].as_f64().expect("a rate");
        assert_eq!(model["kind"], "open");
        assert_eq!(model["max_in_flight"], rung["users"]);
        assert_eq!(
            run["result"]["total"]["samples"].as_f64(),
            Some(rate * 0.4),
            "{rung}"
        );
    }
    // The slow one cannot serve 1,000/s: most of the top rung's arrivals fail, and what it
    // served is about its capacity; the fast one fails fewer there.
    let top = &pivot[4];
    let cell = |i: usize| -> f64 { top[i].parse().expect("a number") };
    assert!(cell(9) >= 50.0, "{top:?}");
    assert!(cell(6) < 450.0, "{top:?}");
    assert!(cell(5) < cell(9), "{top:?}");
    assert!(cell(7) > cell(3), "{top:?}");
    assert_eq!(
        slow.requests() + fast.requests(),
        g["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| {
                let t = &r["result"]["total"];
                t["samples"].as_u64().expect("samples") - t["errors"].as_u64().expect("errors")
            })
            .sum::<u64>(),
        "the targets served what succeeded"
    );
}
