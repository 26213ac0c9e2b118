//! `sql:` steps in scenario files, mixed with HTTP steps: money moved over the bank's HTTP API,
//! then both balances read straight from its database, with checks on the rows and extraction of
//! a column of the first row; SQLSTATE status checks; bad steps at their place.

use std::path::Path;
use std::sync::Arc;

use throng::core::{ErrorClass, Snapshot};
use throng::testbed::{BankService, MariaDb, Postgres, Storage};

async fn run_file(file: &Path, args: &[&str]) -> Result<Arc<Snapshot>, String> {
    let mut argv = vec![
        "throng".to_string(),
        "run".into(),
        file.display().to_string(),
    ];
    argv.extend(args.iter().map(|s| s.to_string()));
    let run = crate::common::parse(&argv).expect("flags");
    let setup = throng::flags::scenario::build_scenario(&run).map_err(|e| e.to_string())?;
    setup.driver.prepare().await.map_err(|e| e.to_string())?;
    Ok(throng::engine::run(setup.plan, Arc::new(setup.driver))
        .await
        .expect("the run starts"))
}

fn errors(s: &Snapshot, class: ErrorClass) -> u64 {
    s.errors
        .iter()
        .filter(|e| e.class == class)
        .map(|e| e.count)
        .sum()
}

fn row<'a>(s: &'a Snapshot, label: &str) -> &'a throng::core::LabelStats {
    s.labels
        .iter()
        .find(|l| l.label == label)
        .unwrap_or_else(|| panic!("no row {label}"))
}

const FLOW: &str = r#"
targets:
  bank: BANK
  db: DB
variables:
  opening: 1000
  amount: 10
load:
  users: 3
  iterations: 5
steps:
  - label: create A
    request: { method: POST, path: "/client/new/{{ opening }}" }
    extract: { a: { jsonpath: $.id } }
  - label: create B
    request: { method: POST, path: "/client/new/{{ opening }}" }
    extract: { b: { jsonpath: $.id } }
  - label: transfer
    request:
      method: POST
      path: /transaction
      json: { from: "{{ a }}", to: "{{ b }}", amount: "{{ amount }}" }
    checks:
      - status: 200
  - label: balance A in the database
    sql:
      target: db
      query: SELECT balance FROM clients WHERE id = ?
      params: ["{{ a }}"]
    extract:
      a_after: { jsonpath: "$.rows[0].balance" }
    checks:
      - jsonpath: $.row_count
        equals: 1
      - jsonpath: "$.rows[0].balance"
        equals: "{{ opening - amount }}"
  - label: balance B in the database
    sql:
      target: db
      query: SELECT balance AS b FROM clients WHERE id = ?
      params: ["{{ b }}"]
    checks:
      - jsonpath: "$.rows[0].b"
        equals: "{{ opening + amount }}"
      # Conservation: what A lost, B gained.
      - jsonpath: "$.rows[0].b"
        equals: "{{ 2 * opening - a_after }}"
    extract:
      # A column of the first row, as metadata (its text).
      b_text: { metadata: b }
  - label: balance B again
    sql:
      target: db
      query: SELECT balance FROM clients WHERE id = ?
      params: ["{{ b }}"]
    checks:
      - jsonpath: "$.rows[0].balance"
        equals: "{{ b_text }}"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_sql_steps_mix_in_one_flow() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("bank.db");
    let bank = BankService {
        storage: Storage::File(file.clone()),
        ..BankService::default()
    }
    .start()
    .await
    .expect("the bank starts");
    let text = FLOW
        .replace("BANK", &bank.url())
        .replace("DB", &format!("sqlite://{}", file.display()));
    let path = dir.path().join("flow.yaml");
    std::fs::write(&path, text).expect("write");
    let s = run_file(&path, &[]).await.expect("compiles");
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "balance A in the database").samples, 15);
    assert_eq!(row(&s, "balance B in the database").samples, 15);
    assert_eq!(row(&s, "balance B again").samples, 15);
    // A wrong expectation is a failed check, not a pass.
    let wrong = std::fs::read_to_string(&path)
        .expect("read")
        .replace("{{ opening - amount }}", "{{ opening }}");
    std::fs::write(&path, wrong).expect("write");
    let s = run_file(&path, &["-i", "1", "-c", "1"])
        .await
        .expect("compiles");
    assert_eq!(errors(&s, ErrorClass::Check), 1, "{:?}", s.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlstate_checks_and_bad_steps() {
    let pg = Postgres::shared().expect("PostgreSQL");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.yaml");
    let text = format!(
        r#"
targets:
  db: {url}
load: {{ users: 1, iterations: 3 }}
on_failure: continue
steps:
  - label: make
    sql: CREATE TABLE IF NOT EXISTS scen (id INT PRIMARY KEY)
  - label: dup
    sql: {{ query: "INSERT INTO scen VALUES ($1)", params: [1] }}
  - label: dup expected
    sql: {{ query: "INSERT INTO scen VALUES ($1)", params: [1] }}
    checks:
      - status: "23505"
"#,
        url = pg.url()
    );
    std::fs::write(&path, &text).expect("write");
    let s = run_file(&path, &[]).await.expect("compiles");
    let _ = throng::sql::Target::new(&pg.url(), std::time::Duration::from_secs(5), 4)
        .expect("url")
        .connect()
        .await
        .expect("connects")
        .raw("DROP TABLE scen")
        .await;
    // `dup` succeeds once then fails twice with 23505; `dup expected` always meets 23505,
    // which its status check turns into a pass.
    assert_eq!(row(&s, "dup").errors, 2, "{:?}", s.errors);
    assert_eq!(row(&s, "dup expected").errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "dup expected").samples, 3);
    let bad = text.replacen("params: [1]", "parms: [1]", 1);
    std::fs::write(&path, &bad).expect("write");
    let e = run_file(&path, &[]).await.unwrap_err();
    assert!(
        e.contains("unknown field `parms`") && e.contains(":10:"),
        "{e}"
    );
    assert!(!e.contains(throng::testbed::DB_PASSWORD), "{e}");
}

