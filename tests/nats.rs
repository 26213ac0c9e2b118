//! NATS through the command line as a user meets it, against Debian's nats-server (started
//! here on free ports with its monitoring endpoint) and the nats.go responder of
//! `crates/nats/tests/nats/responder.go` (built offline with Debian's Go): a URL run of
//! requests, a publish run with two subscribers and the server's `/varz` beside it (the JSON's
//! counts against the server's own), a scenario, no responders, a server that is not there,
//! a plain server behind `tls://`, and bad input (exit 2 naming the flag). The crate tests the fault matrix itself.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use throng::testbed::brokers::{self, NatsServer as Server};

use crate::common::{closed_port, said, throng};

/// The nats.go responder on `subject`, ready; killed when dropped.
pub(crate) fn responder(server: &Server, subject: &str) -> brokers::Responder {
    let bin = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("nats-responder");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/nats/tests/nats/responder.go"
    );
    brokers::go_build(src.as_ref(), &bin, "golang-github-nats-io-go-nats-dev").unwrap();
    let url = format!("nats://127.0.0.1:{}", server.port);
    brokers::Responder::start(&bin, &["-url", &url, "-subject", subject]).unwrap()
}

fn result(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `throng run ARGS --no-tui --json FILE`: the output and the result.
async fn run(args: Vec<String>) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut all = args;
    all.extend([
        "--no-tui".into(),
        "--json".into(),
        json.to_str().unwrap().into(),
    ]);
    let o = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        throng(&refs)
    })
    .await
    .unwrap();
    let r = result(&json);
    (o, r)
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_url_runs_requests_and_publishes_counted_as_the_server_counts_them() {
    let server = Server::start().unwrap();
    let _responder = responder(&server, "greeter");
    let monitor = format!("http://127.0.0.1:{}", server.monitor);

    // Request–reply: every request answered, `nats 0 OK`.
    let url = server.url("greeter");
    let (o, r) = run(args(&["run", &url, "-d", "world", "-c", "4", "-n", "400"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(r["total"]["samples"], 400, "{r}");
    assert_eq!(r["total"]["errors"], 0, "{r}");
    assert_eq!(r["status_codes"]["nats 0 OK"], 400, "{r}");
    assert_eq!(r["protocol_counts"]["nats_connections"], 2, "{r}");

    // Publish–consume, open loop, two subscribers, the server's /varz beside it.
    let url = server.url("ticks");
    let (o, r) = run(args(&[
        "run",
        &url,
        "--subject-mode",
        "publish",
        "--subscribers",
        "2",
        "-d",
        "tick {{ seq() }}",
        "-q",
        "400",
        "-n",
        "200",
        "--nats-monitor",
        &monitor,
    ]))
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(r["total"]["samples"], 200, "{r}");
    assert_eq!(r["total"]["errors"], 0, "{r}");
    let counts = &r["protocol_counts"];
    assert_eq!(counts["nats_published"], 200, "{r}");
    assert_eq!(counts["nats_delivered"], 200, "{r}");
    assert_eq!(counts["nats_lost"], 0, "{r}");
    assert_eq!(counts["nats_duplicated"], 0, "{r}");
    let deliveries = format!("{url} (deliveries)");
    let parts = r["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == deliveries.as_str())
        .unwrap_or_else(|| panic!("no deliveries row: {r}"));
    assert_eq!(parts["samples"], 400, "{r}");
    // The server's own count of the load: 200 messages in, 400 deliveries out.
    let db = &r["databases"][0];
    assert!(db["name"].as_str().unwrap().contains("/varz"), "{db}");
    let counter = |name: &str| {
        db["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no counter {name}: {db}"))["load_total"]
            .as_u64()
            .unwrap()
    };
    // (With the probes throng's subscribers start with, to know the server has them.)
    let probes = counts["nats_probes"].as_u64().unwrap();
    assert!((1..10).contains(&probes), "{r}");
    assert_eq!(counter("in_msgs"), 200 + probes, "{db}");
    let probed = counts["nats_probe_deliveries"].as_u64().unwrap();
    assert_eq!(counter("out_msgs"), 2 * 200 + probed, "{db}");
    assert_eq!(counter("slow_consumers"), 0, "{db}");
    assert!(
        said(&o).contains("200 published, 200 delivered"),
        "{}",
        said(&o)
    );
    // The server's figures as it names them, and nothing a database would count: no
    // transactions in the JSON or the summary; open connections a gauge, not a rate.
    assert_eq!(r["schema_version"], 4, "{r}");
    assert_eq!(db["kind"], "Broker", "{db}");
    assert!(
        db.get("read_failures").is_none(),
        "every reading succeeded: {db}"
    );
    assert!(db.get("transactions").is_none(), "{db}");
    assert!(db.get("statements").unwrap().is_null(), "{db}");
    let in_msgs = db["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "in_msgs");
    assert_eq!(in_msgs.unwrap()["label"], "messages received", "{db}");
    let gauges = db["gauges"].as_array().unwrap();
    assert_eq!(gauges.len(), 1, "{db}");
    assert_eq!(gauges[0]["name"], "connections", "{db}");
    assert!(gauges[0]["last"].is_u64(), "{db}");
    let out = String::from_utf8_lossy(&o.stdout);
    let heading = format!("Broker nats-server {monitor}/varz: its own figures");
    assert!(out.contains(&heading), "{out}");
    assert!(!out.contains("transactions"), "{out}");
    assert!(out.contains("messages     messages received"), "{out}");
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("in_msgs"))
        .unwrap_or_else(|| panic!("no in_msgs line: {out}"));
    assert_eq!(
        line.split_whitespace().nth(3),
        Some(&*(200 + probes).to_string()),
        "{line}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("connections ")
                && l.ends_with("connections  connections open")),
        "{out}"
    );
}

/// A monitoring endpoint on 127.0.0.1 that refuses (nothing listens), answers 500, or
/// accepts and never answers; its URL.
fn bad_monitor(kind: &str) -> (String, Option<std::thread::JoinHandle<()>>) {
    if kind == "refuses" {
        return (format!("http://127.0.0.1:{}", closed_port()), None);
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    let stall = kind == "stalls";
    let serve = std::thread::spawn(move || {
        let mut held = Vec::new();
        l.set_nonblocking(false).unwrap();
        for s in l.incoming().take(20) {
            let Ok(mut s) = s else { continue };
            match stall {
                // Held open, never answered, until the test ends.
                true => held.push(s),
                false => {
                    use std::io::{Read, Write};
                    let mut buf = [0u8; 1024];
                    let _ = s.read(&mut buf);
                    let _ = s.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 7\r\n\r\n200 OK\n",
                    );
                }
            }
        }
    });
    (url, Some(serve))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_that_refuses_answers_500_or_stalls_is_a_warning_not_a_failed_run() {
    let server = Server::start().unwrap();
    let url = server.url("ticks");
    for (kind, class) in [
        ("refuses", "connect"),
        ("answers 500", "status"),
        ("stalls", "timeout"),
    ] {
        let (monitor, _serving) = bad_monitor(kind);
        let started = Instant::now();
        let (o, r) = run(args(&[
            "run",
            &url,
            "--subject-mode",
            "publish",
            "-d",
            "x",
            "-q",
            "200",
            "-n",
            "20",
            "--connect-timeout",
            "300ms",
            "--nats-monitor",
            &monitor,
        ]))
        .await;
        // The load ran and passed; the monitor's readings each failed, counted by class.
        assert_eq!(o.status.code(), Some(0), "{kind}: {}", said(&o));
        assert!(started.elapsed() < Duration::from_secs(20), "{kind}");
        assert_eq!(r["total"]["samples"], 20, "{kind}: {r}");
        assert_eq!(r["total"]["errors"], 0, "{kind}: {r}");
        let line = said(&o)
            .lines()
            .find(|l| l.contains("warning") && l.contains("readings failed ("))
            .map(String::from)
            .unwrap_or_else(|| panic!("{kind}: no warning: {}", said(&o)));
        let n: u64 = line
            .split(" of ")
            .next()
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{kind}: {line}"));
        assert!(n >= 3, "idle readings, and the one after the load: {line}");
        assert!(line.contains(&format!("({n} {class})")), "{kind}: {line}");
        assert!(
            line.contains(&format!("{n} of {n} readings failed")),
            "{kind}: {line}"
        );
        // Its block in the result says it was not read; nothing is made up.
        let db = &r["databases"][0];
        assert_eq!(
            db["samples"].as_array().map(Vec::len),
            Some(0),
            "{kind}: {db}"
        );
        assert_eq!(
            db["counters"].as_array().map(Vec::len),
            Some(0),
            "{kind}: {db}"
        );
        // And says why: which server, how many of its readings failed, of what class, what
        // the first said; a result the checked-in schema takes.
        assert!(
            db["name"].as_str().unwrap().contains(&monitor),
            "{kind}: {db}"
        );
        let failed = &db["read_failures"];
        assert_eq!(
            (&failed["tries"], &failed["failed"]),
            (&n.into(), &n.into()),
            "{kind}: {db}"
        );
        assert_eq!(
            failed["by_class"],
            serde_json::json!({ class: n }),
            "{kind}: {db}"
        );
        let first = line.split("the first: ").nth(1).unwrap();
        assert_eq!(failed["first"], first, "{kind}: {db}");
        assert!(!first.is_empty(), "{kind}: {line}");
        assert_eq!(crate::schema::invalid(&r), Vec::<String>::new(), "{kind}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("not read: no reading succeeded"),
            "{kind}: {out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_scenario_checks_replies_and_no_responders_is_a_status() {
    let server = Server::start().unwrap();
    let _responder = responder(&server, "greeter");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nats.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n  svc: {}\nsteps:\n  - label: hello\n    nats: 'user {{{{ user }}}}'\n    \
             checks:\n      - body_contains: 'hello user'\n  - label: nobody\n    nats:\n      \
             request: x\n      subject: nobody.home\n    checks:\n      - status: \
             NO_RESPONDERS\n",
            server.url("greeter")
        ),
    )
    .unwrap();
    let (o, r) = run(args(&[
        "run",
        file.to_str().unwrap(),
        "-c",
        "2",
        "-n",
        "40",
    ]))
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(r["total"]["errors"], 0, "{r}");
    assert_eq!(r["status_codes"]["nats 503 NO_RESPONDERS"], 20, "{r}");

    // Without the check, no responders fails each request as its status.
    let (_, r) = run(args(&[
        "run",
        &server.url("nobody.home"),
        "-n",
        "10",
        "-c",
        "1",
    ]))
    .await;
    assert_eq!(r["total"]["errors_by_class"]["status"], 10, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_server_that_is_not_there_fails_as_connect_and_bad_input_exits_2() {
    let url = format!("nats://127.0.0.1:{}/greeter", closed_port());
    let (o, r) = run(args(&["run", &url, "-c", "1", "-z", "1s"])).await;
    let samples = r["total"]["samples"].as_u64().unwrap();
    assert!(samples >= 1, "{r}");
    assert_eq!(r["total"]["errors_by_class"]["connect"], samples, "{r}");
    assert!(said(&o).contains("no request succeeded"), "{}", said(&o));

    let url = "nats://127.0.0.1:4222/greeter";
    for (a, says) in [
        (vec!["--subject-mode", "push"], "--subject-mode"),
        (
            vec!["--subject-mode", "publish", "--subscribers", "0"],
            "--subscribers",
        ),
        (vec!["--subscribers", "2"], "--subject-mode publish"),
        (vec!["--jetstream"], "--subject-mode publish"),
        (vec!["--nats-monitor", "127.0.0.1:8222"], "--nats-monitor"),
        (
            vec!["--cacert", "/nonexistent/ca.pem"],
            "--cacert applies to tls:// targets",
        ),
        (
            vec![
                "tls://127.0.0.1:4222/greeter",
                "--cacert",
                "/nonexistent/ca.pem",
            ],
            "cannot use CA file /nonexistent/ca.pem",
        ),
    ] {
        // A URL among the flags is the run's (clap takes it wherever it stands).
        let url = match a.first() {
            Some(u) if u.starts_with("tls://") => "",
            _ => url,
        };
        let mut all = vec!["run", url, "-n", "1", "--no-tui"];
        all.retain(|s| !s.is_empty());
        all.extend(a.iter().copied());
        let o = tokio::task::spawn_blocking({
            let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
            move || throng(&all.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .unwrap();
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", said(&o));
        assert!(said(&o).contains(says), "{a:?}: {}", said(&o));
    }
    let o = tokio::task::spawn_blocking(|| throng(&["run", "nats://127.0.0.1:4222", "-n", "1"]))
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(said(&o).contains("no subject"), "{}", said(&o));
}

/// A server without TLS behind `tls://`: every request fails as `tls` (the handshake after its
/// `INFO` line), none as a timeout, and the run ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_nats_server_behind_a_tls_url_fails_as_tls() {
    let server = Server::start().unwrap();
    let url = format!("tls://127.0.0.1:{}/greeter", server.port);
    let (o, r) = run(args(&["run", &url, "-d", "x", "-k", "-c", "1", "-z", "1s"])).await;
    let samples = r["total"]["samples"].as_u64().unwrap();
    assert!(samples >= 1, "{r}");
    assert_eq!(r["total"]["errors_by_class"]["tls"], samples, "{r}");
    assert!(said(&o).contains("no request succeeded"), "{}", said(&o));
}

/// A run that watches a database and a broker beside it (`--db-stats` and `--nats-monitor`):
/// a block each, the database's with its transactions, the broker's with its own figures and
/// none; `compare` sets both side by side, each figure where its server has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_and_a_broker_watched_in_one_run_each_get_their_block() {
    let server = Server::start().unwrap();
    let pg = tokio::task::spawn_blocking(|| throng::testbed::Postgres::shared().unwrap().url())
        .await
        .unwrap();
    let monitor = format!("http://127.0.0.1:{}", server.monitor);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let all = args(&[
        "run",
        &server.url("mixed"),
        "--subject-mode",
        "publish",
        "-d",
        "x",
        "-q",
        "200",
        "-n",
        "100",
        "--db-stats",
        &pg,
        "--nats-monitor",
        &monitor,
        "--no-tui",
        "--json",
        json.to_str().unwrap(),
    ]);
    let o = tokio::task::spawn_blocking(move || {
        throng(&all.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let r = result(&json);
    let blocks = r["databases"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{r}");
    let of = |kind: &str| {
        blocks
            .iter()
            .find(|b| b["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}: {r}"))
    };
    let (db, broker) = (of("Database"), of("Broker"));
    assert!(db["transactions"]["load_per_s"].is_number(), "{db}");
    assert!(broker.get("transactions").is_none(), "{broker}");
    let in_msgs = broker["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "in_msgs")
        .unwrap();
    assert!(in_msgs["load_total"].as_u64() >= Some(100), "{broker}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("its own figures").count(), 2, "{out}");
    assert!(out.contains("\nDatabase postgres://"), "{out}");
    assert!(out.contains("\nBroker nats-server "), "{out}");
    // One `transactions/s` line: the database's.
    assert_eq!(out.matches("  transactions/s  idle").count(), 1, "{out}");

    let path = json.to_str().unwrap().to_string();
    let o = tokio::task::spawn_blocking(move || throng(&["compare", &path, &path]))
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // A row's cells: the figure, then a column per side and server (the database first).
    let cells = |start: &str| -> Vec<String> {
        let l = out
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start} row: {out}"));
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let servers = cells("Server");
    assert_eq!(servers.len(), 5, "{out}");
    let columns = |prefix: &str| -> Vec<usize> {
        (1..5).filter(|&i| servers[i].starts_with(prefix)).collect()
    };
    let (dbs, brokers) = (columns("postgres://"), columns("nats-server "));
    assert_eq!((dbs.len(), brokers.len()), (2, 2), "{out}");
    // The broker counts no transactions, the database no messages: `-` where a server has
    // no such figure, a number where it has.
    let tps = cells("DB-TPS: transactions/s");
    let received = cells("Messages received/s");
    for (row, has, lacks) in [(&tps, &dbs, &brokers), (&received, &brokers, &dbs)] {
        assert!(has.iter().all(|&i| row[i].parse::<f64>().is_ok()), "{out}");
        assert!(lacks.iter().all(|&i| row[i] == "-"), "{out}");
    }
}
