//! Groups inside groups in scenario files, against real PostgreSQL: a pair of statements
//! repeated inside a transaction runs in the order written (read back from the rows the flow
//! inserts, in the order of a sequence), and each group's row counts each of its passes once.

use std::sync::Arc;
use std::time::Duration;

use crate::common;

use throng::sql::Target;
use throng::testbed::Postgres;

use common::{said as text, throng_bin as throng};

const FLOW: &str = r#"
targets:
  db: DB
load:
  users: 2
  iterations: 3
steps:
  - group: transfer
    steps:
      - label: begin
        sql: { target: db, query: BEGIN }
      - group: pair
        repeat: 4
        steps:
          - label: debit
            sql: { target: db, query: "INSERT INTO nested_log (u, what) VALUES ($1, 'debit')", params: ["{{ user }}"] }
          - label: credit
            sql: { target: db, query: "INSERT INTO nested_log (u, what) VALUES ($1, 'credit')", params: ["{{ user }}"] }
      - label: commit
        sql: { target: db, query: COMMIT }
"#;

/// The rows of `sql`'s first column, as text.
async fn column(url: &str, sql: &str) -> Vec<String> {
    let mut c = Target::new(url, Duration::from_secs(10), 4)
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let done = c.run(&Arc::from(sql), &[], true).await.expect("runs");
    done.data
        .iter()
        .map(|r| match r.as_object().and_then(|o| o.values().next()) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        })
        .collect()
}

/// Runs `flow` (its target `DB`) on a fresh table `table`, checks that each user's rows are
/// the pair four times over in each of three iterations, in the order written (never four
/// debits then four credits), and returns each row of the result by its label.
async fn run_pairs(flow: &str, table: &str) -> impl Fn(&str) -> serde_json::Value {
    let url = Postgres::shared().expect("PostgreSQL").url();
    let mut c = Target::new(&url, Duration::from_secs(10), 4)
        .expect("url")
        .connect()
        .await
        .expect("connects");
    c.raw(&format!(
        "DROP TABLE IF EXISTS {table}; \
         CREATE TABLE {table} (seq bigserial PRIMARY KEY, u int NOT NULL, what text NOT NULL)"
    ))
    .await
    .expect("the table");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join(format!("{table}.yaml"));
    std::fs::write(&file, flow.replace("DB", &url)).expect("the scenario");
    let result = dir.path().join("r.json");
    let o = throng(&[
        "run",
        file.to_str().expect("path"),
        "--no-tui",
        "--json",
        result.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for user in ["0", "1"] {
        let whats = column(
            &url,
            &format!("SELECT what FROM {table} WHERE u = {user} ORDER BY seq"),
        )
        .await;
        let pair = ["debit", "credit"];
        let expected: Vec<&str> = pair.iter().cycle().take(2 * 4 * 3).copied().collect();
        assert_eq!(whats, expected, "user {user}");
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("the result")).expect("JSON");
    assert_eq!(r["total"]["errors"], 0, "{}", r["total"]);
    move |label: &str| {
        r["labels"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["label"] == label))
            .cloned()
            .unwrap_or_else(|| panic!("no row {label}: {r}"))
    }
}

#[tokio::test]
async fn a_repeated_pair_inside_a_transaction_keeps_the_order_written() {
    let row = run_pairs(FLOW, "nested_log").await;
    let samples = |label: &str| row(label)["samples"].as_u64().unwrap_or(0);
    // 2 users x 3 iterations: 6 transactions of 4 pairs each.
    assert_eq!(samples("transfer"), 6);
    assert_eq!(samples("pair"), 24);
    assert_eq!((samples("debit"), samples("credit")), (24, 24));
    assert_eq!((samples("begin"), samples("commit")), (6, 6));
}

/// Loops first in a group: a repeated group (`pair`) first in `batch`, and a repeated step
/// (`nap`) first in `naps`. Coming back to a group's first step through a loop inside it is no
/// new pass of the group: each group's row counts one sample a pass, timed over the whole pass.
const FIRST: &str = r#"
targets:
  db: DB
load:
  users: 2
  iterations: 3
steps:
  - group: batch
    steps:
      - group: pair
        repeat: 4
        steps:
          - label: debit
            sql: { target: db, query: "INSERT INTO nested_first (u, what) VALUES ($1, 'debit')", params: ["{{ user }}"] }
          - label: credit
            sql: { target: db, query: "INSERT INTO nested_first (u, what) VALUES ($1, 'credit')", params: ["{{ user }}"] }
      - label: tally
        sql: { target: db, query: "SELECT count(*) FROM nested_first" }
  - group: naps
    steps:
      - label: nap
        repeat: 3
        sql: { target: db, query: "SELECT pg_sleep(0.02)" }
      - label: woke
        sql: { target: db, query: "SELECT 1" }
"#;

#[tokio::test]
async fn a_loop_first_in_its_group_is_one_pass_of_the_group() {
    let row = run_pairs(FIRST, "nested_first").await;
    let samples = |label: &str| row(label)["samples"].as_u64().unwrap_or(0);
    // 2 users x 3 iterations: 6 passes of each group, 4 pairs and 3 naps in each.
    assert_eq!((samples("nap"), samples("woke")), (18, 6));
    assert_eq!(samples("naps"), 6);
    assert_eq!(samples("batch"), 6);
    assert_eq!(samples("pair"), 24);
    assert_eq!((samples("debit"), samples("credit")), (24, 24));
    assert_eq!(samples("tally"), 6);
    // A pass of `naps` holds its three naps of 20 ms: each sample is the whole pass.
    let naps = row("naps");
    let min = naps["latency"]["min"].as_f64().expect("min");
    assert!(min >= 60.0, "a pass of naps took {min} ms: {naps}");
}
