//! Every fault under both load models, for HTTP, gRPC and SQL: the run ends on time, every
//! request and arrival is accounted for, the failures have the right class, and the JSON result
//! is valid against the checked-in schema; and the setup before the load (gRPC's reflection,
//! SQL's check) under the same faults ends within its timeouts with the right exit. The faults
//! come from real servers: the testbed's targets (error statuses, garbage, silence, resets, TLS,
//! a server of another protocol, PostgreSQL and MariaDB at each other's URLs) and its fault
//! proxy (latency and jitter, resets and answers that stop halfway, a trickling body), or a port
//! where nothing listens.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{grpc_run, result, run};
use throng::core::{ErrorClass, Percentiles, Snapshot};
use throng::testbed::{Fault, FaultProxy, GrpcTarget, HttpTarget, ProxyFault};

/// What a fault should produce.
struct Expect {
    /// Failure classes allowed (empty: none at all).
    classes: &'static [ErrorClass],
    /// Whether every request must fail.
    all_fail: bool,
}

enum Server {
    Target(HttpTarget),
    Proxy(ProxyFault),
    Nothing,
}

fn cases() -> Vec<(&'static str, Server, Expect)> {
    use ErrorClass::*;
    vec![
        (
            "latency and jitter",
            Server::Proxy(ProxyFault::Latency {
                base: Duration::from_millis(30),
                jitter: Duration::from_millis(20),
            }),
            Expect {
                classes: &[],
                all_fail: false,
            },
        ),
        (
            "reset after 10 bytes",
            Server::Proxy(ProxyFault::ResetAfter(10)),
            Expect {
                classes: &[Reset],
                all_fail: true,
            },
        ),
        (
            "answer stops halfway",
            Server::Proxy(ProxyFault::CloseAfter(30)),
            Expect {
                classes: &[Reset],
                all_fail: true,
            },
        ),
        (
            "slow body",
            Server::Proxy(ProxyFault::SlowBody(40)),
            Expect {
                classes: &[Timeout, Aborted],
                all_fail: true,
            },
        ),
        (
            "5xx storm",
            Server::Target(HttpTarget {
                status: 503,
                ..HttpTarget::default()
            }),
            Expect {
                classes: &[Status],
                all_fail: true,
            },
        ),
        (
            "garbage",
            Server::Target(HttpTarget {
                fault: Some(Fault::Garbage),
                ..HttpTarget::default()
            }),
            Expect {
                classes: &[Protocol],
                all_fail: true,
            },
        ),
        (
            "hang",
            Server::Target(HttpTarget {
                fault: Some(Fault::Hang),
                ..HttpTarget::default()
            }),
            Expect {
                classes: &[Timeout, Aborted],
                all_fail: true,
            },
        ),
        (
            "TLS failure (untrusted certificate)",
            Server::Target(HttpTarget {
                tls: true,
                ..HttpTarget::default()
            }),
            Expect {
                classes: &[Tls],
                all_fail: true,
            },
        ),
        (
            "refused",
            Server::Nothing,
            Expect {
                classes: &[Connect],
                all_fail: true,
            },
        ),
    ]
}

