//! Bytes of SQL statements, read from the kernel's counters of each connection's socket,
//! against the real PostgreSQL and MariaDB the test command starts, and SQLite (no socket: 0).

use std::sync::Arc;

use throng::core::{ClosedLoop, LoadModel, RunPlan, Users};
use throng::sql::{SqlConfig, SqlDriver};
use throng::testbed::{MariaDb, Postgres};

/// Sent and received bytes of 50 executions of `sql` with a text of `n` letters as its first
/// parameter and `n` as its second.
async fn bytes(url: &str, sql: &str, n: usize) -> (u64, u64) {
    let mut cfg = SqlConfig::new(url);
    cfg.statements = vec![sql.to_string()];
    cfg.params = vec![format!("'{}'", "x".repeat(n)), n.to_string()];
    let driver = SqlDriver::new(cfg).expect("driver");
    let shown = driver.shown().to_string();
    let driver = Arc::new(driver.check().await.expect("the statement prepares"));
    let model = LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(1),
        requests: Some(50),
        iterations: None,
        duration: None,
        think_time: None,
    });
    let snap = throng::engine::run(RunPlan::new(&shown, model), driver)
        .await
        .expect("run");
    assert_eq!((snap.total.samples, snap.total.errors), (50, 0));
    (snap.total.bytes_sent, snap.total.bytes_received)
}

/// A parameter and a column 990 bytes longer make each execution send and receive exactly
/// that much more, and what frames them: PostgreSQL's parameters and results go as text
/// (`1000` is two digits longer than `10`), MySQL's length prefixes grow by 2 past 250 bytes. What is counted
/// is what crossed the socket, no more and no less.
#[tokio::test(flavor = "multi_thread")]
async fn bytes_are_the_sockets_own() {
    let pg = Postgres::shared().expect("PostgreSQL").url();
    let my = MariaDb::shared().expect("MariaDB").url();
    for (url, sql, grows) in [
        (
            &pg,
            "SELECT length($1::text) AS n, rpad('x', $2::int) AS v",
            (992, 992),
        ),
        (
            &my,
            "SELECT LENGTH(?) AS n, REPEAT('x', ?) AS v",
            (992, 992),
        ),
    ] {
        let (sent_small, received_small) = bytes(url, sql, 10).await;
        let (sent_big, received_big) = bytes(url, sql, 1000).await;
        // Something crossed, and not much more than the statements need.
        assert!((1..50 * 400).contains(&sent_small), "{url}: {sent_small}");
        assert!(
            (50 * 10..50 * 400).contains(&received_small),
            "{url}: {received_small}"
        );
        assert_eq!(sent_big - sent_small, 50 * grows.0, "{url}: sent");
        assert_eq!(
            received_big - received_small,
            50 * grows.1,
            "{url}: received"
        );
    }
    // SQLite has no socket.
    let dir = tempfile::tempdir().expect("dir");
    let lite = format!("sqlite://{}/b.db?mode=rwc", dir.path().display());
    let (sent, received) = bytes(&lite, "SELECT length(?) AS n, ? AS v", 10).await;
    assert_eq!((sent, received), (0, 0));
}

/// MariaDB caches a prepared statement's column definitions when the client asks
/// (`MARIADB_CLIENT_CACHE_METADATA`, as MariaDB's own client and so sysbench ask): an execution
/// of a two-column, one-row statement then receives its column count, its row and the closing
/// packet, about 35 bytes, where sending the two definitions again would add some 60.
#[tokio::test(flavor = "multi_thread")]
async fn mariadb_sends_column_definitions_once() {
    let my = MariaDb::shared().expect("MariaDB").url();
    let (_, received) = bytes(&my, "SELECT ? AS v, ? AS n", 1).await;
    assert!(
        (50 * 20..50 * 60).contains(&received),
        "{received} bytes for 50 executions"
    );
}
