//! `throng run DATABASE-URL` and `throng sql` from the built binary: exit codes, messages that
//! name the problem, rows in the summary and the JSON, and passwords absent from all of them.

use crate::common;

use throng::testbed::{MariaDb, Postgres, DB_PASSWORD};

use common::{said as text, throng_bin as throng};

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the result")).expect("JSON")
}

fn row<'a>(result: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    result["labels"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["label"] == label))
        .unwrap_or_else(|| panic!("no row {label}: {}", result["labels"]))
}

#[test]
fn statements_run_with_parameters_and_a_transaction_row() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    // The table, made by a one-iteration run of the DDL itself.
    let o = throng(&[
        "run",
        &url,
        "--sql",
        "CREATE TABLE acc (id INTEGER PRIMARY KEY, v INTEGER)",
        "-c",
        "1",
        "-n",
        "1",
        "--no-tui",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = dir.path().join("r.json");
    let o = throng(&[
        "run",
        &url,
        "--sql",
        "INSERT INTO acc (id, v) VALUES (?, ?)",
        "--sql",
        "UPDATE acc SET v = v + 1 WHERE id = ?",
        "--param",
        "seq()",
        "--param",
        "rand_int(1, 5)",
        "--param",
        "0",
        "--transaction",
        "--label",
        "pay",
        "-c",
        "1",
        "-i",
        "30",
        "--no-tui",
        "--quiet",
        "--json",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(
        summary.contains("INSERT INTO acc") && summary.contains("pay"),
        "{summary}"
    );
    // Queries beside transactions, as sysbench prints them.
    assert!(
        summary.contains("Operations   120 (") && summary.contains("transactions: pay "),
        "{summary}"
    );
    let r = json(&out);
    assert_eq!(row(&r, "INSERT INTO acc")["samples"], 30);
    assert_eq!(row(&r, "UPDATE acc SET v")["samples"], 30);
    let trx = row(&r, "pay");
    assert_eq!(trx["samples"], 30);
    assert_eq!(trx["group"], true);
    // BEGIN and COMMIT count as operations, as sysbench counts them: 4 a transaction.
    assert_eq!(r["total"]["operations"], 120, "{}", r["total"]);
    assert_eq!(r["status_codes"]["sqlstate 00000"], 60);
}

#[test]
fn quiet_keeps_the_notes_of_a_run_and_loses_only_the_progress_line() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}/q.db?mode=rwc", dir.path().display());
    let o = throng(&[
        "run",
        &url,
        "--sql",
        "CREATE TABLE acc (id INTEGER PRIMARY KEY, v INTEGER)",
        "-n",
        "1",
        "--no-tui",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The first transaction inserts id 1; the four after it fail on the key and roll back.
    let o = throng(&[
        "run",
        &url,
        "--sql",
        "INSERT INTO acc (id, v) VALUES (1, 0)",
        "--sql",
        "UPDATE acc SET v = v + 1",
        "--transaction",
        "-c",
        "1",
        "-i",
        "5",
        "--no-tui",
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        err.contains("transactions rolled back after a failed statement: 4"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{url}: sqlx")),
        "the connection: {err}"
    );
    assert!(!err.contains(" req/s "), "no progress line: {err}");
}

#[test]
fn oltp_prepare_run_and_cleanup_from_the_command_line() {
    let url = MariaDb::shared().expect("MariaDB").url();
    let o = throng(&["sql", "cleanup", &url, "--tables", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = throng(&[
        "sql",
        "prepare",
        &url,
        "--tables",
        "1",
        "--table-size",
        "300",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("r.json");
    let o = throng(&[
        "run",
        &url,
        "--workload",
        "oltp_write_only",
        "--table-size",
        "300",
        // sysbench's default `special` sends three quarters of the ids to the middle three rows
        // of 300: two users then deadlock now and again, as under sysbench. This test counts
        // statements.
        "--rand-type",
        "uniform",
        "-c",
        "2",
        "-i",
        "10",
        "--no-tui",
        "--quiet",
        "--json",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&out);
    let trx = row(&r, "oltp_write_only");
    assert_eq!(trx["samples"], 20, "2 users x 10 transactions");
    assert_eq!(
        r["total"]["operations"],
        20 * 6,
        "6 statements a transaction"
    );
    assert!(!text(&o).contains(DB_PASSWORD));
    assert!(!std::fs::read_to_string(&out)
        .expect("read")
        .contains(DB_PASSWORD));
    let o = throng(&["sql", "cleanup", &url, "--tables", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The tables are gone: a run fails before its load, naming the remedy.
    let o = throng(&[
        "run",
        &url,
        "--workload",
        "oltp_point_select",
        "-n",
        "1",
        "--no-tui",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("throng sql prepare"), "{}", text(&o));
}

#[test]
fn passwords_never_appear_in_the_summary_the_json_or_a_message() {
    let pg = Postgres::shared().expect("PostgreSQL");
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("r.json");
    let o = throng(&[
        "run",
        &pg.url(),
        "--sql",
        "SELECT $1::int",
        "--param",
        "rand_int(1, 9)",
        "-c",
        "2",
        "-n",
        "40",
        "--no-tui",
        "--json",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all = text(&o) + &std::fs::read_to_string(&out).expect("read");
    assert!(!all.contains(DB_PASSWORD), "{all}");
    assert_eq!(
        json(&out)["plan"]["target"],
        pg.url().replace(DB_PASSWORD, "***")
    );
    // A wrong password: exit 1 before any load, the database's message, no password.
    let wrong = format!("postgres://throng:sekrit-pw@127.0.0.1:{}/throng", pg.port());
    let o = throng(&["run", &wrong, "--sql", "SELECT 1", "-n", "1", "--no-tui"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("password authentication failed"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("sekrit-pw"), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("Label"),
        "no load ran"
    );
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let unreachable = format!("postgres://u:sekrit-pw@127.0.0.1:{closed}/db");
    for (args, code, says) in [
        (
            vec!["run", &pg, "--sql", "SELEC 1", "-n", "1"],
            2,
            "SELEC 1",
        ),
        (
            vec!["run", &pg, "--sql", "SELECT * FROM nope", "-n", "1"],
            2,
            "42P01",
        ),
        (
            vec!["run", &pg, "--sql", "SELECT $1::int", "-n", "1"],
            2,
            "1 placeholder(s) but 0 --param",
        ),
        (
            vec!["run", &pg, "--sql", "SELECT 1", "--param", "1", "-n", "1"],
            2,
            "left over",
        ),
        (
            vec![
                "run", &pg, "--sql", "SELECT 1", "--param", "nope(", "-n", "1",
            ],
            2,
            "--param",
        ),
        (vec!["run", &pg, "-n", "1"], 2, "needs statements"),
        (
            vec!["run", &pg, "--workload", "oltp_nothing"],
            2,
            "oltp_read_only",
        ),
        (
            vec![
                "run",
                &pg,
                "--workload",
                "oltp_read_only",
                "--rand-type",
                "zipf",
            ],
            2,
            "--rand-type <NAME>': not a distribution; one of uniform, special, gaussian, pareto",
        ),
        (
            vec!["run", &pg, "--sql", "SELECT 1", "--rand-type", "uniform"],
            2,
            "--rand-type go with --workload",
        ),
        (
            vec![
                "run",
                "postgres://u:sekrit-pw@h:99x/db",
                "--sql",
                "SELECT 1",
            ],
            2,
            "not a number",
        ),
        (
            vec!["run", &unreachable, "--sql", "SELECT 1", "-n", "1"],
            1,
            "refused",
        ),
        // The mistyped label first: it needs no database.
        (
            vec![
                "run",
                &unreachable,
                "--sql",
                "SELECT 1",
                "-n",
                "1",
                "--threshold",
                "p99{SELEC 1}<1s",
            ],
            2,
            "SELEC 1",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1:1/",
                "--target",
                "a=http://127.0.0.1:2/",
                "--target",
                "b=http://127.0.0.1:3/",
                "-n",
                "1",
                "--db-stats",
                &pg,
                "--db-stats",
                "b=ftp://127.0.0.1/x",
            ],
            2,
            "side b: --db-stats",
        ),
        (
            vec!["run", &pg, "--sql", "SELECT 1", "-d", "x", "-n", "1"],
            2,
            // The registry's readers of -d, in its order: a protocol added later extends it.
            "-d/--body applies to http://, https://, tcp://, tcps://, ws://, wss://, ",
        ),
        (
            vec![
                "run",
                "sqlite:///tmp/no-tls.db",
                "--sql",
                "SELECT 1",
                "-k",
                "-n",
                "1",
            ],
            2,
            "--insecure, --cacert, --cert and --key apply to postgres:// and mysql://; \
             sqlite:///tmp/no-tls.db is SQLite, which has no TLS",
        ),
    ] {
        let mut a = args.clone();
        a.push("--no-tui");
        let o = throng(&a);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("sekrit-pw") && !text(&o).contains(DB_PASSWORD));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
}

/// The counter line of `name` in the `--db-stats` section: (load total, per request).
fn counter(out: &str, name: &str) -> (u64, String) {
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} line: {out}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[3].parse().expect("a count"), w[4].to_string())
}

#[test]
fn db_stats_set_the_databases_own_transactions_beside_the_loads() {
    let dir = tempfile::tempdir().expect("dir");
    let result = dir.path().join("r.json");
    // Databases of its own: the other tests of this binary would move their counters.
    let (my, pg) = (
        MariaDb::start().expect("a MariaDB of this test's own"),
        Postgres::start().expect("a PostgreSQL of this test's own"),
    );
    for (url, commits) in [(my.url(), "Com_commit"), (pg.url(), "xact_commit")] {
        let table = "dbstats";
        let o = throng(&[
            "run",
            &url,
            "--sql",
            &format!("DROP TABLE IF EXISTS {table}"),
            "-n",
            "1",
            "-c",
            "1",
            "--no-tui",
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = throng(&[
            "run",
            &url,
            "--sql",
            &format!("CREATE TABLE {table} (id INT PRIMARY KEY, v INT)"),
            "-n",
            "1",
            "-c",
            "1",
            "--no-tui",
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let ph = |n: usize| match url.starts_with("postgres") {
            true => format!("${n}"),
            false => "?".into(),
        };
        let o = throng(&[
            "run",
            &url,
            "--sql",
            &format!("INSERT INTO {table} (id, v) VALUES ({}, 0)", ph(1)),
            "--sql",
            &format!("UPDATE {table} SET v = v + 1 WHERE id = {}", ph(1)),
            "--param",
            "seq()",
            "--param",
            "rand_int(1, 1000000)",
            "--transaction",
            "-c",
            "2",
            "-i",
            "25",
            "--db-stats",
            &url,
            "--no-tui",
            "--quiet",
            "--json",
            result.to_str().expect("path"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            out.contains("Database ") && !out.contains(DB_PASSWORD),
            "{out}"
        );
        let (total, per) = counter(&out, commits);
        // 2 users x 25 transactions; PostgreSQL also counts each statement the check and the
        // samplers sent on their own as a transaction.
        match commits {
            "Com_commit" => assert_eq!((total, per.as_str()), (50, "0.50"), "{out}"),
            _ => assert!((50..=60).contains(&total), "{out}"),
        }
        // The JSON result carries the same counters.
        let r = json(&result);
        let db = &r["databases"][0];
        assert_eq!(db["name"], url.replace(DB_PASSWORD, "***"));
        assert_eq!(db["requests"], 100);
        let c = db["counters"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == commits))
            .expect("the counter");
        assert_eq!(c["load_total"], total);
        assert!(db["transactions"]["load_total"].as_u64() >= Some(total));
        // The Markdown report carries the database's counters too.
        let o = throng(&[
            "report",
            result.to_str().expect("path"),
            "--format",
            "markdown",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let md = String::from_utf8_lossy(&o.stdout);
        let row = format!("| {commits} | ");
        let line = md
            .lines()
            .find(|l| l.starts_with(&row))
            .unwrap_or_else(|| panic!("no {commits} row: {md}"));
        assert!(line.contains(&format!(" | {total} | ")), "{line}");
        // And `throng compare` sets each side's database beside the other's.
        let r = result.to_str().expect("path");
        let o = throng(&["compare", r, r]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let shown = url.replace(DB_PASSWORD, "***");
        assert!(out.contains("DB-TPS: transactions/s"), "{out}");
        let databases = out
            .lines()
            .find(|l| l.starts_with("Database "))
            .unwrap_or("");
        assert_eq!(databases.matches(&shown).count(), 2, "{out}");
    }
}

/// The open loop and thresholds work on a database as on HTTP: every arrival of the schedule is
/// one statement, and a threshold on a statement's row sets the exit code.
#[test]
fn open_loop_and_thresholds_on_a_database() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("r.json");
    let o = throng(&[
        "run",
        &pg,
        "--sql",
        "SELECT $1::int AS v",
        "--param",
        "user()",
        "-q",
        "200",
        "-z",
        "2s",
        "--max-in-flight",
        "8",
        "--queue",
        "10000",
        "--threshold",
        "p99{SELECT $1::int AS v}<5s",
        "--no-tui",
        "--quiet",
        "--json",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&out);
    // Every arrival of the schedule is one statement (a queue long enough that none is dropped
    // when the shared machine stalls a moment).
    assert_eq!(
        r["open_loop"]["scheduled"], 400,
        "200/s for 2 s: {}",
        r["open_loop"]
    );
    assert_eq!(r["open_loop"]["dropped"], 0);
    assert_eq!(r["total"]["samples"], 400);
    assert_eq!(r["total"]["errors"], 0);
    let o = throng(&[
        "run",
        &pg,
        "--sql",
        "SELECT pg_sleep(0.02)",
        "-c",
        "2",
        "-n",
        "20",
        "--threshold",
        "p50<1ms",
        "--no-tui",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", text(&o));
}

/// `--db-stats` goes with any run: here an HTTP load, with the database idle beside it.
#[test]
fn db_stats_go_with_an_http_run_too() {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let target = rt
        .block_on(throng::testbed::HttpTarget::default().start())
        .expect("the target starts");
    // A database of its own: the other tests of this binary would move its counters.
    let own = Postgres::start().expect("a PostgreSQL of this test's own");
    let pg = own.url();
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("r.json");
    let o = throng(&[
        "run",
        &target.url(),
        "-c",
        "2",
        "-n",
        "200",
        "--db-stats",
        &pg,
        "--no-tui",
        "--quiet",
        "--json",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&out);
    assert_eq!(r["total"]["samples"], 200);
    let db = &r["databases"][0];
    assert_eq!(db["requests"], 200);
    assert!(
        db["counters"].as_array().is_some_and(|c| c.len() == 10),
        "{db}"
    );
    // The HTTP load sent nothing to the database: a handful of transactions at most (the
    // samplers' own reads), far fewer than one a request.
    assert!(
        db["transactions"]["per_request"].as_f64() < Some(0.2),
        "{db}"
    );
    assert!(!text(&o).contains(DB_PASSWORD));
}

/// `throng sql prepare` makes a SQLite file that is not there yet; a load never does (a
/// misspelt path fails before the load instead of testing an empty database).
#[test]
fn sqlite_files_are_made_by_prepare_and_never_by_a_load() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}/new.db", dir.path().display());
    let o = throng(&["run", &url, "--sql", "SELECT 1", "-n", "1", "--no-tui"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("unable to open database file"),
        "{}",
        text(&o)
    );
    assert!(!dir.path().join("new.db").exists());
    let o = throng(&["sql", "prepare", &url, "--table-size", "50"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = throng(&[
        "run",
        &url,
        "--workload",
        "oltp_read_only",
        "--table-size",
        "50",
        "-c",
        "1",
        "-i",
        "3",
        "--no-tui",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// `throng serve bank --db URL` keeps the bank on PostgreSQL, and `--db-stats` on that database
/// sets the service's requests beside the database's transactions (the global-vs-database TPS
/// of a saga benchmark): every write request of the flow is at least one database transaction.
#[test]
fn the_bank_served_on_postgresql_beside_its_databases_counters() {
    use std::io::BufRead as _;
    // A database of its own: the other tests of this binary would move its counters.
    let own = Postgres::start().expect("a PostgreSQL of this test's own");
    let pg = own.url();
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["serve", "bank", "--port", "0", "--db", &pg])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut line = String::new();
    std::io::BufReader::new(serve.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a line");
    assert!(line.contains("postgres://throng:***@"), "{line}");
    assert!(!line.contains(DB_PASSWORD), "{line}");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the bank's URL")
        .to_string();
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("r.json");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/bank-transfer.yaml");
    let o = throng(&[
        "run",
        scenario,
        "--target",
        &format!("bank={url}"),
        "-c",
        "2",
        "-i",
        "10",
        "--db-stats",
        &pg,
        "--no-tui",
        "--quiet",
        "--json",
        out.to_str().expect("path"),
    ]);
    let _ = serve.kill();
    let _ = serve.wait();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&out);
    assert_eq!(r["total"]["errors"], 0, "{}", r["errors"]);
    let db = &r["databases"][0];
    // 20 iterations: 2 client inserts and a transfer (one transaction each) and 4 balance reads
    // (autocommit: transactions too, on PostgreSQL) = 7 transactions an iteration, 140 in all,
    // over 140 requests: at least one database transaction a request.
    let commits = db["counters"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "xact_commit"))
        .and_then(|c| c["load_total"].as_u64())
        .expect("xact_commit");
    assert!(commits >= 140, "{db}");
    assert!(
        db["transactions"]["per_request"].as_f64() >= Some(1.0),
        "{db}"
    );
    let inserted = db["counters"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "tup_inserted"))
        .and_then(|c| c["load_total"].as_u64());
    // Two clients an iteration; PostgreSQL may also publish now the catalog rows of the bank's
    // CREATE TABLE, still pending in its idle pool when the idle window was read.
    assert!(inserted >= Some(40), "two clients an iteration: {db}");
}

/// `seq()` keys are unique across shards: shard I of N takes I+1, I+1+N, ..., so two shards
/// inserting `seq()` into one primary key never collide, and together fill 1..=n.
#[test]
fn seq_is_unique_across_shards() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    for sql in [
        "DROP TABLE IF EXISTS sharded",
        "CREATE TABLE sharded (id BIGINT PRIMARY KEY)",
    ] {
        let o = throng(&["run", &pg, "--sql", sql, "-n", "1", "-c", "1", "--quiet"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let dir = tempfile::tempdir().expect("dir");
    for shard in ["0/2", "1/2"] {
        let out = dir.path().join(format!("{}.json", &shard[..1]));
        let o = throng(&[
            "run",
            &pg,
            "--sql",
            "INSERT INTO sharded (id) VALUES ($1)",
            "--param",
            "seq()",
            "-c",
            "4",
            "-n",
            "100",
            "--shard",
            shard,
            "--no-tui",
            "--quiet",
            "--json",
            out.to_str().expect("path"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{shard}: {}", text(&o));
        let r = json(&out);
        // Half the users each, so half the statements (-n goes to the shards by their users),
        // none a unique violation.
        assert_eq!(r["total"]["samples"], 50, "{shard}");
        assert_eq!(r["total"]["errors"], 0, "{shard}: {}", r["errors"]);
    }
    let o = throng(&[
        "run",
        &pg,
        "--sql",
        // Division by zero (an error) unless the ids are exactly 1..=100.
        "SELECT 1 / (CASE WHEN count(*) = 100 AND min(id) = 1 AND max(id) = 100 THEN 1 ELSE 0 END) \
         FROM sharded",
        "-n",
        "1",
        "-c",
        "1",
        "--quiet",
        "--json",
        dir.path().join("check.json").to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = json(&dir.path().join("check.json"));
    assert_eq!(r["total"]["errors"], 0, "{}", r["errors"]);
}

/// A port where something other than the database answers (an HTTP server) or where a server
/// accepts and never says a word: exit 1 before any load, the problem named, within the
/// connect timeout, for PostgreSQL (TLS asked first, or not) and MySQL alike.
#[test]
fn a_server_that_is_not_the_database_fails_before_the_load() {
    use std::io::{Read as _, Write as _};
    let listen = |answer: &'static [u8]| {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for mut s in l.incoming().flatten() {
                if !answer.is_empty() {
                    let mut buf = [0u8; 512];
                    let _ = s.read(&mut buf);
                    let _ = s.write_all(answer);
                    continue;
                }
                held.push(s);
            }
        });
        port
    };
    let http =
        listen(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    let mute = listen(b"");
    for (url, says) in [
        (
            format!("postgres://u:sekrit-pw@127.0.0.1:{http}/db"),
            "SSLRequest",
        ),
        (
            format!("postgres://u:sekrit-pw@127.0.0.1:{http}/db?sslmode=disable"),
            "not a PostgreSQL server: it answered `HTTP/1.1 400",
        ),
        // MySQL's server speaks first; an HTTP server waits for a request: neither says a word.
        (
            format!("mysql://u:sekrit-pw@127.0.0.1:{http}/db"),
            "timed out",
        ),
        (
            format!("postgres://u:sekrit-pw@127.0.0.1:{mute}/db"),
            "timed out",
        ),
        (
            format!("mysql://u:sekrit-pw@127.0.0.1:{mute}/db"),
            "timed out",
        ),
    ] {
        let started = std::time::Instant::now();
        let o = throng(&[
            "run",
            &url,
            "--sql",
            "SELECT 1",
            "-n",
            "5",
            "--connect-timeout",
            "2s",
            "--no-tui",
        ]);
        assert_eq!(o.status.code(), Some(1), "{url}: {}", text(&o));
        assert!(text(&o).contains(says), "{url}: {}", text(&o));
        assert!(!text(&o).contains("sekrit-pw"), "{}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{url}"
        );
    }
}

/// A URL without a password takes it from the environment, as the databases' own clients do
/// (so it stays out of `ps`): `PGPASSWORD` for postgres://, `MYSQL_PWD` for mysql:// and
/// mariadb://; a wrong one there is refused as a wrong one in the URL is. Through the wire
/// codecs, and through sqlx (which takes TLS, preferred where a server offers it).
#[test]
fn a_password_from_the_environment_as_the_databases_clients_read_it() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let my = MariaDb::shared().expect("MariaDB").url();
    let tls = MariaDb::start_tls().expect("a MariaDB serving TLS");
    let bare = |url: &str| url.replacen(&format!(":{DB_PASSWORD}@"), "@", 1);
    for (url, var) in [
        (bare(&pg), "PGPASSWORD"),
        (bare(&my), "MYSQL_PWD"),
        (bare(&my).replacen("mysql:", "mariadb:", 1), "MYSQL_PWD"),
        (bare(&tls.url()), "MYSQL_PWD"),
    ] {
        for (pw, code) in [(DB_PASSWORD, 0), ("wrong-pw", 1)] {
            let dir = tempfile::tempdir().expect("dir");
            let out = dir.path().join("r.json");
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
                .args([
                    "run", &url, "--sql", "SELECT 1", "-n", "3", "--no-tui", "--json",
                ])
                .arg(&out)
                .env(var, pw)
                .stdin(std::process::Stdio::null())
                .output()
                .expect("the binary runs");
            assert_eq!(
                o.status.code(),
                Some(code),
                "{url} {var}={pw}: {}",
                text(&o)
            );
            if code == 0 {
                let r = json(&out);
                assert_eq!(r["total"]["samples"], 3, "{url}: {}", r["errors"]);
                assert_eq!(r["total"]["errors"], 0, "{url}: {}", r["errors"]);
            } else {
                assert!(
                    text(&o).contains("28000") || text(&o).contains("28P01"),
                    "{}",
                    text(&o)
                );
            }
        }
    }
}

/// `throng serve bank --db URL` with a wrong password says so once, without the database
/// library's repetitions or the server's source line, and exits 1.
#[test]
fn the_bank_on_a_database_that_refuses_says_so_once() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let wrong = pg.replacen(&format!(":{DB_PASSWORD}@"), ":wrong-pw@", 1);
    let o = throng(&["serve", "bank", "--port", "0", "--db", &wrong]);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert_eq!(
        said.matches("password authentication failed").count(),
        1,
        "{said}"
    );
    assert!(said.contains("28P01"), "{said}");
    assert!(said.contains("postgres://throng:***@"), "{said}");
    assert!(!said.contains("at line"), "{said}");
    assert!(!said.contains("wrong-pw"), "{said}");
}

/// Runs the binary with `args`, killed (and the test failed) if it has not ended in 30 s.
fn throng_within_30s(args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let began = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if began.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!("throng {args:?} did not end within 30 s: {}", text(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// `throng sql prepare` and `cleanup` against tables another session holds (a table being
/// created in a transaction not yet committed; a lock on it): each statement fails after
/// `-t`, exit 1, naming the statement, where they waited for the lock forever.
#[test]
fn sql_prepare_and_cleanup_end_when_a_lock_holds_them() {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let url = format!("{}/held_tables", pg.rsplit_once('/').expect("a path").0);
    let open = |url: String| {
        rt.block_on(async move {
            throng::sql::Target::new(&url, std::time::Duration::from_secs(10), 16)
                .expect("url")
                .connect()
                .await
                .expect("connects")
        })
    };
    let mut admin = open(pg);
    rt.block_on(async {
        // FORCE: a statement of an earlier run may still wait on the server.
        admin
            .raw("DROP DATABASE IF EXISTS held_tables WITH (FORCE)")
            .await?;
        admin.raw("CREATE DATABASE held_tables").await
    })
    .expect("a database of this test's own");
    let mut holder = open(url.clone());
    // Cleanup drops sbtest1 and waits on sbtest2; then prepare waits to create sbtest1. A
    // statement cut off still waits on the server: each case lets go of its lock after.
    for (action, hold) in [
        (
            "cleanup",
            &[
                "CREATE TABLE sbtest1 (id INT)",
                "CREATE TABLE sbtest2 (id INT)",
                "BEGIN",
                "LOCK TABLE sbtest2",
            ][..],
        ),
        ("prepare", &["BEGIN", "CREATE TABLE sbtest1 (id INT)"][..]),
    ] {
        for sql in hold {
            rt.block_on(holder.raw(sql)).expect("the lock held");
        }
        let started = std::time::Instant::now();
        let o = throng_within_30s(&[
            "sql",
            action,
            &url,
            "--tables",
            "2",
            "--table-size",
            "10",
            "-t",
            "1s",
        ]);
        let took = started.elapsed();
        assert_eq!(o.status.code(), Some(1), "{action}: {}", text(&o));
        assert!(
            text(&o).contains("no answer within 1s"),
            "{action}: {}",
            text(&o)
        );
        assert!(!text(&o).contains(DB_PASSWORD), "{}", text(&o));
        assert!(
            took < std::time::Duration::from_secs(15),
            "{action}: {took:?}"
        );
        rt.block_on(holder.raw("ROLLBACK"))
            .expect("the lock let go");
    }
}

/// `throng serve bank --db URL` at a server that accepts and never answers ends within its
/// 10 s connect timeout, exit 1, saying the database did not answer (sqlx's pool waited 30 s
/// and said 'pool timed out').
#[test]
fn the_bank_on_a_database_that_never_answers_ends_in_time() {
    let (_rt, hang) = common::serve(throng::testbed::HttpTarget {
        fault: Some(throng::testbed::Fault::Hang),
        ..throng::testbed::HttpTarget::default()
    });
    let url = format!("postgres://u:pw@127.0.0.1:{}/db", hang.addr.port());
    let started = std::time::Instant::now();
    let o = throng_within_30s(&["serve", "bank", "--port", "0", "--db", &url]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("did not answer"), "{}", text(&o));
    assert!(took < std::time::Duration::from_secs(25), "{took:?}");
}

/// `--db-stats SIDE=URL` reads a database during its side's runs only, and the level table has
/// the side's database transactions a second.
#[test]
fn each_side_reads_its_own_database() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("g.json");
    let (a, b, stats) = (format!("a={pg}"), format!("b={pg}"), format!("a={pg}"));
    let o = throng(&[
        "run",
        &pg,
        "--sql",
        "SELECT 1",
        "--target",
        &a,
        "--target",
        &b,
        "--db-stats",
        &stats,
        "-c",
        "1",
        "-n",
        "20",
        "--no-tui",
        "--quiet",
        "--json",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let g = json(&out);
    let runs = g["runs"].as_array().expect("runs");
    let dbs = |i: usize| {
        runs[i]["result"]["databases"]
            .as_array()
            .map_or(0, Vec::len)
    };
    assert_eq!((dbs(0), dbs(1)), (1, 0), "side a read its database, b none");
    assert!(
        g["rows"][0]["db_tps"].as_f64().is_some_and(|t| t > 0.0),
        "{}",
        g["rows"]
    );
    assert!(g["rows"][1].get("db_tps").is_none());
    // The grid's report has the databases' one table: a column for side a (b read none), 20
    // requests and (autocommit statements, on PostgreSQL) about as many transactions.
    let o = throng(&[
        "report",
        out.to_str().expect("utf-8"),
        "--format",
        "markdown",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("| Figure | a |"), "{md}");
    assert!(md.contains("| DB-TPS: transactions/s |"), "{md}");
    let per_request: f64 = md
        .lines()
        .find(|l| l.starts_with("| DB transactions per request |"))
        .and_then(|l| l.split('|').nth(2))
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or_else(|| panic!("{md}"));
    assert!((1.0..1.6).contains(&per_request), "{md}");
}
