//! SQL driven from the library, with no command line: a throwaway PostgreSQL (Debian's server,
//! started in a temporary directory as the tests start theirs) or the database you name, a
//! table of 100 accounts made on the driver's own connection, and a transfer between two random
//! accounts as one transaction of two statements: 10 users, 200 transfers each, a deadlock
//! rolled back and run again as sysbench does (the attempt stays a failure, in Error %, and
//! the retry is counted apart), the database's own counters read beside the
//! load, through `Run` with thresholds, the summary and a JSON result. At the end the example
//! reads the accounts' sum back: a transfer moves money, it never makes or loses any.
//!
//!     cargo run --example sql [-- [postgres://... | mysql://...] [RESULT.json]]

use std::sync::Arc;
use std::time::Duration;

use throng::core::watch::Watched;
use throng::core::LoadSpec;
use throng::sql::stats::DbStats;
use throng::sql::{Dialect, Retry, SqlConfig, SqlDriver};

const ACCOUNTS: i64 = 100;
const BALANCE: i64 = 1_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().find(|a| !a.contains("://"));
    // Without a URL, a PostgreSQL of our own for as long as `_server` lives.
    let (url, _server) = match args.iter().find(|a| a.contains("://")) {
        Some(url) => (url.clone(), None),
        None => {
            let pg = throng::testbed::Postgres::start()?;
            (pg.url(), Some(pg))
        }
    };
    let (from, to) = match Dialect::of(&url) {
        Some(Dialect::Postgres) => ("$1", "$1"),
        _ => ("?", "?"),
    };

    let mut cfg = SqlConfig::new(&url);
    cfg.statements = vec![
        format!("UPDATE example_accounts SET balance = balance - 1 WHERE id = {from}"),
        format!("UPDATE example_accounts SET balance = balance + 1 WHERE id = {to}"),
    ];
    cfg.params = vec![
        format!("rand_int(1, {ACCOUNTS})"),
        format!("rand_int(1, {ACCOUNTS})"),
    ];
    cfg.transaction = true;
    cfg.label = Some("transfer".into());
    cfg.retry = Retry::parse("deadlock")?;
    let driver = SqlDriver::new(cfg)?;

    // The table, on a connection of the driver's: the same URL, TLS and timeouts as the load's.
    let mut conn = driver.open().await?;
    conn.raw("DROP TABLE IF EXISTS example_accounts").await?;
    conn.raw("CREATE TABLE example_accounts (id INT PRIMARY KEY, balance INT NOT NULL)")
        .await?;
    let rows: Vec<String> = (1..=ACCOUNTS)
        .map(|i| format!("({i}, {BALANCE})"))
        .collect();
    conn.raw(&format!(
        "INSERT INTO example_accounts VALUES {}",
        rows.join(", ")
    ))
    .await?;
    // Every statement prepared against the table before the load: a typo fails here, not
    // 2,000 times. What it makes is the run's plan of steps.
    let shown = driver.shown().to_string();
    let steps = driver.check().await?;

    // The database's counters, read for a second before the load and each second of it, and
    // half a second after it: a database publishes its counts a little after it counted them.
    let watched = Watched::idle(
        vec![DbStats::new(&url, Duration::from_secs(5))?],
        Duration::from_secs(1),
        Duration::from_millis(500),
    )
    .await;

    let spec = LoadSpec {
        users: Some(10),
        iterations: Some(200),
        ..LoadSpec::default()
    };
    let plan = spec.plan(&shown, &throng::core::spec::keys)?;
    let mut run = throng::Run::new(plan, Arc::new(steps))
        .thresholds(["p99{transfer}<2s".parse()?, "error_rate<1%".parse()?])
        .watched(&watched)
        .summary(true);
    if let Some(path) = json {
        run = run.json(path);
    }
    let finished = run.execute().await?;

    let done = conn
        .run(
            &Arc::from("SELECT SUM(balance) AS total FROM example_accounts"),
            &[],
            true,
        )
        .await?;
    let total = done.data.first().and_then(|row| match &row["total"] {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    });
    conn.close().await;
    println!(
        "the accounts hold {} in all, of {} at the start",
        total.map_or_else(|| "?".to_string(), |t| t.to_string()),
        ACCOUNTS * BALANCE
    );
    let code = match total == Some(ACCOUNTS * BALANCE) {
        true => finished.exit_code(),
        false => 1,
    };
    std::process::exit(code.into());
}