/// A transaction opened by a step is rolled back when its iteration fails: on MariaDB the next
/// BEGIN would otherwise commit it, on PostgreSQL the next statements would meet an aborted
/// transaction (25P02) instead of their own error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_iteration_rolls_back_the_transaction_its_steps_opened() {
    for (url, ph) in [
        (MariaDb::shared().expect("MariaDB").url(), "?"),
        (Postgres::shared().expect("PostgreSQL").url(), "$1"),
    ] {
        let target =
            throng::sql::Target::new(&url, std::time::Duration::from_secs(5), 4).expect("url");
        let mut c = target.connect().await.expect("connects");
        c.raw("DROP TABLE IF EXISTS txs").await.expect("drop");
        c.raw("CREATE TABLE txs (id INT PRIMARY KEY)")
            .await
            .expect("create");
        c.raw("INSERT INTO txs VALUES (1)").await.expect("row");
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tx.yaml");
        let text = format!(
            r#"
targets:
  db: {url}
load: {{ users: 1, iterations: 4 }}
steps:
  - label: begin
    sql: BEGIN
  - label: insert
    sql: {{ query: "INSERT INTO txs VALUES ({ph})", params: ["{{{{ rand_int(2, 1000000000) }}}}"] }}
  - label: duplicate
    sql: INSERT INTO txs VALUES (1)
  - label: commit
    sql: COMMIT
"#
        );
        std::fs::write(&path, text).expect("write");
        let s = run_file(&path, &[]).await.expect("compiles");
        assert_eq!(row(&s, "duplicate").errors, 4, "{url}: {:?}", s.errors);
        assert_eq!(row(&s, "insert").errors, 0, "{url}: {:?}", s.errors);
        assert_eq!(row(&s, "commit").samples, 0);
        let n = c
            .run(
                &std::sync::Arc::from("SELECT COUNT(*) AS n FROM txs"),
                &[],
                true,
            )
            .await
            .expect("count")
            .data[0]["n"]
            .as_i64();
        assert_eq!(n, Some(1), "{url}: every failed iteration was rolled back");
        c.raw("DROP TABLE txs").await.expect("drop");
    }
}

