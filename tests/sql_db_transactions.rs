//! The database's transactions as `--db-stats` counts them on MariaDB, where no status variable
//! counts them: derived second by second from `Com_commit + Com_rollback` (explicit
//! transactions) or else `Handler_commit + Handler_rollback` (autocommit statements), and
//! equal, for each kind of load, to the number of transactions the database committed.

use crate::common;

use throng::testbed::MariaDb;

use common::{said as text, throng_bin as throng};

/// Runs `args` with the database read, and returns the output and the database's figures.
fn run(url: &str, args: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().expect("dir");
    let result = dir.path().join("r.json");
    let mut all = vec!["run", url];
    all.extend(args);
    all.extend([
        "--db-stats",
        url,
        "--no-tui",
        "--json",
        result.to_str().expect("path"),
    ]);
    let o = throng(&all);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("the result")).expect("JSON");
    (text(&o), r["databases"][0].clone())
}

/// The load's total of counter `name`.
fn total(db: &serde_json::Value, name: &str) -> Option<u64> {
    db["counters"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .and_then(|c| c["load_total"].as_u64())
}

/// A load of 300 autocommit UPDATEs is 300 transactions (before, `Com_commit + Com_rollback`
/// read 0); a load of 40 BEGIN, SELECT, UPDATE, COMMIT transactions is 40, not the 120 that
/// `Handler_commit` counts for them. The derivation is said, and the statements are the load's
/// (the reader's own left out).
#[test]
fn mariadb_transactions_of_autocommit_statements_and_of_explicit_transactions() {
    let my = MariaDb::start().expect("a MariaDB of this test's own");
    let url = my.url();
    for sql in [
        "CREATE TABLE acc (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
        "INSERT INTO acc VALUES (1, 0), (2, 0)",
    ] {
        let o = throng(&["run", &url, "--sql", sql, "-n", "1", "-c", "1", "--no-tui"]);
        assert_eq!(o.status.code(), Some(0), "{sql}: {}", text(&o));
    }
    let (said, db) = run(
        &url,
        &[
            "--sql",
            "UPDATE acc SET v = v + 1 WHERE id = 1",
            "-n",
            "300",
            "-c",
            "2",
        ],
    );
    assert!(
        said.contains("transactions are derived second by second"),
        "{said}"
    );
    assert_eq!(db["transactions"]["load_total"], 300, "{db}");
    assert_eq!(db["committed"]["load_total"], 300, "{db}");
    let counter = |name: &str| total(&db, name);
    assert_eq!(counter("Com_commit"), Some(0), "{db}");
    assert_eq!(counter("Handler_commit"), Some(300), "{db}");
    // The statements are the load's, the reader's own SHOW GLOBAL STATUS left out: 300, and
    // 2 for each of the load's 2 connections (its SET at login, its statement's preparation).
    assert_eq!(db["statements"]["load_total"], 304, "{db}");
    assert_eq!(counter("Com_select"), Some(0), "{db}");

    let (_, db) = run(
        &url,
        &[
            "--transaction",
            "--sql",
            "SELECT v FROM acc WHERE id = 2",
            "--sql",
            "UPDATE acc SET v = v + 1 WHERE id = 2",
            "-i",
            "20",
            "-c",
            "2",
        ],
    );
    assert_eq!(db["transactions"]["load_total"], 40, "{db}");
    assert_eq!(db["committed"]["load_total"], 40, "{db}");
    let counter = |name: &str| total(&db, name);
    assert_eq!(counter("Com_commit"), Some(40), "{db}");
    assert_eq!(counter("Handler_commit"), Some(120), "{db}");
    // BEGIN, SELECT, UPDATE, COMMIT: 160 statements (and the connections' 4), 80 of them
    // SELECT or UPDATE.
    assert_eq!(db["statements"]["load_total"], 164, "{db}");
    let dml: u64 = ["Com_select", "Com_insert", "Com_update", "Com_delete"]
        .iter()
        .filter_map(|k| counter(k))
        .sum();
    assert_eq!(dml, 80, "{db}");
}

/// A service's pooled connections stay idle after the load, and PostgreSQL (15+) publishes the
/// last counters of such a connection only when it has been idle 10 s (`PGSTAT_IDLE_INTERVAL`):
/// the last reading waits for that, so the database's transactions are the service's requests
/// (one autocommit SELECT each; the readings' own and the bank's first inserts besides), not
/// a second's worth short. Measured
/// (`throng run http://bank/total -c 4 -z 3s --db-stats PG`): the last reading 10.08 s after the
/// load, against 10.83 s with the fixed wait before; a URL run, whose sessions exit, 0.02 s
/// against 0.52 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_counters_of_a_services_idle_connections_are_waited_for() {
    use throng::testbed::{BankService, Postgres, Storage};
    let pg = Postgres::start().expect("a PostgreSQL of this test's own");
    let url = pg.url();
    let bank = BankService {
        storage: Storage::Server(url.clone()),
        ..BankService::default()
    }
    .start()
    .await
    .expect("the bank starts on PostgreSQL");
    let target = format!("{}/total", bank.url());
    let (said, db, duration) = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().expect("dir");
        let result = dir.path().join("r.json");
        let o = throng(&[
            "run",
            &target,
            "-c",
            "4",
            "-z",
            "2s",
            "--db-stats",
            &url,
            "--no-tui",
            "--json",
            result.to_str().expect("path"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&result).expect("the result"))
                .expect("JSON");
        let duration = r["duration"].as_f64().expect("duration");
        (text(&o), r["databases"][0].clone(), duration)
    })
    .await
    .expect("the run");
    assert!(
        said.contains("until the service's connections have been idle 10 s"),
        "{said}"
    );
    let requests = db["requests"].as_u64().expect("requests");
    let transactions = db["transactions"]["load_total"].as_u64().expect("a total");
    assert!(requests > 100, "{db}");
    assert!(
        (requests..=requests + 150).contains(&transactions),
        "{transactions} transactions for {requests} requests: {db}"
    );
    let last = db["samples"]
        .as_array()
        .and_then(|s| s.last())
        .and_then(|s| s["t"].as_f64())
        .expect("a last reading");
    assert!(
        last - duration > 8.5 && last - duration < 12.0,
        "the last reading {:.2} s after the load",
        last - duration
    );
}
