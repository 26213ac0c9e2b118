//! `--db-stats` read once a second: the readings in the JSON result, idle and under load,
//! against the real PostgreSQL and MariaDB the test command starts (each test its own server, so
//! no other test moves its counters).

use crate::common;

use throng::testbed::{MariaDb, Postgres, DB_PASSWORD};

use common::{said as text, throng_bin as throng};

/// The value of counter `name` in a reading.
fn value(db: &serde_json::Value, sample: &serde_json::Value, name: &str) -> u64 {
    let i = db["counters"]
        .as_array()
        .and_then(|c| c.iter().position(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no counter {name}: {db}"));
    sample["values"][i].as_u64().expect("a count")
}

/// oltp_read_only for 5 s with the database read once a second: readings about a second apart
/// before and through the load, their per-second increases adding up to the load's total, and
/// the database's transactions per second about the load's (each sysbench transaction is one
/// BEGIN ... COMMIT).
fn readings_each_second(url: &str, commits: &str) {
    let o = throng(&["sql", "prepare", url, "--table-size", "500"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = tempfile::tempdir().expect("dir");
    let result = dir.path().join("r.json");
    let o = throng(&[
        "run",
        url,
        "--workload",
        "oltp_read_only",
        "--table-size",
        "500",
        "-c",
        "2",
        "-z",
        "5s",
        "--db-stats",
        url,
        "--idle",
        "2s",
        "--no-tui",
        "--json",
        result.to_str().expect("path"),
        "--report",
        &format!("csv:{}", dir.path().join("r.csv").display()),
        "--report",
        &format!("html:{}", dir.path().join("r.html").display()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains(DB_PASSWORD), "{}", text(&o));
    // The CSV and HTML reports carry the database's figures, the load's total among them.
    let csv = std::fs::read_to_string(dir.path().join("r.databases.csv")).expect("databases csv");
    assert!(
        // The transaction's row is a flow: the counters per transaction too.
        csv.starts_with(
            "database,counter,idle_per_s,load_per_s,load_total,per_request,\
             per_flow:oltp_read_only\r\n"
        ),
        "{csv}"
    );
    let commit_line = csv
        .lines()
        .find(|l| l.split(',').nth(1) == Some(commits))
        .unwrap_or_else(|| panic!("no {commits} line: {csv}"));
    let html = std::fs::read_to_string(dir.path().join("r.html")).expect("html");
    assert!(
        html.contains("its own figures") && html.contains(commits),
        "{html}"
    );
    assert!(html.contains("postgres-protocol") || html.contains("mysql wire"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("transactions/s second by second under load  median"),
        "{out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("the result")).expect("JSON");
    let db = &r["databases"][0];
    let samples = db["samples"].as_array().expect("readings");
    let t: Vec<f64> = samples
        .iter()
        .map(|s| s["t"].as_f64().expect("t"))
        .collect();
    let idle = t.iter().filter(|t| **t < 0.0).count();
    // --idle 2s: readings at its start, a second in and at its end.
    assert_eq!(idle, 3, "{t:?}");
    assert!(t[0] < -1.5, "{t:?}");
    // Through the 5 s load, one a second (a busy machine delays some), then the last after it.
    let load = samples.len() - idle;
    assert!((4..=8).contains(&load), "{t:?}");
    // In order, each within a few seconds of the one before (the counts above say one a
    // second). Under the test command's parallel SQL tests a 2 s idle window was seen to take
    // 4.8 s, one reading 4.7 s after the one before; alone it takes 2 s. Why is not yet known
    // (a starved machine, or something holding the runtime the idle readings run on).
    for w in t.windows(2) {
        assert!(w[1] >= w[0] && w[1] - w[0] < 6.0, "{t:?}");
    }
    assert!(*t.last().expect("a reading") > 5.0, "{t:?}");
    // The increases second by second add up to the total over the load, for every counter.
    for c in db["counters"].as_array().expect("counters") {
        let name = c["name"].as_str().expect("a name");
        let per_second: u64 = samples[idle - 1..]
            .windows(2)
            .map(|w| value(db, &w[1], name) - value(db, &w[0], name))
            .sum();
        assert_eq!(c["load_total"].as_u64(), Some(per_second), "{name}");
        if name == commits {
            let total = commit_line.split(',').nth(4).and_then(|t| t.parse().ok());
            assert_eq!(total, Some(per_second), "{commit_line}");
        }
    }
    let trx = r["labels"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["label"] == "oltp_read_only"))
        .expect("the transaction row");
    let done = trx["samples"].as_u64().expect("transactions");
    let load_tps = done as f64 / r["duration"].as_f64().expect("duration");
    let total: u64 = samples[idle - 1..]
        .windows(2)
        .map(|w| value(db, &w[1], commits) - value(db, &w[0], commits))
        .sum();
    match commits {
        // MariaDB counts COMMIT statements: exactly the load's transactions.
        "Com_commit" => assert_eq!(total, done),
        // PostgreSQL counts every transaction, the readings' own too (one a second).
        _ => assert!((done..=done + 20).contains(&total), "{total} vs {done}"),
    }
    // The database's transactions per second under load are about the load's.
    let db_tps = db["transactions"]["load_per_s"].as_f64().expect("a rate");
    assert!(
        db_tps > load_tps * 0.7 && db_tps < load_tps * 1.6,
        "database {db_tps}/s against the load's {load_tps}/s"
    );
    // And so are they second by second: MariaDB counts each COMMIT as it happens, so its median
    // second is about the load's; PostgreSQL's busy backends publish their counts at most once a
    // second (and later when the shared entry is busy), so its seconds are lumpy: its busiest
    // second shows the load.
    let spread = &db["transactions_per_second"];
    let (median, max) = (
        spread["median"].as_f64().expect("a median"),
        spread["max"].as_f64().expect("a max"),
    );
    match commits {
        "Com_commit" => assert!(
            median > load_tps * 0.4 && median < load_tps * 2.5,
            "median second {median}/s against the load's {load_tps}/s: {samples:?}"
        ),
        _ => assert!(
            max > load_tps * 0.5,
            "busiest second {max}/s against the load's {load_tps}/s: {samples:?}"
        ),
    }
}

#[test]
fn postgresql_is_read_once_a_second() {
    let pg = Postgres::start().expect("a PostgreSQL of this test's own");
    readings_each_second(&pg.url(), "xact_commit");
}

#[test]
fn mariadb_is_read_once_a_second() {
    let my = MariaDb::start().expect("a MariaDB of this test's own");
    readings_each_second(&my.url(), "Com_commit");
}

/// MariaDB (10.11) keeps no `Innodb_rows_*`: they are said to be not available and left out of
/// the result, never shown as 0; its statements by kind are there (`Com_select`: the load's 20
/// SELECTs, prepared statements' executions included).
#[test]
fn mariadb_counters_the_server_lacks_are_not_made_up() {
    let my = MariaDb::start().expect("a MariaDB of this test's own");
    let dir = tempfile::tempdir().expect("dir");
    let result = dir.path().join("r.json");
    let o = throng(&[
        "run",
        &my.url(),
        "--sql",
        "SELECT 1 FROM DUAL WHERE ? > 0",
        "--param",
        "1",
        "-n",
        "20",
        "-c",
        "1",
        "--db-stats",
        &my.url(),
        "--no-tui",
        "--json",
        result.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(
            "counters this server does not keep (not available): Innodb_rows_read, \
             Innodb_rows_inserted, Innodb_rows_updated, Innodb_rows_deleted"
        ),
        "{}",
        text(&o)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("the result")).expect("JSON");
    let db = &r["databases"][0];
    let names: Vec<&str> = db["counters"]
        .as_array()
        .expect("counters")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("Innodb_rows")),
        "{names:?}"
    );
    for kind in ["Com_select", "Com_insert", "Com_update", "Com_delete"] {
        assert!(names.contains(&kind), "{names:?}");
    }
    let selects = db["counters"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "Com_select"))
        .and_then(|c| c["load_total"].as_u64());
    assert_eq!(selects, Some(20), "{db}");
}

/// Transactions rolled back after a failed statement, and transactions still open when the run
/// ended, are counted apart from the errors: each of 5 transactions fails in its second
/// statement (one rollback each); 2 users whose transactions sleep past a 1 s run leave 2 open.
#[test]
fn rolled_back_and_open_transactions_are_counted_apart() {
    let url = Postgres::shared().expect("PostgreSQL").url();
    for (last, load, said, not_said) in [
        (
            "SELECT 1 / 0",
            ["-c", "1", "-i", "5"],
            "transactions rolled back after a failed statement: 5",
            "open when the run ended",
        ),
        (
            "SELECT pg_sleep(3)",
            ["-c", "2", "-z", "1s"],
            "transactions open when the run ended (rolled back by the database): 2",
            "rolled back after a failed statement",
        ),
    ] {
        let mut args = vec![
            "run",
            &url,
            "--transaction",
            "--sql",
            "SELECT 1",
            "--sql",
            last,
            "--no-tui",
        ];
        args.extend(load);
        let o = throng(&args);
        assert!(text(&o).contains(said), "{}", text(&o));
        assert!(!text(&o).contains(not_said), "{}", text(&o));
    }
}

/// A scenario whose every flow is one transaction of known statements: an INSERT, two SELECTs
/// (one a `WITH` statement), an UPDATE and a DELETE of one row, `?` or `$1` its placeholder.
fn kinds_scenario(dir: &std::path::Path, url: &str, placeholder: &str) -> std::path::PathBuf {
    let p = placeholder;
    let yaml = format!(
        r#"
targets:
  db: {url}
load:
  users: 2
  iterations: 5
steps:
  - group: flow
    steps:
      - label: begin
        sql: {{ target: db, query: BEGIN }}
      - label: insert
        sql: {{ target: db, query: "INSERT INTO kinds (id, v) VALUES ({p}, 1)", params: ["{{{{ user * 1000 + iteration }}}}"] }}
      - label: select
        sql: {{ target: db, query: "SELECT v FROM kinds WHERE id = {p}", params: ["{{{{ user * 1000 + iteration }}}}"] }}
      - label: with select
        sql: {{ target: db, query: "WITH k AS (SELECT v FROM kinds WHERE id = {p}) SELECT v FROM k", params: ["{{{{ user * 1000 + iteration }}}}"] }}
      - label: update
        sql: {{ target: db, query: "UPDATE kinds SET v = v + 1 WHERE id = {p}", params: ["{{{{ user * 1000 + iteration }}}}"] }}
      - label: delete
        sql: {{ target: db, query: "DELETE FROM kinds WHERE id = {p}", params: ["{{{{ user * 1000 + iteration }}}}"] }}
      - label: commit
        sql: {{ target: db, query: COMMIT }}
"#
    );
    let file = dir.join("kinds.yaml");
    std::fs::write(&file, yaml).expect("the scenario");
    file
}

/// Runs one statement on the database through throng.
fn statement(url: &str, sql: &str) {
    let o = throng(&["run", url, "--sql", sql, "-n", "1", "-c", "1", "--no-tui"]);
    assert_eq!(o.status.code(), Some(0), "{sql}: {}", text(&o));
}

/// The kinds scenario with the database read: the run's output and its JSON result.
fn run_kinds(
    url: &str,
    dir: &std::path::Path,
    placeholder: &str,
    name: &str,
) -> (String, serde_json::Value) {
    let file = kinds_scenario(dir, url, placeholder);
    let result = dir.join(format!("{name}.json"));
    let o = throng(&[
        "run",
        file.to_str().expect("path"),
        "--db-stats",
        url,
        "--no-tui",
        "--json",
        result.to_str().expect("path"),
        "--report",
        &format!("markdown:{}", dir.join("r.md").display()),
        "--report",
        &format!("csv:{}", dir.join("r.csv").display()),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("the result")).expect("JSON");
    (text(&o), r)
}

/// Statements by kind under the same names on PostgreSQL (pg_stat_statements' calls by kind,
/// the reader's own left out) and MariaDB (`Com_select` ...), exact: 10 flows of one INSERT,
/// two SELECTs, one UPDATE, one DELETE; and the database's transactions per flow: one COMMIT
/// each. Without pg_stat_statements in the database they are said to be not available, with
/// what enables them. The comparison of the two results shows both.
#[test]
fn statements_by_kind_and_transactions_per_flow_on_both_databases() {
    let pg = Postgres::start().expect("a PostgreSQL of this test's own");
    let my = MariaDb::start().expect("a MariaDB of this test's own");
    let dir = tempfile::tempdir().expect("dir");
    let (pg_url, my_url) = (pg.url(), my.url());
    for url in [&pg_url, &my_url] {
        statement(url, "CREATE TABLE kinds (id INT PRIMARY KEY, v INT)");
    }
    // The extension is not created yet: not available, and said so once, with the fix.
    let (said, r) = run_kinds(&pg_url, dir.path(), "$1", "postgres");
    assert_eq!(
        said.matches(
            "(not available): calls, calls_select, calls_insert, calls_update, calls_delete"
        )
        .count(),
        1,
        "{said}"
    );
    assert!(
        said.contains("pg_stat_statements, which is not created in this database")
            && said.contains("CREATE EXTENSION pg_stat_statements"),
        "{said}"
    );
    assert!(said.contains("statements by kind: not available"), "{said}");
    let db = &r["databases"][0];
    assert_eq!(db["statements_by_kind"], serde_json::json!([]), "{db}");
    assert!(db["statements"].is_null(), "{db}");

    statement(&pg_url, "CREATE EXTENSION pg_stat_statements");
    let (pg_said, pg_r) = run_kinds(&pg_url, dir.path(), "$1", "postgres");
    assert!(!pg_said.contains("not available"), "{pg_said}");
    let md = std::fs::read_to_string(dir.path().join("r.md")).expect("markdown");
    let csv = std::fs::read_to_string(dir.path().join("r.databases.csv")).expect("csv");
    let (my_said, my_r) = run_kinds(&my_url, dir.path(), "?", "mariadb");
    for (said, r) in [(&pg_said, &pg_r), (&my_said, &my_r)] {
        let db = &r["databases"][0];
        let kinds: Vec<(&str, u64)> = db["statements_by_kind"]
            .as_array()
            .expect("kinds")
            .iter()
            .map(|k| {
                (
                    k["name"].as_str().expect("a name"),
                    k["load_total"].as_u64().expect("a total"),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("selects", 20),
                ("inserts", 10),
                ("updates", 10),
                ("deletes", 10)
            ],
            "{db}"
        );
        assert!(
            said.contains("statements by kind under load  selects 20 ("),
            "{said}"
        );
        let flow = &db["flows"][0];
        assert_eq!(flow["flow"], "flow", "{db}");
        assert_eq!(flow["completed"], 10, "{db}");
        assert!(
            said.contains("database transactions per completed flow (10 completed)"),
            "{said}"
        );
        // Per request: 70 requests (BEGIN and COMMIT are steps).
        let per_request = db["committed"]["per_request"]
            .as_f64()
            .expect("per request");
        let committed = flow["committed"].as_f64().expect("committed per flow");
        assert!((per_request * 70.0 - committed * 10.0).abs() < 1e-9, "{db}");
    }
    // MariaDB counts COMMIT statements: exactly one a flow.
    let my_db = &my_r["databases"][0];
    assert_eq!(my_db["flows"][0]["committed"], 1.0, "{my_db}");
    assert_eq!(my_db["flows"][0]["transactions"], 1.0, "{my_db}");
    // PostgreSQL counts every transaction: one a flow, and beside them the reader's own (two
    // statements a reading) and a statement's first preparation on a connection (an implicit
    // transaction: 5 statements on each user's connection and on the one that checks them).
    let pg_db = &pg_r["databases"][0];
    let readings = pg_db["samples"].as_array().expect("readings").len() as f64;
    let committed = pg_db["flows"][0]["committed"].as_f64().expect("committed");
    let others = committed * 10.0 - 10.0;
    assert!(
        (0.0..=2.0 * readings + 5.0 * 3.0).contains(&others),
        "{committed}: {pg_db}"
    );
    // Its statements are pg_stat_statements' calls, the reader's left out: 7 a flow exactly.
    assert_eq!(pg_db["statements"]["load_total"], 70, "{pg_db}");
    // The reports name them as the summary does, and the statements both ways apart: 70
    // with BEGIN and COMMIT, 50 without.
    assert!(
        md.contains("| selects") && md.contains("| Per flow") && md.contains("| committed"),
        "{md}"
    );
    for (figure, total) in [
        ("statements (BEGIN/COMMIT included)", "70"),
        ("statements (SELECT+INSERT+UPDATE+DELETE)", "50"),
    ] {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| {figure} |")))
            .unwrap_or_else(|| panic!("no {figure}: {md}"));
        assert_eq!(line.split('|').nth(4).map(str::trim), Some(total), "{line}");
    }
    assert!(
        csv.lines()
            .next()
            .is_some_and(|h| h.ends_with(",per_request,per_flow:flow"))
            && csv
                .lines()
                .any(|l| l.contains(",selects,") && l.contains(",20,")),
        "{csv}"
    );
    // And `throng compare` sets the two databases side by side, by kind and per flow.
    let side = |name: &str| {
        format!(
            "{name}={}",
            dir.path().join(format!("{name}.json")).display()
        )
    };
    let o = throng(&[
        "compare",
        &side("postgres"),
        &side("mariadb"),
        "--force",
        "--format",
        "markdown",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // One table: a column per side, a row per figure, the flows' passes per second (Global-TPS)
    // beside the database's transactions (DB-TPS) and statements (OPS, both ways).
    let line = |figure: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("| {figure} |")))
            .unwrap_or_else(|| panic!("no row {figure}: {out}"))
            .to_string()
    };
    let cells = |figure: &str| -> Vec<f64> {
        line(figure)
            .split('|')
            .skip(2)
            .filter_map(|c| c.trim().parse().ok())
            .collect()
    };
    assert!(line("Figure").contains("| postgres | mariadb |"), "{out}");
    assert_eq!(line("Database").matches("127.0.0.1").count(), 2, "{out}");
    for figure in [
        "Global-TPS: flow passes/s",
        "DB-TPS: transactions/s",
        "Selects/s",
        "Inserts/s",
        "Updates/s",
        "Deletes/s",
    ] {
        assert_eq!(cells(figure).len(), 2, "{figure}: {out}");
    }
    // PostgreSQL's statements: 7 a flow with BEGIN and COMMIT, 5 without.
    let (all, dml) = (
        cells("OPS: statements/s, BEGIN/COMMIT included"),
        cells("OPS: SELECT+INSERT+UPDATE+DELETE/s"),
    );
    assert!((all[0] / dml[0] - 1.4).abs() < 0.02, "{out}");
    // MariaDB's transactions per flow: 1.00.
    assert!(
        line("DB transactions per flow pass").ends_with("| 1.00 |"),
        "{out}"
    );
}
