//! Integration tests, one binary per theme (one link each, not one per file). SQL against real PostgreSQL and MariaDB: the driver, bytes, the command line, the databases' own counters, scenarios, the saga report's table.

#[path = "../common/mod.rs"]
mod common;
#[path = "../published_sql.rs"]
mod published_sql;
#[path = "../sql.rs"]
mod sql;
#[path = "../sql_bytes.rs"]
mod sql_bytes;
#[path = "../sql_cli.rs"]
mod sql_cli;
#[path = "../sql_db_stats.rs"]
mod sql_db_stats;
#[path = "../sql_db_transactions.rs"]
mod sql_db_transactions;
#[path = "../sql_nested.rs"]
mod sql_nested;
#[path = "../sql_retry.rs"]
mod sql_retry;
#[path = "../sql_scenario.rs"]
mod sql_scenario;
#[path = "../sql_tls.rs"]
mod sql_tls;
