//! The SQL driver against real databases: SQLite in a file, and the throwaway PostgreSQL and
//! MariaDB the testbed starts (from Debian's packages; a missing one fails the test, it is never
//! skipped). Counts are checked against the database's own.

use std::sync::Arc;
use std::time::Duration;

use throng::core::{ClosedLoop, LoadModel, RunPlan, Snapshot, Users};
use throng::sql::{Conn, SqlConfig, SqlDriver, SqlError, SqlSteps, Target, Workload};
use throng::testbed::{MariaDb, Postgres};

fn databases() -> Vec<(&'static str, String, tempfile::TempDir)> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let lite = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let pg = Postgres::shared().expect("PostgreSQL starts").url();
    let my = MariaDb::shared().expect("MariaDB starts").url();
    vec![
        ("sqlite", lite, dir),
        ("postgres", pg, tempfile::tempdir().expect("dir")),
        ("mariadb", my, tempfile::tempdir().expect("dir")),
    ]
}

async fn conn(url: &str) -> Conn {
    Target::new(url, Duration::from_secs(10), 16)
        .expect("url")
        .connect()
        .await
        .expect("connects")
}

fn ph(url: &str, n: usize) -> String {
    match url.starts_with("postgres") {
        true => format!("${n}"),
        false => "?".into(),
    }
}

fn closed(users: u32, requests: Option<u64>, iterations: Option<u64>) -> LoadModel {
    LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(users),
        requests,
        iterations,
        duration: None,
        think_time: None,
    })
}

async fn run(cfg: SqlConfig, model: LoadModel) -> (Arc<Snapshot>, Arc<SqlSteps>) {
    let driver = SqlDriver::new(cfg).expect("driver");
    let shown = driver.shown().to_string();
    let driver = Arc::new(driver.check().await.expect("statements prepare"));
    let snap = throng::engine::run(RunPlan::new(&shown, model), driver.clone())
        .await
        .expect("run");
    (snap, driver)
}

async fn count(url: &str, table: &str) -> i64 {
    let mut c = conn(url).await;
    let done = c
        .run(
            &Arc::from(format!("SELECT COUNT(*) AS n FROM {table}")),
            &[],
            true,
        )
        .await
        .expect("count");
    done.data[0]["n"].as_i64().expect("a number")
}

