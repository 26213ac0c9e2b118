//! throng's SQL driver: PostgreSQL, MySQL/MariaDB and SQLite through sqlx, and sysbench's OLTP
//! workloads.
//!
//! The main decision: no pool. Each session (a virtual user, or an open-loop slot) owns one
//! connection, opened by `Driver::connect` before its first statement (so connect time is not
//! statement latency) and reopened when it is lost; each statement is prepared once per
//! connection (sqlx's statement cache, sized to hold every statement of the run) and executed
//! with fresh parameters, with no health-check query before it. A transaction's statements are
//! steps (rows: queries per second) inside a group (the transaction's row: transactions per
//! second); BEGIN and COMMIT ride with the first and last step and count as operations, as
//! sysbench counts them.
//!
//! Failures are classed by SQLSTATE ([`throng_core::Status::Sql`]): a deadlock (`40P01`), a
//! serialization failure (`40001`), a unique violation (`23505`) and a syntax error (`42601`)
//! count apart. Passwords never leave the URL: every message, label and target shown goes
//! through [`redact`].
//!
//! Bytes: sqlx owns its sockets and exposes no counts, so each TCP connection's socket is found
//! among the process's files and its bytes are read from the kernel's counters (`wire`); SQLite
//! and Unix-domain sockets report 0.
#![deny(missing_docs)]

mod classify;
mod config;
mod conn;
mod dist;
mod driver;
pub mod monitor;
pub mod oltp;
pub mod param;
pub mod stats;
mod step;
mod url;
// The one place with unsafe code: the socket calls (getpeername, getsockname, getsockopt's
// TCP_INFO) that read the kernel's byte counts of sqlx's sockets, which no safe crate here
// offers (rustix has no TCP_INFO).
#[allow(unsafe_code)]
mod wire;

pub use classify::failure;
pub use config::{label_of, split_statements, SqlConfig};
pub use conn::{Conn, Done, Target, Tls};
pub use driver::{Session, SqlDriver, SqlError};
pub use oltp::{OltpOptions, RandType, Workload};
pub use step::SqlProtocol;
pub use url::{check as check_url, redact, Dialect, SCHEMES};
