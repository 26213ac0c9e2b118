//! The transports table in one command, as a published go-micro benchmark prints it: `throng
//! run --target http=… --target grpc=… --target tcp=… --target nats=… --target rabbitmq=…`
//! against the testbed's HTTP, gRPC and TCP echo targets, Debian's nats-server and
//! rabbitmq-server with their Go responders, each side sent the same message; one row per
//! transport with mean, median, max, min, p90, p99 and TPS, each counted by its server.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use throng::testbed::brokers::NatsServer;

use crate::common::{said, throng};

/// The one message every side sends: the gRPC call's, the HTTP POST's body, the TCP line, the
/// NATS and RabbitMQ requests' payload. Long, so that each side's bytes sent show it went.
fn message() -> String {
    format!(r#"{{"name":"{}"}}"#, "x".repeat(300))
}

/// The table's columns, as `--columns` names them, and as the table heads them after the
/// `--rename`s.
const COLUMNS: &str = "mean,p50,max,min,p90,p99,rps";
const HEADS: [&str; 7] = [
    "Mean (ms)",
    "Median (ms)",
    "Max (ms)",
    "Min (ms)",
    "p90 (ms)",
    "p99 (ms)",
    "TPS",
];

/// A side's figures in the result, in the table's order.
fn figures(total: &serde_json::Value) -> [f64; 7] {
    let l = &total["latency"];
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    [
        f(&l["mean"]),
        f(&l["p50"]),
        f(&l["max"]),
        f(&l["min"]),
        f(&l["p90"]),
        f(&l["p99"]),
        f(&total["throughput"]),
    ]
}

/// The rows of the table whose head is `head`: each side's name and its numbers.
fn table(out: &str, head: &[&str]) -> Vec<(String, Vec<f64>)> {
    let mut lines = out
        .lines()
        .skip_while(|l| !(l.starts_with("Side") && head.iter().all(|h| l.contains(h))));
    lines
        .next()
        .unwrap_or_else(|| panic!("no table headed {head:?}: {out}"));
    lines
        .skip_while(|l| l.starts_with('-'))
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("pivot"))
        .map(|l| {
            let mut words = l.split_whitespace();
            let side = words.next().unwrap().to_string();
            (side, words.map(|w| w.parse().unwrap()).collect())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_command_gives_a_row_per_transport_each_counted_by_its_server() {
    let broker = tokio::task::spawn_blocking(crate::amqp::Broker::start)
        .await
        .unwrap();
    let nats = NatsServer::start().unwrap();
    let nats_responder = crate::nats::responder(&nats, "greeter");
    let amqp_responder = crate::amqp::responder(&broker, "greeter");
    let http = throng::testbed::HttpTarget::default()
        .start()
        .await
        .unwrap();
    let grpc = throng::testbed::GrpcTarget::default()
        .start()
        .await
        .unwrap();
    let tcp = throng_tcp::serve::TcpTarget::default()
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("transports.json");
    let sides = [
        format!("http={}/", http.url()),
        format!("grpc={}", grpc.url()),
        format!("tcp={}", tcp.url()),
        format!("nats={}", nats.url("greeter")),
        format!("rabbitmq={}", broker.url("greeter")),
    ];
    let mut args = vec!["run".to_string()];
    for s in &sides {
        args.extend(["--target".into(), s.clone()]);
    }
    let message = message();
    args.extend(
        [
            "--call",
            "helloworld.Greeter/SayHello",
            "-m",
            "POST",
            "-d",
            &message,
            "--label",
            "hello",
            "-c",
            "4",
            "-n",
            "200",
            "--no-tui",
            "--json",
            json.to_str().unwrap(),
            "--pivot",
            "level",
            "--columns",
            COLUMNS,
            "--rename",
            "p50 (ms)=Median (ms)",
            "--rename",
            "Throughput (/s)=TPS",
        ]
        .map(String::from),
    );
    let o = tokio::task::spawn_blocking(move || {
        throng(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));

    // One row per transport, in the order given, every request answered.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let names = ["http", "grpc", "tcp", "nats", "rabbitmq"];
    let rows = r["rows"].as_array().unwrap();
    let got: Vec<(&str, u64, u64)> = rows
        .iter()
        .map(|row| {
            let t = &row["total"];
            (
                row["side"].as_str().unwrap(),
                t["samples"].as_u64().unwrap(),
                t["errors"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, names.map(|n| (n, 200, 0)), "{}", said(&o));
    // Each side sent the message on every request (the HTTP side's POST body, the gRPC call's
    // message, the TCP line, the brokers' payload), and its rows carry --label.
    for (row, run) in rows.iter().zip(r["runs"].as_array().unwrap()) {
        let sent = row["total"]["bytes_sent"].as_u64().unwrap();
        assert!(
            sent / 200 >= 300,
            "{}: {sent} bytes for 200 requests",
            row["side"]
        );
        let labels: Vec<&str> = run["result"]["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["hello"], "{}", row["side"]);
    }
    // The TCP target echoed each line whole.
    assert_eq!(
        rows[2]["total"]["bytes_received"].as_u64(),
        Some(200 * (message.len() as u64 + 1))
    );
    // Each server counted the same requests.
    assert_eq!(http.requests(), 200);
    assert_eq!(grpc.calls(), 200);
    assert_eq!(tcp.requests(), 200);
    assert_eq!(nats_responder.stop().unwrap(), 200);
    assert_eq!(amqp_responder.stop().unwrap(), 200);

    // The table: a row per transport, its columns the JSON's figures as printed.
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let printed = table(&out, &HEADS);
    assert_eq!(
        printed.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        names,
        "{out}"
    );
    for ((side, values), row) in printed.iter().zip(rows) {
        let want = figures(&row["total"]);
        assert_eq!(values.len(), 7, "{side}: {out}");
        for ((v, w), head) in values.iter().zip(want).zip(HEADS) {
            assert!(
                (v - w).abs() <= 0.01 + w * 0.001,
                "{side} {head}: {v} printed, {w} in the JSON"
            );
        }
        assert!(want.iter().all(|v| *v > 0.0), "{side}: {want:?}");
    }
    // And the same table again from the result.
    let json = json.to_str().unwrap().to_string();
    let again = tokio::task::spawn_blocking(move || {
        throng(&[
            "report",
            &json,
            "--format",
            "markdown",
            "--pivot",
            "level",
            "--columns",
            COLUMNS,
        ])
    })
    .await
    .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", said(&again));
    let md = String::from_utf8_lossy(&again.stdout);
    assert!(
        md.contains("| Side | Mean (ms) | p50 (ms) | Max (ms) | Min (ms) | p90 (ms) | p99 (ms) | Throughput (/s) |"),
        "{md}"
    );
    for n in names {
        assert_eq!(
            md.lines()
                .filter(|l| l.starts_with(&format!("| {n} |")))
                .count(),
            2,
            "{n}: its row of the level table and of the pivot: {md}"
        );
    }
}

#[test]
fn the_sides_alone_need_two_of_them() {
    // No URL and one --target: no grid, said so before any load.
    let one = throng(&["run", "--target", "a=http://127.0.0.1:9/", "-n", "5"]);
    assert_eq!(one.status.code(), Some(2), "{}", said(&one));
    assert!(said(&one).contains("two or more sides"), "{}", said(&one));
    // Neither a URL nor a side: clap names what is missing.
    let none = throng(&["run", "-n", "5"]);
    assert_eq!(none.status.code(), Some(2), "{}", said(&none));
    assert!(said(&none).contains("<URL>"), "{}", said(&none));
}
