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

/// A load of 300 autocommit UPDATEs is 300 transactions (before, `Com_commit + Com_rollback`
/// read 0); a load of 40 BEGIN, SELECT, UPDATE, COMMIT transactions is 40, not the 120 that
/// `Handler_commit` counts for them. The derivation is said.
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
    let counter = |name: &str| {
        db["counters"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .and_then(|c| c["load_total"].as_u64())
    };
    assert_eq!(counter("Com_commit"), Some(0), "{db}");
    assert_eq!(counter("Handler_commit"), Some(300), "{db}");

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
    let counter = |name: &str| {
        db["counters"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .and_then(|c| c["load_total"].as_u64())
    };
    assert_eq!(counter("Com_commit"), Some(40), "{db}");
    assert_eq!(counter("Handler_commit"), Some(120), "{db}");
}
