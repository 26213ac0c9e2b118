//! The protocols throng ships, in one list: [`protocols`] is the registry that scenario files
//! find their targets' and steps' protocols in, and (feature `clap`) [`flags::ProtocolArgs`]
//! holds every protocol's flags of `throng run`, so that the command line asks them through
//! [`throng_run::flags::ProtocolFlags`] and names none. Adding a protocol to throng is its own
//! crate and a line in each of these two places.
//!
//! [`flags::scenario`] makes a scenario file's run under those flags: the file's load section under
//! the flags, its targets pointed where they say, its steps compiled into one driver.
//!
//! Features: `grpc` (gRPC targets), `sql` (PostgreSQL and MySQL/MariaDB), `sqlite` (SQLite
//! too), `clap` (the flags). HTTP is always in.
#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod flags;

use throng_core::step::Protocols;

/// Every protocol of this build, for scenarios: targets and steps find theirs by URL scheme
/// (`http://`, `https://`, `grpc://`, `grpcs://`, `postgres://`, `mysql://`, `sqlite://`) and
/// step key (`request`, `grpc`, `sql`).
pub fn protocols() -> Protocols {
    let p = Protocols::new().with(throng_http::HttpProtocol);
    #[cfg(feature = "sql")]
    let p = p.with(throng_sql::SqlProtocol);
    #[cfg(feature = "grpc")]
    let p = p.with(throng_grpc::GrpcProtocol);
    p
}
