//! `--retry-on deadlock`: real deadlocks on PostgreSQL and MariaDB, made on purpose by two users
//! who update two rows in opposite orders, rolled back and run again until each user's
//! transactions have all committed; every deadlock still counts as its statement's error and as
//! a retried transaction in the JSON result, and the rows say exactly how many committed.

use crate::common;

use throng::testbed::{MariaDb, Postgres};

use common::{said as text, throng_bin as throng};

/// What one run left: its result, and the sum the committed transactions added to the table.
struct Ran {
    result: serde_json::Value,
    sum: i64,
}

/// Two users, 8 transactions each: user 0 updates row 1 then row 2, user 1 row 2 then row 1,
/// with a sleep between, so they deadlock over and over. Each committed transaction adds 2.
fn deadlocking(url: &str, table: &str, retry: bool) -> Ran {
    let pg = url.starts_with("postgres");
    let (ph, sleep) = match pg {
        true => ("$1::int", "SELECT pg_sleep(0.05)"),
        false => ("?", "SELECT SLEEP(0.05)"),
    };
    two_rows(url, table);
    let first = format!("UPDATE {table} SET v = v + 1 WHERE id = {ph} % 2 + 1");
    let second = format!("UPDATE {table} SET v = v + 1 WHERE id = ({ph} + 1) % 2 + 1");
    let dir = tempfile::tempdir().expect("dir");
    let json = dir.path().join("r.json");
    let json_arg = json.display().to_string();
    let mut args = vec![
        "run",
        url,
        "--transaction",
        "--sql",
        &first,
        "--param",
        "user()",
        "--sql",
        sleep,
        "--sql",
        &second,
        "--param",
        "user()",
        "-c",
        "2",
        "-i",
        "8",
        "-z",
        "60s",
        "--no-tui",
        "--quiet",
        "--json",
        &json_arg,
    ];
    if retry {
        args.extend(["--retry-on", "deadlock"]);
    }
    let o = throng(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("JSON");
    let sum_sql = format!("SELECT SUM(v) AS s FROM {table}");
    let sum = sum_of(url, &sum_sql);
    Ran { result, sum }
}

/// A fresh table of two rows, both 0.
fn two_rows(url: &str, table: &str) {
    let setup = [
        format!("DROP TABLE IF EXISTS {table}"),
        format!("CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL)"),
        format!("INSERT INTO {table} VALUES (1, 0), (2, 0)"),
    ];
    block_on(async {
        let mut c = open(url).await;
        for sql in &setup {
            c.raw(sql).await.expect(sql);
        }
        c.close().await;
    });
}

/// The shared PostgreSQL, looking for deadlocks after 100 ms rather than deadlock_timeout's
/// default 1 s (for this test's connections: its user is the server's superuser).
fn quick_deadlocks() -> String {
    format!(
        "{}?options=-c%20deadlock_timeout%3D100ms",
        Postgres::shared().expect("PostgreSQL").url()
    )
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Runtime::new().expect("runtime").block_on(f)
}

async fn open(url: &str) -> throng::sql::Conn {
    throng::sql::Target::new(url, std::time::Duration::from_secs(10), 16)
        .expect("url")
        .connect()
        .await
        .expect("connect")
}

/// The sum as the database gives it, read through throng's own connection.
fn sum_of(url: &str, sql: &str) -> i64 {
    block_on(async {
        let mut c = open(url).await;
        let sql: std::sync::Arc<str> = sql.into();
        let done = c.run(&sql, &[], true).await.expect("sum");
        let v = &done.data[0]["s"];
        v.as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .or_else(|| v.as_f64().map(|f| f as i64))
            .unwrap_or_else(|| panic!("a sum: {v}"))
    })
}

fn count(r: &serde_json::Value, name: &str) -> u64 {
    r["protocol_counts"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {name}: {}", r["protocol_counts"]))
}

fn transaction_row(r: &serde_json::Value) -> &serde_json::Value {
    r["labels"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["label"] == "transaction"))
        .unwrap_or_else(|| panic!("no transaction row: {}", r["labels"]))
}

/// The transactions that committed: the row's passes less its failed ones.
fn committed(row: &serde_json::Value) -> u64 {
    row["samples"].as_u64().expect("samples") - row["errors"].as_u64().expect("errors")
}

fn deadlocks_are_retried_and_counted(url: &str, code: &str) {
    let deadlock = format!("sqlstate {code}");
    // Retried: every user's 8 transactions commit in the end, each deadlock counted twice over
    // (its statement's error, and a retried transaction), none hidden.
    let r = deadlocking(url, "retry_on", true);
    let retried = count(&r.result, "transactions_retried");
    let seen = r.result["status_codes"][&deadlock].as_u64().unwrap_or(0);
    assert!(retried >= 1, "no deadlock happened: {}", r.result);
    assert_eq!(
        seen, retried,
        "each deadlock is one retry: {}",
        r.result["status_codes"]
    );
    assert_eq!(count(&r.result, "transactions_rolled_back"), 0);
    let trx = transaction_row(&r.result);
    assert_eq!(committed(trx), 16, "{trx}");
    assert_eq!(
        trx["errors"].as_u64(),
        Some(retried),
        "a retried pass failed: {trx}"
    );
    assert_eq!(r.sum, 32, "16 transactions committed, 2 each");
    assert!(
        r.result["connection"]
            .as_str()
            .is_some_and(|c| c.starts_with("postgres-protocol") || c.starts_with("mysql wire")),
        "{}",
        r.result["connection"]
    );
    // Not retried: each deadlock ends its iteration, rolled back and counted as such.
    let r = deadlocking(url, "retry_off", false);
    let seen = r.result["status_codes"][&deadlock].as_u64().unwrap_or(0);
    assert!(seen >= 1, "no deadlock happened: {}", r.result);
    assert_eq!(count(&r.result, "transactions_retried"), 0);
    assert_eq!(count(&r.result, "transactions_rolled_back"), seen);
    let ok = committed(transaction_row(&r.result));
    assert_eq!(ok + seen, 16, "{}", r.result["labels"]);
    assert_eq!(r.sum, 2 * ok as i64);
}

#[test]
fn deadlocks_on_postgres_are_retried_with_retry_on() {
    deadlocks_are_retried_and_counted(&quick_deadlocks(), "40P01");
}

#[test]
fn deadlocks_on_mariadb_are_retried_with_retry_on() {
    // InnoDB finds a deadlock at once and answers 1213, SQLSTATE 40001.
    deadlocks_are_retried_and_counted(&MariaDb::shared().expect("MariaDB").url(), "40001");
}

/// The same deadlocks in a scenario: a group of `sql:` steps (BEGIN, two updates in opposite
/// orders, COMMIT) whose updates say `retry_on: deadlock` runs again from the group's first step
/// after each, until all 16 transactions commit; without it each deadlock ends its iteration.
fn scenario_deadlocks_are_retried(url: &str, code: &str) {
    let pg = url.starts_with("postgres");
    let (ph, sleep) = match pg {
        true => ("$1::int", "SELECT pg_sleep(0.05)"),
        false => ("?", "SELECT SLEEP(0.05)"),
    };
    let dir = tempfile::tempdir().expect("dir");
    for retry in [true, false] {
        let table = format!("scenario_retry_{retry}");
        two_rows(url, &table);
        let key = match retry {
            true => ", retry_on: [deadlock]",
            false => "",
        };
        let yaml = format!(
            r#"
targets:
  db: "{url}"
load:
  users: 2
  iterations: 8
  duration: 60s
steps:
  - group: transfer
    steps:
      - label: begin
        sql: {{ target: db, query: BEGIN }}
      - label: first
        sql: {{ target: db, query: "UPDATE {table} SET v = v + 1 WHERE id = {ph} % 2 + 1", params: ["{{{{ user }}}}"]{key} }}
      - label: sleep
        sql: {{ target: db, query: "{sleep}" }}
      - label: second
        sql: {{ target: db, query: "UPDATE {table} SET v = v + 1 WHERE id = ({ph} + 1) % 2 + 1", params: ["{{{{ user }}}}"]{key} }}
      - label: commit
        sql: {{ target: db, query: COMMIT }}
"#
        );
        let file = dir.path().join(format!("{table}.yaml"));
        std::fs::write(&file, yaml).expect("scenario");
        let json = dir.path().join(format!("{table}.json"));
        let o = throng(&[
            "run",
            file.to_str().expect("path"),
            "--no-tui",
            "--quiet",
            "--json",
            json.to_str().expect("path"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("JSON");
        let deadlocks = r["status_codes"][format!("sqlstate {code}")]
            .as_u64()
            .unwrap_or(0);
        assert!(
            deadlocks >= 1,
            "no deadlock happened: {}",
            r["status_codes"]
        );
        let group = r["labels"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["label"] == "transfer"))
            .unwrap_or_else(|| panic!("no group row: {}", r["labels"]));
        let ok = committed(group);
        assert_eq!(group["errors"].as_u64(), Some(deadlocks), "{group}");
        let sum = sum_of(url, &format!("SELECT SUM(v) AS s FROM {table}"));
        match retry {
            // Every deadlock ran its transaction again: all 16 committed.
            true => assert_eq!((ok, sum), (16, 32), "{group}"),
            // Every deadlock ended its iteration: 16 passes, some of them failed.
            false => assert_eq!((ok + deadlocks, sum), (16, 2 * ok as i64), "{group}"),
        }
    }
}

#[test]
fn scenario_deadlocks_on_postgres_are_retried_with_retry_on() {
    scenario_deadlocks_are_retried(&quick_deadlocks(), "40P01");
}

#[test]
fn scenario_deadlocks_on_mariadb_are_retried_with_retry_on() {
    scenario_deadlocks_are_retried(&MariaDb::shared().expect("MariaDB").url(), "40001");
}
