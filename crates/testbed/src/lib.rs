//! Targets for throng's demo, tests and benchmarks, bound to loopback.
//!
//! [`HttpTarget`] is an HTTP/1.1 and HTTP/2 server (cleartext or TLS with a self-signed
//! certificate) whose timing and failures are known in advance: a fixed or random delay, a
//! status code, a stall window in which it answers nothing, and connection-level faults (resets,
//! garbage instead of HTTP, silence). It counts the requests it answered, so tests can check
//! throng's counts against the server's own.
//!
//! [`FaultProxy`] stands between throng and a healthy target and breaks the answers on their way
//! back: latency and jitter, a reset or a clean close after some bytes (an answer that stops
//! halfway), a body that trickles.
//!
//! [`GrpcTarget`] is a gRPC server (tonic's services on hyper's HTTP/2) with a greeter of the
//! four call kinds, reflection (v1 and v1alpha) and health, and the same delay, status, stall
//! and faults as the HTTP target.
//!
//! [`BankService`] is the demo's service: clients with balances, transfers, orders and an asset
//! catalogue behind a JSON API, kept in a real embedded SQLite database (through sqlx) so a load
//! test meets real transactions. Every write goes through one connection, so concurrent
//! transfers queue in-process and never fail with `SQLITE_BUSY`; the conserved total of all
//! balances lets a test check that no load loses or makes money.
//!
//! [`brokers`] starts Debian's nats-server on free ports and the tests' Go responders (built
//! offline from Debian's Go packages), for the NATS and RabbitMQ tests.
#![deny(missing_docs)]

mod bank;
pub mod brokers;
mod db;
mod grpc_bank;
mod grpc_target;
mod http_target;
mod proxy;
#[cfg(feature = "clap")]
pub mod serve;

pub use bank::{BankError, BankService, RunningService, Storage};
pub use db::{DbError, MariaDb, Postgres, DB_NAME, DB_PASSWORD, DB_USER};
pub use grpc_bank::{
    ClientBalance, ClientId, NewClient, TotalReply, TotalRequest, TransferReply, TransferRequest,
    BANK_PROTO,
};
pub use grpc_target::{
    greeter_descriptors, GrpcTarget, GrpcTargetError, HelloReply, HelloRequest, RunningGrpc,
    GREETER_PROTO,
};
pub use http_target::{Delay, Fault, HttpTarget, RunningTarget, TargetError};
pub use proxy::{FaultProxy, ProxyFault, RunningProxy};
/// A CA for tests of mutual TLS: targets' `client_ca`, and client certificates it signs.
pub use throng_net::TestCa;