#[tokio::test(flavor = "multi_thread")]
async fn exact_counts_match_the_databases_own() {
    for (name, url, _dir) in databases() {
        let table = "counts";
        let mut c = conn(&url).await;
        c.raw(&format!("DROP TABLE IF EXISTS {table}"))
            .await
            .expect("drop");
        c.raw(&format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY, v VARCHAR(20))"
        ))
        .await
        .expect("create");
        let mut cfg = SqlConfig::new(&url);
        cfg.statements = vec![format!(
            "INSERT INTO {table} (id, v) VALUES ({}, {})",
            ph(&url, 1),
            ph(&url, 2)
        )];
        cfg.params = vec!["seq()".into(), "rand_str(8)".into()];
        let (snap, _) = run(cfg, closed(4, Some(300), None)).await;
        assert_eq!(snap.total.samples, 300, "{name}");
        assert_eq!(snap.total.errors, 0, "{name}: {:?}", snap.errors);
        assert_eq!(count(&url, table).await, 300, "{name}: rows in the table");
        assert_eq!(
            snap.statuses,
            vec![(throng::sql::status::state(*b"00000"), 300)],
            "{name}: each success is SQLSTATE 00000"
        );
        c.raw(&format!("DROP TABLE {table}")).await.expect("drop");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_unique_violation_is_counted_by_its_sqlstate() {
    for (name, url, _dir) in databases() {
        let table = "uniq";
        let mut c = conn(&url).await;
        c.raw(&format!("DROP TABLE IF EXISTS {table}"))
            .await
            .expect("drop");
        c.raw(&format!("CREATE TABLE {table} (id INT PRIMARY KEY)"))
            .await
            .expect("create");
        let mut cfg = SqlConfig::new(&url);
        cfg.statements = vec![format!("INSERT INTO {table} (id) VALUES ({})", ph(&url, 1))];
        cfg.params = vec!["7".into()];
        let (snap, _) = run(cfg, closed(1, Some(5), None)).await;
        // MySQL's SQLSTATE of a duplicate key is 23000; PostgreSQL's and SQLite's 23505.
        let code = match name {
            "mariadb" => *b"23000",
            _ => *b"23505",
        };
        assert_eq!(snap.total.samples, 5, "{name}");
        assert_eq!(snap.total.errors, 4, "{name}");
        assert!(
            snap.statuses
                .contains(&(throng::sql::status::state(code), 4)),
            "{name}: {:?}",
            snap.statuses
        );
        let e = &snap.errors[0];
        assert_eq!(e.class, throng::core::ErrorClass::Status, "{name}");
        assert!(
            e.sample
                .starts_with(std::str::from_utf8(&code).unwrap_or_default()),
            "{name}: the sample starts with the SQLSTATE: {}",
            e.sample
        );
        c.raw(&format!("DROP TABLE {table}")).await.expect("drop");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_statements_and_parameters_fail_before_any_load_naming_the_statement() {
    for (name, url, _dir) in databases() {
        let mut cfg = SqlConfig::new(&url);
        cfg.statements = vec!["SELECT 1".into(), "SELEC oops FROM nowhere".into()];
        let d = SqlDriver::new(cfg).expect("driver");
        match d.check().await {
            Err(e @ SqlError::Statement { .. }) => {
                assert!(e.is_usage());
                let m = e.to_string();
                assert!(m.contains("SELEC oops"), "{name}: {m}");
                // PostgreSQL: 42601; MySQL: 42000; SQLite: mapped to 42601.
                assert!(m.contains("42601") || m.contains("42000"), "{name}: {m}");
            }
            other => panic!("{name}: {other:?}"),
        }
        let mut cfg = SqlConfig::new(&url);
        cfg.statements = vec!["SELECT * FROM no_such_table".into()];
        let e = SqlDriver::new(cfg)
            .expect("driver")
            .check()
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("42P01") || e.to_string().contains("42S02"),
            "{name}: {e}"
        );
        let mut cfg = SqlConfig::new(&url);
        // PostgreSQL infers a placeholder's type from the statement; a bare `$1 + $2` has none.
        let cast = if url.starts_with("postgres") {
            "::int"
        } else {
            ""
        };
        cfg.statements = vec![format!(
            "SELECT {}{cast} + {}{cast}",
            ph(&url, 1),
            ph(&url, 2)
        )];
        cfg.params = vec!["1".into()];
        let e = SqlDriver::new(cfg)
            .expect("driver")
            .check()
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                SqlError::Params {
                    placeholders: 2,
                    given: 1,
                    ..
                }
            ),
            "{name}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_wrong_password_and_missing_database_fail_before_the_load() {
    let pg = Postgres::shared().expect("PostgreSQL");
    let my = MariaDb::shared().expect("MariaDB");
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    for (url, says) in [
        (
            format!("postgres://throng:sekrit-pw@127.0.0.1:{}/throng", pg.port()),
            "password authentication failed",
        ),
        (
            format!("mysql://throng:sekrit-pw@127.0.0.1:{}/throng", my.port()),
            "Access denied",
        ),
        (
            format!("postgres://throng:throng-pw@127.0.0.1:{}/nodb", pg.port()),
            "does not exist",
        ),
        (
            format!("mysql://throng:throng-pw@127.0.0.1:{}/nodb", my.port()),
            "Unknown database",
        ),
        (
            format!("postgres://throng:sekrit-pw@127.0.0.1:{closed_port}/throng"),
            "refused",
        ),
    ] {
        let mut cfg = SqlConfig::new(&url);
        cfg.statements = vec!["SELECT 1".into()];
        let e = SqlDriver::new(cfg)
            .expect("driver")
            .check()
            .await
            .unwrap_err();
        assert!(!e.is_usage(), "{url}: {e}");
        let m = e.to_string();
        assert!(m.contains(says), "{url}: {m}");
        assert!(
            !m.contains("sekrit-pw") && !m.contains("throng-pw"),
            "password shown: {m}"
        );
        assert!(
            m.contains("***"),
            "the URL is named, its password hidden: {m}"
        );
    }
}

/// sysbench's workloads: statements per transaction and rows per step, on every database.
#[tokio::test(flavor = "multi_thread")]
async fn oltp_workloads_run_sysbenchs_statement_counts() {
    for (name, url, _dir) in databases() {
        let target = Target::new(&url, Duration::from_secs(10), 16).expect("url");
        let mut c = target.connect().await.expect("connects");
        throng::sql::oltp::cleanup(&mut c, 2, Duration::from_secs(60))
            .await
            .expect("cleanup");
        let o = throng::sql::OltpOptions {
            tables: 2,
            table_size: 500,
            range_size: 100,
            ..throng::sql::OltpOptions::default()
        };
        throng::sql::oltp::prepare(
            &mut c,
            target.dialect(),
            &o,
            Duration::from_secs(60),
            |_| {},
        )
        .await
        .expect("prepare");
        assert_eq!(count(&url, "sbtest2").await, 500, "{name}");
        for (w, per_trx, steps) in [
            (Workload::PointSelect, 1, 1),
            (Workload::ReadOnly, 16, 5),
            (Workload::WriteOnly, 6, 4),
            (Workload::ReadWrite, 20, 9),
            (Workload::Insert, 1, 1),
        ] {
            let mut cfg = SqlConfig::new(&url);
            cfg.workload = Some(w);
            cfg.oltp = o;
            let (snap, _) = run(cfg, closed(1, None, Some(25))).await;
            let rows = &snap.labels;
            let what = format!("{name} {}", w.name());
            assert_eq!(snap.total.errors, 0, "{what}: {:?}", snap.errors);
            let step_rows: Vec<_> = rows.iter().filter(|r| !r.group).collect();
            assert_eq!(step_rows.len(), steps, "{what}");
            for r in &step_rows {
                assert_eq!(r.samples, 25, "{what}: {}", r.label);
            }
            let ops: u64 = step_rows.iter().map(|r| r.operations).sum();
            assert_eq!(ops, 25 * per_trx, "{what}: statements per transaction");
            match rows.iter().find(|r| r.group) {
                Some(g) => {
                    assert_eq!(g.samples, 25, "{what}: transactions");
                    assert_eq!(g.label, w.name());
                }
                None => assert_eq!(steps, 1, "{what}: one step is its own transaction"),
            }
        }
        assert_eq!(
            count(&url, "sbtest1").await + count(&url, "sbtest2").await,
            1025,
            "{name}: delete+insert keeps the rows, oltp_insert added 25"
        );
        throng::sql::oltp::cleanup(&mut c, 2, Duration::from_secs(60))
            .await
            .expect("cleanup");
    }
}

/// MariaDB counts prepares: each connection prepares each statement once, however many times
/// it runs it.
#[tokio::test(flavor = "multi_thread")]
async fn statements_are_prepared_once_per_connection() {
    // A MariaDB of its own: the other tests of this binary would move its counters.
    let my = MariaDb::start().expect("a MariaDB of this test's own");
    let url = my.url();
    let status = |name: &'static str| {
        let url = url.clone();
        async move {
            let mut c = conn(&url).await;
            let d = c
                .run(
                    &Arc::from(format!("SHOW GLOBAL STATUS LIKE '{name}'")),
                    &[],
                    true,
                )
                .await
                .expect("status");
            d.data[0]["Value"]
                .as_str()
                .and_then(|v| v.parse::<u64>().ok())
                .expect("a count")
        }
    };
    let (p0, e0) = (
        status("Com_stmt_prepare").await,
        status("Com_stmt_execute").await,
    );
    let mut cfg = SqlConfig::new(&url);
    cfg.statements = vec!["SELECT ? + 1".into(), "SELECT ? * 2".into()];
    cfg.params = vec!["rand_int(1, 9)".into(), "user()".into()];
    let (snap, _) = run(cfg, closed(4, Some(400), None)).await;
    assert_eq!(snap.total.errors, 0);
    let (p1, e1) = (
        status("Com_stmt_prepare").await,
        status("Com_stmt_execute").await,
    );
    // 4 users x 2 statements, and the check's 2 (the status queries themselves add theirs).
    assert!(p1 - p0 <= 4 * 2 + 2 + 2, "prepares: {}", p1 - p0);
    assert!(e1 - e0 >= 400, "executes: {}", e1 - e0);
}