fn schema() -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// What every fault must give: the run ended on time (1 s of load, then at most the timeout or
/// the grace), every request and arrival counted once, the expected classes, and a result
/// valid against the schema.
fn accounted(
    what: &str,
    s: &Snapshot,
    took: Duration,
    expect: &Expect,
    validator: &jsonschema::Validator,
) {
    assert!(took < Duration::from_secs(4), "{what}: took {took:?}");
    // Every request is counted once; the classes add up to the errors.
    let t = &s.total;
    let by_class: u64 = s.errors.iter().map(|e| e.count).sum();
    assert_eq!(by_class, t.errors, "{what}");
    assert_eq!(t.samples, t.succeeded() + t.errors, "{what}");
    // Dropped arrivals were never sent: samples and failures, timed in no histogram.
    let timed = Percentiles::of(&t.latency).count + Percentiles::of(&t.failed).count;
    assert_eq!(
        timed + t.dropped,
        t.samples,
        "{what}: each request timed once"
    );
    if let Some(lag) = &s.lag {
        assert_eq!(lag.scheduled, 60, "{what}");
        assert_eq!(
            lag.started() + lag.dropped + lag.unstarted,
            lag.scheduled,
            "{what}"
        );
        assert_eq!(t.samples, lag.scheduled, "{what}");
        assert_eq!(t.dropped, lag.dropped, "{what}");
    }
    assert!(t.samples > 0, "{what}: nothing happened");
    for e in &s.errors {
        // Any fault may hold the open loop's slots until arrivals find none.
        let dropped = e.class == ErrorClass::Dropped && s.lag.is_some();
        assert!(
            dropped || expect.classes.contains(&e.class),
            "{what}: unexpected {:?} ({})",
            e.class,
            e.sample
        );
    }
    if expect.all_fail {
        assert_eq!(t.succeeded(), 0, "{what}: {:?}", s.errors);
    } else {
        assert_eq!(t.errors, 0, "{what}: {:?}", s.errors);
    }
    // The JSON result is valid against the schema.
    let json = serde_json::to_value(result(s)).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

/// The load models every case runs under: a closed loop, and an open loop of 60 arrivals.
const MODELS: [&[&str]; 2] = [
    &["-c", "4", "-z", "1s"],
    &["-q", "60", "-z", "1s", "--max-in-flight", "20"],
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_under_both_models() {
    let validator = schema();
    for (name, server, expect) in cases() {
        // Keep the servers alive for the run.
        let healthy = HttpTarget::default().start().await.unwrap();
        let (url, _target, _proxy) = match server {
            Server::Target(t) => {
                let t = t.start().await.unwrap();
                (format!("{}/", t.url()), Some(t), None)
            }
            Server::Proxy(fault) => {
                let p = FaultProxy {
                    upstream: healthy.addr,
                    fault,
                }
                .start()
                .await
                .unwrap();
                (format!("{}/", p.url()), None, Some(p))
            }
            Server::Nothing => {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let port = l.local_addr().unwrap().port();
                drop(l);
                (format!("http://127.0.0.1:{port}/"), None, None)
            }
        };
        for model in MODELS {
            let what = format!("{name}, {model:?}");
            // A timeout of 1 s: on two busy cores (the tests of this binary run beside each
            // other) an answer cut halfway took longer than 400 ms to be seen as a reset.
            let mut args = vec![url.as_str(), "-t", "1s", "--grace", "300ms"];
            args.extend(model);
            let began = Instant::now();
            let s = run(&args).await;
            accounted(&what, &s, began.elapsed(), &expect, &validator);
        }
    }
}

/// The proxy's latency shows in throng's latency: 30 ms plus up to 20 ms of jitter a chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_latency_is_measured() {
    let healthy = HttpTarget::default().start().await.unwrap();
    let p = FaultProxy {
        upstream: healthy.addr,
        fault: ProxyFault::Latency {
            base: Duration::from_millis(30),
            jitter: Duration::from_millis(20),
        },
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", p.url());
    let s = run(&[&url, "-c", "2", "-n", "20"]).await;
    let q = Percentiles::of(&s.total.latency);
    assert!(q.min >= 30_000, "min {} us", q.min);
    assert!(q.p50 < 200_000, "p50 {} us", q.p50);
    assert_eq!(s.total.errors, 0);
}

/// gRPC's faulty servers, alive while this lives: a server that hangs, answers garbage,
/// resets, refuses, and servers of another protocol (HTTP/1.1 only; HTTP/2 without gRPC),
/// each with the classes its calls may fail with.
struct GrpcFaults {
    _servers: Vec<Box<dyn std::any::Any>>,
    cases: Vec<(&'static str, String, &'static [ErrorClass])>,
}

async fn grpc_faults() -> GrpcFaults {
    use ErrorClass::*;
    let grpc = |fault| GrpcTarget {
        fault: Some(fault),
        ..GrpcTarget::default()
    };
    let hang = grpc(Fault::Hang).start().await.unwrap();
    let garbage = grpc(Fault::Garbage).start().await.unwrap();
    let reset = grpc(Fault::Reset).start().await.unwrap();
    let http1 = HttpTarget {
        http1_only: true,
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let http2 = HttpTarget::default().start().await.unwrap();
    let nothing = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        format!("grpc://127.0.0.1:{port}")
    };
    let as_grpc = |url: String| url.replace("http://", "grpc://");
    let cases = vec![
        ("hang", hang.url(), &[Timeout, Aborted][..]),
        ("garbage", garbage.url(), &[Protocol][..]),
        ("reset", reset.url(), &[Reset][..]),
        ("refused", nothing, &[Connect][..]),
        // hyper's HTTP/1.1 server closes on the HTTP/2 preface without a word.
        (
            "HTTP/1.1 only",
            as_grpc(http1.url()),
            &[Reset, Protocol][..],
        ),
        (
            "HTTP/2 without gRPC",
            as_grpc(http2.url()),
            &[Status, Protocol][..],
        ),
    ];
    GrpcFaults {
        _servers: vec![
            Box::new(hang),
            Box::new(garbage),
            Box::new(reset),
            Box::new(http1),
            Box::new(http2),
        ],
        cases,
    }
}

/// gRPC's faults under both load models, with the greeter's `.proto` (reflection is the setup's,
/// below).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_grpc_fault_under_both_models() {
    let faults = grpc_faults().await;
    let flags = [
        "--call",
        "helloworld.Greeter/SayHello",
        "--proto",
        "crates/testbed/proto/greeter.proto",
    ];
    under_both_models("gRPC", &faults.cases, &flags, |args| async move {
        grpc_run(&args.iter().map(String::as_str).collect::<Vec<_>>()).await
    })
    .await;
}

/// Each case (a name, a URL, the classes its requests may fail with) under both load models:
/// `throng run URL FLAGS...` with the matrix's timeouts, through `run` (given the whole
/// command line after `run`).
async fn under_both_models<N, F, Fut>(
    protocol: &str,
    cases: &[(N, String, &'static [ErrorClass])],
    flags: &[&str],
    run: F,
) where
    N: std::fmt::Display,
    F: Fn(Vec<String>) -> Fut,
    Fut: std::future::Future<Output = std::sync::Arc<Snapshot>>,
{
    let validator = schema();
    for (name, url, classes) in cases {
        let expect = Expect {
            classes,
            all_fail: true,
        };
        for model in MODELS {
            let what = format!("{protocol} {name}, {model:?}");
            let timeouts = ["-t", "400ms", "--connect-timeout", "400ms"];
            let mut args = vec![url.as_str()];
            args.extend(flags.iter().chain(&timeouts).chain(&["--grace", "300ms"]));
            args.extend(model);
            let began = Instant::now();
            let s = run(args.iter().map(|a| a.to_string()).collect()).await;
            accounted(&what, &s, began.elapsed(), &expect, &validator);
        }
    }
}

/// gRPC's setup under the same faults: the server's reflection (no `.proto`) ends within the
/// connect timeout, as the run's failure where the server could not be asked (exit 1, not 2),
/// as the input's where a server answered that is not gRPC's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_grpc_fault_in_setup() {
    use throng::grpc::{GrpcClient, GrpcConfig};
    let faults = grpc_faults().await;
    for (name, url, _) in &faults.cases {
        let mut cfg = GrpcConfig::new(url, "helloworld.Greeter/SayHello").unwrap();
        cfg.connect_timeout = Duration::from_millis(400);
        let began = Instant::now();
        let e = tokio::time::timeout(Duration::from_secs(30), GrpcClient::one_step(cfg))
            .await
            .unwrap_or_else(|_| panic!("{name}: reflection did not end within 30 s"))
            .map(drop)
            .expect_err("reflection succeeded");
        let took = began.elapsed();
        assert!(took < Duration::from_secs(4), "{name}: took {took:?}: {e}");
        assert!(e.to_string().starts_with("reflection at "), "{name}: {e}");
        let input = *name == "HTTP/2 without gRPC";
        assert_eq!(e.is_input(), input, "{name}: {e}");
    }
}

/// SQL's faulty servers, alive while this lives: for `postgres://` and `mysql://` each, a
/// server that hangs, answers garbage, resets, refuses, and servers of another protocol (an
/// HTTP server; the other database's port), each with the classes its connects may fail with.
/// MySQL's server speaks first, so a server that waits for the client (all but the refused
/// port) is one that never answers.
struct SqlFaults {
    _servers: Vec<throng::testbed::RunningTarget>,
    cases: Vec<(String, String, &'static [ErrorClass])>,
}

async fn sql_faults() -> SqlFaults {
    use throng::testbed::{MariaDb, Postgres};
    use ErrorClass::*;
    let fault = |fault| HttpTarget {
        fault: Some(fault),
        ..HttpTarget::default()
    };
    let hang = fault(Fault::Hang).start().await.unwrap();
    let garbage = fault(Fault::Garbage).start().await.unwrap();
    let reset = fault(Fault::Reset).start().await.unwrap();
    let http = HttpTarget::default().start().await.unwrap();
    let nothing = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (pg, my) = tokio::task::spawn_blocking(|| {
        (
            Postgres::shared().expect("PostgreSQL starts").port(),
            MariaDb::shared().expect("MariaDB starts").port(),
        )
    })
    .await
    .unwrap();
    let silent = &[Timeout, Aborted][..];
    let mut cases = Vec::new();
    for (scheme, other, other_port) in [("postgres", "MariaDB", my), ("mysql", "PostgreSQL", pg)] {
        let url = |port: u16| format!("{scheme}://u:pw@127.0.0.1:{port}/db");
        let pg = scheme == "postgres";
        // A failed connect is class connect, whatever failed (see throng_sql's Target::connect).
        let answered = match pg {
            true => &[Connect][..],
            false => silent,
        };
        cases.extend([
            (format!("{scheme} hang"), url(hang.addr.port()), silent),
            (
                format!("{scheme} garbage"),
                url(garbage.addr.port()),
                answered,
            ),
            (format!("{scheme} reset"), url(reset.addr.port()), answered),
            (format!("{scheme} refused"), url(nothing), &[Connect][..]),
            // hyper's server waits for a whole request, or answers 400 to what is not one.
            (
                format!("{scheme} at an HTTP server"),
                url(http.addr.port()),
                &[Connect, Timeout, Aborted][..],
            ),
            (format!("{scheme} at {other}"), url(other_port), answered),
        ]);
    }
    SqlFaults {
        _servers: vec![hang, garbage, reset, http],
        cases,
    }
}

/// The flags of `throng run URL ARGS...` for a database URL: its plan and SQL configuration.
fn sql_config(url: &str, args: &[&str]) -> (throng::core::RunPlan, throng::sql::SqlConfig) {
    let mut argv = vec!["throng", "run", url];
    argv.extend_from_slice(args);
    let run = crate::common::parse(&argv).unwrap();
    let plan = run.run.plan(&run.url).unwrap();
    (
        plan,
        run.protocols
            .get::<throng::sql::flags::SqlFlags>()
            .unwrap()
            .config(&run.url, &run.request)
            .unwrap(),
    )
}

/// SQL's faults under both load models (`--sql 'SELECT 1'`), the database gone bad after the
/// check before the load: each run ends on time, every statement and arrival counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sql_fault_under_both_models() {
    let faults = sql_faults().await;
    under_both_models(
        "SQL",
        &faults.cases,
        &["--sql", "SELECT 1"],
        |args| async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (plan, cfg) = sql_config(args[0], &args[1..]);
            // The steps of a run whose check before the load passed: the database went bad
            // after it. (Against these servers the check fails, as
            // `every_sql_fault_in_setup` shows.)
            let steps = throng::sql::SqlDriver::new(cfg)
                .unwrap()
                .unchecked()
                .unwrap();
            throng::engine::run(plan, std::sync::Arc::new(steps))
                .await
                .unwrap()
        },
    )
    .await;
}

/// The check before the load of `throng run URL ARGS... -n 1`: it fails within `bound` as the
/// database's failure (exit 1, not 2); its message.
async fn check_fails(what: &str, url: &str, args: &[&str], bound: Duration) -> String {
    let (_, cfg) = sql_config(url, &[args, &["-n", "1"]].concat());
    let driver = throng::sql::SqlDriver::new(cfg).unwrap();
    let began = Instant::now();
    let e = tokio::time::timeout(Duration::from_secs(30), driver.check())
        .await
        .unwrap_or_else(|_| panic!("{what}: the check did not end within 30 s"))
        .err()
        .unwrap_or_else(|| panic!("{what}: the check passed"));
    let took = began.elapsed();
    let said = e.to_string();
    assert!(took < bound, "{what}: took {took:?}: {said}");
    assert!(!e.is_usage(), "{what}: {said}");
    said
}

/// SQL's setup under the same faults: the check before the load (connect, log in, prepare)
/// ends within the connect timeout (400 ms here) as the run's failure (exit 1), the database
/// named and its password hidden; a server of another protocol is named as not the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sql_fault_in_setup() {
    let faults = sql_faults().await;
    for (name, url, _) in &faults.cases {
        let args = ["--sql", "SELECT 1", "--connect-timeout", "400ms"];
        let said = check_fails(name, url, &args, Duration::from_secs(4)).await;
        assert!(said.starts_with("connect to "), "{name}: {said}");
        assert!(said.contains("u:***@127.0.0.1"), "{name}: {said}");
        assert!(!said.contains(":pw@"), "{name}: {said}");
        if name.contains(" at ") && !name.contains("HTTP") {
            let not = match url.starts_with("postgres") {
                true => "not a PostgreSQL server",
                false => "not a MySQL or MariaDB server",
            };
            assert!(said.contains(not), "{name}: {said}");
        }
    }
}

