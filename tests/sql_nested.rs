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

#[tokio::test]
async fn a_repeated_pair_inside_a_transaction_keeps_the_order_written() {
    let url = Postgres::shared().expect("PostgreSQL").url();
    let mut c = Target::new(&url, Duration::from_secs(10), 4)
        .expect("url")
        .connect()
        .await
        .expect("connects");
    c.raw(
        "DROP TABLE IF EXISTS nested_log; \
         CREATE TABLE nested_log (seq bigserial PRIMARY KEY, u int NOT NULL, what text NOT NULL)",
    )
    .await
    .expect("the table");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("nested.yaml");
    std::fs::write(&file, FLOW.replace("DB", &url)).expect("the scenario");
    let result = dir.path().join("r.json");
    let o = throng(&[
        "run",
        file.to_str().expect("path"),
        "--no-tui",
        "--json",
        result.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Each user's rows in the order the database took them: the pair four times over, three
    // iterations, never four debits then four credits.
    for user in ["0", "1"] {
        let whats = column(
            &url,
            &format!("SELECT what FROM nested_log WHERE u = {user} ORDER BY seq"),
        )
        .await;
        let pair = ["debit", "credit"];
        let expected: Vec<&str> = pair.iter().cycle().take(2 * 4 * 3).copied().collect();
        assert_eq!(whats, expected, "user {user}");
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("the result")).expect("JSON");
    let samples = |label: &str| {
        r["labels"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["label"] == label))
            .and_then(|l| l["samples"].as_u64())
            .unwrap_or_else(|| panic!("no row {label}: {r}"))
    };
    // 2 users x 3 iterations: 6 transactions of 4 pairs each.
    assert_eq!(samples("transfer"), 6);
    assert_eq!(samples("pair"), 24);
    assert_eq!((samples("debit"), samples("credit")), (24, 24));
    assert_eq!((samples("begin"), samples("commit")), (6, 6));
    assert_eq!(r["total"]["errors"], 0, "{}", r["total"]);
}

/// What cannot nest is refused before any load at its place: a repeated group first in its
/// group (each of its passes would look like a new pass of the enclosing group).
#[test]
fn a_repeated_group_first_in_its_group_is_refused_at_its_place() {
    let url = Postgres::shared().expect("PostgreSQL").url();
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("bad.yaml");
    let flow = FLOW.replace("DB", &url).replace(
        "      - label: begin\n        sql: { target: db, query: BEGIN }\n",
        "",
    );
    std::fs::write(&file, flow).expect("the scenario");
    let o = throng(&["run", file.to_str().expect("path"), "--no-tui"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(
            "bad.yaml:10:9: a repeated group cannot be the first item of group `transfer`"
        ),
        "{}",
        text(&o)
    );
}