/// Two transactions that lock rows in opposite orders: one of them is the deadlock victim, and
/// its SQLSTATE says so. PostgreSQL's repeatable read gives a serialization failure.
#[tokio::test(flavor = "multi_thread")]
async fn deadlocks_and_serialization_failures_are_classified() {
    for (name, url, deadlock) in [
        ("postgres", Postgres::shared().expect("PG").url(), *b"40P01"),
        (
            "mariadb",
            MariaDb::shared().expect("MariaDB").url(),
            *b"40001",
        ),
    ] {
        let table = "locks";
        let mut c = conn(&url).await;
        c.raw(&format!("DROP TABLE IF EXISTS {table}"))
            .await
            .expect("drop");
        c.raw(&format!("CREATE TABLE {table} (id INT PRIMARY KEY, v INT)"))
            .await
            .expect("create");
        c.raw(&format!("INSERT INTO {table} VALUES (1, 0), (2, 0)"))
            .await
            .expect("rows");
        let (mut a, mut b) = (conn(&url).await, conn(&url).await);
        let upd =
            |id: i32| Arc::<str>::from(format!("UPDATE {table} SET v = v + 1 WHERE id = {id}"));
        a.raw("BEGIN").await.expect("begin");
        b.raw("BEGIN").await.expect("begin");
        a.run(&upd(1), &[], false).await.expect("a locks 1");
        b.run(&upd(2), &[], false).await.expect("b locks 2");
        let (two, one) = (upd(2), upd(1));
        let (ra, rb) = tokio::join!(a.run(&two, &[], false), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            b.run(&one, &[], false).await
        });
        let victim = ra
            .err()
            .or(rb.err())
            .expect("one of them is the deadlock victim");
        let o = throng::sql::failure(&victim);
        assert_eq!(
            o.status,
            throng::sql::status::state(deadlock),
            "{name}: {:?}",
            o.message
        );
        assert_eq!(o.error, Some(throng::core::ErrorClass::Status));
        let _ = a.raw("ROLLBACK").await;
        let _ = b.raw("ROLLBACK").await;
        if name == "postgres" {
            a.raw("BEGIN ISOLATION LEVEL REPEATABLE READ")
                .await
                .expect("begin");
            a.run(
                &Arc::from(format!("SELECT v FROM {table} WHERE id = 1")),
                &[],
                false,
            )
            .await
            .expect("snapshot taken");
            b.run(&upd(1), &[], false)
                .await
                .expect("b commits a change");
            let e = a.run(&upd(1), &[], false).await.unwrap_err();
            let o = throng::sql::failure(&e);
            assert_eq!(
                o.status,
                throng::sql::status::state(*b"40001"),
                "{:?}",
                o.message
            );
            a.raw("ROLLBACK").await.expect("rollback");
        }
        c.raw(&format!("DROP TABLE {table}")).await.expect("drop");
    }
}