/// scenarios/sql/oltp-write-only.yaml is sysbench's write-only transaction: six statements a
/// pass, the table's rows kept (each insert puts back the id its delete removed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundled_oltp_write_only_scenario_runs_sysbenchs_transaction() {
    let pg = Postgres::shared().expect("PostgreSQL");
    let target =
        throng::sql::Target::new(&pg.url(), std::time::Duration::from_secs(5), 4).expect("url");
    let mut c = target.connect().await.expect("connects");
    // Its own schema, so the OLTP tests of other binaries on this database are not disturbed.
    c.raw("DROP SCHEMA IF EXISTS scen CASCADE")
        .await
        .expect("drop");
    c.raw("CREATE SCHEMA scen").await.expect("schema");
    let url = format!("{}?options=-csearch_path%3Dscen", pg.url());
    let mut scoped = throng::sql::Target::new(&url, std::time::Duration::from_secs(5), 4)
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let o = throng::sql::OltpOptions {
        tables: 1,
        table_size: 10_000,
        range_size: 100,
        ..throng::sql::OltpOptions::default()
    };
    throng::sql::oltp::prepare(
        &mut scoped,
        target.dialect(),
        &o,
        std::time::Duration::from_secs(60),
        |_| {},
    )
    .await
    .expect("prepare");
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/sql/oltp-write-only.yaml");
    let s = run_file(
        &file,
        &["--target", &format!("db={url}"), "-c", "2", "-i", "10"],
    )
    .await
    .expect("compiles");
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "oltp_write_only").samples, 20);
    assert_eq!(s.total.samples, 20 * 6, "six statements a transaction");
    let n = scoped
        .run(
            &std::sync::Arc::from("SELECT COUNT(*) AS n FROM sbtest1"),
            &[],
            true,
        )
        .await
        .expect("count")
        .data[0]["n"]
        .as_i64();
    assert_eq!(n, Some(10_000));
    c.raw("DROP SCHEMA scen CASCADE").await.expect("drop");
}

/// The bank on PostgreSQL and on MariaDB (`throng serve bank --db URL`): the bundled transfer
/// flow runs clean against it, and the database itself shows every client made and the money
/// conserved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bank_runs_on_postgresql_and_mariadb() {
    for url in [
        Postgres::shared().expect("PostgreSQL").url(),
        MariaDb::shared().expect("MariaDB").url(),
    ] {
        let mut c = throng::sql::Target::new(&url, std::time::Duration::from_secs(5), 4)
            .expect("url")
            .connect()
            .await
            .expect("connects");
        c.raw("DROP TABLE IF EXISTS clients").await.expect("drop");
        c.raw("DROP TABLE IF EXISTS orders").await.expect("drop");
        let bank = BankService {
            storage: Storage::Server(url.clone()),
            ..BankService::default()
        }
        .start()
        .await
        .expect("the bank starts on the server");
        let dir = tempfile::tempdir().expect("dir");
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bank-transfer.yaml"),
        )
        .expect("the bundled scenario")
        .replace("http://127.0.0.1:8080", &bank.url());
        let path = dir.path().join("bank.yaml");
        std::fs::write(&path, text).expect("write");
        let s = run_file(&path, &["-c", "3", "-i", "5"])
            .await
            .expect("compiles");
        assert_eq!(s.total.errors, 0, "{url}: {:?}", s.errors);
        assert_eq!(row(&s, "transfer").samples, 15);
        assert_eq!(bank.server_errors(), 0);
        if url.starts_with("postgres") {
            // scenarios/sql/bank-rematch.yaml: the same flow, balances read from PostgreSQL.
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios/sql/bank-rematch.yaml");
            let targets = [format!("bank={}", bank.url()), format!("db={url}")];
            let s = run_file(
                &file,
                &[
                    "--target",
                    &targets[0],
                    "--target",
                    &targets[1],
                    "-c",
                    "3",
                    "-i",
                    "5",
                ],
            )
            .await
            .expect("compiles");
            assert_eq!(s.total.errors, 0, "{:?}", s.errors);
            assert_eq!(row(&s, "balance B in the database").samples, 15);
            assert_eq!(row(&s, "transfer flow").samples, 15);
            // scenarios/sql/saga-tps.yaml: orders allocated through the service, seen so in
            // the database.
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios/sql/saga-tps.yaml");
            let targets = [format!("shop={}", bank.url()), format!("db={url}")];
            let s = run_file(
                &file,
                &[
                    "--target",
                    &targets[0],
                    "--target",
                    &targets[1],
                    "-c",
                    "2",
                    "-i",
                    "5",
                ],
            )
            .await
            .expect("compiles");
            assert_eq!(s.total.errors, 0, "{:?}", s.errors);
            assert_eq!(row(&s, "saga").samples, 10);
            assert_eq!(row(&s, "order in the database").samples, 10);
        }
        let d = c
            .run(
                &std::sync::Arc::from(
                    "SELECT COUNT(*) AS n, CAST(SUM(balance) AS CHAR(20)) AS total FROM clients",
                ),
                &[],
                true,
            )
            .await
            .expect("count");
        // Two clients an iteration: 15 iterations, and 15 more of the rematch on PostgreSQL.
        let clients: i64 = match url.starts_with("postgres") {
            true => 60,
            false => 30,
        };
        assert_eq!(d.data[0]["n"].as_i64(), Some(clients), "{url}");
        assert_eq!(
            d.data[0]["total"].as_str().map(str::trim),
            Some((clients * 1000).to_string().as_str()),
            "{url}: money conserved"
        );
        c.raw("DROP TABLE clients").await.expect("drop");
        c.raw("DROP TABLE orders").await.expect("drop");
    }
}