/// A database that accepts the login and then holds a statement's prepare (another session
/// holds a lock on its table): the check before the load ends within the connect timeout plus
/// the request timeout, as the database's failure (exit 1), naming the statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepare_the_database_holds_ends_the_setup_in_time() {
    use throng::testbed::{MariaDb, Postgres};
    let (pg, my) = tokio::task::spawn_blocking(|| {
        (
            Postgres::shared().expect("PostgreSQL starts").url(),
            MariaDb::shared().expect("MariaDB starts").url(),
        )
    })
    .await
    .unwrap();
    for url in [pg, my] {
        let target = throng::sql::Target::new(&url, Duration::from_secs(10), 16).unwrap();
        let mut holder = target.connect().await.unwrap();
        holder.raw("DROP TABLE IF EXISTS held_lock").await.unwrap();
        holder.raw("CREATE TABLE held_lock (id INT)").await.unwrap();
        holder.raw("BEGIN").await.unwrap();
        // PostgreSQL's prepare waits for a table another session locked; MariaDB's does not
        // wait for LOCK TABLES, but does queue behind an ALTER TABLE waiting for a reader.
        let mut alter = None;
        if url.starts_with("postgres") {
            holder
                .raw("LOCK TABLE held_lock IN ACCESS EXCLUSIVE MODE")
                .await
                .unwrap();
        } else {
            holder.raw("SELECT id FROM held_lock").await.unwrap();
            let mut c = target.connect().await.unwrap();
            alter = Some(tokio::spawn(async move {
                let _ = c.raw("ALTER TABLE held_lock ADD COLUMN v INT").await;
                c.close().await;
            }));
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let args = [
            "--sql",
            "SELECT id FROM held_lock",
            "-t",
            "1s",
            "--connect-timeout",
            "400ms",
        ];
        let said = check_fails(&url, &url, &args, Duration::from_secs(6)).await;
        assert!(said.contains("was not prepared within 1s"), "{url}: {said}");
        holder.raw("ROLLBACK").await.unwrap();
        holder.close().await;
        if let Some(alter) = alter {
            alter.await.unwrap();
        }
    }
}
