//! Live metrics into a real Prometheus (Debian's `prometheus`, started here on a free port in a
//! temporary directory with the remote write receiver on): a run scraped and a run pushed whose
//! totals in Prometheus are the JSON result's exactly, p99 from the buckets within the stated
//! error, three shards summed by PromQL equal to `throng merge`, every query of the Grafana
//! dashboard answered, a Prometheus that refuses or stalls costing the run nothing, and bad
//! flags refused. `scripts/test` installs Prometheus when it is missing; without it these tests
//! fail saying so.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{refused, said, throng_bin as throng};

/// A Prometheus of the test's own; killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Prometheus {
    /// Starts Prometheus, scraping `scrape` (a port on 127.0.0.1) every second if given.
    fn start(scrape: Option<u16>) -> Prometheus {
        let bin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or_else(|| {
                panic!(
                    "Prometheus is not installed (these tests start one): apt-get install \
                     prometheus (scripts/test does)"
                )
            });
        let dir = tempfile::tempdir().unwrap();
        let mut config = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n".to_string();
        if let Some(p) = scrape {
            config.push_str(&format!(
                "scrape_configs:\n  - job_name: throng\n    static_configs:\n      - targets: \
                 ['127.0.0.1:{p}']\n"
            ));
        }
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(["--web.enable-remote-write-receiver", "--log.level=warn"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let p = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(port, "/-/ready").is_none_or(|(s, _)| s != 200) {
            assert!(Instant::now() < deadline, "Prometheus did not get ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    fn write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// The instant vector `query` evaluates to now: each series' labels and value.
    fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let path = format!("/api/v1/query?query={}", encode(query));
        let (status, body) = get(self.port, &path).expect("Prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status, 200, "{query}: {body}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
                (r["metric"].clone(), value)
            })
            .collect()
    }

    /// The single value of `query`, once it equals `want` (Prometheus may take a moment to take
    /// in the last scrape), or its last value after 10 s.
    fn settles(&self, query: &str, want: f64) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self.query(query).first().map_or(f64::NAN, |(_, v)| *v);
            if got == want || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A GET on 127.0.0.1:`port`: status and body, or `None` when nothing answers.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Percent-encodes a query string value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A testbed HTTP target answering after `ms`, on a runtime of its own; keep both alive.
fn target(ms: u64) -> (tokio::runtime::Runtime, throng::testbed::RunningTarget) {
    crate::common::serve(throng::testbed::HttpTarget {
        delay: throng::testbed::Delay::Fixed(Duration::from_millis(ms)),
        ..throng::testbed::HttpTarget::default()
    })
}

/// `throng run URL ARGS --no-tui --json DIR/NAME.json`, which must exit 0; the result.
fn run(url: &str, args: &[&str], dir: &Path, name: &str) -> (Value, String) {
    let out = dir.join(format!("{name}.json"));
    let mut all = vec!["run", url, "--no-tui", "--json", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = throng(&all);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    (json(&out), said(&o))
}

/// The counts of `throng_requests_total` by outcome (the last value of each series, summed)
/// equal the result's: succeeded, failed, aborted, dropped and their sum.
fn totals_match(p: &Prometheus, total: &Value, filter: &str) {
    let samples = total["samples"].as_u64().unwrap();
    let errors = total["errors"].as_u64().unwrap();
    let aborted = total["aborted"].as_u64().unwrap();
    let dropped = total["dropped"].as_u64().unwrap();
    assert!(samples > 0);
    let q = |outcome: &str| {
        format!("sum(last_over_time(throng_requests_total{{outcome=~\"{outcome}\"{filter}}}[5m]))")
    };
    for (outcome, want) in [
        (".*", samples),
        ("succeeded", samples - errors),
        ("failed", errors - aborted - dropped),
        ("aborted", aborted),
        ("dropped", dropped),
    ] {
        let got = p.settles(&q(outcome), want as f64);
        assert_eq!(got, want as f64, "requests {outcome}");
    }
}

/// `histogram_quantile(0.99, ...)` over the latency buckets is within the stated error of the
/// result's p99.
fn p99_matches(p: &Prometheus, total: &Value) {
    let json_p99 = total["latency"]["p99"].as_f64().unwrap() / 1000.0;
    let q =
        "histogram_quantile(0.99, sum by (le) (last_over_time(throng_latency_seconds_bucket[5m])))";
    let got = p.query(q)[0].1;
    let error = (got - json_p99).abs() / json_p99;
    assert!(
        error <= throng::metrics::QUANTILE_ERROR,
        "p99 {got} s from the buckets, {json_p99} s in the result: {:.1}% apart",
        error * 100.0
    );
}

#[test]
fn a_scraped_run_gives_prometheus_the_results_counts() {
    let port = free_port();
    let p = Prometheus::start(Some(port));
    let (_rt, t) = target(2);
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let (r, _) = run(
        &t.url(),
        &["-c", "4", "-z", "3s", "--metrics-listen", &listen],
        dir.path(),
        "scraped",
    );
    // The endpoint waited for one scrape after the end (every second here), not its 15 s.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    totals_match(&p, &r["total"], "");
    p99_matches(&p, &r["total"]);
    let sent = p.query("sum(last_over_time(throng_sent_bytes_total[5m]))")[0].1;
    assert_eq!(sent, r["total"]["bytes_sent"].as_f64().unwrap());
    // The series carry the step's label and Prometheus' job; no grid or shard labels.
    let series = p.query("last_over_time(throng_requests_total{outcome=\"succeeded\"}[5m])");
    assert_eq!(series.len(), 1, "{series:?}");
    assert_eq!(series[0].0["label"], "GET /");
    assert_eq!(series[0].0["job"], "throng");
    assert!(series[0].0.get("shard").is_none());
}

#[test]
fn a_pushed_run_and_a_grids_runs_give_prometheus_their_counts() {
    let p = Prometheus::start(None);
    let (_rt, t) = target(2);
    let dir = tempfile::tempdir().unwrap();
    let url = p.write_url();
    let (r, _) = run(
        &t.url(),
        &[
            "-q",
            "300",
            "-z",
            "3s",
            "--metrics-push",
            &url,
            "--metrics-interval",
            "1s",
        ],
        dir.path(),
        "pushed",
    );
    totals_match(&p, &r["total"], ",level=\"\"");
    p99_matches(&p, &r["total"]);
    let started = p.query("sum(last_over_time(throng_arrivals_started_total[5m]))")[0].1;
    assert_eq!(started, r["open_loop"]["started"].as_f64().unwrap());
    // A sweep of two levels: one process, each run's series labelled with its level and round.
    let (g, _) = run(
        &t.url(),
        &["-z", "1s", "--sweep", "users=1,2", "--metrics-push", &url],
        dir.path(),
        "grid",
    );
    for run in g["runs"].as_array().unwrap() {
        let level = match run["level"]["users"].as_u64().unwrap() {
            1 => "1 user".to_string(),
            n => format!("{n} users"),
        };
        let filter = format!(",level=\"{level}\",round=\"1\"");
        totals_match(&p, &run["result"]["total"], &filter);
    }
}

#[test]
fn three_pushed_shards_sum_to_the_merged_result() {
    let p = Prometheus::start(None);
    let (_rt, t) = target(1);
    let dir = tempfile::tempdir().unwrap();
    let url = p.write_url();
    let children: Vec<(Child, PathBuf)> = (0..3)
        .map(|i| {
            let out = dir.path().join(format!("shard-{i}.json"));
            let child = Command::new(env!("CARGO_BIN_EXE_throng"))
                .args([
                    "run",
                    &t.url(),
                    "-c",
                    "6",
                    "-n",
                    "3000",
                    "--no-tui",
                    "--quiet",
                ])
                .args(["--shard", &format!("{i}/3"), "--start-at", "+1s"])
                .args(["--metrics-push", &url, "--json", out.to_str().unwrap()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let mut files = Vec::new();
    for (child, out) in children {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(out.to_str().unwrap().to_string());
    }
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", merged.to_str().unwrap()]);
    let o = throng(&args);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let m = json(&merged);
    assert_eq!(m["total"]["samples"], 3000);
    let shards = p.query("count(count by (shard) (last_over_time(throng_requests_total[5m])))");
    assert_eq!(shards[0].1, 3.0, "a series per shard");
    totals_match(&p, &m["total"], "");
    for row in m["labels"].as_array().unwrap() {
        let label = row["label"].as_str().unwrap();
        let q = format!(
            "sum by (label) (last_over_time(throng_requests_total{{label=\"{label}\"}}[5m]))"
        );
        assert_eq!(
            p.query(&q)[0].1,
            row["samples"].as_f64().unwrap(),
            "{label}"
        );
    }
    p99_matches(&p, &m["total"]);
}

#[test]
fn a_prometheus_that_refuses_or_stalls_costs_the_run_nothing() {
    let (_rt, t) = target(1);
    let dir = tempfile::tempdir().unwrap();
    // Refused: nothing listens on the port.
    let refused_port = free_port();
    // Stalled: a listener that takes connections and never answers.
    let stall = TcpListener::bind("127.0.0.1:0").unwrap();
    let stall_port = stall.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in stall.incoming() {
            held.push(c);
        }
    });
    for (port, says) in [(refused_port, "refused"), (stall_port, "no answer within")] {
        let url = format!("http://127.0.0.1:{port}/api/v1/write");
        let started = Instant::now();
        let (r, text) = run(
            &t.url(),
            &[
                "-c",
                "2",
                "-z",
                "2s",
                "--metrics-push",
                &url,
                "--metrics-interval",
                "500ms",
            ],
            dir.path(),
            "unreachable",
        );
        // The load ran its 2 s; the end waited for the last push at most twice the interval.
        let duration = r["duration"].as_f64().unwrap();
        assert!((1.9..2.6).contains(&duration), "{duration}");
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
        assert!(r["total"]["samples"].as_u64().unwrap() > 100);
        assert!(
            text.contains("warning: --metrics-push: ")
                && text.contains("pushes to")
                && text.contains(says),
            "{text}"
        );
    }
}

#[test]
fn every_query_of_the_grafana_dashboard_returns_data() {
    let p = Prometheus::start(None);
    let url = p.write_url();
    let dir = tempfile::tempdir().unwrap();
    // An open-loop run against a container the run watches (CPU, memory), one with errors (404
    // answers), a SQL run with the database's own counters, and streamed LLM answers.
    crate::docker_stats::require_engine();
    let pid = std::process::id();
    let (name, image) = (
        format!("throng-metrics-{pid}"),
        format!("throng-metrics:{pid}"),
    );
    let _cleanup = crate::docker_stats::Cleanup {
        containers: vec![name.clone()],
        image: image.clone(),
    };
    let _ctx = crate::docker_stats::build_image(&image);
    let port = crate::docker_stats::run_container(&name, &image);
    let target = format!("http://127.0.0.1:{port}/");
    run(
        &target,
        &[
            "-q",
            "200",
            "-z",
            "4s",
            "--container",
            &name,
            "--metrics-push",
            &url,
            "--metrics-interval",
            "1s",
            "--metrics-label",
            "run=container",
        ],
        dir.path(),
        "container",
    );
    let not_found = format!("http://127.0.0.1:{port}/status/404");
    run(
        &not_found,
        &[
            "-n",
            "50",
            "--metrics-push",
            &url,
            "--metrics-label",
            "run=404",
        ],
        dir.path(),
        "not-found",
    );
    let pg = throng::testbed::Postgres::shared()
        .expect("PostgreSQL")
        .url();
    run(
        &pg,
        &[
            "--sql",
            "SELECT 1",
            "--transaction",
            "-c",
            "2",
            "-z",
            "4s",
            "--db-stats",
            &pg,
            "--metrics-push",
            &url,
            "--metrics-interval",
            "1s",
            "--metrics-label",
            "run=sql",
        ],
        dir.path(),
        "sql",
    );
    // Streamed answers, judged by goodput's objectives: the stream panels' figures.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(crate::common::llm::testbed(None, 1, 10));
    run(
        &llm.url(),
        &[
            "--llm",
            "--model",
            "m",
            "-c",
            "2",
            "-z",
            "3s",
            "--goodput",
            "ttft<5s",
            "--metrics-push",
            &url,
            "--metrics-interval",
            "1s",
            "--metrics-label",
            "run=llm",
        ],
        dir.path(),
        "llm",
    );
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/throng.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let mut n = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "1m");
            let got = p.query(&expr);
            assert!(
                !got.is_empty(),
                "{}: {expr} returns nothing",
                panel["title"]
            );
            n += 1;
        }
    }
    assert!(n >= 10, "{n} queries");
    let errors = p.query("sum(last_over_time(throng_errors_total{class=\"status\"}[5m]))");
    assert_eq!(errors[0].1, 50.0, "the 404 run's requests, one error each");
    let runs = p.query("count by (run) (last_over_time(throng_elapsed_seconds[5m]))");
    assert_eq!(runs.len(), 4, "each run's own label: {runs:?}");
    // Every stream met `ttft<5s`: the good streams are the streams, each of six tokens.
    let last = |m: &str| p.query(&format!("sum(last_over_time({m}{{run=\"llm\"}}[5m]))"))[0].1;
    let streams = last("throng_streams_total");
    assert!(streams > 10.0, "{streams} streams");
    assert_eq!(last("throng_good_streams_total"), streams);
    assert_eq!(last("throng_output_tokens_total"), streams * 6.0);
}

#[test]
fn bad_metrics_flags_exit_2_naming_the_flag() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let url = "http://127.0.0.1:9/";
    let s = String::from;
    refused(&[
        (
            vec![url, "--metrics-listen", "nowhere"],
            s("--metrics-listen nowhere: not an address"),
        ),
        (
            vec![url, "--metrics-listen", &taken],
            format!("--metrics-listen {taken}: cannot listen there"),
        ),
        (
            vec![url, "--metrics-push", "ftp://x/"],
            s("--metrics-push ftp://x/: the URL must start with http:// or https://"),
        ),
        (
            vec![
                url,
                "--metrics-push",
                "http://x/",
                "--metrics-interval",
                "soon",
            ],
            s("--metrics-interval \"soon\": not a duration"),
        ),
        (
            vec![
                url,
                "--metrics-push",
                "http://x/",
                "--metrics-interval",
                "0s",
            ],
            s("--metrics-interval \"0s\": must be longer than 0"),
        ),
        (
            vec![
                url,
                "--metrics-push",
                "http://x/",
                "--metrics-label",
                "shard=1",
            ],
            s("--metrics-label \"shard=1\": \"shard\" is a label throng's series have already"),
        ),
        (
            vec![
                url,
                "--metrics-push",
                "http://x/",
                "--metrics-label",
                "testid",
            ],
            s("--metrics-label \"testid\": write KEY=VALUE"),
        ),
        (
            vec![url, "--metrics-linger", "3s"],
            s("--metrics-linger is how long --metrics-listen's endpoint waits"),
        ),
    ]);
}