/// A failure belongs to the step that failed: in a flow of an HTTP step then a SQL step, a
/// database that refuses the users' connections (PostgreSQL's per-role limit, "too many
/// connections for role", the role's one connection held by the test) charges the refusals to
/// the SQL step's row; every target's connection used to be opened before the first step, and
/// its failure was recorded there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_database_connection_is_the_sql_steps_failure() {
    let pg = Postgres::shared().expect("PostgreSQL");
    let mut admin = throng::sql::Target::new(&pg.url(), std::time::Duration::from_secs(5), 4)
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let _ = admin.raw("DROP ROLE IF EXISTS just_one").await;
    admin
        .raw("CREATE ROLE just_one LOGIN PASSWORD 'pw' CONNECTION LIMIT 1")
        .await
        .expect("a role limited to one connection");
    let web = throng::testbed::HttpTarget::default()
        .start()
        .await
        .expect("the HTTP target");
    let db = pg.url().replacen("throng:throng-pw@", "just_one:pw@", 1);
    assert_ne!(db, pg.url(), "the URL names the test user");
    // The role's one connection is this test's for the whole run, so every user's is refused.
    let holder = throng::sql::Target::new(&db, std::time::Duration::from_secs(5), 4)
        .expect("url")
        .connect()
        .await
        .expect("the role's one connection");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.yaml");
    let text = format!(
        r#"
targets:
  web: {web}
  db: {db}
load: {{ users: 3, iterations: 3 }}
steps:
  - label: page
    request: {{ path: / }}
  - label: read
    sql: SELECT 1
"#,
        web = web.url()
    );
    std::fs::write(&path, &text).expect("write");
    let s = run_file(&path, &[]).await.expect("compiles");
    holder.close().await;
    let _ = admin.raw("DROP ROLE just_one").await;
    // Every user's page loads every iteration; the database refuses every user's connection.
    assert_eq!(row(&s, "page").samples, 9, "{:?}", s.errors);
    assert_eq!(row(&s, "page").errors, 0, "{:?}", s.errors);
    let read = row(&s, "read");
    assert_eq!(read.samples, 9, "{:?}", s.errors);
    assert_eq!(read.errors, 9, "{:?}", s.errors);
    assert_eq!(
        errors(&s, ErrorClass::Connect),
        read.errors,
        "{:?}",
        s.errors
    );
    let sample = s
        .errors
        .iter()
        .find(|e| e.class == ErrorClass::Connect)
        .map(|e| e.sample.clone())
        .unwrap_or_default();
    assert!(sample.contains("too many connections"), "{sample}");
}

/// A SQL statement that can never run (a syntax error) or that takes another number of params
/// is an error at its place in the file before any load, as it is for `--sql` on the command
/// line; it used to fail every call at run time. A table that an earlier step creates is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_cannot_run_is_refused_before_the_load() {
    let pg = Postgres::shared().expect("PostgreSQL");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.yaml");
    let file = |steps: &str| {
        format!(
            "targets:\n  db: {}\nload: {{ users: 1, iterations: 2 }}\nsteps:\n{steps}",
            pg.url()
        )
    };
    for (steps, at, says) in [
        (
            "  - label: bad\n    sql: SELEC 1\n",
            "s.yaml:6:10:",
            "`SELEC 1`: ",
        ),
        (
            "  - label: two\n    sql: { query: \"SELECT $1::int + $2::int\", params: [1] }\n",
            "s.yaml:6:19:",
            "takes 2 parameter(s), and the step gives 1",
        ),
    ] {
        std::fs::write(&path, file(steps)).expect("write");
        let e = run_file(&path, &[]).await.unwrap_err();
        assert!(e.contains(at) && e.contains(says), "{e}");
        assert!(e.contains("target `db`"), "{e}");
    }
    // A table made by the step before it: prepared then, not now.
    let ok = "  - label: make\n    sql: CREATE TEMP TABLE IF NOT EXISTS later (id INT)\n  - label: use\n    sql: INSERT INTO later VALUES (1)\n";
    std::fs::write(&path, file(ok)).expect("write");
    let s = run_file(&path, &[]).await.expect("runs");
    assert_eq!(row(&s, "use").samples, 2);
    assert_eq!(row(&s, "use").errors, 0, "{:?}", s.errors);
}
