//! throng's SQL driver: PostgreSQL, MySQL/MariaDB and SQLite, and sysbench's OLTP workloads.
//! PostgreSQL runs on rust-postgres' protocol crate (`pg`: its messages and logins, our own
//! loop over a statement's results), MySQL/MariaDB on mysql_common's handshake packets and
//! logins with our own framing and row loop (`my`: sqlx's per-row decoding cost more client
//! CPU than the whole of sysbench's client); both with TLS through throng-net's rustls in
//! every `sslmode`/`ssl-mode`, on one connection type for plain and TLS; their URLs and
//! failures are ours too ([`DbError`]). SQLite runs on sqlx (the `sqlite` feature).
//!
//! One [`SqlClient`] (core's `Client`) runs every step: a scenario's `sql:` steps, and
//! `throng run URL`'s statements or workload, which [`SqlDriver`] makes a plan of (each
//! statement its row, the transaction a row of its own), so a URL run and a scenario share the
//! statement, the transaction, the rollback and their counts.
//!
//! The main decision: no pool. Each session (a virtual user, or an open-loop slot) owns one
//! connection, opened by `Driver::connect` before its first statement (so connect time is not
//! statement latency) and reopened when it is lost; each statement is prepared once per
//! connection (kept by its text; SQLite's in sqlx's statement cache, sized to hold every one) and executed
//! with fresh parameters, with no health-check query before it. A transaction's statements are
//! steps (rows: queries per second) inside a group (the transaction's row: transactions per
//! second); BEGIN and COMMIT ride with the first and last step and count as operations, as
//! sysbench counts them.
//!
//! Failures are classed by SQLSTATE ([`status::SPACE`]): a deadlock (`40P01`), a
//! serialization failure (`40001`), a unique violation (`23505`) and a syntax error (`42601`)
//! count apart. Passwords never leave the URL: every message, label and target shown goes
//! through [`redact`].
//!
//! Bytes: PostgreSQL's and MySQL's connections count what crosses their sockets
//! (throng-net's counting stream: under TLS the encrypted bytes), the login left out; SQLite
//! has no socket and reports 0.
#![deny(missing_docs)]

mod classify;
mod client;
mod codec;
#[cfg(feature = "clap")]
pub mod command;
mod config;
mod conn;
mod dist;
mod driver;
mod error;
#[cfg(feature = "clap")]
pub mod flags;
#[cfg(feature = "sqlite")]
mod lite;
pub mod monitor;
mod my;
pub mod oltp;
mod options;
pub mod param;
mod pg;
pub mod stats;
pub mod status;
mod step;
mod tls;
mod url;

pub use classify::failure;
pub use client::{Retry, SqlClient, SqlSession};
pub use config::{label_of, split_statements, SqlConfig};
pub use conn::{Conn, Done, Target, Tls};
pub use driver::{SqlDriver, SqlError, SqlSteps};
pub use error::{DbError, Violation, WireError};
pub use oltp::{OltpOptions, RandType, Workload};
pub use step::{SqlProtocol, SqlStep};
pub use url::{check as check_url, redact, Dialect, SCHEMES};