/// A database stopped in the middle of a run: the statements of that window fail (classified),
/// the users reopen their connections when it is back, and the run ends on time.
async fn restarted_mid_run(
    url: String,
    statement: &str,
    stop: Box<dyn FnOnce() + Send>,
    start: Box<dyn FnOnce() + Send>,
) {
    let mut cfg = SqlConfig::new(url);
    cfg.statements = vec![statement.into()];
    cfg.params = vec!["rand_int(1, 10)".into()];
    cfg.connect_timeout = Duration::from_secs(1);
    cfg.timeout = Duration::from_secs(2);
    let driver = SqlDriver::new(cfg).expect("driver");
    let shown = driver.shown().to_string();
    let driver = Arc::new(driver.check().await.expect("prepares"));
    let model = LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(4),
        requests: None,
        iterations: None,
        duration: Some(Duration::from_secs(8)),
        think_time: Some(Duration::from_millis(5)),
    });
    let bounce = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(1500));
        stop();
        std::thread::sleep(Duration::from_millis(1500));
        start();
    });
    let started = std::time::Instant::now();
    let snap = tokio::time::timeout(
        Duration::from_secs(30),
        throng::engine::run(RunPlan::new(&shown, model), driver.clone()),
    )
    .await
    .expect("the run does not hang")
    .expect("run");
    bounce.await.expect("bounced");
    assert!(
        started.elapsed() < Duration::from_secs(14),
        "{:?}",
        started.elapsed()
    );
    assert!(snap.total.errors > 0, "the stop shows as errors");
    let ok = snap.total.samples - snap.total.errors;
    assert!(
        ok > 100,
        "before and after the stop, statements succeed: {ok}"
    );
    assert!(
        driver.client().reconnects() >= 1,
        "connections were reopened"
    );
    // The last second, well after the restart, succeeds again.
    let tail: Vec<_> = snap
        .series
        .iter()
        .filter(|p| p.t > 7.0 && p.t <= 8.0)
        .collect();
    assert!(
        !tail.is_empty() && tail.iter().all(|p| p.requests > 0 && p.errors == 0),
        "{:?} {:?}",
        snap.errors,
        snap.series
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgresql_restarted_mid_run_gives_errors_then_recovers() {
    let pg = Arc::new(Postgres::start().expect("a PostgreSQL of this test's own"));
    let (a, b) = (pg.clone(), pg.clone());
    restarted_mid_run(
        pg.url(),
        "SELECT $1::int + 1",
        Box::new(move || a.stop().expect("stops")),
        Box::new(move || b.start_again().expect("starts again")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mariadb_killed_mid_run_gives_errors_then_recovers() {
    let my = Arc::new(MariaDb::start().expect("a MariaDB of this test's own"));
    let (a, b) = (my.clone(), my.clone());
    restarted_mid_run(
        my.url(),
        "SELECT ? + 1",
        Box::new(move || a.stop().expect("stops")),
        Box::new(move || b.start_again().expect("starts again")),
    )
    .await;
}

/// A statement that outlives `-t` is a timeout (its latency is the time it waited), its
/// connection is dropped and reopened for the next one, and the run does not wait for the server.
#[tokio::test(flavor = "multi_thread")]
async fn a_statement_past_its_timeout_is_a_timeout_and_nothing_hangs() {
    let mut cfg = SqlConfig::new(Postgres::shared().expect("PostgreSQL").url());
    cfg.statements = vec!["SELECT pg_sleep(5)".into()];
    cfg.timeout = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let (snap, driver) = run(cfg, closed(2, Some(6), None)).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(snap.total.samples, 6);
    let timeouts: u64 = snap
        .errors
        .iter()
        .filter(|e| e.class == throng::core::ErrorClass::Timeout)
        .map(|e| e.count)
        .sum();
    assert_eq!(timeouts, 6, "{:?}", snap.errors);
    // Each timed-out statement cost its connection: the next one opened another.
    assert!(
        driver.client().reconnects() >= 4,
        "{}",
        driver.client().reconnects()
    );
    let p = throng::core::Percentiles::of(&snap.total.latency);
    assert!(
        p.min >= 300_000,
        "a timeout waited its full 300 ms: {}",
        p.min
    );
}

/// TLS to PostgreSQL: verified against `--cacert`, refused (before any load) when the
/// certificate cannot be verified, encrypted without verification with `--insecure`; and the
/// server says the connection is encrypted.
#[tokio::test(flavor = "multi_thread")]
async fn tls_to_postgresql_is_verified_against_the_cacert() {
    let pg = Postgres::start_tls().expect("a PostgreSQL serving TLS");
    let ssl = |tls: throng::sql::Tls, url: String| async move {
        let mut cfg = SqlConfig::new(url);
        cfg.statements = vec!["SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()".into()];
        cfg.tls = tls;
        let target = Target::new(&cfg.url, Duration::from_secs(5), 4)
            .expect("url")
            .with_tls(&cfg.tls)
            .expect("tls");
        let checked = SqlDriver::new(cfg).expect("driver").check().await;
        let encrypted = match target.connect().await {
            Ok(mut c) => c
                .run(
                    &Arc::from("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"),
                    &[],
                    true,
                )
                .await
                .ok()
                .and_then(|d| d.data[0]["ssl"].as_bool()),
            Err(_) => None,
        };
        (checked, encrypted)
    };
    let verified = throng::sql::Tls {
        insecure: false,
        cacert: Some(pg.certificate()),
        identity: None,
    };
    let (checked, encrypted) = ssl(verified, pg.url()).await;
    assert!(checked.is_ok(), "{checked:?}");
    assert_eq!(encrypted, Some(true));
    // Verification without the certificate: the web's roots do not know it.
    let url = format!("{}?sslmode=verify-full", pg.url());
    let (checked, encrypted) = ssl(throng::sql::Tls::default(), url).await;
    let e = checked.unwrap_err();
    assert!(
        !e.is_usage() && e.to_string().to_lowercase().contains("certificate"),
        "{e}"
    );
    assert_eq!(encrypted, None);
    let insecure = throng::sql::Tls {
        insecure: true,
        cacert: None,
        identity: None,
    };
    let (checked, encrypted) = ssl(insecure, pg.url()).await;
    assert!(checked.is_ok(), "{checked:?}");
    assert_eq!(encrypted, Some(true));
}

/// TLS to MariaDB (`require_secure_transport`) on throng's own connection: the default
/// ssl-mode (PREFERRED), REQUIRED, VERIFY_CA (the certificate is for 127.0.0.1, dialled here as
/// localhost), VERIFY_IDENTITY, `--insecure` and `--cacert`; the server says each session is
/// encrypted, and the connection says its TLS version. DISABLED is refused by the server;
/// VERIFY_IDENTITY by name fails the name; a connection over a Unix-domain socket counts its
/// bytes.
#[tokio::test(flavor = "multi_thread")]
async fn tls_to_mariadb_in_every_ssl_mode_on_throngs_own_connection() {
    let my = MariaDb::start_tls().expect("a MariaDB serving TLS");
    let ca = my.certificate().display().to_string();
    let open = |tls: throng::sql::Tls, url: String| async move {
        Target::new(&url, Duration::from_secs(5), 4)?
            .with_tls(&tls)?
            .connect()
            .await
            .map_err(|o| o.message.unwrap_or_default())
    };
    let cipher = |tls: throng::sql::Tls, url: String| async move {
        let mut c = open(tls, url.clone())
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(
            c.path(),
            "mysql wire, TLSv1.3, mysql_native_password",
            "{url}"
        );
        let d = c
            .run(
                &Arc::from("SHOW SESSION STATUS LIKE 'Ssl_cipher'"),
                &[],
                true,
            )
            .await
            .expect("status");
        d.data[0]["Value"].as_str().expect("a cipher").to_string()
    };
    let ip = my.url();
    let name = ip.replacen("127.0.0.1", "localhost", 1);
    for url in [
        ip.clone(),
        format!("{ip}?ssl-mode=REQUIRED"),
        format!("{name}?ssl-mode=VERIFY_CA&ssl-ca={ca}"),
        format!("{ip}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
    ] {
        assert!(!cipher(throng::sql::Tls::default(), url).await.is_empty());
    }
    let insecure = throng::sql::Tls {
        insecure: true,
        cacert: None,
        identity: None,
    };
    assert!(!cipher(insecure, my.url()).await.is_empty());
    let verified = throng::sql::Tls {
        insecure: false,
        cacert: Some(my.certificate()),
        identity: None,
    };
    assert!(!cipher(verified, my.url()).await.is_empty());
    // MariaDB refuses a login in the clear under require_secure_transport as a wrong one;
    // the name is checked by VERIFY_IDENTITY, the chain (the web's roots) by VERIFY_CA.
    for (url, said) in [
        (format!("{ip}?ssl-mode=DISABLED"), "28000: Access denied"),
        (
            format!("{name}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
            "not valid for name \"localhost\"",
        ),
        (format!("{ip}?ssl-mode=VERIFY_CA"), "UnknownIssuer"),
    ] {
        let e = open(throng::sql::Tls::default(), url).await.unwrap_err();
        assert!(e.contains(said), "{e}");
    }
    // A server without TLS: PREFERRED goes on in the clear, REQUIRED refuses.
    let plain = MariaDb::shared().expect("MariaDB").url();
    let c = open(throng::sql::Tls::default(), plain.clone())
        .await
        .expect("connects");
    assert_eq!(c.path(), "mysql wire, mysql_native_password");
    let e = open(
        throng::sql::Tls::default(),
        format!("{plain}?ssl-mode=REQUIRED"),
    )
    .await
    .unwrap_err();
    assert!(
        e.contains("the server does not offer TLS, and ssl-mode=REQUIRED needs it"),
        "{e}"
    );
    let shared = MariaDb::shared().expect("MariaDB");
    let url = format!(
        "mysql://throng:throng-pw@localhost/throng?socket={}",
        shared.socket().display()
    );
    let mut c = conn(&url).await;
    let d = c
        .run(
            &Arc::from("SELECT ? + 1 AS n"),
            &[throng::sql::param::Value::Int(41)],
            true,
        )
        .await
        .expect("runs");
    assert_eq!(d.data, vec![serde_json::json!({"n": 42})]);
    let (sent, received) = c.traffic();
    assert!(sent > 0 && received > 0, "{sent} {received}");
}

/// MariaDB on the wire codec: a script of several statements, some giving rows, runs to its
/// end (and one that fails mid-way gives that error and leaves the connection usable); kept
/// rows come back typed from the binary protocol.
#[tokio::test(flavor = "multi_thread")]
async fn mariadb_scripts_and_kept_rows_on_the_codec() {
    let mut c = conn(&MariaDb::shared().expect("MariaDB").url()).await;
    c.raw(
        "CREATE TEMPORARY TABLE codec (id INT PRIMARY KEY, v VARCHAR(10)); \
         SELECT 1, 2; INSERT INTO codec VALUES (1, 'a'), (2, 'b'); SELECT * FROM codec; \
         UPDATE codec SET v = 'c' WHERE id = 2",
    )
    .await
    .expect("the script runs");
    let e = c
        .raw("INSERT INTO codec VALUES (3, 'x'); INSERT INTO codec VALUES (1, 'dup'); INSERT INTO codec VALUES (4, 'y')")
        .await
        .unwrap_err();
    assert_eq!(
        throng::sql::failure(&e).status,
        throng::sql::status::sqlstate("23000").expect("a SQLSTATE")
    );
    let d = c
        .run(
            &Arc::from(
                "SELECT COUNT(*) AS n, GROUP_CONCAT(v ORDER BY id) AS vs, \
                 CAST(12.50 AS DECIMAL(6,2)) AS d, CAST(18446744073709551615 AS UNSIGNED) AS u, \
                 DATE('2026-11-24') AS day, TIMESTAMP('2026-11-24 01:02:03.5') AS at, \
                 CAST(NULL AS CHAR) AS nothing, ? AS t, ? AS f FROM codec",
            ),
            &[
                throng::sql::param::Value::Text("é".into()),
                throng::sql::param::Value::Float(0.25),
            ],
            true,
        )
        .await
        .expect("runs");
    assert_eq!(
        d.data,
        vec![serde_json::json!({
            "n": 3, "vs": "a,c,x", "d": 12.5, "u": 18446744073709551615u64, "day": "2026-11-24",
            "at": "2026-11-24 01:02:03.500000", "nothing": null, "t": "é", "f": 0.25
        })]
    );
    // An UPDATE counts the rows it matched (FOUND_ROWS, as sqlx asks), changed or not.
    let d = c
        .run(
            &Arc::from("UPDATE codec SET v = 'c' WHERE id >= ?"),
            &[throng::sql::param::Value::Int(2)],
            false,
        )
        .await
        .expect("updates");
    assert_eq!((d.rows, d.affected), (0, 2));
}

/// `COPY … FROM STDIN` has no data to read from throng: the copy is failed at once, with the
/// server's error, and the connection goes on (it used to wait for data until the timeout).
/// `COPY … TO STDOUT` counts its rows.
#[tokio::test(flavor = "multi_thread")]
async fn copy_from_stdin_fails_at_once_and_copy_to_stdout_counts_rows() {
    let url = Postgres::shared().expect("PostgreSQL starts").url();
    let mut c = conn(&url).await;
    c.raw("DROP TABLE IF EXISTS copied").await.expect("drop");
    c.raw("CREATE TABLE copied (id INT)").await.expect("create");
    let five = Duration::from_secs(5);
    let copy_in: Arc<str> = Arc::from("COPY copied FROM STDIN");
    let e = tokio::time::timeout(five, c.run(&copy_in, &[], false))
        .await
        .expect("no wait for data")
        .expect_err("a copy without data fails");
    assert!(e.to_string().contains("COPY FROM STDIN"), "{e}");
    let e = tokio::time::timeout(five, c.raw("COPY copied FROM STDIN"))
        .await
        .expect("no wait for data")
        .expect_err("a copy without data fails");
    assert!(e.to_string().contains("COPY FROM STDIN"), "{e}");
    let out = c
        .run(
            &Arc::from("COPY (SELECT generate_series(1, 7)) TO STDOUT"),
            &[],
            false,
        )
        .await
        .expect("copies out");
    assert_eq!(out.rows, 7);
    assert_eq!(count(&url, "copied").await, 0);
    // The same connection still answers.
    let one = c
        .run(&Arc::from("SELECT 1"), &[], false)
        .await
        .expect("runs");
    assert_eq!(one.rows, 1);
}

/// MariaDB keeps a statement's parameter types from one execution to the next, so the codec
/// sends them only when they change (as libmysqlclient does): the values come back right when
/// the types stay, change, and change back.
#[tokio::test(flavor = "multi_thread")]
async fn mariadb_parameters_keep_or_change_their_types() {
    use throng::sql::param::Value;
    let url = MariaDb::shared().expect("MariaDB starts").url();
    let mut c = conn(&url).await;
    let sql: Arc<str> = Arc::from("SELECT CONCAT('[', COALESCE(?, 'null'), ']') AS v, ? + 1 AS n");
    for (arg, n, want) in [
        (Value::Int(5), 1, "[5]"),
        (Value::Int(-7), 2, "[-7]"),
        (Value::Null, 3, "[null]"),
        (Value::Text("ab".into()), 4, "[ab]"),
        (Value::Text("cd".into()), 5, "[cd]"),
        (Value::Int(9), 6, "[9]"),
    ] {
        let done = c
            .run(&sql, &[arg, Value::Int(n)], true)
            .await
            .expect("runs");
        assert_eq!(done.data[0]["v"], want);
        assert_eq!(done.data[0]["n"], n + 1);
    }
    // `LOAD DATA LOCAL` asks the client for a file: throng offers none, so the server refuses
    // it at once and the connection goes on.
    c.raw("CREATE TABLE IF NOT EXISTS loaded (v TEXT)")
        .await
        .expect("create");
    let e = tokio::time::timeout(
        Duration::from_secs(5),
        c.raw("LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE loaded"),
    )
    .await
    .expect("no wait")
    .expect_err("refused");
    assert!(
        e.to_string().to_lowercase().contains("load data local")
            || e.to_string().contains("not allowed"),
        "{e}"
    );
    let done = c
        .run(&sql, &[Value::Int(1), Value::Int(1)], true)
        .await
        .expect("runs");
    assert_eq!(done.data[0]["v"], "[1]");
}

/// `examples/sql.rs`, SQL from the library alone, run as a user runs it: on a PostgreSQL of its
/// own (no URL given) and on MariaDB. Every one of its 2,000 transfers committed (a deadlock is
/// its attempt's failure, run again and counted apart), the money of the accounts kept (it exits 1 otherwise), its thresholds
/// held, the JSON result written with the transaction's row and the database's own counters
/// beside it. `cargo test` builds the examples beside the tests.
#[test]
fn the_sql_example_runs_on_the_library_alone() {
    let example = crate::common::example("sql");
    let maria = MariaDb::shared().expect("MariaDB starts").url();
    for url in [None, Some(maria)] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("result.json");
        let out = std::process::Command::new(&example)
            .args(url.iter())
            .arg(&json)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the example runs");
        let said = crate::common::said(&out);
        assert_eq!(out.status.code(), Some(0), "{url:?}: {said}");
        assert!(
            said.contains("the accounts hold 100000 in all, of 100000 at the start"),
            "{said}"
        );
        let result: throng::report::RunResult =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let transfer = result
            .labels
            .iter()
            .find(|l| l.label == "transfer")
            .unwrap_or_else(|| panic!("a transfer row: {said}"));
        // A deadlock is its attempt's failure, and the transfer runs again: every one of the
        // 2,000 commits once, and the failures are the retries.
        let retried = result.protocol_counts.get("transactions_retried").copied();
        assert_eq!(transfer.samples - transfer.errors, 2_000, "{said}");
        assert_eq!(retried.unwrap_or(0), transfer.errors, "{said}");
        assert!(result.passed(), "{said}");
        let db = &result.databases;
        assert_eq!(db.len(), 1, "{said}");
        let committed = db[0].committed.as_ref().expect("committed transactions");
        assert!(
            committed.load_total >= 2_000,
            "{url:?}: the database committed {} under the load: {said}",
            committed.load_total
        );
    }
}

/// Steps of SQL's client as a library makes them (`Steps`, what every URL run is, of statements
/// the protocol compiled) are prepared before the load, as a scenario's are: a statement that
/// can never run stops the run as bad input naming it, and nothing runs, not even the good
/// statement before it; a statement given fewer parameters than it takes, too. (SQLite: no
/// server to start.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_of_sql_are_prepared_before_the_load() {
    use throng::core::step::{ClientOptions, Node, Protocol, Uncompiled};
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}/prepared.db?mode=rwc", dir.path().display());
    conn(&url)
        .await
        .raw("CREATE TABLE done (id INTEGER)")
        .await
        .expect("create");
    let run = |statements: &[&str]| {
        let sql = throng::sql::SqlProtocol;
        let client = sql
            .client(&url, &ClientOptions::default())
            .expect("a client");
        let steps = statements
            .iter()
            .map(|s| {
                let step = sql.compile(&Node::string(*s), &mut Uncompiled);
                (s.to_string(), step.expect("compiles"))
            })
            .collect();
        let steps = throng::core::steps::Steps::of(client, steps).expect("steps");
        let plan = RunPlan::new(&url, closed(1, None, Some(2)));
        throng::Run::new(plan, Arc::new(steps)).execute()
    };
    for (bad, says) in [
        ("SELEC 2", "`SELEC 2`: 42601: near \"SELEC\": syntax error"),
        (
            "SELECT ?",
            "`SELECT ?` takes 1 parameter(s), and the step gives 0",
        ),
    ] {
        let e = run(&["INSERT INTO done VALUES (1)", bad])
            .await
            .err()
            .unwrap_or_else(|| panic!("{bad}: the run went ahead"));
        assert!(matches!(e, throng::run::RunError::Input(_)), "{e:?}");
        assert!(e.to_string().contains(says), "{e}");
        assert_eq!(count(&url, "done").await, 0, "{bad}");
    }
    let finished = run(&["INSERT INTO done VALUES (1)", "SELECT 1"])
        .await
        .expect("good statements run");
    assert_eq!(finished.snapshot.total.samples, 4);
    assert_eq!(finished.snapshot.total.errors, 0);
    assert_eq!(count(&url, "done").await, 2);
}
